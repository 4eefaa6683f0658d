//! Fast approximate math (`*.approx` PTX instructions), for kernels that
//! can trade the last bits for speed. Errors are those the PTX ISA states,
//! e.g. `rsqrt.approx.f32` within 2⁻²² relative, `ex2.approx.f32` within 2
//! ulp, `sin/cos.approx.f32` within 2⁻²⁰·⁵ absolute on [-π, π].
//! Correctly rounded `sqrt` and `fma` are in [`fem_core::Real`].

macro_rules! approx {
    ($(#[$doc:meta] $name:ident($t:ty, $cls:ident) => $ins:literal;)*) => {$(
        #[$doc]
        #[inline(always)]
        pub fn $name(x: $t) -> $t {
            let r: $t;
            unsafe { core::arch::asm!(concat!($ins, " {r}, {x};"), r = out($cls) r, x = in($cls) x) };
            r
        }
    )*};
}

approx! {
    /// 1/√x for `f32`.
    rsqrt_f32(f32, reg32) => "rsqrt.approx.ftz.f32";
    /// 1/√x for `f64` (about 2⁻⁵¹ relative on sm_80+ per the ISA: a seed).
    rsqrt_f64(f64, reg64) => "rsqrt.approx.f64";
    /// 1/x for `f32`.
    rcp_f32(f32, reg32) => "rcp.approx.ftz.f32";
    /// √x for `f32`.
    sqrt_f32(f32, reg32) => "sqrt.approx.ftz.f32";
    /// 2ˣ for `f32`.
    exp2_f32(f32, reg32) => "ex2.approx.ftz.f32";
    /// log₂x for `f32`.
    log2_f32(f32, reg32) => "lg2.approx.ftz.f32";
    /// sin x for `f32`.
    sin_f32(f32, reg32) => "sin.approx.ftz.f32";
    /// cos x for `f32`.
    cos_f32(f32, reg32) => "cos.approx.ftz.f32";
}

/// eˣ for `f32` through 2^(x·log₂e).
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    exp2_f32(x * core::f32::consts::LOG2_E)
}

/// ln x for `f32` through log₂x·ln2.
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    log2_f32(x) * core::f32::consts::LN_2
}

/// x / y for `f32` with the approximate reciprocal.
#[inline(always)]
pub fn div_f32(x: f32, y: f32) -> f32 {
    let r: f32;
    unsafe { core::arch::asm!("div.approx.ftz.f32 {r}, {x}, {y};", r = out(reg32) r, x = in(reg32) x, y = in(reg32) y) };
    r
}
