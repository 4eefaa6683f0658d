//! The conformance checks of CG's device-side steps (`dot_into`,
//! `cg_update`, `cg_advance`, `cg_direction`): each against a sequential
//! reference built from the per-item functions of [`fem_kernels::krylov`]
//! and [`fem_kernels::blas`], on running and on stopped scalars.

use super::{first_difference, reference_dot, values, Check, SIZES};
use crate::{Backend, Error, Scalar};
use fem_kernels::{blas, krylov};

/// Checks the CG steps of `backend` in both precisions.
pub fn check_krylov<B: Backend>(backend: &B) -> Check {
    check_in::<B, f32>(backend)?;
    check_in::<B, f64>(backend)
}

/// Scalars of a running solve whose step is `rz / pq`.
fn running(rz: f64, pq: f64) -> Vec<f64> {
    let mut s = vec![0.0; krylov::SLOTS];
    s[krylov::RZ] = rz;
    s[krylov::PQ] = pq;
    s[krylov::SCALE] = 2.0;
    s[krylov::RTOL] = 1e-12;
    s[krylov::MAX] = 100.0;
    s[krylov::CAPACITY] = 101.0;
    s
}

fn check_in<B: Backend, T: Scalar>(b: &B) -> Check {
    for &n in SIZES {
        // the sums cover the first `owned` rows only (a distributed
        // vector's ghosts follow them)
        for owned in [n, n - n / 3] {
            for jacobi in [false, true] {
                check_update::<B, T>(b, n, owned, jacobi).map_err(|e| format!("{} n={n} owned={owned} jacobi={jacobi}: {e}", T::NAME))?;
            }
        }
        check_dot_into::<B, T>(b, n).map_err(|e| format!("{} n={n}: {e}", T::NAME))?;
        check_direction::<B, T>(b, n).map_err(|e| format!("{} n={n}: {e}", T::NAME))?;
    }
    check_advance(b)
}

fn within<T: Scalar>(what: &str, got: f64, want: (f64, f64), n: usize) -> Check {
    let tol = (n as f64 + 2.0) * T::EPSILON.to_f64() * want.1 + f64::MIN_POSITIVE;
    if (got - want.0).abs() > tol {
        return Err(format!("{what} = {got:e}, reference {:e}, |error| > {tol:e}", want.0));
    }
    Ok(())
}

fn check_dot_into<B: Backend, T: Scalar>(b: &B, n: usize) -> Check {
    let e = |e: Error| e.to_string();
    let (x, y) = (values::<T>(n, 11 + n as u64), values::<T>(n, 12 + n as u64));
    let mut s = b.upload(&running(1.0, 1.0)).map_err(e)?;
    b.dot_into(n, &b.upload(&x).map_err(e)?, &b.upload(&y).map_err(e)?, &mut s, krylov::PQ).map_err(e)?;
    let got = b.download(&s).map_err(e)?;
    within::<T>("dot_into", got[krylov::PQ], reference_dot(&x, &y), n)?;
    let mut want = running(1.0, 1.0);
    want[krylov::PQ] = got[krylov::PQ];
    first_difference("dot_into's other slots", &got, &want)
}

fn check_update<B: Backend, T: Scalar>(b: &B, n: usize, owned: usize, jacobi: bool) -> Check {
    let e = |e: Error| e.to_string();
    let v = |k: u64| values::<T>(n, k * 7 + n as u64);
    let (p, q, x0, r0, d) = (v(1), v(2), v(3), v(4), v(5));
    let (dp, dq, dd) = (b.upload(&p).map_err(e)?, b.upload(&q).map_err(e)?, b.upload(&d).map_err(e)?);
    // a running solve; one that has stopped; one whose p·Ap ≤ 0: neither
    // of the last two moves, and closing reports the third
    for (stopped, pq) in [(false, 1.5), (true, 1.5), (false, -1.5)] {
        let mut scalars = running(0.75, pq);
        if stopped {
            scalars[krylov::STATUS] = krylov::CONVERGED;
        }
        let stopped = stopped || pq < 0.0;
        let mut s = b.upload(&scalars).map_err(e)?;
        let (mut x, mut r, mut z) = (b.upload(&x0).map_err(e)?, b.upload(&r0).map_err(e)?, b.upload(&x0).map_err(e)?);
        let pair = if jacobi { Some((&dd, &mut z)) } else { None };
        b.cg_update(owned, &mut s, &dp, &dq, &mut x, &mut r, pair, None).map_err(e)?;
        check_closed(b, owned, &scalars, &b.download(&s).map_err(e)?, [&dp, &dq, &dd], [&x0, &r0], jacobi)?;
        let alpha = T::from_f64(0.5);
        let (mut wx, mut wr, mut wz) = (x0.clone(), r0.clone(), x0.clone());
        if !stopped {
            for i in 0..n {
                [wx[i], wr[i]] = krylov::update(alpha, p[i], q[i], x0[i], r0[i]);
                if jacobi {
                    wz[i] = blas::mul(d[i], wr[i]);
                }
            }
        }
        first_difference("x", &b.download(&x).map_err(e)?, &wx)?;
        first_difference("r", &b.download(&r).map_err(e)?, &wr)?;
        first_difference("z", &b.download(&z).map_err(e)?, &wz)?;
        if !stopped {
            let got = b.download(&s).map_err(e)?;
            within::<T>("r·r", got[krylov::RR], reference_dot(&wr[..owned], &wr[..owned]), owned)?;
            let zs = if jacobi { &wz[..owned] } else { &wr[..owned] };
            within::<T>("r·z", got[krylov::RZN], reference_dot(&wr[..owned], zs), owned)?;
        }
    }
    Ok(())
}

