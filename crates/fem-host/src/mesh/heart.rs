//! Tetrahedral meshes for cardiac simulations: a heart-like thick
//! ellipsoidal shell with fibre directions that rotate through the wall,
//! and the thin slab of the planar-wave test.
//!
//! Both come from a lattice of cubes, each split into the six Kuhn
//! tetrahedra (faces match between neighbours since the split follows the
//! lattice axes), keeping some cubes and mapping the vertices. The split
//! may be mirrored along any axis, the same mirror in every cube of a
//! half-space: a face between two cubes mirrored differently lies in the
//! plane of the mirror that differs, which leaves its diagonal unchanged,
//! so faces still match. The shell
//! keeps the cubes between two concentric cubes, below a base plane, and
//! maps them radially onto a prolate ellipsoidal shell: a closed apex with
//! no degenerate cells (unlike a polar grid) and an open base, like a left
//! ventricle. Cells are oriented in the lattice before mapping, so a map
//! that folded a cell would show as an inverted cell in validation rather
//! than be hidden by a reorientation.

use super::simplex::{kuhn_paths, SimplexMesh};
use crate::{Error, Result};

/// Cubes per direction of a lattice, the cubes kept and the axes along
/// which each cube's split is mirrored (bit a for axis a; the same for
/// every cube on one side of each mirror plane).
fn lattice_tets(n: [usize; 3], keep: impl Fn([usize; 3]) -> bool, mirror: impl Fn([usize; 3]) -> usize, map: impl Fn([f64; 3]) -> [f64; 3]) -> Result<SimplexMesh> {
    let idx = |i: usize, j: usize, k: usize| i + (n[0] + 1) * (j + (n[1] + 1) * k);
    let mut used = vec![u32::MAX; (n[0] + 1) * (n[1] + 1) * (n[2] + 1)];
    let mut lattice = Vec::new();
    let mut cells = Vec::new();
    let paths = kuhn_paths(3);
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                if !keep([i, j, k]) {
                    continue;
                }
                let flip = mirror([i, j, k]);
                for path in &paths {
                    let mut s = [0u32; 4];
                    for (slot, &w) in s.iter_mut().zip(path) {
                        let w = w ^ flip;
                        let v = idx(i + (w & 1), j + ((w >> 1) & 1), k + ((w >> 2) & 1));
                        if used[v] == u32::MAX {
                            used[v] = lattice.len() as u32;
                            lattice.push([(i + (w & 1)) as f64, (j + ((w >> 1) & 1)) as f64, (k + ((w >> 2) & 1)) as f64]);
                        }
                        *slot = used[v];
                    }
                    cells.push(s);
                }
            }
        }
    }
    if cells.is_empty() {
        return Err(Error::InvalidArgument("the lattice keeps no cells".into()));
    }
    if lattice.len() > u32::MAX as usize / 2 {
        return Err(Error::InvalidArgument(format!("{} vertices exceed the u32 index range", lattice.len())));
    }
    let mut mesh = SimplexMesh { dim: 3, coords: lattice, cells };
    for c in 0..mesh.cells.len() {
        if mesh.signed_volume(c) < 0.0 {
            mesh.cells[c].swap(0, 1);
        }
    }
    for x in mesh.coords.iter_mut() {
        *x = map(*x);
    }
    mesh.validate()?;
    Ok(mesh)
}

/// A box `[0, l₀] × [0, l₁] × [0, l₂]` of `n₀ × n₁ × n₂` cubes, six
/// tetrahedra each.
pub fn slab(lengths: [f64; 3], n: [usize; 3]) -> Result<SimplexMesh> {
    if n.contains(&0) || lengths.iter().any(|&l| !(l > 0.0)) {
        return Err(Error::InvalidArgument(format!("a slab needs positive lengths and divisions, got {lengths:?} and {n:?}")));
    }
    lattice_tets(n, |_| true, |_| 0, |p| core::array::from_fn(|a| p[a] * lengths[a] / n[a] as f64))
}

