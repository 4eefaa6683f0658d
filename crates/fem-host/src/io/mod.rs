//! Reading and writing matrices and meshes in the field's exchange formats.

pub mod gmsh;
pub mod matrix_market;
pub mod npy;
pub mod vtk;
pub mod vtk_lagrange;

use std::path::Path;

/// Writes `bytes` to `path` through a temporary file beside it that is
/// renamed into place, so an error never leaves half a file.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_via_temp(path, |tmp| std::fs::write(tmp, bytes))
}

/// Runs `write` on a temporary path beside `path` (same extension, for
/// writers that go by it) and renames the result into place; on error the
/// temporary file is removed and `path` is left as it was.
pub fn write_via_temp<E: From<std::io::Error>>(path: &Path, write: impl FnOnce(&Path) -> Result<(), E>) -> Result<(), E> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".tmp{}-{name}", std::process::id()));
    let done = write(&tmp).and_then(|_| Ok(std::fs::rename(&tmp, path)?));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}
