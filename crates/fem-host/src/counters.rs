//! Arrays of `u32` that parallel set-up passes update atomically (counts,
//! cursors, first slots) and then hand on as plain vectors. Built as
//! plain vectors and viewed as atomics, so neither the initial fill nor
//! the hand-over is a serial pass: a `Vec<AtomicU32>` collected from an
//! iterator and unwrapped again cost two serial sweeps, 0.1 s for the 64M
//! cell slots of an 8M-cell mesh's vertex–cell incidence.

use rayon::prelude::*;
use std::sync::atomic::AtomicU32;

/// `n` copies of `value`, filled in parallel (zero comes from the
/// allocator's zeroed pages).
pub fn filled(n: usize, value: u32) -> Vec<u32> {
    if value == 0 {
        return vec![0; n];
    }
    let mut v = Vec::with_capacity(n);
    (0..n).into_par_iter().map(|_| value).collect_into_vec(&mut v);
    v
}

/// `v` as atomics, for passes that update it from several threads.
pub fn atomic(v: &mut [u32]) -> &[AtomicU32] {
    // SAFETY: AtomicU32 has the size, alignment and bit validity of u32,
    // and the exclusive borrow rules out non-atomic access meanwhile.
    unsafe { std::slice::from_raw_parts(v.as_mut_ptr().cast::<AtomicU32>(), v.len()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn filled_and_updated_from_threads() {
        assert_eq!(filled(5, 7), vec![7; 5]);
        assert_eq!(filled(3, 0), vec![0; 3]);
        assert!(filled(0, 9).is_empty());
        let mut v = filled(1000, u32::MAX);
        let a = atomic(&mut v);
        (0..100_000u32).into_par_iter().for_each(|k| _ = a[(k % 1000) as usize].fetch_min(k, Relaxed));
        assert_eq!(v, (0..1000).collect::<Vec<u32>>());
    }
}