/// The heart-like shell.
#[derive(Clone, Debug)]
pub struct Heart {
    /// Lattice cubes per direction (a multiple of 4): the wall is n/4
    /// cells thick.
    pub n: usize,
    /// Inner and outer radius of the wall at the equator.
    pub radii: [f64; 2],
    /// Stretch of the long (z) axis.
    pub elongation: f64,
    /// Fibre helix angle at the inner (endocardial) surface in degrees; it
    /// turns linearly to its negative at the outer (epicardial) one.
    pub helix_degrees: f64,
}

/// A heart mesh with its fibres.
#[derive(Clone, Debug)]
pub struct HeartMesh {
    /// The tetrahedra of the shell, in the units of [`Heart::radii`]
    /// (millimetres for [`Heart::new`]).
    pub mesh: SimplexMesh,
    /// Unit fibre direction per cell.
    pub fibres: Vec<[f64; 3]>,
    /// Position through the wall per vertex: 0 inside, 1 outside.
    pub transmural: Vec<f64>,
}

/// Half-width of the inner lattice cube, as a fraction of the outer one.
const INNER: f64 = 0.5;
/// The base plane in lattice coordinates (−1 apex side, 1 top): cubes
/// above it are removed, opening the cavity.
const BASE: f64 = 0.5;

impl Heart {
    /// Dimensions in millimetres of a human left ventricle (15 and 25 mm
    /// radii, long axis 1.5 times longer) and ±60° helix angles.
    pub fn new(n: usize) -> Self {
        Self { n, radii: [15.0, 25.0], elongation: 1.5, helix_degrees: 60.0 }
    }

    /// The lattice size whose mesh has the node count closest to `nodes`.
    pub fn with_nodes(nodes: usize) -> Self {
        let count = |n: usize| {
            let h = 2.0 / n as f64;
            let mut c = 0usize;
            for k in 0..=n {
                let z = -1.0 + k as f64 * h;
                if z > BASE + 1e-12 {
                    continue;
                }
                for j in 0..=n {
                    for i in 0..=n {
                        let (x, y) = (-1.0 + i as f64 * h, -1.0 + j as f64 * h);
                        c += (x.abs().max(y.abs()).max(z.abs()) >= INNER - 1e-12) as usize;
                    }
                }
            }
            c
        };
        let (mut best, mut best_count) = (4, count(4));
        let mut n = 4;
        while n <= 1024 {
            let c = count(n);
            if c.abs_diff(nodes) < best_count.abs_diff(nodes) {
                (best, best_count) = (n, c);
            }
            if c > nodes {
                break;
            }
            n += 4;
        }
        Self::new(best)
    }

    fn check(&self) -> Result<()> {
        if self.n < 4 || self.n % 4 != 0 {
            return Err(Error::InvalidArgument(format!("the heart lattice needs a multiple of 4 cubes per direction, got {}", self.n)));
        }
        let [r0, r1] = self.radii;
        if !(r0 > 0.0 && r1 > r0 && self.elongation > 0.0) {
            return Err(Error::InvalidArgument(format!("heart radii {r0} < {r1} and elongation {} must be positive", self.elongation)));
        }
        Ok(())
    }

    /// Lattice point → (position in the shell, transmural coordinate).
    fn map(&self, p: [f64; 3]) -> ([f64; 3], f64) {
        let c: [f64; 3] = core::array::from_fn(|a| -1.0 + 2.0 * p[a] / self.n as f64);
        let inf = c.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let two = c.iter().map(|v| v * v).sum::<f64>().sqrt();
        let s = ((inf - INNER) / (1.0 - INNER)).clamp(0.0, 1.0);
        let r = self.radii[0] + s * (self.radii[1] - self.radii[0]);
        ([r * c[0] / two, r * c[1] / two, self.elongation * r * c[2] / two], s)
    }

