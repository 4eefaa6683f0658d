//! High-order output: VTK's arbitrary-order Lagrange quadrilaterals and
//! hexahedra (cell types 70 and 72), which ParaView draws curved and
//! subdivides for colouring, so a Q_p or spectral-element solution is seen
//! as the polynomial it is rather than as its vertex values.
//!
//! VTK places a Lagrange cell's nodes equispaced in the reference cell,
//! while fem's bases use Gauss–Lobatto–Legendre nodes; each cell's data is
//! therefore interpolated from its own nodes to the equispaced ones (exact
//! for the polynomial, so nothing is lost), and every cell gets its own
//! points, as MFEM does: fields stay continuous because the interpolants of
//! neighbours agree on shared faces. The node order inside a cell is VTK's
//! (corners, edges, faces, interior, `vtkHigherOrderHexahedron::PointIndexFromIJK`),
//! the file is VTK XML version 2.2, the one whose hexahedron order this is.

use super::vtk::{grid_vtu, write_text, Encoding, Field, Grid, VtkError};
use fem_core::lagrange::lagrange;
use std::path::Path;

const VTK_LAGRANGE_QUADRILATERAL: u8 = 70;
const VTK_LAGRANGE_HEXAHEDRON: u8 = 72;

/// Tensor-product cells of one order with their equispaced nodes, and the
/// interpolation from the solver's nodes to them.
#[derive(Clone, Debug)]
pub struct LagrangeGrid {
    /// 2 (quadrilaterals) or 3 (hexahedra).
    pub dim: usize,
    /// Polynomial order of every cell (nodes per direction − 1).
    pub order: usize,
    /// Every cell's (order + 1)^dim points, x fastest, cell after cell.
    pub points: Vec<[f64; 3]>,
    /// `interp[k·n + i]`: ℓᵢ of the solver's nodes at equispaced node k.
    interp: Vec<f64>,
}

impl LagrangeGrid {
    /// The grid of cells whose node coordinates `coords` (per cell, the
    /// tensor nodes `nodes_1d` ⊂ \[−1, 1\] x fastest) are given.
    pub fn new(dim: usize, nodes_1d: &[f64], coords: &[[f64; 3]]) -> Result<Self, VtkError> {
        let n = nodes_1d.len();
        if !(dim == 2 || dim == 3) || n < 2 {
            return Err(VtkError::Parse(format!("Lagrange cells need dimension 2 or 3 and order ≥ 1 (got {dim}D, {n} nodes)")));
        }
        let per_cell = n.pow(dim as u32);
        if coords.len() % per_cell != 0 {
            return Err(VtkError::FieldLength { name: "coordinates".into(), got: coords.len(), want: per_cell * coords.len().div_ceil(per_cell) });
        }
        let order = n - 1;
        let interp = (0..n).flat_map(|k| (0..n).map(move |i| (k, i))).map(|(k, i)| lagrange(nodes_1d, i, -1.0 + 2.0 * k as f64 / order as f64)).collect();
        let mut g = Self { dim, order, points: Vec::new(), interp };
        let xyz: Vec<Vec<f64>> = (0..3).map(|a| g.resample(&coords.iter().map(|x| x[a]).collect::<Vec<_>>())).collect::<Result<_, _>>()?;
        g.points = (0..coords.len()).map(|k| [xyz[0][k], xyz[1][k], xyz[2][k]]).collect();
        Ok(g)
    }

    /// Nodes per cell.
    pub fn nodes_per_cell(&self) -> usize {
        (self.order + 1).pow(self.dim as u32)
    }

    /// Cells.
    pub fn n_cells(&self) -> usize {
        self.points.len() / self.nodes_per_cell()
    }

    /// A field given at every cell's solver nodes (as the coordinates were)
    /// at the grid's equispaced nodes: the tensor-product interpolation,
    /// one direction at a time.
    pub fn resample(&self, values: &[f64]) -> Result<Vec<f64>, VtkError> {
        let (n, per_cell) = (self.order + 1, self.nodes_per_cell());
        if values.len() % per_cell != 0 || (!self.points.is_empty() && values.len() != self.points.len()) {
            return Err(VtkError::FieldLength { name: "nodal values".into(), got: values.len(), want: self.points.len() });
        }
        let mut out = values.to_vec();
        let mut tmp = vec![0.0; per_cell];
        for cell in out.chunks_mut(per_cell) {
            for axis in 0..self.dim {
                let stride = n.pow(axis as u32);
                for (idx, t) in tmp.iter_mut().enumerate() {
                    let (k, base) = ((idx / stride) % n, idx - ((idx / stride) % n) * stride);
                    *t = (0..n).map(|i| self.interp[k * n + i] * cell[base + i * stride]).sum();
                }
                cell.copy_from_slice(&tmp);
            }
        }
        Ok(out)
    }

