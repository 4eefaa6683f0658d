//! A user's own physics, end to end on the GPU: the pointwise functions of
//! `user-physics-kernels` (−Δu + u³ = f, written with `#[fem_kernel]`)
//! solved by fem's Newton on P2 triangles, u = 0 on the boundary, first
//! with the CPU backend, then on the GPU with the entry points that
//! `build.rs` compiled into this program's PTX beside the library's.
//!
//!     cargo run --release -p user-physics -- [cells per side]

use fem::host::mesh::simplex::SimplexBox;
use fem::host::operator::pointwise::Aux;
use fem::host::problem::nonlinear::{solve, NewtonOps, NewtonOptions, NewtonReport, Setup};
use fem::host::space::integrate::l2_error;
use fem::host::space::{BoundaryPart, Constraints, Space};
use fem::host::{CpuBackend, Result};
use user_physics_kernels::{reaction::exact, Reaction};

include!(concat!(env!("OUT_DIR"), "/user_kernels_ptx.rs"));

/// Newton for −Δu + u³ = f on P2 triangles of the unit square (`n` × `n`
/// squares, each split in two, perturbed and shuffled) with u = 0 on the
/// boundary, on backend `b`: the solution, the report and ‖u_h − u‖_L2.
fn run<B: NewtonOps>(b: &B, n: usize) -> Result<(Vec<f64>, NewtonReport, f64)> {
    let cpu = CpuBackend::new(None)?;
    let space = Space::simplex(&SimplexBox::unstructured(2, n, 7).build()?, 2)?;
    let bcs = Constraints::none(&space, 1).dirichlet(&space, &BoundaryPart::All, |_, u| u[0] = 0.0)?;
    let setup = Setup::<Reaction>::constrained(&cpu, &space, Aux::None, &bcs, None)?;
    let (u, report) = solve(b, &setup, &bcs.initial(), &NewtonOptions::default(), &mut |_| {})?;
    let error = l2_error(&space, 1, &u, |x, e| e[0] = exact(&[x[0], x[1]]));
    Ok((u, report, error))
}

/// What one backend reached, in a line.
fn describe(r: &NewtonReport, error: f64) -> String {
    let res: Vec<String> = r.residuals.iter().map(|v| format!("{v:.1e}")).collect();
    format!("{} rows, ‖R‖ {}, {} CG iterations, L2 error {error:.3e}\n  on {}", r.rows, res.join(" → "), r.krylov_iterations, r.kernels)
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map(|s| s.parse()).transpose()?.unwrap_or(64);
    let (u_cpu, report, error) = run(&CpuBackend::new(None)?, n)?;
    println!("CPU: {}", describe(&report, error));
    match fem::cuda(0).and_then(|gpu| gpu.with_kernels(&USER_PTX)) {
        Ok(gpu) => {
            let (u_gpu, report, error) = run(&gpu, n)?;
            let diff = u_gpu.iter().zip(&u_cpu).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            println!("GPU: {}\nmax |u_GPU − u_CPU| = {diff:.1e}", describe(&report, error));
        }
        Err(e) => println!("no GPU run: {e}"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Newton converges quadratically, the P2 error falls at order three,
    /// and where there is a GPU its solution equals the CPU's.
    #[test]
    fn newton_converges_quadratically_at_order_three_and_the_gpu_agrees() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let (_, coarse, e_coarse) = run(&cpu, 8).unwrap();
        let (u, fine, e_fine) = run(&cpu, 16).unwrap();
        for r in [&coarse, &fine] {
            let res = &r.residuals;
            assert!(r.converged && res.len() <= 7, "{res:?}");
            // quadratic: once small, each residual above rounding is below a constant times the square of the last
            for w in res.windows(2).filter(|w| w[0] < 1e-1 && w[1] > 1e-9 * res[0]) {
                assert!(w[1] < 10.0 * w[0] * w[0], "{res:?}");
            }
        }
        let order = (e_coarse / e_fine).log2();
        assert!(order > 2.7, "errors {e_coarse:e} → {e_fine:e}: order {order}");
        match fem::cuda(0).and_then(|gpu| gpu.with_kernels(&USER_PTX)) {
            Ok(gpu) => {
                let (v, report, _) = run(&gpu, 16).unwrap();
                let diff = u.iter().zip(&v).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                assert!(report.converged && diff < 1e-10, "GPU − CPU: {diff:e}");
            }
            Err(e) => eprintln!("SKIPPED the GPU comparison: {e}"),
        }
    }
}
