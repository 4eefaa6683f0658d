//! Matrix Market coordinate files (NIST format): `real`, `integer` and
//! `pattern` fields, `general` and `symmetric` storage.
//!
//! Reading follows the conventions of the common tools (SciPy, PETSc):
//! duplicate entries are summed, a symmetric file's off-diagonal entries
//! are mirrored, pattern entries have value one. Every defect is reported
//! with its line number rather than guessed around.

use crate::operator::csr::Csr;
use crate::Scalar;
use std::io::{BufRead, Write};
use std::path::Path;
use thiserror::Error;

/// Why a Matrix Market file could not be read or written.
#[derive(Debug, Error)]
pub enum MatrixMarketError {
    /// The file breaks the format (bad banner, size line or entry, index
    /// out of range, wrong entry count).
    #[error("line {line}: {message}")]
    Syntax {
        /// 1-based line of the defect.
        line: usize,
        /// What is wrong there.
        message: String,
    },
    /// A valid file this reader does not take (dense `array` files,
    /// `complex` fields, `skew-symmetric` or `hermitian` storage), or a
    /// matrix the SpMV formats cannot hold (not square, too many nonzeros
    /// for u32 indices).
    #[error("{0}")]
    Unsupported(String),
    /// The file could not be opened, or not written and renamed into place
    /// (read errors midway are [`Syntax`](Self::Syntax) errors with their
    /// line).
    #[error("cannot read or write {path}: {source}")]
    Io {
        /// The file concerned.
        path: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// The value field of a coordinate file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// Floating-point values (`real`, or the nonstandard `double`).
    Real,
    /// Integer values, read into `f64`.
    Integer,
    /// No values: only the pattern is stored, every entry is one.
    Pattern,
}

/// How the file stores the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symmetry {
    /// Every nonzero is stored.
    General,
    /// Only the lower triangle and diagonal are stored.
    Symmetric,
}

/// A matrix as read: entries expanded (symmetric mirrored), not yet summed.
#[derive(Clone, Debug, PartialEq)]
pub struct Coordinate {
    /// Rows, from the size line.
    pub n_rows: usize,
    /// Columns, from the size line.
    pub n_cols: usize,
    /// The banner's value field.
    pub field: Field,
    /// The banner's storage; for [`Symmetry::Symmetric`] the mirrored
    /// entries are already in [`entries`](Self::entries).
    pub symmetry: Symmetry,
    /// Entries as stored in the file (before mirroring).
    pub stored: usize,
    /// `(row, column, value)`, zero-based, mirrored entries included.
    pub entries: Vec<(u32, u32, f64)>,
}

type MmResult<T> = std::result::Result<T, MatrixMarketError>;

fn syntax(line: usize, message: impl Into<String>) -> MatrixMarketError {
    MatrixMarketError::Syntax {
        line,
        message: message.into(),
    }
}

/// Parses the `%%MatrixMarket` banner.
fn banner(line: &str, no: usize) -> MmResult<(Field, Symmetry)> {
    let words: Vec<String> = line
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    if words.first().map(String::as_str) != Some("%%matrixmarket") {
        return Err(syntax(no, "the file must start with a `%%MatrixMarket matrix coordinate <field> <symmetry>` banner"));
    }
    if words.len() != 5 {
        return Err(syntax(
            no,
            format!("the banner has {} words, expected 5", words.len()),
        ));
    }
    if words[1] != "matrix" {
        return Err(MatrixMarketError::Unsupported(format!(
            "object `{}` (only `matrix`)",
            words[1]
        )));
    }
    if words[2] != "coordinate" {
        return Err(MatrixMarketError::Unsupported(format!(
            "format `{}` (only sparse `coordinate` files)",
            words[2]
        )));
    }
    let field = match words[3].as_str() {
        "real" | "double" => Field::Real,
        "integer" => Field::Integer,
        "pattern" => Field::Pattern,
        other => {
            return Err(MatrixMarketError::Unsupported(format!(
                "field `{other}` (real, integer or pattern)"
            )))
        }
    };
    let symmetry = match words[4].as_str() {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        other => {
            return Err(MatrixMarketError::Unsupported(format!(
                "symmetry `{other}` (general or symmetric)"
            )))
        }
    };
    Ok((field, symmetry))
}

