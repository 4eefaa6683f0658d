//! The L2 error of a Q_p solution against an exact one, on the host.

use super::*;

/// ‖u_h − u‖_{L2} with a Gauss rule of p + 3 points per direction.
pub fn l2_error<T: Scalar>(cpu: &CpuBackend, mesh: &Mesh, space: &Space, layout: &Layout, x: &[T]) -> f64 {
    l2_error_against(cpu, mesh, space, layout, x, sine_solution(mesh.dim).0.as_ref())
}

/// ‖u_h − u‖_{L2} for a given exact `u` (fixed rows and eliminated DOFs
/// count as zero).
pub fn l2_error_against<T: Scalar>(cpu: &CpuBackend, mesh: &Mesh, space: &Space, layout: &Layout, x: &[T], u: &(dyn Fn([f64; 3]) -> f64 + Sync)) -> f64 {
    match mesh.dim {
        2 => l2_error_dim::<T, 2>(cpu, mesh, space, layout, x, u),
        _ => l2_error_dim::<T, 3>(cpu, mesh, space, layout, x, u),
    }
}

pub(super) fn l2_error_dim<T: Scalar, const D: usize>(cpu: &CpuBackend, mesh: &Mesh, space: &Space, layout: &Layout, x: &[T], exact: &(dyn Fn([f64; 3]) -> f64 + Sync)) -> f64 {
    let p = space.degree;
    let tables = RefTables::<f64>::new(p, p + 3);
    let tab = tables.view();
    let nb = space.nb();
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
                    let mut x3 = [0.0; 3];
                    x3[..D].copy_from_slice(&xq);
                    let d = uh - exact(x3);
                    e += w * det * d * d;
                }
                e
            })
            .sum()
    });
    err2.sqrt()
}
