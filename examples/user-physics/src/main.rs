//! A user's own physics, end to end: the pointwise functions of
//! `user-physics-kernels` (−Δu + u³ = f, written with `#[fem_kernel]`)
//! solved by Newton on P2 triangles with the CPU variants, and — when a
//! GPU is there — the same residual and Jacobian evaluated by the GPU
//! entry points that `build.rs` compiled into this program's PTX.
//!
//!     cargo run --release -p user-physics -- [cells per side]

use fem_host::operator::pointwise::{GpuPointwise, Transposition};
use fem_host::operator::pointwise::{assemble_csr, Aux, Pointwise};
use fem_host::mesh::simplex::SimplexBox;
use fem_host::solver::cg::{cg, CgOptions};
use fem_host::space::nodal::NodalSpace;
use fem_host::{Backend, CpuBackend, CudaBackend, Result};
use user_physics_kernels::Reaction;

include!(concat!(env!("OUT_DIR"), "/user_kernels_ptx.rs"));

/// What a solve reached.
#[derive(Debug)]
struct Report {
    /// Scalar nodes of the P2 space.
    dofs: usize,
    /// ‖R(u_k)‖ (free rows) before each Newton update, and at the end.
    residuals: Vec<f64>,
    /// max over nodes |u_h − u|.
    max_nodal_error: f64,
}

/// Newton for −Δu + u³ = f with u = 0 on the boundary of the unit square
/// (`n` × `n` squares, each split in two), every linear system by CG on
/// the assembled Jacobian with its boundary rows and columns eliminated.
fn solve(cpu: &CpuBackend, n: usize) -> Result<(Report, NodalSpace, Pointwise<f64, Reaction>, Vec<f64>)> {
    let mesh = SimplexBox::unstructured(2, n, 7).build()?;
    let space = NodalSpace::simplex(&mesh, 2)?;
    let op = Pointwise::<f64, Reaction>::new(&space, None, Aux::None)?;
    let mut u = vec![0.0; space.n_dofs];
    let mut residuals = Vec::new();
    for _ in 0..20 {
        let ue = space.gather(1, &u);
        let mut r = space.scatter_add(1, &op.residual_cpu(cpu, &ue)?);
        for (i, ri) in r.iter_mut().enumerate() {
            if space.boundary[i] {
                *ri = 0.0;
            }
        }
        residuals.push(r.iter().map(|v| v * v).sum::<f64>().sqrt());
        if residuals.last() < Some(&1e-11) {
            break;
        }
        let mut j = assemble_csr(cpu, &space, 1, &op.jacobian_cpu(cpu, &ue)?)?;
        for row in 0..j.n_rows {
            for k in j.row_ptr[row] as usize..j.row_ptr[row + 1] as usize {
                let col = j.col[k] as usize;
                if space.boundary[row] || space.boundary[col] {
                    j.val[k] = if row == col { 1.0 } else { 0.0 };
                }
            }
        }
        let mut du = vec![0.0; space.n_dofs];
        cg(cpu, &j, &r, &mut du, CgOptions { rtol: 1e-13, max_iterations: 10_000, jacobi: true })?;
        u.iter_mut().zip(&du).for_each(|(a, d)| *a -= d);
    }
    let pi = std::f64::consts::PI;
    let max_nodal_error = space.dof_coords.iter().zip(&u).map(|(x, v)| (v - (pi * x[0]).sin() * (pi * x[1]).sin()).abs()).fold(0.0, f64::max);
    Ok((Report { dofs: space.n_dofs, residuals, max_nodal_error }, space, op, u))
}

/// Largest difference between the GPU's and the CPU's element residuals
/// and element matrices at `u`, relative to the largest CPU value.
fn gpu_vs_cpu(gpu: &CudaBackend, cpu: &CpuBackend, space: &NodalSpace, op: &Pointwise<f64, Reaction>, u: &[f64]) -> Result<f64> {
    let g = GpuPointwise::new(gpu, op)?;
    let ue = space.gather(1, u);
    let t = Transposition::default_for(&op.variant);
    let mut worst = 0.0f64;
    for (jacobian, want) in [(false, op.residual_cpu(cpu, &ue)?), (true, op.jacobian_cpu(cpu, &ue)?)] {
        let got = g.evaluate_host(gpu, jacobian, t, &ue)?;
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        worst = worst.max(got.iter().zip(&want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs())) / scale);
    }
    Ok(worst)
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map(|s| s.parse()).transpose()?.unwrap_or(32);
    let cpu = CpuBackend::new(None)?;
    let (report, space, op, u) = solve(&cpu, n)?;
    let res: Vec<String> = report.residuals.iter().map(|r| format!("{r:.2e}")).collect();
    println!("P2, {} DOFs: Newton residuals {}", report.dofs, res.join(" → "));
    println!("max nodal error against u = sin πx sin πy: {:.3e}", report.max_nodal_error);
    match CudaBackend::new(0, &USER_PTX) {
        Ok(gpu) => println!("GPU ({}): element residuals and matrices equal the CPU's to {:.1e}", gpu.name(), gpu_vs_cpu(&gpu, &cpu, &space, &op, &u)?),
        Err(e) => println!("no GPU run: {e}"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Newton converges quadratically, the P2 error falls at third order,
    /// and where there is a GPU its kernels equal the CPU's.
    #[test]
    fn newton_converges_and_the_error_falls_at_order_three() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let (coarse, ..) = solve(&cpu, 8).unwrap();
        let (fine, space, op, u) = solve(&cpu, 16).unwrap();
        for r in [&coarse, &fine] {
            let res = &r.residuals;
            assert!(*res.last().unwrap() < 1e-11 && res.len() <= 7, "{res:?}");
            // quadratic: once small, each residual above rounding is below a constant times the square of the last
            for w in res.windows(2).filter(|w| w[0] < 1e-1 && w[1] > 1e-9) {
                assert!(w[1] < 10.0 * w[0] * w[0], "{res:?}");
            }
        }
        let order = (coarse.max_nodal_error / fine.max_nodal_error).log2();
        assert!(order > 2.6, "errors {:e} → {:e}: order {order}", coarse.max_nodal_error, fine.max_nodal_error);
        match CudaBackend::new(0, &USER_PTX) {
            Ok(gpu) => assert!(gpu_vs_cpu(&gpu, &cpu, &space, &op, &u).unwrap() < 1e-12),
            Err(e) => eprintln!("SKIPPED the GPU comparison: {e}"),
        }
    }
}