fn parse_index(word: Option<&str>, what: &str, bound: usize, no: usize) -> MmResult<u32> {
    let w = word.ok_or_else(|| syntax(no, format!("missing {what}")))?;
    let i: usize = w
        .parse()
        .map_err(|_| syntax(no, format!("{what} `{w}` is not a positive integer")))?;
    if i == 0 || i > bound {
        return Err(syntax(no, format!("{what} {i} is outside 1..={bound}")));
    }
    Ok((i - 1) as u32)
}

fn parse_value(word: Option<&str>, field: Field, no: usize) -> MmResult<f64> {
    if field == Field::Pattern {
        return Ok(1.0);
    }
    let w = word.ok_or_else(|| syntax(no, "missing value"))?;
    let v = match field {
        Field::Integer => w
            .parse::<i64>()
            .map(|v| v as f64)
            .map_err(|_| syntax(no, format!("value `{w}` is not an integer")))?,
        _ => w
            .parse::<f64>()
            .map_err(|_| syntax(no, format!("value `{w}` is not a number")))?,
    };
    if !v.is_finite() {
        return Err(syntax(no, format!("value `{w}` is not finite")));
    }
    Ok(v)
}

/// Reads a coordinate file.
pub fn read(input: impl BufRead) -> MmResult<Coordinate> {
    let mut lines = input.lines().enumerate().map(|(i, l)| (i + 1, l));
    let mut next = |what: &str| -> MmResult<Option<(usize, String)>> {
        match lines.next() {
            None => Ok(None),
            Some((no, Ok(l))) => Ok(Some((no, l))),
            Some((no, Err(e))) => Err(syntax(no, format!("cannot read {what}: {e}"))),
        }
    };
    let (no, first) = next("the banner")?.ok_or_else(|| syntax(1, "the file is empty"))?;
    let (field, symmetry) = banner(&first, no)?;
    // Comments and blank lines, then the size line.
    let (no, size) = loop {
        let (no, l) = next("the size line")?
            .ok_or_else(|| syntax(no + 1, "missing the size line `rows columns entries`"))?;
        let t = l.trim();
        if !t.is_empty() && !t.starts_with('%') {
            break (no, t.to_string());
        }
    };
    let words: Vec<&str> = size.split_whitespace().collect();
    if words.len() != 3 {
        return Err(syntax(
            no,
            format!("the size line needs `rows columns entries`, found `{size}`"),
        ));
    }
    let num = |w: &str, what: &str| {
        w.parse::<usize>()
            .map_err(|_| syntax(no, format!("{what} `{w}` is not a non-negative integer")))
    };
    let (n_rows, n_cols, stored) = (
        num(words[0], "rows")?,
        num(words[1], "columns")?,
        num(words[2], "entries")?,
    );
    if n_rows > u32::MAX as usize || n_cols > u32::MAX as usize {
        return Err(syntax(no, "more than 2^32 - 1 rows or columns"));
    }
    if symmetry == Symmetry::Symmetric && n_rows != n_cols {
        return Err(syntax(
            no,
            format!("a symmetric matrix must be square, not {n_rows} × {n_cols}"),
        ));
    }
    let mut entries = Vec::with_capacity(stored.min(1 << 28));
    let mut seen = 0usize;
    let mut last = no;
    while let Some((no, l)) = next("an entry")? {
        last = no;
        let t = l.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        if seen == stored {
            return Err(syntax(
                no,
                format!("more entries than the {stored} the size line announces"),
            ));
        }
        let mut w = t.split_whitespace();
        let r = parse_index(w.next(), "row", n_rows, no)?;
        let c = parse_index(w.next(), "column", n_cols, no)?;
        let v = parse_value(w.next(), field, no)?;
        if let Some(extra) = w.next() {
            return Err(syntax(no, format!("unexpected `{extra}` after the entry")));
        }
        entries.push((r, c, v));
        if symmetry == Symmetry::Symmetric && r != c {
            entries.push((c, r, v));
        }
        seen += 1;
    }
    if seen < stored {
        return Err(syntax(
            last + 1,
            format!("the file ends after {seen} of {stored} entries"),
        ));
    }
    Ok(Coordinate {
        n_rows,
        n_cols,
        field,
        symmetry,
        stored,
        entries,
    })
}

/// Reads a coordinate file from disk.
pub fn read_path(path: &Path) -> MmResult<Coordinate> {
    let f = std::fs::File::open(path).map_err(|source| MatrixMarketError::Io {
        path: path.display().to_string(),
        source,
    })?;
    read(std::io::BufReader::with_capacity(1 << 20, f))
}

