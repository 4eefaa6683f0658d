//! The multigrid benchmark of Geveler et al.: −Δu = 1 on a rectangle with
//! a circular hole (3D: a box with a spherical hole), u = 0 on the outer
//! and u = 1 on the inner boundary, on an unstructured mesh refined
//! uniformly into a hierarchy; solved by CG, BiCGStab or multigrid with
//! the preconditioners and smoothers of [`crate::solver`], on any backend,
//! stopping at a relative residual of 1e-8 by default.

use crate::mesh::hole::HoleDomain;
use crate::operator::cell_data::CellData;
use crate::operator::csr::Csr;
use crate::operator::LinearOperator;
use crate::operator::elements::{self, LocalVariant};
use crate::solver::multigrid::{Cycle, Hierarchy, MgOptions, Multigrid, Smoother, SAINV_DROP};
use crate::solver::sainv::FactoredInverse;
use crate::solver::ordering::{permutations, Ordering};
use crate::solver::ssor::RowColouring;
use crate::solver::{bicgstab, pcg, spai::spai1, ApproximateInverse, CgOptions, CgReport, Identity, Jacobi, PrecondOps};
use crate::space::{DirichletMode, Layout};
use crate::{CpuBackend, Error, Result, Scalar};
use fem_core::poisson::UnitLoad;
use serde::Serialize;
use std::time::Instant;

/// The iterative method of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Solver {
    /// Preconditioned conjugate gradients; needs a symmetric
    /// preconditioner, so not SPAI.
    Cg,
    /// Preconditioned BiCGStab, which also takes the nonsymmetric SPAI(1).
    Bicgstab,
    /// Multigrid cycles as the solver; [`Precond`] then names the smoother
    /// (Jacobi, SAINV, otherwise SPAI).
    Mg,
}

/// The preconditioner of CG or BiCGStab (the smoother of solver `mg`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precond {
    /// None: M = I.
    None,
    /// The inverse diagonal, M = D⁻¹.
    Jacobi,
    /// Multi-colour SSOR (symmetric Gauss–Seidel), each colour's rows in
    /// parallel; not a multigrid smoother.
    Ssor,
    /// SPAI(1), the sparse approximate inverse on the pattern of A; not
    /// symmetric, so not with CG.
    Spai,
    /// SAINV, the factored approximate inverse Z D⁻¹ Zᵀ (symmetric).
    Sainv,
    /// One multigrid V-cycle with [`HoleOptions::smoother`]; not with
    /// solver `mg`.
    Mg,
}

/// What to build and how to solve it.
#[derive(Clone, Debug)]
pub struct HoleOptions {
    /// 2 (rectangle with a circular hole) or 3 (box with a spherical hole).
    pub dim: usize,
    /// Degree p of the Q_p elements.
    pub degree: usize,
    /// Levels of the hierarchy, the coarse mesh included: the finest mesh
    /// is refined `levels − 1` times.
    pub levels: usize,
    /// The iterative method.
    pub solver: Solver,
    /// The preconditioner (for solver `mg`, the smoother).
    pub precond: Precond,
    /// Multigrid smoother (solver `mg`, or preconditioner `mg`).
    pub smoother: Smoother,
    /// Multigrid cycle of solver `mg` (preconditioner `mg` always uses a
    /// V-cycle).
    pub cycle: Cycle,
    /// Pre- and post-smoothing steps (default: the paper's 8 in 2D, 16 in 3D).
    pub smoothing_steps: Option<usize>,
    /// Renumbering of the rows of every level (Geveler et al. §4): it
    /// changes the matrices' bandwidth and memory access, and what the
    /// order-dependent SAINV and SSOR compute.
    pub ordering: Ordering,
    /// Stop at a relative residual ‖r‖/‖b‖ ≤ rtol.
    pub rtol: f64,
    /// Iterations (or multigrid cycles) after which the solve stops
    /// unconverged.
    pub max_iterations: usize,
}

