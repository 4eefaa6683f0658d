//! What a user wants to know of a mesh file before solving on it: format,
//! counts per element type, physical groups, bounding box, and the
//! quality of its cells as the scaled Jacobian.

use super::{ElementKind, FileFormat, GmshMesh, Shape};
use serde::Serialize;

/// Elements of one type.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TypeCount {
    /// The type's name ([`ElementKind::name`]).
    pub kind: String,
    /// Gmsh's type number.
    pub gmsh_type: i32,
    /// Topological dimension.
    pub dim: usize,
    /// Elements of this type.
    pub count: usize,
    /// Whether a solver of fem takes cells of this type.
    pub solver_cell: bool,
}

/// One physical group.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupInfo {
    /// Dimension of its elements.
    pub dim: usize,
    /// Its tag.
    pub tag: i32,
    /// Its name, if `$PhysicalNames` gives one.
    pub name: Option<String>,
    /// Elements in the group.
    pub elements: usize,
}

/// The scaled Jacobian over the cells of the highest dimension: 1 for an
/// ideal cell (square, cube, equilateral simplex, right regular prism),
/// towards 0 for a degenerate one, negative for an inverted one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Quality {
    /// Smallest value over the cells measured.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Cells with a value at or below zero.
    pub inverted: usize,
    /// Cells measured (pyramids are not).
    pub cells: usize,
}

/// A summary of a mesh file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MeshInfo {
    /// Version and encoding.
    pub format: FileFormat,
    /// Highest element dimension.
    pub dim: usize,
    /// Nodes.
    pub nodes: usize,
    /// Elements per type, by dimension (highest first), then type number.
    pub element_types: Vec<TypeCount>,
    /// Physical groups, by dimension (highest first), then tag.
    pub physical_groups: Vec<GroupInfo>,
    /// Smallest coordinates of any node.
    pub bounding_box_min: [f64; 3],
    /// Largest coordinates of any node.
    pub bounding_box_max: [f64; 3],
    /// Quality of the cells of the highest dimension (`None` when none is
    /// measured).
    pub quality: Option<Quality>,
    /// Names of the cell types of the highest dimension no solver takes.
    pub unusable_cells: Vec<String>,
}

impl GmshMesh {
    /// The summary `fem mesh-info` prints.
    pub fn info(&self) -> MeshInfo {
        let dim = self.dim();
        let mut types: Vec<(ElementKind, usize)> = Vec::new();
        let mut groups: Vec<GroupInfo> = Vec::new();
        for b in &self.blocks {
            match types.iter_mut().find(|t| t.0 == b.kind) {
                Some(t) => t.1 += b.len(),
                None => types.push((b.kind, b.len())),
            }
            for &p in &b.physical {
                match groups.iter_mut().find(|g| g.dim == b.entity_dim && g.tag == p) {
                    Some(g) => g.elements += b.len(),
                    None => groups.push(GroupInfo { dim: b.entity_dim, tag: p, name: None, elements: b.len() }),
                }
            }
        }
        for (d, t, name) in &self.physical_names {
            match groups.iter_mut().find(|g| g.dim == *d && g.tag == *t) {
                Some(g) => g.name = Some(name.clone()),
                None => groups.push(GroupInfo { dim: *d, tag: *t, name: Some(name.clone()), elements: 0 }),
            }
        }
        types.sort_by_key(|t| (std::cmp::Reverse(t.0.dim()), t.0.gmsh_type()));
        groups.sort_by_key(|g| (std::cmp::Reverse(g.dim), g.tag));
        let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
        for x in &self.nodes {
            for a in 0..3 {
                lo[a] = lo[a].min(x[a]);
                hi[a] = hi[a].max(x[a]);
            }
        }
        if self.nodes.is_empty() {
            (lo, hi) = ([0.0; 3], [0.0; 3]);
        }
        let unusable_cells = types.iter().filter(|t| t.0.dim() == dim && dim >= 2 && !t.0.solver_cell()).map(|t| t.0.name()).collect();
        MeshInfo {
            format: self.format,
            dim,
            nodes: self.nodes.len(),
            element_types: types.iter().map(|&(k, count)| TypeCount { kind: k.name(), gmsh_type: k.gmsh_type(), dim: k.dim(), count, solver_cell: k.solver_cell() }).collect(),
            physical_groups: groups,
            bounding_box_min: lo,
            bounding_box_max: hi,
            quality: self.quality(),
            unusable_cells,
        }
    }

    /// The scaled Jacobian range of the cells of the highest dimension.
    /// 2D cells in a plane z = const take their sign from the z
    /// component (inverted cells show); 2D cells of a surface in 3D are
    /// measured in their own plane, unsigned.
    pub fn quality(&self) -> Option<Quality> {
        let dim = self.dim();
        let flat = self.nodes.iter().all(|x| x[2] == self.nodes.first().map_or(0.0, |y| y[2]));
        let mut q = Quality { min: f64::INFINITY, max: f64::NEG_INFINITY, inverted: 0, cells: 0 };
        for b in self.blocks.iter().filter(|b| b.kind.dim() == dim && dim >= 2) {
            for e in b.connectivity.chunks(b.kind.nodes()) {
                let x = |k: usize| self.nodes[e[k] as usize];
                let Some(s) = (if dim == 2 && !flat { surface_jacobian(b.kind.shape(), x) } else { scaled_jacobian(b.kind.shape(), x) }) else { continue };
                q.min = q.min.min(s);
                q.max = q.max.max(s);
                q.inverted += (s <= 0.0) as usize;
                q.cells += 1;
            }
        }
        (q.cells > 0).then_some(q)
    }
}

