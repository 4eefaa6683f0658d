//! One-dimensional Lagrange bases on a set of nodes, and their derivatives.
//!
//! Q_p elements use the p + 1 Gauss–Lobatto–Legendre points as nodes: the
//! endpoints are nodes (so vertex and edge DOFs sit where neighbours share
//! them) and the set is symmetric (so reversing an edge maps node k to
//! node p − k at the same position).

/// `ℓᵢ(x) = Π_{j≠i} (x − xⱼ)/(xᵢ − xⱼ)`.
pub fn lagrange(nodes: &[f64], i: usize, x: f64) -> f64 {
    let xi = nodes[i];
    nodes.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, &xj)| (x - xj) / (xi - xj)).product()
}

/// `ℓᵢ'(x)` by the product rule (valid at the nodes too).
pub fn lagrange_deriv(nodes: &[f64], i: usize, x: f64) -> f64 {
    let xi = nodes[i];
    let mut sum = 0.0;
    for (k, &xk) in nodes.iter().enumerate() {
        if k == i {
            continue;
        }
        let mut term = 1.0 / (xi - xk);
        for (j, &xj) in nodes.iter().enumerate() {
            if j != i && j != k {
                term *= (x - xj) / (xi - xj);
            }
        }
        sum += term;
    }
    sum
}

/// Tables `value[i * nq + q] = ℓᵢ(ξ_q)` and `deriv[i * nq + q] = ℓᵢ'(ξ_q)`
/// for basis nodes `nodes` at points `points`: the reference data of a
/// tensor-product element.
pub fn tabulate(nodes: &[f64], points: &[f64], value: &mut [f64], deriv: &mut [f64]) {
    let nq = points.len();
    for i in 0..nodes.len() {
        for (q, &x) in points.iter().enumerate() {
            value[i * nq + q] = lagrange(nodes, i, x);
            deriv[i * nq + q] = lagrange_deriv(nodes, i, x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quadrature::gauss_lobatto;

    #[test]
    fn kronecker_partition_of_unity_and_exact_derivatives() {
        for n in 2..=9 {
            let (mut x, mut w) = ([0.0; 9], [0.0; 9]);
            gauss_lobatto(&mut x[..n], &mut w[..n]);
            let nodes = &x[..n];
            for i in 0..n {
                for j in 0..n {
                    let v = lagrange(nodes, i, nodes[j]);
                    assert!((v - if i == j { 1.0 } else { 0.0 }).abs() < 1e-13);
                }
            }
            for &t in &[-0.93, -0.2, 0.0, 0.41, 0.999] {
                let s: f64 = (0..n).map(|i| lagrange(nodes, i, t)).sum();
                let ds: f64 = (0..n).map(|i| lagrange_deriv(nodes, i, t)).sum();
                assert!((s - 1.0).abs() < 1e-13 && ds.abs() < 1e-11);
                // interpolating x^(n-1) is exact, so is its derivative
                let k = (n - 1) as f64;
                let d: f64 = (0..n).map(|i| libm::pow(nodes[i], k) * lagrange_deriv(nodes, i, t)).sum();
                assert!((d - k * libm::pow(t, k - 1.0)).abs() < 1e-10, "n={n} t={t}");
            }
        }
    }
}
