//! The benchmark domain of Geveler et al.: a rectangle with a circular
//! hole (2D) or a box with a spherical hole (3D), meshed by quadrilaterals
//! or hexahedra in rings around the hole (an O-grid; in 3D a cubed-sphere
//! shell), interior vertices randomly perturbed and cells shuffled so the
//! mesh is unstructured. Refinement projects new vertices on the hole's
//! boundary back onto the circle or sphere.

use super::refine::{refine_with, Refinement};
use super::{Cell, Mesh};
use crate::rng::SplitMix64;
use crate::Result;
use std::collections::HashMap;

/// The domain: `[-half[0], half[0]] × [-half[1], half[1]] (× [-half[2], half[2]])`
/// minus the ball of `radius` at the origin.
#[derive(Clone, Debug)]
pub struct HoleDomain {
    /// Space dimension: 2 (quadrilaterals around a disc) or 3 (hexahedra
    /// around a ball).
    pub dim: usize,
    /// Half-widths of the outer box per axis; components past `dim` are
    /// unused.
    pub half: [f64; 3],
    /// Radius of the hole, centred at the origin.
    pub radius: f64,
    /// Cells across the ring from the hole to the outer boundary.
    pub layers: usize,
    /// Seed of the interior-vertex perturbation and the cell shuffle.
    pub seed: u64,
}

impl HoleDomain {
    /// The benchmark: `[-2, 2] × [-1, 1]` minus the disc of radius 0.5 in
    /// 2D, `[-1, 1]³` minus the ball of radius 0.5 in 3D.
    pub fn benchmark(dim: usize) -> Self {
        let half = if dim == 2 { [2.0, 1.0, 0.0] } else { [1.0, 1.0, 1.0] };
        Self { dim, half, radius: 0.5, layers: if dim == 2 { 4 } else { 2 }, seed: 1 }
    }

    /// The coarse mesh.
    pub fn coarse(&self) -> Result<Mesh> {
        let mut mesh = if self.dim == 2 { self.ring_2d() } else { self.shell_3d() };
        self.perturb_and_shuffle(&mut mesh);
        mesh.validate()?;
        Ok(mesh)
    }

    /// Whether `x` lies on the hole's boundary.
    pub fn on_hole(&self, x: [f64; 3]) -> bool {
        (norm(x) - self.radius).abs() < 1e-9 * self.radius.max(1.0)
    }

    /// Whether a boundary point belongs to the hole (rather than the outer
    /// boundary): nearer the hole than the outer box. Nodes of straight
    /// cell edges between hole vertices lie just inside the circle.
    pub fn is_inner(&self, x: [f64; 3]) -> bool {
        let outer = (0..self.dim).map(|a| self.half[a]).fold(f64::MAX, f64::min);
        norm(x) < 0.5 * (self.radius + outer)
    }

    /// One uniform refinement, hole vertices projected onto the hole.
    pub fn refine(&self, mesh: &Mesh) -> Result<Refinement> {
        refine_with(mesh, |corners, x| self.place(mesh, corners, x))
    }

    /// Where a new vertex of `mesh` at the mean `x` of `corners` goes: onto
    /// the hole where all its corners lie on it.
    pub(crate) fn place(&self, mesh: &Mesh, corners: &[u32], x: [f64; 3]) -> [f64; 3] {
        if corners.iter().all(|&v| self.on_hole(mesh.coords[v as usize])) {
            let s = self.radius / norm(x);
            [x[0] * s, x[1] * s, x[2] * s]
        } else {
            x
        }
    }

    /// O-grid: the rectangle's perimeter divided into steps of length 0.5
    /// (its corners among them), each perimeter point joined to the hole
    /// point in its direction through `layers` cells.
    fn ring_2d(&self) -> Mesh {
        let (a, b) = (self.half[0], self.half[1]);
        let steps_x = (2.0 * a / 0.5).round() as usize;
        let steps_y = (2.0 * b / 0.5).round() as usize;
        // Counter-clockwise from (a, -b).
        let mut outer = Vec::new();
        for k in 0..steps_y {
            outer.push([a, -b + 2.0 * b * k as f64 / steps_y as f64]);
        }
        for k in 0..steps_x {
            outer.push([a - 2.0 * a * k as f64 / steps_x as f64, b]);
        }
        for k in 0..steps_y {
            outer.push([-a, b - 2.0 * b * k as f64 / steps_y as f64]);
        }
        for k in 0..steps_x {
            outer.push([-a + 2.0 * a * k as f64 / steps_x as f64, -b]);
        }
        let ns = outer.len();
        let nl = self.layers;
        let mut coords = Vec::with_capacity(ns * (nl + 1));
        for o in &outer {
            for l in 0..=nl {
                coords.push(self.on_ray([o[0], o[1], 0.0], l as f64 / nl as f64));
            }
        }
        let id = |s: usize, l: usize| ((s % ns) * (nl + 1) + l) as u32;
        let mut cells = Vec::new();
        for s in 0..ns {
            for l in 0..nl {
                // Reference axis 0 radial, axis 1 along the ring (counter-clockwise): positive orientation.
                cells.push([id(s, l), id(s, l + 1), id(s + 1, l), id(s + 1, l + 1), 0, 0, 0, 0]);
            }
        }
        Mesh { dim: 2, coords, cells }
    }

