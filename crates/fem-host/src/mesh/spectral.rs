//! High-order hexahedral meshes of the unit cube for the tensor-product
//! operators: every element carries the coordinates of its (N + 1)³ GLL
//! nodes, so trilinear and curved (isoparametric) elements are handled
//! alike, and an element-to-node map into the globally numbered nodes.
//!
//! Local nodes are numbered `i + nq·(j + nq·k)` (i along x fastest), the
//! order the kernels' thread slices assume.

use crate::operator::csr::Csr;
use crate::operator::lattice::Kronecker;
use crate::rng::SplitMix64;
use crate::{Error, Result};
use rayon::prelude::*;
use fem_core::quadrature::gauss_lobatto;
use fem_core::tensor::MAX_DEGREE;

/// How the structured grid of the unit cube is deformed. Boundary nodes
/// stay on the boundary, so the mesh always fills the unit cube.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Deformation {
    /// Affine boxes.
    None,
    /// Interior vertices moved by up to `amplitude`·h in each direction,
    /// elements mapped trilinearly from their vertices.
    Trilinear {
        /// Largest move per coordinate, as a fraction of the element width
        /// h along that axis.
        amplitude: f64,
        /// Seed of the random moves.
        seed: u64,
    },
    /// Every node moved by `amplitude`·sin(πx)sin(πy)sin(πz) in each
    /// direction: curved elements of degree N.
    Curved {
        /// Peak displacement, in units of the cube's side.
        amplitude: f64,
    },
}

/// A high-order hexahedral mesh of the unit cube.
#[derive(Clone, Debug)]
pub struct SpectralBox {
    /// Polynomial degree N of the elements, 1..=`MAX_DEGREE`: (N + 1)³ GLL
    /// nodes each.
    pub degree: usize,
    /// Elements along x, y, z of the whole grid.
    pub cells: [usize; 3],
    /// Nodes (the L-vector length): the whole grid's, or a piece's.
    pub n_nodes: usize,
    /// `map[e·np + n]`: global node of local node `n` of element `e`.
    pub map: Vec<u32>,
    /// `coords[(e·3 + c)·np + n]`: coordinate `c` of local node `n`.
    pub coords: Vec<f64>,
}

/// Three factors of `elements`, as close to a cube as possible.
pub fn cells_for(elements: usize) -> Result<[usize; 3]> {
    if elements == 0 {
        return Err(Error::InvalidArgument("a mesh needs at least one element".into()));
    }
    let mut best = [1, 1, elements];
    for a in 1..=elements {
        if a * a * a > elements {
            break;
        }
        if elements % a != 0 {
            continue;
        }
        let rest = elements / a;
        for b in a..=rest {
            if b * b > rest {
                break;
            }
            if rest % b == 0 {
                best = [a, b, rest / b];
            }
        }
    }
    Ok(best)
}

/// The smallest near-cubic grid with at least `dofs` element-local nodes.
pub fn cells_for_dofs(dofs: usize, degree: usize) -> [usize; 3] {
    let np = (degree + 1).pow(3);
    let elements = dofs.div_ceil(np).max(1);
    let n = (elements as f64).cbrt().floor().max(1.0) as usize;
    [n, n, elements.div_ceil(n * n)]
}

impl SpectralBox {
    /// The mesh of `cells` elements of degree `degree`, deformed as asked;
    /// [`Error::InvalidArgument`] for a degree outside 1..=`MAX_DEGREE`, an
    /// empty direction or more nodes than 32-bit numbering reaches.
    pub fn new(degree: usize, cells: [usize; 3], deformation: Deformation) -> Result<Self> {
        let n_nodes = Self::check(degree, cells)?;
        let all: Vec<u32> = (0..cells.iter().product::<usize>() as u32).collect();
        Self::elements_of(degree, cells, deformation, &all, n_nodes, |g| g)
    }

