//! The element restriction: the map from element values (E-vector) to
//! global rows (L-vector), and its transpose. Gathering reads one global
//! value per element value; scattering sums every row's element values
//! through the transpose, in parallel over rows, with no atomics and in the
//! order a serial scatter would add them, so results do not depend on the
//! thread count. The BP operators and the Newton solver's CPU backend
//! (residual assembly, element-matrix products) both go through it.

use crate::CpuBackend;
use rayon::prelude::*;

/// A map entry that adds to no row (a fixed row's element value).
pub const SKIP: u32 = u32::MAX;

/// The element-to-row map and its transpose.
#[derive(Clone, Debug)]
pub struct Restriction {
    /// `map[k]`: the global row of element value `k` ([`SKIP`]: none).
    pub map: Vec<u32>,
    /// Row `r`'s element values are `items[start[r]..start[r + 1]]`, ascending.
    start: Vec<u32>,
    items: Vec<u32>,
}

/// The transpose of `map` over `rows` rows, by counting: row `r`'s
/// entries `k` (ascending) are `items[start[r]..start[r + 1]]`, and
/// entries at [`SKIP`] are in no row. Also the pattern of the matrix that
/// assembles by SpMV (`sparse::assembly::gather_matrix`).
pub fn transpose_map(map: &[u32], rows: usize) -> (Vec<u32>, Vec<u32>) {
    let mut start = vec![0u32; rows + 1];
    for &p in map.iter().filter(|&&p| p != SKIP) {
        start[p as usize + 1] += 1;
    }
    for r in 0..rows {
        start[r + 1] += start[r];
    }
    let mut next = start.clone();
    let mut items = vec![0u32; start[rows] as usize];
    for (k, &p) in map.iter().enumerate().filter(|(_, &p)| p != SKIP) {
        items[next[p as usize] as usize] = k as u32;
        next[p as usize] += 1;
    }
    (start, items)
}

impl Restriction {
    /// `map` over `rows` global rows; entries at [`SKIP`] add nowhere.
    pub fn new(map: &[u32], rows: usize) -> Self {
        let (start, items) = transpose_map(map, rows);
        Self { map: map.to_vec(), start, items }
    }

    /// Global rows: the length of an L-vector.
    pub fn rows(&self) -> usize {
        self.start.len() - 1
    }

    /// E-vector `xe` from L-vector `x` (zero where the map skips).
    pub fn gather(&self, cpu: &CpuBackend, x: &[f64], xe: &mut [f64]) {
        cpu.install(|| xe.par_iter_mut().zip(self.map.par_iter()).for_each(|(v, &g)| *v = if g == SKIP { 0.0 } else { x[g as usize] }));
    }

    /// `y[r] = Σ ye[k]` over row `r`'s element values.
    pub fn scatter(&self, cpu: &CpuBackend, ye: &[f64], y: &mut [f64]) {
        y.iter_mut().for_each(|v| *v = 0.0);
        self.add(cpu, ye, y);
    }

    /// `out[r] += Σ v[k]` over row `r`'s element values.
    pub fn add(&self, cpu: &CpuBackend, v: &[f64], out: &mut [f64]) {
        self.add_with(cpu, |k| v[k], out)
    }

    /// `out[r] += Σ entry(k)` over row `r`'s element values: entries
    /// computed where they are summed, each once.
    pub fn add_with(&self, cpu: &CpuBackend, entry: impl Fn(usize) -> f64 + Sync, out: &mut [f64]) {
        cpu.install(|| {
            out.par_iter_mut().enumerate().for_each(|(r, o)| {
                for &k in &self.items[self.start[r] as usize..self.start[r + 1] as usize] {
                    *o += entry(k as usize);
                }
            })
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scattering is the transpose of gathering: ⟨gather x, ye⟩ = ⟨x,
    /// scatter ye⟩ over a map with repeated rows, an empty row and skipped
    /// entries, whose element values read zero and add nowhere; sums come
    /// out in the serial scatter's order, bit for bit.
    #[test]
    fn scatter_is_the_transpose_of_gather() {
        let cpu = CpuBackend::new(Some(2)).unwrap();
        let map = [3, 0, SKIP, 3, 1, 0, SKIP, 3, 1];
        let r = Restriction::new(&map, 5);
        assert_eq!(r.rows(), 5);
        let x = [0.5, -1.25, 7.0, 2.0, 9.0];
        let ye: Vec<f64> = (0..map.len()).map(|k| 0.1 * k as f64 + 0.3).collect();
        let mut xe = vec![f64::NAN; map.len()];
        r.gather(&cpu, &x, &mut xe);
        assert_eq!((xe[2], xe[6], xe[0], xe[4]), (0.0, 0.0, 2.0, -1.25));
        let mut y = vec![f64::NAN; 5];
        r.scatter(&cpu, &ye, &mut y);
        let mut serial = [0.0; 5];
        for (k, &g) in map.iter().enumerate().filter(|(_, &g)| g != SKIP) {
            serial[g as usize] += ye[k];
        }
        assert_eq!(y, serial);
        assert_eq!(y[2], 0.0, "a row no element value reaches");
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f64>();
        assert!((dot(&xe, &ye) - dot(&x, &y)).abs() < 1e-14);
    }
}