    /// Meshes the shell and its fibres; [`Error::InvalidArgument`] unless
    /// `n` is a positive multiple of 4, 0 < inner radius < outer radius and
    /// the elongation is positive.
    pub fn build(&self) -> Result<HeartMesh> {
        self.check()?;
        let n = self.n;
        let h = 2.0 / n as f64;
        let keep = |q: [usize; 3]| {
            let c: [f64; 3] = core::array::from_fn(|a| -1.0 + (q[a] as f64 + 0.5) * h);
            c.iter().fold(0.0f64, |m, v| m.max(v.abs())) > INNER && c[2] < BASE
        };
        // Each octant's cubes put their Kuhn diagonal along the octant's
        // diagonal, which the radial map keeps straight: split across it,
        // the cubes by the lattice's corners flatten into slivers (shape
        // quality 1.4e-4 at n = 36, against at least 0.14 this way), whose
        // stiffness makes every solver's iterations grow several times.
        let mirror = |q: [usize; 3]| (0..3).filter(|&a| 2 * q[a] + 1 < n).map(|a| 1usize << a).sum::<usize>();
        let lattice = lattice_tets([n; 3], keep, mirror, |p| p)?;
        let transmural: Vec<f64> = lattice.coords.iter().map(|&p| self.map(p).1).collect();
        let fibres = lattice
            .cells
            .iter()
            .map(|cell| {
                let mut centre = [0.0; 3];
                for &v in cell {
                    for a in 0..3 {
                        centre[a] += 0.25 * lattice.coords[v as usize][a];
                    }
                }
                let (x, s) = self.map(centre);
                self.fibre(x, s)
            })
            .collect();
        let mut mesh = lattice;
        for x in mesh.coords.iter_mut() {
            *x = self.map(*x).0;
        }
        mesh.validate()?;
        Ok(HeartMesh { mesh, fibres, transmural })
    }

