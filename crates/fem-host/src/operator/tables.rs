//! Owned reference tables of a Q_p element in a given precision.

use fem_core::element::Tables;
use fem_core::lagrange::tabulate;
use fem_core::quadrature::{gauss_legendre, gauss_lobatto};
use fem_core::Real;

/// GLL basis nodes and an `nq`-point Gauss–Legendre rule, tabulated.
#[derive(Clone, Debug)]
pub struct RefTables<T> {
    /// Basis nodes per direction, p + 1.
    pub np: usize,
    /// Quadrature points per direction.
    pub nq: usize,
    /// The `nq` Gauss–Legendre points ξ_q on [-1, 1].
    pub points: Vec<T>,
    /// Their weights, summing to 2.
    pub weights: Vec<T>,
    /// `value[i * nq + q] = ℓᵢ(ξ_q)`, the 1D GLL Lagrange basis at the points.
    pub value: Vec<T>,
    /// `deriv[i * nq + q] = ℓᵢ'(ξ_q)`, same layout as `value`.
    pub deriv: Vec<T>,
}

impl<T: Real> RefTables<T> {
    /// Tables for degree `p` with `nq` quadrature points per direction
    /// (`p + 1` integrates the stiffness of affine elements exactly).
    pub fn new(p: usize, nq: usize) -> Self {
        let np = p + 1;
        let (mut nodes, mut w) = (vec![0.0; np], vec![0.0; np]);
        gauss_lobatto(&mut nodes, &mut w);
        let (mut points, mut weights) = (vec![0.0; nq], vec![0.0; nq]);
        gauss_legendre(&mut points, &mut weights);
        let (mut value, mut deriv) = (vec![0.0; np * nq], vec![0.0; np * nq]);
        tabulate(&nodes, &points, &mut value, &mut deriv);
        let cast = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect();
        Self { np, nq, points: cast(points), weights: cast(weights), value: cast(value), deriv: cast(deriv) }
    }

    /// Points, weights, values and derivatives one after another, as the
    /// GPU element kernels read them.
    pub fn packed(&self) -> Vec<T> {
        [&self.points, &self.weights, &self.value, &self.deriv].iter().flat_map(|v| v.iter().copied()).collect()
    }

    /// The tables borrowed as the kernels' [`Tables`].
    pub fn view(&self) -> Tables<'_, T> {
        Tables { np: self.np, nq: self.nq, points: &self.points, weights: &self.weights, value: &self.value, deriv: &self.deriv }
    }
}
