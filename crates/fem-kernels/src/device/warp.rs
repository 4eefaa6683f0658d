//! Warp shuffles (`shfl.sync`) over the full warp and warp-level sums.
//!
//! All 32 lanes must take part: launch blocks whose size is a multiple of
//! [`crate::launch::WARP`] and call these outside divergent branches.

use fem_core::Real;

macro_rules! shfl32 {
    ($($(#[$doc:meta])* $name:ident => $mode:literal;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(v: u32, arg: u32) -> u32 {
            let r: u32;
            unsafe {
                core::arch::asm!(
                    concat!("shfl.sync.", $mode, ".b32 {r}, {v}, {a}, 0x1f, 0xffffffff;"),
                    r = out(reg32) r, v = in(reg32) v, a = in(reg32) arg,
                )
            };
            r
        }
    )*};
}

shfl32! {
    /// `__shfl_down_sync(0xffffffff, v, delta)` on 32 bits.
    shfl_down_u32 => "down";
    /// `__shfl_xor_sync(0xffffffff, v, mask)` on 32 bits (butterfly).
    shfl_xor_u32 => "bfly";
    /// `__shfl_sync(0xffffffff, v, src_lane)` on 32 bits (broadcast/index).
    shfl_idx_u32 => "idx";
}

/// Applies a 32-bit shuffle to a value of either precision: one shuffle
/// for `f32`, two (low and high word) for `f64`.
#[inline(always)]
fn shuffle_real<T: Real>(v: T, arg: u32, op: fn(u32, u32) -> u32) -> T {
    let bits = v.to_bits_u64();
    let lo = op(bits as u32, arg) as u64;
    let hi = if T::BYTES == 8 { (op((bits >> 32) as u32, arg) as u64) << 32 } else { 0 };
    T::from_bits_u64(hi | lo)
}

/// Shuffle down by `delta` lanes; lanes past the end keep their value.
#[inline(always)]
pub fn shfl_down<T: Real>(v: T, delta: u32) -> T {
    shuffle_real(v, delta, shfl_down_u32)
}

/// Exchange with lane `lane ^ mask`.
#[inline(always)]
pub fn shfl_xor<T: Real>(v: T, mask: u32) -> T {
    shuffle_real(v, mask, shfl_xor_u32)
}

/// Value of lane `src_lane`.
#[inline(always)]
pub fn shfl_idx<T: Real>(v: T, src_lane: u32) -> T {
    shuffle_real(v, src_lane, shfl_idx_u32)
}

/// Sum over the warp, valid in every lane (butterfly reduction).
#[inline(always)]
pub fn warp_sum<T: Real>(mut v: T) -> T {
    let mut mask = crate::launch::WARP / 2;
    while mask > 0 {
        v += shfl_xor(v, mask);
        mask /= 2;
    }
    v
}
