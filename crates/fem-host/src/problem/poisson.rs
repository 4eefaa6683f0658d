//! The test problem of Reguly & Giles: −Δu = Π sin(π xₐ) on [0,1]^D with
//! u = 0 on the boundary, on Q_p elements, and the L2 error of the
//! computed solution against the exact u = Π sin(π xₐ)/(Dπ²).

use crate::mesh::{BoxMesh, Mesh};
use crate::operator::cell_data::CellData;
use crate::operator::csr::Csr;
use crate::operator::elements::{self, LocalVariant};
use crate::operator::ell::{Ell, LazyEll};
use crate::operator::lma::Lma;
use crate::operator::matrix_free::MatrixFree;
use crate::operator::tables::RefTables;
use crate::operator::LinearOperator;
use crate::solver::{cg, CgOptions, CgReport};
use crate::space::dirichlet::NONE;
use crate::space::{DirichletMode, Layout, Numbering, Space};
use crate::{Backend, CpuBackend, Result, Scalar};
use fem_core::element::{det_inv, geometry, pow, MAX_VERTICES};
use fem_core::poisson::SinePoisson;
use rayon::prelude::*;
use serde::Serialize;
use std::time::Instant;

/// Storage of the stiffness matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Csr,
    Ell,
    LazyEll,
    Lma,
    MatrixFree,
}

impl Format {
    pub const ALL: [Format; 5] = [Self::Csr, Self::Ell, Self::LazyEll, Self::Lma, Self::MatrixFree];
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "csr" => Ok(Self::Csr),
            "ell" => Ok(Self::Ell),
            "lazy-ell" => Ok(Self::LazyEll),
            "lma" => Ok(Self::Lma),
            "matrix-free" => Ok(Self::MatrixFree),
            _ => Err(format!("unknown format `{s}` (csr, ell, lazy-ell, lma, matrix-free)")),
        }
    }
}

/// The operator of `layout` in `format`, and the load vector.
pub fn build_operator<T: Scalar>(
    cpu: &CpuBackend,
    mesh: &Mesh,
    layout: &Layout,
    degree: usize,
    format: Format,
    variant: LocalVariant,
) -> Result<(Box<dyn LinearOperator<CpuBackend, T>>, Vec<T>)> {
    let cd = CellData::<T>::new(mesh, layout, degree);
    let elems = elements::assemble(cpu, &cd, variant, format == Format::Lma)?;
    let b = elements::load_vector(&cd, &elems);
    let op: Box<dyn LinearOperator<CpuBackend, T>> = match format {
        Format::Csr => Box::new(Csr::assemble(cpu, layout, &elems)?),
        Format::Ell => Box::new(Ell::from_csr(&Csr::assemble(cpu, layout, &elems)?)),
        Format::LazyEll => Box::new(LazyEll::assemble(&cd, &elems)),
        Format::Lma => Box::new(Lma::new(layout, cd, elems)),
        Format::MatrixFree => Box::new(MatrixFree::new(cpu, layout, cd)?),
    };
    Ok((op, b))
}

#[derive(Clone, Debug)]
pub struct PoissonOptions {
    pub mesh: BoxMesh,
    pub degree: usize,
    pub numbering: Numbering,
    pub dirichlet: DirichletMode,
    pub variant: LocalVariant,
    pub format: Format,
    pub cg: CgOptions,
}

