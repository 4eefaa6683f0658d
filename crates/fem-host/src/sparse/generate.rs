//! Matrices for the SpMV benchmarks: finite-element stiffness matrices of
//! Q_p elements (scalar, or vector-valued with interleaved components),
//! and irregular matrices with power-law row lengths like the Circuit and
//! Webbase matrices of Wong, Kuhl & Darve's Table 2.

use crate::mesh::BoxMesh;
use crate::operator::cell_data::CellData;
use crate::operator::csr::Csr;
use crate::rng::SplitMix64;
use crate::space::{DirichletMode, Layout, Space};
use crate::{CpuBackend, Error, Result, Scalar};

/// A generated matrix, as named on the command line:
/// `fem:dim=3,degree=2,rows=1000000,components=3,unstructured=1` or
/// `powerlaw:rows=1000000,xmin=1,alpha=2.5,max=4700,seed=1`.
#[derive(Clone, Debug, PartialEq)]
pub enum MatrixSpec {
    /// The stiffness matrix of −Δ on Q_p elements ([`fem_matrix`]).
    Fem {
        /// Spatial dimension, 2 or 3 (default 2).
        dim: usize,
        /// Polynomial degree p of the elements (default 1).
        degree: usize,
        /// Approximate number of rows; the mesh is sized to it (default 10⁶).
        rows: usize,
        /// Interleaved components per node, 1..=6 (default 1).
        components: usize,
        /// Whether the mesh's vertices are perturbed (0.2 h) and its vertices
        /// and cells renumbered randomly, for an irregular pattern (default false).
        unstructured: bool,
    },
    /// A random matrix with Pareto-distributed row lengths ([`power_law`]).
    PowerLaw {
        /// Number of rows (and columns); default 10⁶.
        rows: usize,
        /// Smallest row length of the Pareto law, at least 1 (default 1).
        xmin: f64,
        /// Exponent α > 1 of the length density ∝ x^(−α); smaller means a
        /// heavier tail of long rows (default 2.5).
        alpha: f64,
        /// Cap on the row length (default 4700).
        max: usize,
        /// Seed of the generator, so a spec always gives the same matrix (default 1).
        seed: u64,
    },
}

impl std::str::FromStr for MatrixSpec {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (kind, args) = s.split_once(':').unwrap_or((s, ""));
        let mut kv = std::collections::HashMap::new();
        for a in args.split(',').filter(|a| !a.is_empty()) {
            let (k, v) = a
                .split_once('=')
                .ok_or_else(|| format!("`{a}` is not key=value"))?;
            kv.insert(k.trim().to_string(), v.trim().to_string());
        }
        let mut take = |k: &str, default: &str| kv.remove(k).unwrap_or_else(|| default.to_string());
        let num = |k: &str, v: String| {
            v.parse::<f64>()
                .map_err(|_| format!("{k}=`{v}` is not a number"))
        };
        let int = |k: &str, v: String| {
            v.parse::<usize>()
                .map_err(|_| format!("{k}=`{v}` is not a non-negative integer"))
        };
        let spec = match kind {
            "fem" => Self::Fem {
                dim: int("dim", take("dim", "2"))?,
                degree: int("degree", take("degree", "1"))?,
                rows: int("rows", take("rows", "1000000"))?,
                components: int("components", take("components", "1"))?,
                unstructured: int("unstructured", take("unstructured", "0"))? != 0,
            },
            "powerlaw" => Self::PowerLaw {
                rows: int("rows", take("rows", "1000000"))?,
                xmin: num("xmin", take("xmin", "1"))?,
                alpha: num("alpha", take("alpha", "2.5"))?,
                max: int("max", take("max", "4700"))?,
                seed: int("seed", take("seed", "1"))? as u64,
            },
            _ => return Err(format!("unknown matrix kind `{kind}` (fem or powerlaw)")),
        };
        if let Some(k) = kv.keys().next() {
            return Err(format!("unknown key `{k}` for a {kind} matrix"));
        }
        Ok(spec)
    }
}

impl MatrixSpec {
    /// A short name for tables (`fem-3d-p2-c3`, `powerlaw-1000000`).
    pub fn name(&self) -> String {
        match self {
            Self::Fem {
                dim,
                degree,
                components,
                unstructured,
                ..
            } => {
                format!(
                    "fem-{dim}d-p{degree}-c{components}{}",
                    if *unstructured { "-u" } else { "" }
                )
            }
            Self::PowerLaw {
                rows, alpha, max, ..
            } => format!("powerlaw-{rows}-a{alpha}-max{max}"),
        }
    }

    /// Generates the matrix in CSR; fails on out-of-range parameters.
    pub fn build<T: Scalar>(&self, cpu: &CpuBackend) -> Result<Csr<T>> {
        match *self {
            Self::Fem {
                dim,
                degree,
                rows,
                components,
                unstructured,
            } => fem_matrix(cpu, dim, degree, rows, components, unstructured),
            Self::PowerLaw {
                rows,
                xmin,
                alpha,
                max,
                seed,
            } => power_law(rows, xmin, alpha, max, seed),
        }
    }
}

