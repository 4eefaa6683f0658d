//! Gauss–Legendre and Gauss–Lobatto–Legendre rules on [-1, 1], for any
//! number of points, computed by Newton iteration on Legendre polynomials.
//!
//! The rules are computed in `f64` and written into caller slices, so the
//! code runs without allocation on any target; tensor-product rules in 2D
//! and 3D are products of these.

use core::f64::consts::PI;

/// `(Pₙ(x), Pₙ'(x))` by the three-term recurrence.
pub fn legendre(n: usize, x: f64) -> (f64, f64) {
    if n == 0 {
        return (1.0, 0.0);
    }
    let (mut p0, mut p1) = (1.0, x);
    for k in 2..=n {
        let k = k as f64;
        let p2 = ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k;
        p0 = p1;
        p1 = p2;
    }
    // P'ₙ = n (x Pₙ − Pₙ₋₁) / (x² − 1), away from the endpoints.
    let n_f = n as f64;
    let dp = if (x * x - 1.0).abs() < 1e-300 {
        0.5 * n_f * (n_f + 1.0) * if x > 0.0 { 1.0 } else if n % 2 == 0 { -1.0 } else { 1.0 }
    } else {
        n_f * (x * p1 - p0) / (x * x - 1.0)
    };
    (p1, dp)
}

/// Gauss–Legendre rule with `nodes.len()` points (exact for polynomials of
/// degree 2n − 1), nodes ascending.
///
/// # Panics
/// If `weights` is shorter than `nodes` or `nodes` is empty.
pub fn gauss_legendre(nodes: &mut [f64], weights: &mut [f64]) {
    let n = nodes.len();
    assert!(n > 0 && weights.len() >= n, "gauss_legendre needs n ≥ 1 nodes and as many weights");
    for i in 0..n {
        // Chebyshev-like initial guess, roots descending in i; store ascending.
        let mut x = libm::cos(PI * (i as f64 + 0.75) / (n as f64 + 0.5));
        for _ in 0..100 {
            let (p, dp) = legendre(n, x);
            let dx = p / dp;
            x -= dx;
            if dx.abs() < 1e-16 {
                break;
            }
        }
        let (_, dp) = legendre(n, x);
        nodes[n - 1 - i] = x;
        weights[n - 1 - i] = 2.0 / ((1.0 - x * x) * dp * dp);
    }
}

/// Gauss–Lobatto–Legendre rule with `nodes.len()` ≥ 2 points (the
/// endpoints and the roots of P'ₙ₋₁; exact for degree 2n − 3), ascending.
///
/// # Panics
/// If fewer than 2 nodes are requested or `weights` is shorter than `nodes`.
pub fn gauss_lobatto(nodes: &mut [f64], weights: &mut [f64]) {
    let n = nodes.len();
    assert!(n >= 2 && weights.len() >= n, "gauss_lobatto needs n ≥ 2 nodes and as many weights");
    let m = n - 1; // the interior nodes are roots of P'_m
    let mf = m as f64;
    nodes[0] = -1.0;
    nodes[m] = 1.0;
    for i in 1..m {
        // Chebyshev–Gauss–Lobatto initial guess, refined by Newton on P'_m
        // with P''_m from the Legendre equation.
        let mut x = -libm::cos(PI * i as f64 / mf);
        for _ in 0..100 {
            let (p, dp) = legendre(m, x);
            let d2p = (2.0 * x * dp - mf * (mf + 1.0) * p) / (1.0 - x * x);
            let dx = dp / d2p;
            x -= dx;
            if dx.abs() < 1e-16 {
                break;
            }
        }
        nodes[i] = x;
    }
    for i in 0..n {
        let (p, _) = legendre(m, nodes[i]);
        weights[i] = 2.0 / (mf * (mf + 1.0) * p * p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn integrate(nodes: &[f64], weights: &[f64], k: i32) -> f64 {
        nodes.iter().zip(weights).map(|(&x, &w)| w * libm::pow(x, k as f64)).sum()
    }

    fn exact(k: i32) -> f64 {
        if k % 2 == 1 { 0.0 } else { 2.0 / (k as f64 + 1.0) }
    }

    #[test]
    fn gauss_legendre_is_exact_to_degree_2n_minus_1() {
        for n in 1..=20 {
            let (mut x, mut w) = ([0.0; 20], [0.0; 20]);
            gauss_legendre(&mut x[..n], &mut w[..n]);
            for k in 0..(2 * n as i32) {
                let err = (integrate(&x[..n], &w[..n], k) - exact(k)).abs();
                assert!(err < 1e-14, "n={n} k={k} err={err:e}");
            }
            // degree 2n is not integrated exactly (visible while the error,
            // which falls like 1/(2n)!, is above rounding)
            if n <= 8 {
                assert!((integrate(&x[..n], &w[..n], 2 * n as i32) - exact(2 * n as i32)).abs() > 1e-10);
            }
            assert!(x[..n].windows(2).all(|p| p[0] < p[1]));
        }
    }

    #[test]
    fn gauss_lobatto_is_exact_to_degree_2n_minus_3() {
        for n in 2..=20 {
            let (mut x, mut w) = ([0.0; 20], [0.0; 20]);
            gauss_lobatto(&mut x[..n], &mut w[..n]);
            assert_eq!((x[0], x[n - 1]), (-1.0, 1.0));
            for k in 0..=(2 * n as i32 - 3) {
                let err = (integrate(&x[..n], &w[..n], k) - exact(k)).abs();
                assert!(err < 1e-14, "n={n} k={k} err={err:e}");
            }
            assert!(x[..n].windows(2).all(|p| p[0] < p[1]));
            // symmetric about 0
            for i in 0..n {
                assert!((x[i] + x[n - 1 - i]).abs() < 1e-15);
            }
        }
    }

    #[test]
    fn known_values() {
        let (mut x, mut w) = ([0.0; 3], [0.0; 3]);
        gauss_lobatto(&mut x, &mut w);
        assert!((w[0] - 1.0 / 3.0).abs() < 1e-15 && (w[1] - 4.0 / 3.0).abs() < 1e-15);
        gauss_legendre(&mut x[..2], &mut w[..2]);
        assert!((x[1] - 1.0 / libm::sqrt(3.0)).abs() < 1e-15 && (w[0] - 1.0).abs() < 1e-15);
    }
}