    /// Cubed-sphere shell: each face of the box split into 4 × 4 patches,
    /// each patch joined to the sphere through `layers` cells.
    fn shell_3d(&self) -> Mesh {
        let n = 2i32;
        let nl = self.layers;
        let mut ids: HashMap<([i32; 3], usize), u32> = HashMap::new();
        let mut coords = Vec::new();
        let mut vertex = |g: [i32; 3], l: usize, coords: &mut Vec<[f64; 3]>| -> u32 {
            *ids.entry((g, l)).or_insert_with(|| {
                let o = [0, 1, 2].map(|a| self.half[a] * g[a] as f64 / n as f64);
                coords.push(self.on_ray(o, l as f64 / nl as f64));
                (coords.len() - 1) as u32
            })
        };
        let mut cells: Vec<Cell> = Vec::new();
        for axis in 0..3 {
            for side in [-n, n] {
                let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
                for i in -n..n {
                    for j in -n..n {
                        for l in 0..nl {
                            let mut cell = [0u32; 8];
                            for (corner, slot) in cell.iter_mut().enumerate() {
                                let mut g = [0i32; 3];
                                g[axis] = side;
                                g[u] = i + (corner & 1) as i32;
                                g[v] = j + ((corner >> 1) & 1) as i32;
                                *slot = vertex(g, l + (corner >> 2), &mut coords);
                            }
                            cells.push(cell);
                        }
                    }
                }
            }
        }
        let cells = cells.into_iter().map(|c| orient(c, &coords)).collect();
        Mesh { dim: 3, coords, cells }
    }

    /// The point at fraction `t` of the ray from the hole to the outer
    /// point `o`, spaced geometrically (distance `r (|o|/r)^t`) so cells
    /// stay about as long radially as they are wide.
    fn on_ray(&self, o: [f64; 3], t: f64) -> [f64; 3] {
        let d = norm(o);
        let s = self.radius * (d / self.radius).powf(t) / d;
        [o[0] * s, o[1] * s, o[2] * s]
    }

    fn perturb_and_shuffle(&self, mesh: &mut Mesh) {
        let mut rng = SplitMix64::new(self.seed);
        // Vertices on neither boundary move by up to 10 % of the smallest ring spacing.
        let outer = (0..self.dim).map(|a| self.half[a]).fold(f64::MAX, f64::min);
        let step = self.radius * ((outer / self.radius).powf(1.0 / self.layers as f64) - 1.0);
        let bound = (0..self.dim).map(|a| self.half[a]).collect::<Vec<f64>>();
        for x in mesh.coords.iter_mut() {
            let on_outer = (0..self.dim).any(|a| (x[a].abs() - bound[a]).abs() < 1e-12);
            if on_outer || self.on_hole(*x) {
                continue;
            }
            for a in 0..self.dim {
                x[a] += 0.1 * step * (2.0 * rng.next_f64() - 1.0);
            }
        }
        let order = rng.permutation(mesh.cells.len());
        mesh.cells = order.iter().map(|&c| mesh.cells[c as usize]).collect();
    }
}

fn norm(x: [f64; 3]) -> f64 {
    (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]).sqrt()
}

/// `cell` with its tensor-order vertices flipped along axis 0 if its
/// Jacobian at the centre is negative.
fn orient(mut cell: Cell, coords: &[[f64; 3]]) -> Cell {
    let x = |v: usize| coords[cell[v] as usize];
    let edge = |a: usize, b: usize| [0, 1, 2].map(|k| x(b)[k] - x(a)[k]);
    let (e0, e1, e2) = (edge(0, 1), edge(0, 2), edge(0, 4));
    let det = e0[0] * (e1[1] * e2[2] - e1[2] * e2[1]) - e0[1] * (e1[0] * e2[2] - e1[2] * e2[0]) + e0[2] * (e1[0] * e2[1] - e1[1] * e2[0]);
    if det < 0.0 {
        for v in [0, 2, 4, 6] {
            cell.swap(v, v + 1);
        }
    }
    cell
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hole_meshes_are_valid_and_refine_onto_the_hole() {
        for dim in [2, 3] {
            let d = HoleDomain::benchmark(dim);
            let mut mesh = d.coarse().unwrap();
            let area = |m: &Mesh| -> usize { m.coords.iter().filter(|&&x| d.on_hole(x)).count() };
            let before = area(&mesh);
            for _ in 0..2 {
                mesh = d.refine(&mesh).unwrap().fine;
                mesh.validate().unwrap();
            }
            // Hole vertices double (2D) or about quadruple (3D) per refinement.
            let grown = if dim == 2 { 4 * before } else { 12 * before };
            assert!(area(&mesh) >= grown, "{dim}D: {} hole vertices from {before}", area(&mesh));
            assert!(mesh.coords.iter().all(|&x| norm(x) >= d.radius * (1.0 - 1e-9)));
        }
    }
}
