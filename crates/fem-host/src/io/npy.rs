//! NumPy's `.npy` arrays and a linear system written as them, so that a
//! Python solver (scipy, pyamg) reads the operator a solve uses without a
//! text round trip: 264M nonzeros are 3 GB in binary against 10 GB of
//! Matrix Market text, and load by memory map rather than by parsing.
//!
//! The format is a magic string, a header length, a Python dict literal
//! (dtype, order, shape) padded to 64 bytes, and the raw little-endian
//! values; it is written here rather than through a crate because the
//! writer is that header and a loop.

use super::write_via_temp;
use crate::operator::csr::Csr;
use serde::Serialize;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why an array or system could not be written.
#[derive(Debug, Error)]
pub enum NpyError {
    /// A file could not be created or written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The values do not fill the shape, or a size exceeds the index type.
    #[error("{0}")]
    Shape(String),
}

/// A value `.npy` stores, with its dtype string.
pub trait NpyValue: Copy {
    /// NumPy's `descr` of the type (little-endian).
    const DESCR: &'static str;
    /// Appends the value's little-endian bytes.
    fn put(self, out: &mut Vec<u8>);
}

macro_rules! npy_value {
    ($t:ty, $d:literal) => {
        impl NpyValue for $t {
            const DESCR: &'static str = $d;
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    };
}
npy_value!(f64, "<f8");
npy_value!(i32, "<i4");
npy_value!(i64, "<i8");

/// The header of a C-ordered array of `shape` and dtype `descr`: the
/// version 1.0 preamble and the dict, padded so the data start on a
/// 64-byte boundary.
fn header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims = match shape {
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let pad = (64 - (10 + dict.len() + 1) % 64) % 64;
    dict.push_str(&" ".repeat(pad));
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

/// Writes `values` as an array of `shape` to `path` (through a temporary
/// file: an error leaves no half-written array).
pub fn write<T: NpyValue>(path: &Path, shape: &[usize], values: impl ExactSizeIterator<Item = T>) -> Result<(), NpyError> {
    let n: usize = shape.iter().product();
    if n != values.len() {
        return Err(NpyError::Shape(format!("{}: {} values do not fill the shape {shape:?}", path.display(), values.len())));
    }
    let io = |source| NpyError::Io { path: path.to_path_buf(), source };
    write_via_temp(path, |tmp| {
        let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(tmp)?);
        w.write_all(&header(T::DESCR, shape))?;
        let mut buf = Vec::with_capacity(1 << 20);
        for v in values {
            v.put(&mut buf);
            if buf.len() >= 1 << 20 {
                w.write_all(&buf)?;
                buf.clear();
            }
        }
        w.write_all(&buf)?;
        w.flush()
    })
    .map_err(io)
}

/// What `system.json` says of a written system.
#[derive(Clone, Debug, Serialize)]
pub struct SystemInfo {
    /// What the system is, in words.
    pub what: String,
    /// Rows (nodes × components).
    pub rows: usize,
    /// Stored entries.
    pub nonzeros: usize,
    /// Unknowns a node, interleaved: row = node · components + component.
    pub components: usize,
    /// The coordinates' dimension.
    pub dim: usize,
    /// Rows held by Dirichlet conditions (a unit diagonal, zero elsewhere).
    pub fixed_rows: usize,
}

/// Writes the linear system `a x = rhs` into `dir` (made if missing):
/// `indptr.npy` (i64), `indices.npy` (i32), `data.npy` and `rhs.npy`
/// (f64), `coordinates.npy` (nodes × `info.dim`, for near-nullspace
/// vectors such as rigid-body modes) and `system.json` (`info`).
/// scipy reads it as `csr_matrix((data, indices, indptr))`.
pub fn write_system(dir: &Path, a: &Csr<f64>, rhs: &[f64], coordinates: &[[f64; 3]], info: &SystemInfo) -> Result<(), NpyError> {
    let nodes = coordinates.len();
    if rhs.len() != a.n_rows || info.components == 0 || nodes * info.components != a.n_rows || !(1..=3).contains(&info.dim) {
        return Err(NpyError::Shape(format!(
            "a system of {} rows, a right-hand side of {} and {nodes} nodes of {} components in {} dimensions do not agree",
            a.n_rows,
            rhs.len(),
            info.components,
            info.dim
        )));
    }
    if a.n_rows > i32::MAX as usize {
        return Err(NpyError::Shape(format!("{} rows exceed NumPy's 32-bit column indices", a.n_rows)));
    }
    std::fs::create_dir_all(dir).map_err(|source| NpyError::Io { path: dir.to_path_buf(), source })?;
    let nnz = a.col.len();
    write(&dir.join("indptr.npy"), &[a.n_rows + 1], a.row_ptr.iter().map(|&p| p as i64))?;
    write(&dir.join("indices.npy"), &[nnz], a.col.iter().map(|&c| c as i32))?;
    write(&dir.join("data.npy"), &[nnz], a.val.iter().copied())?;
    write(&dir.join("rhs.npy"), &[a.n_rows], rhs.iter().copied())?;
    let d = info.dim;
    write(&dir.join("coordinates.npy"), &[nodes, d], (0..nodes * d).map(|k| coordinates[k / d][k % d]))?;
    let path = dir.join("system.json");
    let json = serde_json::to_vec_pretty(info).map_err(|e| NpyError::Shape(e.to_string()))?;
    super::atomic_write(&path, &json).map_err(|source| NpyError::Io { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header is NumPy's: magic, version 1.0, a dict whose end pads
    /// the data to 64 bytes, and the values follow little-endian.
    #[test]
    fn arrays_have_numpys_layout() {
        let dir = std::env::temp_dir().join(format!("fem-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.npy");
        write(&path, &[2, 3], [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.5].into_iter()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + len) % 64, 0);
        let dict = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
        assert!(dict.starts_with("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }") && dict.ends_with('\n'), "{dict}");
        assert_eq!(bytes.len(), 10 + len + 48);
        assert_eq!(f64::from_le_bytes(bytes[bytes.len() - 8..].try_into().unwrap()), 6.5);
        write(&path, &[4], [7i32, -1, 0, 3].into_iter()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(std::str::from_utf8(&bytes[10..30]).unwrap().contains("'<i4'"));
        assert_eq!(i32::from_le_bytes(bytes[bytes.len() - 12..bytes.len() - 8].try_into().unwrap()), -1);
        // a short array is refused and the old file stays whole
        let e = write(&path, &[5], [1i32, 2].into_iter()).unwrap_err();
        assert!(e.to_string().contains("do not fill"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A system whose sizes disagree is refused before anything is made.
    #[test]
    fn a_mismatched_system_is_refused() {
        let a = Csr { n_rows: 2, row_ptr: vec![0, 1, 2], col: vec![0, 1], val: vec![1.0, 2.0] };
        let info = SystemInfo { what: "test".into(), rows: 2, nonzeros: 2, components: 1, dim: 2, fixed_rows: 0 };
        let dir = std::env::temp_dir().join(format!("fem-npy-bad-{}", std::process::id()));
        let e = write_system(&dir, &a, &[1.0], &[[0.0; 3]; 2], &info).unwrap_err();
        assert!(e.to_string().contains("do not agree"), "{e}");
        assert!(!dir.exists());
    }
}
