//! Loops written out at compile time.
//!
//! A GPU thread keeps a small array in registers only if every index into
//! it is a compile-time constant; an array indexed in a loop the optimiser
//! chose not to unroll lives in local memory (DRAM behind the L1), which
//! costs an element-by-element kernel most of its bandwidth. [`unroll`]
//! makes the unrolling explicit instead of leaving it to the optimiser's
//! size heuristics: the calls are written out for trip counts up to
//! [`MAX_UNROLL`], and the closure is inlined at each of them, so an index
//! `i` passed to it is a constant in every copy.

/// Longest trip count written out in full; longer loops keep the rest
/// rolled.
pub const MAX_UNROLL: usize = 128;

/// Calls `f(0), f(1), …, f(N − 1)` as straight-line code (the first
/// [`MAX_UNROLL`] of them).
#[inline(always)]
pub fn unroll<const N: usize>(mut f: impl FnMut(usize)) {
    macro_rules! calls {
        ($($k:literal)*) => { $( if $k < N { f($k) } )* };
    }
    calls!(
        0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
        16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
        32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47
        48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
        64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79
        80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
        96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111
        112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127
    );
    for k in MAX_UNROLL..N {
        f(k)
    }
}

/// `core::array::from_fn` written out as [`unroll`] writes loops:
/// element k is `f(k)`, `k` a constant in each copy. A pointwise function
/// that builds a large nested array (a 3D vector physics' g3 holds 81
/// values) keeps it in registers with this at its outer levels, where
/// `from_fn`'s outer loop, its body too long for the optimiser to
/// unroll, leaves the array in local memory: neo-Hookean's g3 took 720
/// bytes of stack a thread in the matrix-free action that way.
#[inline(always)]
pub fn array<T, const N: usize>(mut f: impl FnMut(usize) -> T) -> [T; N] {
    let mut a = core::mem::MaybeUninit::<[T; N]>::uninit();
    let p = a.as_mut_ptr().cast::<T>();
    // SAFETY: `unroll` calls the closure once for every k < N, so every
    // element is written before the array is read
    unroll::<N>(|k| unsafe { p.add(k).write(f(k)) });
    unsafe { a.assume_init() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_hold_f_of_each_index() {
        assert_eq!(array::<usize, 0>(|k| k), [0; 0]);
        assert_eq!(array::<usize, 3>(|k| k * k), [0, 1, 4]);
        let long: [usize; 200] = array(|k| k + 1);
        assert!(long.iter().enumerate().all(|(k, &v)| v == k + 1));
        let nested: [[u8; 2]; 3] = array(|i| array(|j| (2 * i + j) as u8));
        assert_eq!(nested, [[0, 1], [2, 3], [4, 5]]);
    }

    fn visits<const N: usize>() -> usize {
        let mut next = 0;
        unroll::<N>(|i| {
            assert_eq!(i, next);
            next += 1;
        });
        next
    }

    #[test]
    fn every_index_once_in_order() {
        assert_eq!(visits::<0>(), 0);
        assert_eq!(visits::<1>(), 1);
        assert_eq!(visits::<25>(), 25);
        assert_eq!(visits::<128>(), 128);
        assert_eq!(visits::<200>(), 200);
    }
}