    /// The nodes of the whole grid of `cells` elements of degree `degree`;
    /// an error for a degree outside 1..=`MAX_DEGREE`, an empty direction
    /// or more nodes than 32-bit numbering reaches.
    pub fn check(degree: usize, cells: [usize; 3]) -> Result<usize> {
        if !(1..=MAX_DEGREE).contains(&degree) {
            return Err(Error::InvalidArgument(format!("degree {degree} is outside 1..={MAX_DEGREE}")));
        }
        if cells.contains(&0) {
            return Err(Error::InvalidArgument("every direction needs at least one element".into()));
        }
        let np = (degree + 1).pow(3);
        let n_nodes = Self::lattice(degree, cells).iter().product::<usize>();
        if n_nodes > u32::MAX as usize || cells.iter().product::<usize>().checked_mul(np * 3).is_none() {
            return Err(Error::InvalidArgument(format!("{n_nodes} nodes exceed the 32-bit node numbering")));
        }
        // the restriction and the nodes' first places number element nodes in 32 bits too
        let element_nodes = cells.iter().product::<usize>() * np;
        if element_nodes > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!("{element_nodes} element nodes exceed the 32-bit numbering of the element-to-node map")));
        }
        Ok(n_nodes)
    }

    /// Nodes of the whole grid along x, y, z: the node `[i, j, k]` is
    /// numbered `i + nx·(j + ny·k)`.
    pub fn lattice(degree: usize, cells: [usize; 3]) -> [usize; 3] {
        cells.map(|c| c * degree + 1)
    }

    /// Only the elements `elements` (numbered x fastest in the whole grid
    /// of `cells`, which [`Self::check`] accepted) of the mesh [`Self::new`]
    /// builds, their nodes renumbered by `number` (a node of the whole
    /// grid → one of the `n_nodes` here): a rank's piece of the mesh, the
    /// same elements at the same places.
    pub fn elements_of(degree: usize, cells: [usize; 3], deformation: Deformation, elements: &[u32], n_nodes: usize, number: impl Fn(u32) -> u32 + Sync) -> Result<Self> {
        let nq = degree + 1;
        let np = nq * nq * nq;
        let global = Self::lattice(degree, cells);
        let (mut r, mut w) = (vec![0.0; nq], vec![0.0; nq]);
        gauss_lobatto(&mut r, &mut w);
        let vertices = vertex_grid(cells, deformation);
        let mut map = vec![0u32; elements.len() * np];
        let mut coords = vec![0.0; elements.len() * np * 3];
        map.par_chunks_mut(np).zip(coords.par_chunks_mut(3 * np)).zip(elements).for_each(|((map, coords), &e)| {
            let e = e as usize;
            let ec = [e % cells[0], (e / cells[0]) % cells[1], e / (cells[0] * cells[1])];
            let corners = element_corners(&vertices, cells, ec);
            for n in 0..np {
                let l = [n % nq, (n / nq) % nq, n / (nq * nq)];
                let g = [0, 1, 2].map(|a| ec[a] * degree + l[a]);
                map[n] = number((g[0] + global[0] * (g[1] + global[1] * g[2])) as u32);
                let mut x = trilinear(&corners, [r[l[0]], r[l[1]], r[l[2]]]);
                if let Deformation::Curved { amplitude } = deformation {
                    let bump = amplitude * x.iter().map(|&v| (std::f64::consts::PI * v).sin()).product::<f64>();
                    x = x.map(|v| v + bump);
                }
                for c in 0..3 {
                    coords[c * np + n] = x[c];
                }
            }
        });
        if map.iter().any(|&m| m as usize >= n_nodes) {
            return Err(Error::InvalidArgument(format!("an element's node is numbered past the piece's {n_nodes} nodes")));
        }
        Ok(Self { degree, cells, n_nodes, map, coords })
    }

    /// Number of elements: the product of [`cells`](Self::cells) for
    /// the whole mesh, fewer for a piece.
    pub fn elements(&self) -> usize {
        self.map.len() / self.nodes_per_element()
    }

    /// Nodes per element, (N + 1)³.
    pub fn nodes_per_element(&self) -> usize {
        (self.degree + 1).pow(3)
    }

    /// `f` at every global node (each node's value taken from one element
    /// that holds it).
    pub fn interpolate(&self, f: impl Fn([f64; 3]) -> f64 + Sync) -> Vec<f64> {
        let np = self.nodes_per_element();
        crate::space::lagrange::owner_slots(&self.map, self.n_nodes)
            .into_par_iter()
            .map(|pos| {
                let (e, n) = (pos as usize / np, pos as usize % np);
                f([0, 1, 2].map(|c| self.coords[(e * 3 + c) * np + n]))
            })
            .collect()
    }
}