/// For each corner, the corners its edges go to, ordered so that the
/// determinant is positive on a well-oriented cell.
const TRIANGLE: [[usize; 2]; 3] = [[1, 2], [2, 0], [0, 1]];
const QUAD: [[usize; 2]; 4] = [[1, 3], [2, 0], [3, 1], [0, 2]];
const TET: [[usize; 3]; 4] = [[1, 2, 3], [2, 0, 3], [0, 1, 3], [1, 0, 2]];
const HEX: [[usize; 3]; 8] = [[1, 3, 4], [2, 0, 5], [3, 1, 6], [0, 2, 7], [7, 5, 0], [4, 6, 1], [5, 7, 2], [6, 4, 3]];
const PRISM: [[usize; 3]; 6] = [[1, 2, 3], [2, 0, 4], [0, 1, 5], [5, 4, 0], [3, 5, 1], [4, 3, 2]];

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn norm(a: [f64; 3]) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

fn det3(a: [f64; 3], b: [f64; 3], c: [f64; 3]) -> f64 {
    a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) + a[2] * (b[0] * c[1] - b[1] * c[0])
}

/// [`scaled_jacobian`] of a triangle or quadrilateral anywhere in 3D,
/// from the length of the cross product at each corner (so never
/// negative).
pub fn surface_jacobian(shape: Shape, x: impl Fn(usize) -> [f64; 3]) -> Option<f64> {
    let (table, scale): (&[[usize; 2]], f64) = match shape {
        Shape::Triangle => (&TRIANGLE, 2.0 / 3f64.sqrt()),
        Shape::Quadrilateral => (&QUAD, 1.0),
        _ => return None,
    };
    let s = table
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let (a, b) = (sub(x(t[0]), x(k)), sub(x(t[1]), x(k)));
            let c = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
            scale * norm(c) / (norm(a) * norm(b))
        })
        .fold(f64::INFINITY, nan_min);
    Some(if s.is_nan() { 0.0 } else { s.min(1.0 + 1e-12) })
}

/// The minimum, NaN if either is (a corner with a zero-length edge).
fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.min(b) }
}

/// The smallest over corners of the determinant of the unit edge vectors
/// there, scaled so that the ideal cell of the shape gives 1; `None` for
/// shapes not measured (pyramids).
pub fn scaled_jacobian(shape: Shape, x: impl Fn(usize) -> [f64; 3]) -> Option<f64> {
    let corner2 = |table: &[[usize; 2]], scale: f64| {
        table.iter().enumerate().map(|(k, t)| {
            let (a, b) = (sub(x(t[0]), x(k)), sub(x(t[1]), x(k)));
            scale * (a[0] * b[1] - a[1] * b[0]) / (norm(a) * norm(b))
        }).fold(f64::INFINITY, nan_min)
    };
    let corner3 = |table: &[[usize; 3]], scale: f64| {
        table.iter().enumerate().map(|(k, t)| {
            let (a, b, c) = (sub(x(t[0]), x(k)), sub(x(t[1]), x(k)), sub(x(t[2]), x(k)));
            scale * det3(a, b, c) / (norm(a) * norm(b) * norm(c))
        }).fold(f64::INFINITY, nan_min)
    };
    let s = match shape {
        Shape::Triangle => corner2(&TRIANGLE, 2.0 / 3f64.sqrt()),
        Shape::Quadrilateral => corner2(&QUAD, 1.0),
        Shape::Tetrahedron => corner3(&TET, 2f64.sqrt()),
        Shape::Hexahedron => corner3(&HEX, 1.0),
        Shape::Prism => corner3(&PRISM, 2.0 / 3f64.sqrt()),
        _ => return None,
    };
    // A degenerate corner gives 0/0: report it as 0, not NaN.
    Some(if s.is_nan() { 0.0 } else { s.min(1.0 + 1e-12) })
}

impl std::fmt::Display for MeshInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let enc = if self.format.binary { "binary" } else { "ASCII" };
        writeln!(f, "format: MSH {} {enc}", self.format.version)?;
        writeln!(f, "dimension: {}", self.dim)?;
        writeln!(f, "nodes: {}", self.nodes)?;
        writeln!(f, "elements:")?;
        for t in &self.element_types {
            writeln!(f, "  {:<14} (type {:>2}, {}D) {:>10}", t.kind, t.gmsh_type, t.dim, t.count)?;
        }
        if self.physical_groups.is_empty() {
            writeln!(f, "physical groups: none")?;
        } else {
            writeln!(f, "physical groups:")?;
            for g in &self.physical_groups {
                let name = g.name.as_deref().map_or(String::new(), |n| format!(" \"{n}\""));
                writeln!(f, "  {}D {:>5}{name}: {} elements", g.dim, g.tag, g.elements)?;
            }
        }
        let (lo, hi) = (self.bounding_box_min, self.bounding_box_max);
        writeln!(f, "bounding box: [{}, {}] x [{}, {}] x [{}, {}]", lo[0], hi[0], lo[1], hi[1], lo[2], hi[2])?;
        match &self.quality {
            Some(q) => writeln!(f, "quality (scaled Jacobian of {} {}D cells): min {:.4}, max {:.4}, {} inverted or degenerate", q.cells, self.dim, q.min, q.max, q.inverted)?,
            None => writeln!(f, "quality: no cells measured")?,
        }
        if !self.unusable_cells.is_empty() {
            writeln!(f, "no solver of fem takes the {}D cells {} (the Q_p solvers take quadrilaterals and hexahedra, the simplex solvers triangles and tetrahedra, of order 1 and 2)", self.dim, self.unusable_cells.join(", "))?;
        }
        Ok(())
    }
}