/// Stiffness matrix of −Δ on Q_`degree` elements of the unit square/cube
/// with about `rows` rows (Dirichlet rows eliminated), expanded to
/// `components` interleaved components coupled by a fixed SPD block.
pub fn fem_matrix<T: Scalar>(
    cpu: &CpuBackend,
    dim: usize,
    degree: usize,
    rows: usize,
    components: usize,
    unstructured: bool,
) -> Result<Csr<T>> {
    if !(1..=6).contains(&components) {
        return Err(Error::InvalidArgument(format!(
            "components must be 1..=6, not {components}"
        )));
    }
    let per_dir = ((rows / components).max(1) as f64).powf(1.0 / dim as f64);
    let cells = ((per_dir / degree.max(1) as f64).round() as usize).max(2);
    let mesh = if unstructured {
        BoxMesh::unstructured(dim, cells, 7)
    } else {
        BoxMesh::structured(dim, cells)
    }
    .build()?;
    let space = Space::tensor(&mesh, degree)?;
    let layout = Layout::new(&space, DirichletMode::Eliminate);
    let cd = CellData::<T>::new(&space, &layout);
    let (scalar, _) = Csr::assemble_cells(cpu, &layout, &cd, &fem_core::poisson::SinePoisson)?;
    kron_block(&scalar, components)
}

/// `A ⊗ B` with interleaved numbering, `B` the c × c block with 2 on the
/// diagonal and 1/2 elsewhere (symmetric positive definite).
fn kron_block<T: Scalar>(a: &Csr<T>, c: usize) -> Result<Csr<T>> {
    if c == 1 {
        return Ok(a.clone());
    }
    let nnz = a
        .nnz()
        .checked_mul(c * c)
        .filter(|&n| n <= u32::MAX as usize);
    let nnz = nnz.ok_or_else(|| {
        Error::InvalidArgument("the vector-valued matrix exceeds 2^32 nonzeros".into())
    })?;
    let (mut row_ptr, mut col, mut val) = (
        Vec::with_capacity(a.n_rows * c + 1),
        Vec::with_capacity(nnz),
        Vec::with_capacity(nnz),
    );
    row_ptr.push(0u32);
    for r in 0..a.n_rows {
        for i in 0..c {
            for k in a.row_ptr[r] as usize..a.row_ptr[r + 1] as usize {
                for j in 0..c {
                    col.push(a.col[k] * c as u32 + j as u32);
                    val.push(a.val[k] * T::from_f64(if i == j { 2.0 } else { 0.5 }));
                }
            }
            row_ptr.push(col.len() as u32);
        }
    }
    Ok(Csr {
        n_rows: a.n_rows * c,
        row_ptr,
        col,
        val,
    })
}

/// A square matrix whose row lengths follow a Pareto law
/// (`xmin · u^(−1/(alpha−1))`, capped at `max`), half of each row's
/// columns near the diagonal and half anywhere, diagonally dominant.
pub fn power_law<T: Scalar>(
    rows: usize,
    xmin: f64,
    alpha: f64,
    max: usize,
    seed: u64,
) -> Result<Csr<T>> {
    if alpha <= 1.0 || xmin < 1.0 || max == 0 || rows == 0 || rows > u32::MAX as usize / 2 {
        return Err(Error::InvalidArgument(format!("power law needs alpha > 1, xmin ≥ 1, max ≥ 1, 1 ≤ rows < 2^31 (got alpha {alpha}, xmin {xmin}, max {max}, rows {rows})")));
    }
    let mut rng = SplitMix64::new(seed);
    let (mut row_ptr, mut col, mut val) = (vec![0u32], Vec::new(), Vec::new());
    let mut cols = Vec::new();
    for r in 0..rows {
        let u = 1.0 - rng.next_f64();
        let len = ((xmin * u.powf(-1.0 / (alpha - 1.0))).floor() as usize).clamp(1, max.min(rows));
        cols.clear();
        cols.push(r as u32);
        while cols.len() < len {
            let c = if cols.len() % 2 == 0 {
                rng.below(rows)
            } else {
                (r as i64 + rng.below(129) as i64 - 64).rem_euclid(rows as i64) as usize
            };
            cols.push(c as u32);
        }
        cols.sort_unstable();
        cols.dedup();
        let off: Vec<f64> = cols
            .iter()
            .map(|&c| {
                if c as usize == r {
                    0.0
                } else {
                    2.0 * rng.next_f64() - 1.0
                }
            })
            .collect();
        let diag = 1.0 + off.iter().map(|v| v.abs()).sum::<f64>();
        for (&c, &v) in cols.iter().zip(&off) {
            col.push(c);
            val.push(T::from_f64(if c as usize == r { diag } else { v }));
        }
        if col.len() > u32::MAX as usize {
            return Err(Error::InvalidArgument(
                "the power-law matrix exceeds 2^32 nonzeros".into(),
            ));
        }
        row_ptr.push(col.len() as u32);
    }
    Ok(Csr {
        n_rows: rows,
        row_ptr,
        col,
        val,
    })
}