/// The same update given a history closes the iteration: its scalars are
/// [`krylov::advance`] of those the update alone left (`open`).
fn check_closed<B: Backend, T: Scalar>(b: &B, owned: usize, start: &[f64], open: &[f64], [p, q, d]: [&B::Vector<T>; 3], [x0, r0]: [&[T]; 2], jacobi: bool) -> Check {
    let e = |e: Error| e.to_string();
    let mut s = b.upload(start).map_err(e)?;
    let (mut x, mut r, mut z) = (b.upload(x0).map_err(e)?, b.upload(r0).map_err(e)?, b.upload(x0).map_err(e)?);
    let mut history = b.zeros::<f64>(krylov::SLOTS).map_err(e)?;
    let pair = if jacobi { Some((d, &mut z)) } else { None };
    b.cg_update(owned, &mut s, p, q, &mut x, &mut r, pair, Some(&mut history)).map_err(e)?;
    let mut want = open.to_vec();
    let mut want_history = vec![0.0; krylov::SLOTS];
    if let Some((k, res)) = krylov::advance((&mut want[..]).try_into().expect("SLOTS long")) {
        want_history[k] = res;
    }
    first_difference("the closed update's scalars", &b.download(&s).map_err(e)?, &want)?;
    first_difference("the closed update's history", &b.download(&history).map_err(e)?, &want_history)
}

fn check_direction<B: Backend, T: Scalar>(b: &B, n: usize) -> Check {
    let e = |e: Error| e.to_string();
    let (z, p) = (values::<T>(n, 21 + n as u64), values::<T>(n, 22 + n as u64));
    let dz = b.upload(&z).map_err(e)?;
    for stopped in [false, true] {
        let mut scalars = running(1.0, 1.0);
        scalars[krylov::BETA] = 0.375;
        if stopped {
            scalars[krylov::STATUS] = krylov::LIMIT;
        }
        let mut dp = b.upload(&p).map_err(e)?;
        b.cg_direction(&b.upload(&scalars).map_err(e)?, &dz, &mut dp).map_err(e)?;
        let beta = T::from_f64(0.375);
        let want: Vec<T> = if stopped { p.clone() } else { z.iter().zip(&p).map(|(&zi, &pi)| blas::axpby(T::ONE, zi, beta, pi)).collect() };
        first_difference("cg_direction", &b.download(&dp).map_err(e)?, &want)?;
    }
    Ok(())
}

/// `cg_advance` against [`krylov::advance`] on a host copy, through a
/// running iteration, a converging one and one after the stop.
fn check_advance<B: Backend>(b: &B) -> Check {
    let e = |e: Error| e.to_string();
    let mut want = running(4.0, 2.0);
    want[krylov::RTOL] = 0.1;
    let mut s = b.upload(&want).map_err(e)?;
    let mut history = b.zeros::<f64>(4).map_err(e)?;
    let mut want_history = vec![0.0; 4];
    for rr in [1.0, 0.01, 5.0] {
        let mut host = b.download(&s).map_err(e)?;
        host[krylov::RR] = rr;
        host[krylov::RZN] = rr / 2.0;
        b.write(&host, &mut s).map_err(e)?;
        want[krylov::RR] = rr;
        want[krylov::RZN] = rr / 2.0;
        b.cg_advance(&mut s, &mut history).map_err(e)?;
        let slots: &mut [f64; krylov::SLOTS] = (&mut want[..]).try_into().expect("SLOTS long");
        if let Some((k, res)) = krylov::advance(slots) {
            want_history[k] = res;
        }
        first_difference("cg_advance's scalars", &b.download(&s).map_err(e)?, &want)?;
        first_difference("cg_advance's history", &b.download(&history).map_err(e)?, &want_history)?;
    }
    if want[krylov::STATUS] != krylov::CONVERGED || want[krylov::COUNT] != 2.0 {
        return Err(format!("the reference did not converge after two iterations: {want:?}"));
    }
    Ok(())
}