impl HoleOptions {
    /// Q_`degree` on `levels` levels in `dim` dimensions, solved by
    /// multigrid F-cycles smoothed by SPAI(1) in the original ordering, to
    /// rtol 10⁻⁸ in at most 20 000 cycles.
    pub fn new(dim: usize, degree: usize, levels: usize) -> Self {
        Self {
            dim,
            degree,
            levels,
            solver: Solver::Mg,
            precond: Precond::Spai,
            smoother: Smoother::Spai,
            cycle: Cycle::F,
            smoothing_steps: None,
            ordering: Ordering::Original,
            rtol: 1e-8,
            max_iterations: 20_000,
        }
    }

    fn mg_options(&self, smoother: Smoother) -> MgOptions {
        let mut o = MgOptions::paper(self.dim, smoother);
        o.cycle = self.cycle;
        if let Some(s) = self.smoothing_steps {
            (o.pre, o.post) = (s, s);
        }
        o
    }
}

/// The outcome of one benchmark run, as written to the JSON reports.
#[derive(Clone, Debug, Serialize)]
pub struct HoleReport {
    /// Always `"hole"`: tags the record among other problems' reports.
    pub problem: &'static str,
    /// Space dimension, 2 or 3.
    pub dim: usize,
    /// Element degree p.
    pub degree: usize,
    /// Levels of the hierarchy.
    pub levels: usize,
    /// Cells of the finest mesh.
    pub cells: usize,
    /// Free DOFs of the finest level (rows of the solved system).
    pub dofs: usize,
    /// Stored nonzeros of the finest matrix.
    pub nnz: usize,
    /// The iterative method.
    pub solver: Solver,
    /// The preconditioner option as given.
    pub precond: Precond,
    /// The multigrid smoother in use; `None` without multigrid.
    pub smoother: Option<Smoother>,
    /// The multigrid cycle in use; `None` without multigrid.
    pub cycle: Option<Cycle>,
    /// Pre- and post-smoothing steps; `None` without multigrid.
    pub smoothing_steps: Option<usize>,
    /// Row ordering of the levels.
    pub ordering: Ordering,
    /// The backend's name (CPU threads or GPU model).
    pub backend: String,
    /// Precision of the solve, `f32` or `f64`.
    pub precision: &'static str,
    /// Iterations (or multigrid cycles) performed.
    pub iterations: usize,
    /// The solver's own final ‖r‖/‖b‖ (from x₀ = 0), in the working
    /// precision.
    pub relative_residual: f64,
    /// ‖b − A x‖/‖b − A x₀‖ recomputed on the host in double precision.
    pub true_relative_residual: f64,
    /// Whether `relative_residual` reached `rtol` within the iteration
    /// limit.
    pub converged: bool,
    /// Whether multigrid as the solver stopped early, unconverged, because
    /// its cycles no longer lowered the residual
    /// ([`crate::solver::multigrid::stalled`]: `rtol` below the precision's
    /// floor).
    pub stalled: bool,
    /// Hierarchy (meshes, assembly, transfers), orderings, smoother and
    /// preconditioner construction, uploads.
    pub setup_seconds: f64,
    /// Of which building smoothers and preconditioners (SPAI, colouring).
    pub smoother_setup_seconds: f64,
    /// Wall time of the iterations, in seconds (synchronised with the
    /// device).
    pub solve_seconds: f64,
    /// Relative residual after every iteration, the start first.
    pub history: Vec<f64>,
    /// The solution on the free DOFs of the finest level, in the original
    /// (unpermuted) numbering.
    #[serde(skip)]
    pub solution: Vec<f64>,
    /// u_h on the finest mesh, the hole's Dirichlet values included (for
    /// output files).
    #[serde(skip)]
    pub field: super::field::QpField,
}