impl Coordinate {
    /// CSR with sorted columns, duplicates summed. The SpMV formats take
    /// square matrices only.
    pub fn to_csr<T: Scalar>(&self) -> MmResult<Csr<T>> {
        if self.n_rows != self.n_cols {
            return Err(MatrixMarketError::Unsupported(format!(
                "a {} × {} matrix: the SpMV formats need a square one",
                self.n_rows, self.n_cols
            )));
        }
        let mut e = self.entries.clone();
        e.sort_unstable_by_key(|&(r, c, _)| (r, c));
        let mut row_ptr = vec![0u32; self.n_rows + 1];
        let (mut col, mut val): (Vec<u32>, Vec<T>) =
            (Vec::with_capacity(e.len()), Vec::with_capacity(e.len()));
        let mut prev = None;
        for (r, c, v) in e {
            if prev == Some((r, c)) {
                *val.last_mut().expect("a previous entry") += T::from_f64(v);
            } else {
                col.push(c);
                val.push(T::from_f64(v));
                row_ptr[r as usize + 1] += 1;
                prev = Some((r, c));
            }
        }
        if col.len() > u32::MAX as usize {
            return Err(MatrixMarketError::Unsupported(format!(
                "{} nonzeros exceed the u32 index range of CSR",
                col.len()
            )));
        }
        for r in 0..self.n_rows {
            row_ptr[r + 1] += row_ptr[r];
        }
        Ok(Csr {
            n_rows: self.n_rows,
            row_ptr,
            col,
            val,
        })
    }
}

/// Writes `csr` as a `real general` coordinate file, or `real symmetric`
/// (lower triangle) when `symmetric` is set and the matrix is symmetric.
pub fn write<T: Scalar>(
    csr: &Csr<T>,
    symmetric: bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let keep = |r: usize, c: u32| !symmetric || c as usize <= r;
    let count = (0..csr.n_rows)
        .map(|r| {
            (csr.row_ptr[r]..csr.row_ptr[r + 1])
                .filter(|&k| keep(r, csr.col[k as usize]))
                .count()
        })
        .sum::<usize>();
    writeln!(
        out,
        "%%MatrixMarket matrix coordinate real {}",
        if symmetric { "symmetric" } else { "general" }
    )?;
    writeln!(out, "% written by fem {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "{} {} {}", csr.n_rows, csr.n_rows, count)?;
    for r in 0..csr.n_rows {
        for k in csr.row_ptr[r] as usize..csr.row_ptr[r + 1] as usize {
            if keep(r, csr.col[k]) {
                // `{:e}` of an f64 round-trips exactly.
                writeln!(
                    out,
                    "{} {} {:e}",
                    r + 1,
                    csr.col[k] + 1,
                    csr.val[k].to_f64()
                )?;
            }
        }
    }
    Ok(())
}

/// Whether `csr` has a symmetric pattern and values equal to their
/// transposes within `rtol` of the largest magnitude (assembled matrices
/// are symmetric only up to rounding).
pub fn is_symmetric<T: Scalar>(csr: &Csr<T>, rtol: f64) -> bool {
    let tol = rtol * csr.val.iter().fold(0.0f64, |m, v| m.max(v.to_f64().abs()));
    (0..csr.n_rows).all(|r| {
        (csr.row_ptr[r] as usize..csr.row_ptr[r + 1] as usize).all(|k| {
            let c = csr.col[k] as usize;
            c < csr.n_rows
                && csr
                    .position(c, r as u32)
                    .is_some_and(|p| (csr.val[p].to_f64() - csr.val[k].to_f64()).abs() <= tol)
        })
    })
}

/// Writes `csr` to `path` through a temporary file renamed into place, so
/// a failed write never leaves a partial matrix behind.
pub fn write_path<T: Scalar>(csr: &Csr<T>, symmetric: bool, path: &Path) -> MmResult<()> {
    let io = |source| MatrixMarketError::Io {
        path: path.display().to_string(),
        source,
    };
    let tmp = path.with_extension("mtx.partial");
    let result = (|| {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        write(csr, symmetric, &mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()
    })();
    match result {
        Ok(()) => std::fs::rename(&tmp, path).map_err(io),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(io(e))
        }
    }
}