    /// The fibre at `x` with transmural coordinate `s`: the circumferential
    /// direction turned towards the long axis by the helix angle.
    fn fibre(&self, x: [f64; 3], s: f64) -> [f64; 3] {
        // Outward normal of the ellipsoid through x.
        let e2 = self.elongation * self.elongation;
        let normal = unit([x[0], x[1], x[2] / e2]);
        let along = |v: [f64; 3]| {
            let d = dot(v, normal);
            unit([v[0] - d * normal[0], v[1] - d * normal[1], v[2] - d * normal[2]])
        };
        // Long-axis direction in the tangent plane; at the apex, any.
        let long = if normal[2].abs() > 1.0 - 1e-9 { [1.0, 0.0, 0.0] } else { along([0.0, 0.0, 1.0]) };
        let circ = cross(long, normal);
        let angle = (self.helix_degrees * (1.0 - 2.0 * s)).to_radians();
        unit(core::array::from_fn(|a| angle.cos() * circ[a] + angle.sin() * long[a]))
    }
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

fn unit(v: [f64; 3]) -> [f64; 3] {
    let n = dot(v, v).sqrt();
    if n > 0.0 {
        [v[0] / n, v[1] / n, v[2] / n]
    } else {
        [1.0, 0.0, 0.0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facet_counts(mesh: &SimplexMesh) -> std::collections::HashMap<[u32; 3], usize> {
        let mut facets = std::collections::HashMap::new();
        for cell in &mesh.cells {
            for skip in 0..4 {
                let mut f = [0u32; 3];
                let mut k = 0;
                for (i, &v) in cell.iter().enumerate() {
                    if i != skip {
                        f[k] = v;
                        k += 1;
                    }
                }
                f.sort_unstable();
                *facets.entry(f).or_insert(0) += 1;
            }
        }
        facets
    }

    #[test]
    fn heart_is_a_conforming_positive_shell_with_unit_tangent_fibres() {
        let heart = Heart::new(8);
        let h = heart.build().unwrap();
        let mesh = &h.mesh;
        assert!(facet_counts(mesh).values().all(|&k| k <= 2), "non-conforming");
        // Every vertex lies between the two (stretched) radii.
        for x in &mesh.coords {
            let r = (x[0] * x[0] + x[1] * x[1] + (x[2] / heart.elongation).powi(2)).sqrt();
            assert!(r > heart.radii[0] - 1e-9 && r < heart.radii[1] + 1e-9, "{r}");
        }
        // The base is open: no vertex above the base plane's image, and the
        // inner and outer surfaces both reach the apex.
        let zmin = mesh.coords.iter().map(|x| x[2]).fold(f64::MAX, f64::min);
        assert!((zmin + heart.elongation * heart.radii[1]).abs() < 1e-9, "{zmin}");
        assert_eq!(h.fibres.len(), mesh.n_cells());
        assert!(h.fibres.iter().all(|f| (dot(*f, *f) - 1.0).abs() < 1e-12));
        // Fibres turn through the wall: near the inner surface they lean one
        // way along the long axis, near the outer the other.
        let (mut inner, mut outer) = (0.0, 0.0);
        for (c, cell) in mesh.cells.iter().enumerate() {
            let s: f64 = cell.iter().map(|&v| h.transmural[v as usize]).sum::<f64>() / 4.0;
            let x = cell.iter().fold([0.0; 3], |m, &v| core::array::from_fn(|a| m[a] + mesh.coords[v as usize][a]));
            if x[2] > -0.5 * heart.radii[0] && x[2] < 0.0 {
                let (xy, f) = ([x[0], x[1], 0.0], h.fibres[c]);
                // Sign of the long-axis component relative to the circumferential turn.
                let lean = f[2] * dot(cross([0.0, 0.0, 1.0], unit(xy)), f).signum();
                if s < 0.4 {
                    inner += lean;
                } else if s > 0.6 {
                    outer += lean;
                }
            }
        }
        assert!(inner * outer < 0.0, "helix does not turn: {inner} {outer}");
    }

    /// Volume over the longest edge cubed, scaled to 1 for the regular
    /// tetrahedron: near 0 for slivers.
    fn shape_quality(mesh: &SimplexMesh, c: usize) -> f64 {
        let x = mesh.cells[c].map(|v| mesh.coords[v as usize]);
        let mut longest = 0.0f64;
        for i in 0..4 {
            for j in i + 1..4 {
                longest = longest.max(dot(sub(x[i], x[j]), sub(x[i], x[j])).sqrt());
            }
        }
        // signed_volume is six volumes; the regular tetrahedron has 6√2 V = ℓ³.
        mesh.signed_volume(c) * 2f64.sqrt() / longest.powi(3)
    }

    fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
        core::array::from_fn(|k| a[k] - b[k])
    }

    #[test]
    fn heart_cells_are_no_slivers() {
        // Split along the lattice's own diagonal everywhere, the cubes by
        // the corners of the lattice flattened to a quality of 3.5e-3 at
        // n = 8 and 7.7e-4 at n = 16.
        for n in [8, 16] {
            let h = Heart::new(n).build().unwrap();
            let worst = (0..h.mesh.n_cells()).map(|c| shape_quality(&h.mesh, c)).fold(f64::MAX, f64::min);
            assert!(worst > 0.1, "n = {n}: a cell of shape quality {worst}");
        }
    }

    #[test]
    fn node_targets_pick_nearby_lattices_and_bad_sizes_are_refused() {
        let small = Heart::with_nodes(3000).build().unwrap();
        let n = small.mesh.coords.len();
        assert!((2000..4500).contains(&n), "{n}");
        assert!(Heart::new(6).build().is_err());
        assert!(slab([1.0, 1.0, 0.0], [2, 2, 2]).is_err());
        let s = slab([4.0, 1.0, 1.0], [4, 1, 1]).unwrap();
        let volume: f64 = (0..s.n_cells()).map(|c| s.signed_volume(c) / 6.0).sum();
        assert!((volume - 4.0).abs() < 1e-12);
        assert!(facet_counts(&s).values().all(|&k| k <= 2));
    }
}