/// The right-hand side with the hole's Dirichlet values lifted:
/// `b = f − A_{free, hole} · 1` on the free rows of `layout`.
fn lifted_rhs<T: Scalar>(cpu: &CpuBackend, g: &[f64], h: &Hierarchy<T>) -> Result<Vec<T>> {
    let (space, layout) = &h.fine;
    let n = space.n_dofs;
    let full = Layout { mode: DirichletMode::Zero, n_rows: n, dofs_per_cell: layout.dofs_per_cell, cell_rows: space.cell_dofs.clone(), fixed: vec![false; n], row_dof: (0..n as u32).collect() };
    let cd = CellData::<T>::new(space, &full);
    let elems = elements::assemble_with(cpu, &cd, LocalVariant::Reuse, false, &UnitLoad)?;
    let a_full = Csr::assemble(cpu, &full, &elems)?;
    let f = elements::load_vector(&cd, &elems);
    let g: Vec<T> = g.iter().map(|&v| T::from_f64(v)).collect();
    let mut ag = vec![T::ZERO; n];
    a_full.spmv(cpu, &g, &mut ag);
    Ok(layout.row_dof.iter().map(|&i| f[i as usize] - ag[i as usize]).collect())
}

/// The Dirichlet values of every DOF of the finest level: 1 on the hole's
/// boundary, 0 elsewhere (the outer boundary, and free DOFs).
fn dirichlet_values<T: Scalar>(d: &HoleDomain, h: &Hierarchy<T>) -> Vec<f64> {
    let (space, _) = &h.fine;
    let x = &space.dof_coords;
    (0..space.n_dofs).map(|i| if space.boundary[i] && d.is_inner(x[i]) { 1.0 } else { 0.0 }).collect()
}

/// u_h on the finest level: the solution on the free rows, the Dirichlet
/// values elsewhere.
fn fine_field<T: Scalar>(g: &[f64], h: Hierarchy<T>, solution: &[f64]) -> super::field::QpField {
    let (space, layout) = h.fine;
    super::field::QpField::from_rows(space, &layout, solution, |i| g[i])
}