/// Vertices of the (deformed) structured grid, x fastest.
fn vertex_grid(cells: [usize; 3], deformation: Deformation) -> Vec<[f64; 3]> {
    let nv = [cells[0] + 1, cells[1] + 1, cells[2] + 1];
    let mut rng = SplitMix64::new(match deformation {
        Deformation::Trilinear { seed, .. } => seed,
        _ => 0,
    });
    let mut v = Vec::with_capacity(nv.iter().product());
    for k in 0..nv[2] {
        for j in 0..nv[1] {
            for i in 0..nv[0] {
                let idx = [i, j, k];
                let mut x = [0, 1, 2].map(|a| idx[a] as f64 / cells[a] as f64);
                if let Deformation::Trilinear { amplitude, .. } = deformation {
                    for a in 0..3 {
                        let shift = amplitude * (2.0 * rng.next_f64() - 1.0) / cells[a] as f64;
                        if idx[a] > 0 && idx[a] < cells[a] {
                            x[a] += shift;
                        }
                    }
                }
                v.push(x);
            }
        }
    }
    v
}

/// The 8 corners of element `ec`, corner `c` at reference corner bits (x, y, z).
fn element_corners(vertices: &[[f64; 3]], cells: [usize; 3], ec: [usize; 3]) -> [[f64; 3]; 8] {
    let (nx, ny) = (cells[0] + 1, cells[1] + 1);
    core::array::from_fn(|c| {
        let (i, j, k) = (ec[0] + (c & 1), ec[1] + ((c >> 1) & 1), ec[2] + ((c >> 2) & 1));
        vertices[i + nx * (j + ny * k)]
    })
}

impl SpectralBox {
    /// The functions of degree `coarse` (1 ≤ `coarse` < N) on the same
    /// cells at this grid's nodes, from the nodes of
    /// [`SpectralBox::new`]`(coarse, cells, ..)`: p-multigrid's transfer
    /// from degree `coarse` to N, exact for the elements' trilinear
    /// geometry (degree 1: the Q1 functions of the vertices). The lattice
    /// makes it the tensor product of one 1D matrix an axis: the Lagrange
    /// polynomials of the coarse GLL points evaluated at the fine ones,
    /// element by element (one on an element's faces, where the fine
    /// node is a coarse one). The whole grid only: an error for a rank's
    /// piece.
    pub fn transfer_from(&self, coarse: usize) -> Result<Kronecker> {
        let lattice = Self::lattice(self.degree, self.cells);
        if self.n_nodes != lattice.iter().product::<usize>() || self.elements() != self.cells.iter().product::<usize>() {
            return Err(Error::InvalidArgument("the interpolation between degrees is of the whole grid, not a rank's piece".into()));
        }
        if coarse == 0 || coarse >= self.degree {
            return Err(Error::InvalidArgument(format!("a coarser degree than {} is 1 to {}, not {coarse}", self.degree, self.degree - 1)));
        }
        let n = self.degree;
        let (mut fine, mut w) = (vec![0.0; n + 1], vec![0.0; n + 1]);
        gauss_lobatto(&mut fine, &mut w);
        let (mut nodes, mut w) = (vec![0.0; coarse + 1], vec![0.0; coarse + 1]);
        gauss_lobatto(&mut nodes, &mut w);
        // per local fine node: the coarse local nodes with a nonzero weight
        let weights: Vec<Vec<(usize, f64)>> = fine
            .iter()
            .enumerate()
            .map(|(l, &x)| match l {
                0 => vec![(0, 1.0)],
                l if l == n => vec![(coarse, 1.0)],
                _ => (0..=coarse).map(|j| (j, fem_core::lagrange::lagrange(&nodes, j, x))).filter(|&(_, v)| v.abs() > 1e-14).collect(),
            })
            .collect();
        // along an axis of `cells` elements: fine node g lies in element
        // min(g / N, cells − 1), whose coarse nodes start at its index · c
        let axis = |cells: usize| -> Result<Csr<f64>> {
            let at = |g: usize| {
                let e = (g / n).min(cells - 1);
                (e * coarse, &weights[g - e * n])
            };
            Csr::from_row_fn(
                cells * n + 1,
                |g| at(g).1.len(),
                |g, cols, vals| {
                    let (first, w) = at(g);
                    for (m, &(j, v)) in w.iter().enumerate() {
                        (cols[m], vals[m]) = ((first + j) as u32, v);
                    }
                },
            )
        };
        let [x, y, z] = self.cells.map(axis);
        Kronecker::new([x?, y?, z?], Self::lattice(coarse, self.cells))
    }
}