    /// The `.vtu` text: `points` fields per grid point (from [`Self::resample`]),
    /// `cells` fields per cell.
    pub fn vtu(&self, points: &[Field], cells: &[Field], enc: Encoding) -> Result<String, VtkError> {
        let nv = self.nodes_per_cell();
        let order = [self.order; 3];
        let mut local = vec![0i64; nv];
        for (lex, slot) in (0..nv).map(|lex| (lex, vtk_index(self.dim, split(lex, self.order + 1), &order))) {
            local[slot] = lex as i64;
        }
        let conn = (0..self.n_cells()).flat_map(|c| local.iter().map(move |&l| (c * nv) as i64 + l)).collect();
        let kind = if self.dim == 2 { VTK_LAGRANGE_QUADRILATERAL } else { VTK_LAGRANGE_HEXAHEDRON };
        grid_vtu(&Grid { coords: &self.points, conn, nv, kind }, points, cells, enc)
    }

    /// Writes [`Self::vtu`] to `path` whole or not at all.
    pub fn write(&self, path: &Path, points: &[Field], cells: &[Field], enc: Encoding) -> Result<(), VtkError> {
        write_text(path, &self.vtu(points, cells, enc)?)
    }
}

/// Tensor index (x fastest) of lexicographic node `lex`, n nodes per direction.
fn split(lex: usize, n: usize) -> [usize; 3] {
    [lex % n, (lex / n) % n, lex / (n * n)]
}