/// Builds and solves the benchmark on backend `bk`.
pub fn solve<B: PrecondOps, T: Scalar>(bk: &B, cpu: &CpuBackend, o: &HoleOptions) -> Result<HoleReport> {
    let upload = |m: &Csr<T>, n: usize| bk.store_matrix(m, n);
    if o.solver == Solver::Mg && matches!(o.precond, Precond::Ssor | Precond::Mg) {
        return Err(Error::InvalidArgument("multigrid smooths with jacobi, spai or sainv (--precond names the smoother)".into()));
    }
    if o.solver == Solver::Cg && o.precond == Precond::Spai {
        return Err(Error::InvalidArgument("SPAI(1) is not symmetric: use it with bicgstab or as a multigrid smoother".into()));
    }
    let t0 = Instant::now();
    let domain = HoleDomain::benchmark(o.dim);
    let coarse = domain.coarse()?;
    let h0 = Hierarchy::<T>::build(cpu, &coarse, o.degree, o.levels, |m| domain.refine(m))?;
    let g = dirichlet_values(&domain, &h0);
    let b0 = lifted_rhs(cpu, &g, &h0)?;
    let perms = permutations(&h0.a, &h0.p, &h0.coords, o.ordering, 7);
    let h = h0.permuted(&perms);
    let top = perms.last().expect("at least one level");
    let b_host: Vec<T> = top.iter().map(|&r| b0[r as usize]).collect();
    let a_host = h.a.last().expect("at least one level");
    let n = a_host.n_rows;
    let t_smoother = Instant::now();
    let (mg, smoother_used) = match (o.solver, o.precond) {
        (Solver::Mg, p) => {
            let s = match p {
                Precond::Jacobi => Smoother::Jacobi,
                Precond::Sainv => Smoother::Sainv,
                _ => Smoother::Spai,
            };
            (Some(Multigrid::new(bk, cpu, &h, o.mg_options(s), &upload)?), Some(s))
        }
        (_, Precond::Mg) => (Some(Multigrid::new(bk, cpu, &h, MgOptions { cycle: Cycle::V, ..o.mg_options(o.smoother) }, &upload)?), Some(o.smoother)),
        _ => (None, None),
    };
    let pre: Box<dyn LinearOperator<B, T>> = match o.precond {
        Precond::None => Box::new(Identity(n)),
        Precond::Jacobi => Box::new(Jacobi::from_diagonal(bk, &a_host.diag())?),
        Precond::Ssor => Box::new(bk.ssor(a_host, &RowColouring::new(a_host)?)?),
        Precond::Spai => Box::new(ApproximateInverse { m: upload(&spai1(cpu, a_host)?, n)?, label: "spai" }),
        Precond::Sainv => Box::new(ApproximateInverse { m: FactoredInverse::new(bk, a_host, SAINV_DROP, &upload)?, label: "sainv" }),
        Precond::Mg => Box::new(Identity(n)), // the multigrid itself, below
    };
    let smoother_setup_seconds = t_smoother.elapsed().as_secs_f64();
    let a = upload(a_host, n)?;
    let b = bk.upload(&b_host)?;
    let mut x = bk.zeros::<T>(n)?;
    // One untimed application of everything the solve runs, so kernels a
    // GPU driver compiles on first use are compiled during set-up.
    let mut scratch = bk.zeros::<T>(n)?;
    a.apply(bk, &b, &mut scratch)?;
    match &mg {
        Some(m) => m.apply(bk, &b, &mut scratch)?,
        None => pre.apply(bk, &b, &mut scratch)?,
    }
    bk.axpby(T::ONE, &b, T::ZERO, &mut scratch)?;
    bk.axpy(T::ZERO, &b, &mut scratch)?;
    bk.dot(&b, &scratch)?;
    bk.norm2(&scratch)?;
    bk.synchronize()?;
    let setup_seconds = t0.elapsed().as_secs_f64();
    let opts = CgOptions { rtol: o.rtol, max_iterations: o.max_iterations, jacobi: false };
    let t1 = Instant::now();
    let report: CgReport = match (o.solver, &mg) {
        (Solver::Mg, Some(mg)) => mg.solve(bk, &b, &mut x, o.rtol, o.max_iterations)?,
        (Solver::Cg, Some(mg)) => pcg(bk, &a, mg, &b, &mut x, opts)?,
        (Solver::Bicgstab, Some(mg)) => bicgstab(bk, &a, mg, &b, &mut x, opts)?,
        (Solver::Cg, None) => pcg(bk, &a, pre.as_ref(), &b, &mut x, opts)?,
        (_, None) => bicgstab(bk, &a, pre.as_ref(), &b, &mut x, opts)?,
    };
    bk.synchronize()?;
    let solve_seconds = t1.elapsed().as_secs_f64();
    let xh = bk.download(&x)?;
    let x64: Vec<f64> = xh.iter().map(|v| v.to_f64()).collect();
    let a64 = Csr { n_rows: n, row_ptr: a_host.row_ptr.clone(), col: a_host.col.clone(), val: a_host.val.iter().map(|v| v.to_f64()).collect() };
    let mut ax = vec![0.0; n];
    a64.spmv(cpu, &x64, &mut ax);
    let b64: Vec<f64> = b_host.iter().map(|v| v.to_f64()).collect();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let res: Vec<f64> = ax.iter().zip(&b64).map(|(p, q)| q - p).collect();
    let true_relative_residual = norm(&res) / norm(&b64).max(f64::MIN_POSITIVE);
    let mg_smoothing = o.smoothing_steps.or(mg.as_ref().map(|m| m.opts.pre));
    let solution = top.iter().enumerate().fold(vec![0.0; n], |mut u, (k, &r)| {
        u[r as usize] = x64[k];
        u
    });
    Ok(HoleReport {
        problem: "hole",
        dim: o.dim,
        degree: o.degree,
        levels: o.levels,
        cells: h.fine.0.n_cells(),
        dofs: n,
        nnz: a_host.nnz(),
        solver: o.solver,
        precond: o.precond,
        smoother: smoother_used,
        cycle: mg.as_ref().map(|m| m.opts.cycle),
        smoothing_steps: mg.as_ref().and(mg_smoothing),
        ordering: o.ordering,
        backend: bk.name(),
        precision: T::NAME,
        iterations: report.iterations,
        relative_residual: report.relative_residual,
        true_relative_residual,
        converged: report.converged,
        stalled: !report.converged && crate::solver::multigrid::stalled(&report.history),
        setup_seconds,
        smoother_setup_seconds,
        solve_seconds,
        history: report.history,
        field: fine_field(&g, h0, &solution),
        solution,
    })
}