/// The trilinear map of `corners` at reference point `r ∈ [−1, 1]³`.
fn trilinear(corners: &[[f64; 3]; 8], r: [f64; 3]) -> [f64; 3] {
    let mut x = [0.0; 3];
    for (c, p) in corners.iter().enumerate() {
        let w: f64 = (0..3).map(|a| if (c >> a) & 1 == 1 { 0.5 * (1.0 + r[a]) } else { 0.5 * (1.0 - r[a]) }).product();
        for a in 0..3 {
            x[a] += w * p[a];
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_and_numbering() {
        assert_eq!(cells_for(512).unwrap(), [8, 8, 8]);
        assert_eq!(cells_for(4096).unwrap(), [16, 16, 16]);
        assert_eq!(cells_for(12).unwrap(), [2, 2, 3]);
        assert_eq!(cells_for(7).unwrap(), [1, 1, 7]);
        assert!(cells_for(0).is_err());
        let m = SpectralBox::new(2, [2, 1, 1], Deformation::None).unwrap();
        assert_eq!(m.n_nodes, 5 * 3 * 3);
        // the shared face: node (2, j, k) of element 0 is node (0, j, k) of element 1
        for jk in 0..9 {
            assert_eq!(m.map[2 + 3 * jk], m.map[27 + 3 * jk]);
        }
        let mut seen = m.map.clone();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), m.n_nodes);
        assert!(SpectralBox::new(16, [1, 1, 1], Deformation::None).is_err());
    }

    /// Degree c interpolated to degree N on the same cells is exact for
    /// what both hold: on trilinear cells the nodes' own coordinates
    /// (x + 2y − z here), on affine cells Q_c in x, y, z; every row's
    /// weights sum to 1, the transposed product is the adjoint, and a
    /// rank's piece or a degree not below N is refused.
    #[test]
    fn transfer_between_degrees_is_exact() {
        use crate::operator::lattice::CpuKronecker;
        use crate::operator::LinearOperator;
        let cpu = crate::CpuBackend::new(Some(2)).unwrap();
        let cells = [3, 2, 4];
        let d = Deformation::Trilinear { amplitude: 0.2, seed: 9 };
        let apply = |k: &Kronecker, x: &[f64]| {
            let mut y = vec![0.0; k.n_rows()];
            CpuKronecker::new(k.clone()).apply(&cpu, &x.to_vec(), &mut y).unwrap();
            y
        };
        let max_diff = |a: &[f64], b: &[f64]| a.iter().zip(b).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        for (n, c) in [(2, 1), (3, 1), (5, 1), (4, 2), (7, 4), (8, 3)] {
            let (fine, coarse) = (SpectralBox::new(n, cells, d).unwrap(), SpectralBox::new(c, cells, d).unwrap());
            let p = fine.transfer_from(c).unwrap();
            assert_eq!((p.n_rows(), p.n_cols()), (fine.n_nodes, coarse.n_nodes), "N = {n} from {c}");
            let f = |x: [f64; 3]| x[0] + 2.0 * x[1] - x[2];
            let err = max_diff(&apply(&p, &coarse.interpolate(f)), &fine.interpolate(f));
            assert!(err < 1e-13, "N = {n} from {c}: {err:e}");
            let sums = apply(&p, &vec![1.0; coarse.n_nodes]);
            assert!(max_diff(&sums, &vec![1.0; fine.n_nodes]) < 1e-13, "N = {n} from {c}: rows do not sum to 1");
            // ⟨P x, y⟩ = ⟨x, Pᵀ y⟩
            let mut rng = SplitMix64::new(n as u64);
            let x: Vec<f64> = (0..coarse.n_nodes).map(|_| rng.next_f64() - 0.5).collect();
            let y: Vec<f64> = (0..fine.n_nodes).map(|_| rng.next_f64() - 0.5).collect();
            let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(a, b)| a * b).sum::<f64>();
            let (left, right) = (dot(&apply(&p, &x), &y), dot(&x, &apply(&p.transpose(), &y)));
            assert!((left - right).abs() < 1e-12 * left.abs().max(1.0), "N = {n} from {c}: {left} against {right}");
            // on affine cells, Q_c in x, y, z: x^c + y^c z
            let (fa, ca) = (SpectralBox::new(n, cells, Deformation::None).unwrap(), SpectralBox::new(c, cells, Deformation::None).unwrap());
            let g = |x: [f64; 3]| x[0].powi(c as i32) + x[1].powi(c as i32) * x[2];
            let err = max_diff(&apply(&fa.transfer_from(c).unwrap(), &ca.interpolate(g)), &fa.interpolate(g));
            assert!(err < 1e-12, "N = {n} from {c}, affine, degree {c}: {err:e}");
        }
        let piece = SpectralBox::elements_of(2, [2, 1, 1], Deformation::None, &[0], 27, |g| g % 27).unwrap();
        assert!(piece.transfer_from(1).is_err());
        assert!(SpectralBox::new(3, cells, d).unwrap().transfer_from(3).is_err());
    }
}