/// VTK's position of node (i, j, k) in a Lagrange quadrilateral (k = 0) or
/// hexahedron of orders `o`: corners, then edges (along i at j = 0, along j
/// at i = oᵢ, along i at j = oⱼ, along j at i = 0; the same at k = o_k;
/// then the four edges along k), faces (i = 0, i = oᵢ, j = 0, j = oⱼ,
/// k = 0, k = o_k) and the interior, each running with increasing indices.
pub fn vtk_index(dim: usize, [i, j, k]: [usize; 3], o: &[usize; 3]) -> usize {
    let (ib, jb, kb) = (i == 0 || i == o[0], j == 0 || j == o[1], dim == 3 && (k == 0 || k == o[2]));
    let corner = |i: usize, j: usize| if i > 0 { if j > 0 { 2 } else { 1 } } else if j > 0 { 3 } else { 0 };
    let (ei, ej) = (o[0] - 1, o[1] - 1);
    if dim == 2 {
        return match (ib, jb) {
            (true, true) => corner(i, j),
            (false, true) => 4 + (i - 1) + if j > 0 { ei + ej } else { 0 },
            (true, false) => 4 + (j - 1) + if i > 0 { ei } else { 2 * ei + ej },
            (false, false) => 4 + 2 * (ei + ej) + (i - 1) + ei * (j - 1),
        };
    }
    let ek = o[2] - 1;
    let top = if k > 0 { 2 * (ei + ej) } else { 0 };
    match (ib as u8 + jb as u8 + kb as u8, ib, jb) {
        (3, ..) => corner(i, j) + if k > 0 { 4 } else { 0 },
        (2, false, _) => 8 + (i - 1) + if j > 0 { ei + ej } else { 0 } + top,
        (2, _, false) => 8 + (j - 1) + if i > 0 { ei } else { 2 * ei + ej } + top,
        (2, ..) => 8 + 4 * (ei + ej) + (k - 1) + ek * corner(i, j),
        (1, true, _) => 8 + 4 * (ei + ej + ek) + (j - 1) + ej * (k - 1) + if i > 0 { ej * ek } else { 0 },
        (1, _, true) => 8 + 4 * (ei + ej + ek) + 2 * ej * ek + (i - 1) + ei * (k - 1) + if j > 0 { ek * ei } else { 0 },
        (1, ..) => 8 + 4 * (ei + ej + ek) + 2 * (ej * ek + ek * ei) + (i - 1) + ei * (j - 1) + if k > 0 { ei * ej } else { 0 },
        _ => 8 + 4 * (ei + ej + ek) + 2 * (ej * ek + ek * ei + ei * ej) + (i - 1) + ei * ((j - 1) + ej * (k - 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fem_core::quadrature::gauss_lobatto;

    fn gll(n: usize) -> Vec<f64> {
        let (mut x, mut w) = (vec![0.0; n], vec![0.0; n]);
        gauss_lobatto(&mut x, &mut w);
        x
    }

    #[test]
    fn node_order_is_vtks_for_quadratic_cells() {
        let o = [2; 3];
        let quad: Vec<[usize; 3]> = vec![[0, 0, 0], [2, 0, 0], [2, 2, 0], [0, 2, 0], [1, 0, 0], [2, 1, 0], [1, 2, 0], [0, 1, 0], [1, 1, 0]];
        for (slot, ijk) in quad.iter().enumerate() {
            assert_eq!(vtk_index(2, *ijk, &o), slot, "{ijk:?}");
        }
        #[rustfmt::skip]
        let hex: Vec<[usize; 3]> = vec![
            [0, 0, 0], [2, 0, 0], [2, 2, 0], [0, 2, 0], [0, 0, 2], [2, 0, 2], [2, 2, 2], [0, 2, 2],
            [1, 0, 0], [2, 1, 0], [1, 2, 0], [0, 1, 0], [1, 0, 2], [2, 1, 2], [1, 2, 2], [0, 1, 2],
            [0, 0, 1], [2, 0, 1], [2, 2, 1], [0, 2, 1],
            [0, 1, 1], [2, 1, 1], [1, 0, 1], [1, 2, 1], [1, 1, 0], [1, 1, 2], [1, 1, 1],
        ];
        for (slot, ijk) in hex.iter().enumerate() {
            assert_eq!(vtk_index(3, *ijk, &o), slot, "{ijk:?}");
        }
    }

    #[test]
    fn node_order_is_a_permutation_up_to_order_ten() {
        for dim in [2, 3] {
            for p in 1..=10usize {
                let n = p + 1;
                let count = n.pow(dim as u32);
                let mut seen = vec![false; count];
                for lex in 0..count {
                    let s = vtk_index(dim, split(lex, n), &[p; 3]);
                    assert!(s < count && !seen[s], "{dim}D order {p}: slot {s} twice or out of range");
                    seen[s] = true;
                }
            }
        }
    }

    #[test]
    fn resampling_reproduces_polynomials_of_the_order_at_equispaced_nodes() {
        let p = 4;
        let nodes = gll(p + 1);
        // One curved cell: x = ξ + 0.1 η², y = η, z = ζ³/2 (degree ≤ 4 in each direction).
        let map = |[a, b, c]: [f64; 3]| [a + 0.1 * b * b, b, 0.5 * c * c * c];
        let lex = |n: &[f64], l: usize| {
            let t = split(l, n.len());
            [n[t[0]], n[t[1]], n[t[2]]]
        };
        let coords: Vec<[f64; 3]> = (0..(p + 1).pow(3)).map(|l| map(lex(&nodes, l))).collect();
        let g = LagrangeGrid::new(3, &nodes, &coords).unwrap();
        let equi: Vec<f64> = (0..=p).map(|k| -1.0 + 2.0 * k as f64 / p as f64).collect();
        for l in 0..(p + 1).pow(3) {
            let want = map(lex(&equi, l));
            for a in 0..3 {
                assert!((g.points[l][a] - want[a]).abs() < 1e-13, "point {l}");
            }
        }
        let q = |[a, b, c]: [f64; 3]| a.powi(4) * b - c.powi(3) + a * b * c;
        let vq: Vec<f64> = (0..(p + 1).pow(3)).map(|l| q(lex(&nodes, l))).collect();
        let rq = g.resample(&vq).unwrap();
        for l in 0..(p + 1).pow(3) {
            assert!((rq[l] - q(lex(&equi, l))).abs() < 1e-12, "value {l}");
        }
    }

    #[test]
    fn writes_a_grid_that_reads_back_and_rejects_bad_lengths() {
        let nodes = gll(3);
        let coords: Vec<[f64; 3]> = (0..18).map(|l| {
            let t = split(l % 9, 3);
            [nodes[t[0]] + 2.0 * (l / 9) as f64, nodes[t[1]], 0.0]
        }).collect();
        let g = LagrangeGrid::new(2, &nodes, &coords).unwrap();
        assert_eq!(g.n_cells(), 2);
        let u: Vec<f64> = g.points.iter().map(|x| x[0]).collect();
        let text = g.vtu(&[Field { name: "u", values: &u }], &[Field { name: "id", values: &[0.0, 1.0] }], Encoding::Ascii).unwrap();
        assert!(text.contains("version=\"2.2\"") && text.contains(">\n70 70\n<"));
        let back = super::super::vtk::read_fields(&text).unwrap();
        assert_eq!(back[0], ("u".to_string(), u));
        assert!(g.resample(&[1.0; 10]).is_err());
        assert!(LagrangeGrid::new(2, &nodes, &coords[..17]).is_err());
        assert!(LagrangeGrid::new(4, &nodes, &coords).is_err());
    }
}