impl PoissonOptions {
    pub fn new(mesh: BoxMesh, degree: usize) -> Self {
        Self {
            mesh,
            degree,
            numbering: Numbering::Original,
            dirichlet: DirichletMode::Eliminate,
            variant: LocalVariant::Reuse,
            format: Format::Csr,
            cg: CgOptions { rtol: 1e-12, jacobi: true, ..CgOptions::default() },
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct PoissonReport {
    pub dim: usize,
    pub degree: usize,
    pub cells: usize,
    pub dofs: usize,
    pub rows: usize,
    pub format: Format,
    pub backend: String,
    pub precision: &'static str,
    pub iterations: usize,
    pub relative_residual: f64,
    pub l2_error: f64,
    pub assembly_seconds: f64,
    pub solve_seconds: f64,
    #[serde(skip)]
    pub cg: CgReport,
}

/// Solves the problem on the CPU backend in precision `T`.
pub fn solve_cpu<T: Scalar>(cpu: &CpuBackend, opts: &PoissonOptions) -> Result<PoissonReport> {
    let mesh = opts.mesh.build()?;
    let space = Space::new(&mesh, opts.degree, opts.numbering)?;
    let layout = Layout::new(&space, opts.dirichlet);
    let t0 = Instant::now();
    let (op, b) = build_operator::<T>(cpu, &mesh, &layout, opts.degree, opts.format, opts.variant)?;
    let assembly_seconds = t0.elapsed().as_secs_f64();
    let mut x = vec![T::ZERO; layout.n_rows];
    let t1 = Instant::now();
    let report = cg(cpu, &BoxedOp(op), &b, &mut x, opts.cg)?;
    let solve_seconds = t1.elapsed().as_secs_f64();
    let l2_error = l2_error(cpu, &mesh, &space, &layout, &x);
    Ok(PoissonReport {
        dim: mesh.dim,
        degree: opts.degree,
        cells: mesh.n_cells(),
        dofs: space.n_dofs,
        rows: layout.n_rows,
        format: opts.format,
        backend: cpu.name(),
        precision: T::NAME,
        iterations: report.iterations,
        relative_residual: report.relative_residual,
        l2_error,
        assembly_seconds,
        solve_seconds,
        cg: report,
    })
}

/// Lets a boxed operator stand where a sized one is expected.
struct BoxedOp<'a, B: Backend, T: Scalar>(Box<dyn LinearOperator<B, T> + 'a>);

impl<B: Backend, T: Scalar> LinearOperator<B, T> for BoxedOp<'_, B, T> {
    fn rows(&self) -> usize {
        self.0.rows()
    }
    fn apply(&self, backend: &B, x: &B::Vector<T>, y: &mut B::Vector<T>) -> Result<()> {
        self.0.apply(backend, x, y)
    }
    fn diagonal(&self, backend: &B) -> Result<B::Vector<T>> {
        self.0.diagonal(backend)
    }
}

/// ‖u_h − u‖_{L2} with a Gauss rule of p + 3 points per direction.
pub fn l2_error<T: Scalar>(cpu: &CpuBackend, mesh: &Mesh, space: &Space, layout: &Layout, x: &[T]) -> f64 {
    match mesh.dim {
        2 => l2_error_dim::<T, 2>(cpu, mesh, space, layout, x),
        _ => l2_error_dim::<T, 3>(cpu, mesh, space, layout, x),
    }
}

fn l2_error_dim<T: Scalar, const D: usize>(cpu: &CpuBackend, mesh: &Mesh, space: &Space, layout: &Layout, x: &[T]) -> f64 {
    let p = space.degree;
    let tables = RefTables::<f64>::new(p, p + 3);
    let tab = tables.view();
    let nb = space.dofs_per_cell();
    let err2: f64 = cpu.install(|| {
        (0..mesh.n_cells())
            .into_par_iter()
            .map(|c| {
                let verts: [[f64; D]; MAX_VERTICES] = mesh.cell_vertices::<D>(c);
                let u: Vec<f64> = (0..nb)
                    .map(|i| {
                        let r = layout.cell_rows[c * nb + i];
                        if r == NONE || layout.fixed[r as usize] { 0.0 } else { x[r as usize].to_f64() }
                    })
                    .collect();
                let mut e = 0.0;
                for q in 0..pow(tab.nq, D) {
                    let (xi, w) = tab.point::<D>(q);
                    let (xq, jac) = geometry(&verts, xi);
                    let (det, _) = det_inv(&jac);
                    let uh: f64 = (0..nb).map(|i| u[i] * tab.basis::<D>(i, q)).sum();
                    let d = uh - SinePoisson::solution(xq);
                    e += w * det * d * d;
                }
                e
            })
            .sum()
    });
    err2.sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(opts: impl Fn(usize) -> PoissonOptions, levels: &[usize]) -> (Vec<f64>, f64) {
        let cpu = CpuBackend::new(None).unwrap();
        let errs: Vec<f64> = levels
            .iter()
            .map(|&n| {
                let r = solve_cpu::<f64>(&cpu, &opts(n)).unwrap();
                assert!(r.cg.converged, "CG did not converge at n={n}: {}", r.relative_residual);
                r.l2_error
            })
            .collect();
        let k = levels.len() - 1;
        let order = (errs[k - 1] / errs[k]).ln() / (levels[k] as f64 / levels[k - 1] as f64).ln();
        (errs, order)
    }

    /// L2 error converges at order p + 1 in 2D (p = 1..4) and 3D (p = 1..3).
    #[test]
    fn l2_convergence_order_p_plus_1() {
        for (dim, p, levels) in [
            (2, 1, vec![8, 16, 32]),
            (2, 2, vec![4, 8, 16]),
            (2, 3, vec![4, 8]),
            (2, 4, vec![2, 4]),
            (3, 1, vec![4, 8]),
            (3, 2, vec![3, 6]),
            (3, 3, vec![2, 4]),
        ] {
            let (errs, order) = rate(|n| PoissonOptions::new(BoxMesh::structured(dim, n), p), &levels);
            eprintln!("structured dim={dim} p={p}: errors {errs:?}, order {order:.3}");
            assert!((order - (p + 1) as f64).abs() < 0.2, "dim={dim} p={p}: errors {errs:?}, order {order:.3}");
        }
    }

    /// Every format's product equals the CSR product (to rounding), on
    /// structured and unstructured meshes, in both Dirichlet modes.
    #[test]
    fn every_format_matches_csr() {
        let cpu = CpuBackend::new(None).unwrap();
        for (dim, p) in [(2, 1), (2, 3), (2, 6), (3, 1), (3, 2), (3, 4)] {
            for mesh in [BoxMesh::structured(dim, 3), BoxMesh::unstructured(dim, 3, 21)] {
                let mesh = mesh.build().unwrap();
                let space = Space::new(&mesh, p, Numbering::Original).unwrap();
                for mode in [DirichletMode::Eliminate, DirichletMode::Zero] {
                    let layout = Layout::new(&space, mode);
                    let x = crate::conformance::values::<f64>(layout.n_rows, 3);
                    let mut want = vec![0.0; layout.n_rows];
                    let (csr, b0) = build_operator::<f64>(&cpu, &mesh, &layout, p, Format::Csr, LocalVariant::Reuse).unwrap();
                    csr.apply(&cpu, &x, &mut want).unwrap();
                    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                    // Redundant compute costs nb²·nq^D geometry evaluations
                    // per cell: checked where that stays cheap.
                    let variants: &[LocalVariant] = if space.dofs_per_cell() > 64 { &[LocalVariant::Reuse] } else { &[LocalVariant::Reuse, LocalVariant::Redundant] };
                    for format in Format::ALL {
                        for &variant in variants {
                            let (op, b) = build_operator::<f64>(&cpu, &mesh, &layout, p, format, variant).unwrap();
                            let mut got = vec![0.0; layout.n_rows];
                            op.apply(&cpu, &x, &mut got).unwrap();
                            let err = got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                            assert!(err <= 1e-12 * scale, "{format:?} {variant:?} dim={dim} p={p} {mode:?}: max error {err:e}");
                            let berr = b.iter().zip(&b0).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                            assert!(berr <= 1e-14, "load vector differs: {berr:e}");
                            let (d, d0) = (op.diagonal(&cpu).unwrap(), csr.diagonal(&cpu).unwrap());
                            assert!(d.iter().zip(&d0).all(|(a, b)| (a - b).abs() <= 1e-12 * scale), "{format:?} diagonal");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn lazy_ell_consolidates_to_the_csr_ellpack() {
        let cpu = CpuBackend::new(None).unwrap();
        let mesh = BoxMesh::unstructured(2, 4, 2).build().unwrap();
        let space = Space::new(&mesh, 2, Numbering::Original).unwrap();
        let layout = Layout::new(&space, DirichletMode::Zero);
        let cd = CellData::<f64>::new(&mesh, &layout, 2);
        let elems = elements::assemble(&cpu, &cd, LocalVariant::Reuse, false).unwrap();
        let lazy = LazyEll::assemble(&cd, &elems);
        let ell = Ell::from_csr(&Csr::assemble(&cpu, &layout, &elems).unwrap());
        let merged = lazy.consolidate();
        assert!(lazy.0.width > ell.width, "lazy rows keep repeated columns");
        assert_eq!((merged.width, &merged.col), (ell.width, &ell.col));
        assert!(merged.val.iter().zip(&ell.val).all(|(a, b)| (a - b).abs() < 1e-13));
    }

    /// The same on perturbed, shuffled, rotated meshes (same random
    /// perturbation pattern at each level, so the rate is meaningful).
    #[test]
    fn l2_convergence_on_unstructured_meshes() {
        for (dim, p, levels) in [(2, 2, vec![8, 16]), (2, 3, vec![4, 8]), (3, 2, vec![3, 6])] {
            let (errs, order) = rate(
                |n| PoissonOptions { format: Format::Lma, numbering: Numbering::BlockedAligned, ..PoissonOptions::new(BoxMesh::unstructured(dim, n, 7), p) },
                &levels,
            );
            eprintln!("unstructured dim={dim} p={p}: errors {errs:?}, order {order:.3}");
            assert!((order - (p + 1) as f64).abs() < 0.2, "dim={dim} p={p}: errors {errs:?}, order {order:.3}");
        }
    }
}
