//! Host side of the device-prelude check kernels: launches them and
//! recomputes every primitive's expected value on the host.

use super::CudaBackend;
use crate::conformance::values;
use crate::{Backend, Scalar};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use fem_kernels::launch::{BLOCK, WARP};

type Check = std::result::Result<(), String>;

/// Not a multiple of the warp or the block, so the tail is exercised.
const N: usize = 1000;

fn close(what: &str, i: usize, got: f64, want: f64, tol: f64) -> Check {
    if (got - want).abs() <= tol {
        Ok(())
    } else {
        Err(format!("{what}[{i}] = {got}, expected {want} (tolerance {tol:e})"))
    }
}

pub(crate) fn check<T: Scalar>(gpu: &CudaBackend) -> Check {
    let e = |e: crate::Error| format!("prelude_check_{}: {e}", T::NAME);
    let de = |e: cudarc::driver::DriverError| format!("prelude_check_{}: {e}", T::NAME);
    let x = values::<T>(N, 11);
    let blocks = N.div_ceil(BLOCK as usize);
    let dx = gpu.upload(&x).map_err(e)?;
    let s = gpu.stream();
    let mut ids = s.alloc_zeros::<u32>(4 * N).map_err(de)?;
    let mut outs: Vec<_> = (0..4).map(|_| gpu.zeros::<T>(N)).collect::<Result<_, _>>().map_err(e)?;
    let mut block_sums = gpu.zeros::<T>(blocks).map_err(e)?;
    let mut total = gpu.zeros::<T>(1).map_err(e)?;
    let mut total_red = gpu.zeros::<T>(1).map_err(e)?;
    let mut counter = s.alloc_zeros::<u32>(1).map_err(de)?;
    let f = gpu.kernel::<T>("prelude_check").map_err(e)?;
    let cfg = LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: (BLOCK / WARP) * T::BYTES as u32,
    };
    let [xor1, down, bcast, warp_sums] = &mut outs[..] else { unreachable!() };
    unsafe {
        s.launch_builder(&f)
            .arg(&N)
            .arg(&dx)
            .arg(&mut ids)
            .arg(xor1)
            .arg(down)
            .arg(bcast)
            .arg(warp_sums)
            .arg(&mut block_sums)
            .arg(&mut total)
            .arg(&mut total_red)
            .arg(&mut counter)
            .launch(cfg)
    }
    .map_err(de)?;
    let ids = s.clone_dtoh(&ids).map_err(de)?;
    let got: Vec<Vec<f64>> = outs
        .iter()
        .map(|o| gpu.download(o).map(|v| v.iter().map(|t| t.to_f64()).collect()))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let xf: Vec<f64> = x.iter().map(|t| t.to_f64()).collect();
    let at = |i: usize| if i < N { xf[i] } else { 0.0 };
    let eps = T::EPSILON.to_f64();
    let w = WARP as usize;
    for i in 0..N {
        let lane = i % w;
        let want_ids = [i as u32, lane as u32, ((i % BLOCK as usize) / w) as u32, (i / BLOCK as usize) as u32];
        if ids[4 * i..4 * i + 4] != want_ids {
            return Err(format!("indices of thread {i}: {:?}, expected {want_ids:?}", &ids[4 * i..4 * i + 4]));
        }
        close("shfl_xor", i, got[0][i], at(i ^ 1), 0.0)?;
        close("shfl_down", i, got[1][i], if lane + 1 < w { at(i + 1) } else { at(i) }, 0.0)?;
        close("shfl_idx", i, got[2][i], at(i - lane), 0.0)?;
        let warp: Vec<f64> = (i - lane..i - lane + w).map(at).collect();
        let abs: f64 = warp.iter().map(|v| v.abs()).sum();
        close("warp_sum", i, got[3][i], warp.iter().sum(), w as f64 * eps * abs)?;
    }
    let bs = gpu.download(&block_sums).map_err(e)?;
    for (b, got) in bs.iter().enumerate() {
        let r = b * BLOCK as usize..(b + 1) * BLOCK as usize;
        let abs: f64 = r.clone().map(|i| at(i).abs()).sum();
        close("block_sum", b, got.to_f64(), r.map(at).sum(), BLOCK as f64 * eps * abs)?;
    }
    let sum: f64 = xf.iter().sum();
    let abs: f64 = xf.iter().map(|v| v.abs()).sum();
    close("atom.add total", 0, gpu.download(&total).map_err(e)?[0].to_f64(), sum, N as f64 * eps * abs)?;
    close("red.add total", 0, gpu.download(&total_red).map_err(e)?[0].to_f64(), sum, N as f64 * eps * abs)?;
    let c = s.clone_dtoh(&counter).map_err(de)?[0];
    if c != N as u32 {
        return Err(format!("atom.add.u32 counted {c} threads, expected {N}"));
    }
    Ok(())
}

/// The approximate instructions against `f64` references, with the error
/// bounds the PTX ISA gives (loosened to 2⁻¹⁸ relative, 2⁻¹⁹ absolute for
/// sin/cos, so a wrong instruction fails but rounding never does).
pub(crate) fn check_fast_math(gpu: &CudaBackend) -> Check {
    let de = |e: cudarc::driver::DriverError| format!("fast_math_check: {e}");
    let x: Vec<f32> = (0..N).map(|i| 0.05 + 3.0 * i as f32 / N as f32).collect();
    let s = gpu.stream();
    let dx = s.clone_htod(&x).map_err(de)?;
    let mut out = s.alloc_zeros::<f32>(8 * N).map_err(de)?;
    let f = gpu.function("fem_fast_math_check").map_err(|e| e.to_string())?;
    let cfg = LaunchConfig { grid_dim: (N.div_ceil(BLOCK as usize) as u32, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
    unsafe { s.launch_builder(&f).arg(&N).arg(&dx).arg(&mut out).launch(cfg) }.map_err(de)?;
    let out = s.clone_dtoh(&out).map_err(de)?;
    let rel = 2f64.powi(-18);
    let abs = 2f64.powi(-19);
    for (i, &v) in x.iter().enumerate() {
        let v = v as f64;
        let o = &out[8 * i..8 * i + 8];
        let refs = [1.0 / v.sqrt(), 1.0 / v, v.sqrt(), v.exp2(), v.log2(), v.sin(), v.cos(), v.exp()];
        let names = ["rsqrt", "rcp", "sqrt", "exp2", "log2", "sin", "cos", "exp"];
        for k in 0..8 {
            let tol = if k == 4 || k == 5 || k == 6 { abs + rel * refs[k].abs() } else { rel * refs[k].abs() * 4.0 };
            close(names[k], i, o[k] as f64, refs[k], tol)?;
        }
    }
    Ok(())
}
