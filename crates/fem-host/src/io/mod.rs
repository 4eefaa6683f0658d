//! Reading and writing matrices and meshes in the field's exchange formats.

pub mod gmsh;
pub mod matrix_market;
pub mod vtk;

use std::path::Path;

/// Writes `bytes` to `path` through a temporary file beside it that is
/// renamed into place, so an error never leaves half a file.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".tmp{}-{name}", std::process::id()));
    let done = std::fs::write(&tmp, bytes).and_then(|_| std::fs::rename(&tmp, path));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}
