//! Gmsh's element types: the ones fem's solvers use by name, every other
//! fixed-size Lagrange type by its number, with node counts and shapes
//! from one table so that a file of any of them reads.

use super::{GResult, GmshError};

/// The element types read, with Gmsh's type numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementKind {
    /// One-node point (type 15).
    Point,
    /// Two-node line (type 1).
    Line2,
    /// Three-node second-order line (type 8).
    Line3,
    /// Three-node triangle (type 2).
    Triangle3,
    /// Six-node second-order triangle (type 9).
    Triangle6,
    /// Four-node quadrilateral (type 3).
    Quad4,
    /// Eight-node serendipity quadrilateral, no centre node (type 16).
    Quad8,
    /// Nine-node biquadratic quadrilateral (type 10).
    Quad9,
    /// Four-node tetrahedron (type 4).
    Tetrahedron4,
    /// Ten-node second-order tetrahedron (type 11).
    Tetrahedron10,
    /// Eight-node hexahedron (type 5).
    Hexahedron8,
    /// Twenty-node serendipity hexahedron (type 17).
    Hexahedron20,
    /// Twenty-seven-node triquadratic hexahedron (type 12).
    Hexahedron27,
    /// Six-node prism (type 6); read, described, used by no solver.
    Prism6,
    /// Five-node pyramid (type 7); read, described, used by no solver.
    Pyramid5,
    /// Any other type of the table (higher-order lines, triangles,
    /// quadrilaterals, tetrahedra, hexahedra, second-order prisms and
    /// pyramids), by its Gmsh number.
    Other(GmshType),
}

/// A Gmsh type number of the table that has no named [`ElementKind`];
/// made only by [`ElementKind::from_gmsh`], so it is always valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GmshType(u8);

impl GmshType {
    /// Gmsh's number of the type.
    pub fn number(self) -> i32 {
        self.0 as i32
    }
}

/// The shape of an element, which says where its corners are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// A point.
    Point,
    /// A line segment.
    Line,
    /// A triangle.
    Triangle,
    /// A quadrilateral.
    Quadrilateral,
    /// A tetrahedron.
    Tetrahedron,
    /// A hexahedron.
    Hexahedron,
    /// A triangular prism.
    Prism,
    /// A square pyramid.
    Pyramid,
}

impl Shape {
    /// Topological dimension.
    pub fn dim(self) -> usize {
        match self {
            Shape::Point => 0,
            Shape::Line => 1,
            Shape::Triangle | Shape::Quadrilateral => 2,
            _ => 3,
        }
    }

    /// Corner nodes, which come first in Gmsh's node ordering.
    pub fn corners(self) -> usize {
        match self {
            Shape::Point => 1,
            Shape::Line => 2,
            Shape::Triangle => 3,
            Shape::Quadrilateral | Shape::Tetrahedron => 4,
            Shape::Pyramid => 5,
            Shape::Prism => 6,
            Shape::Hexahedron => 8,
        }
    }
}

/// Gmsh type number, shape and node count of every type read.
const TABLE: &[(u8, Shape, usize)] = {
    use Shape::*;
    &[
        (15, Point, 1),
        (1, Line, 2), (8, Line, 3), (26, Line, 4), (27, Line, 5), (28, Line, 6),
        (2, Triangle, 3), (9, Triangle, 6), (20, Triangle, 9), (21, Triangle, 10), (22, Triangle, 12), (23, Triangle, 15), (24, Triangle, 15), (25, Triangle, 21),
        (3, Quadrilateral, 4), (16, Quadrilateral, 8), (10, Quadrilateral, 9), (36, Quadrilateral, 16), (37, Quadrilateral, 25), (38, Quadrilateral, 36),
        (4, Tetrahedron, 4), (11, Tetrahedron, 10), (29, Tetrahedron, 20), (30, Tetrahedron, 35), (31, Tetrahedron, 56),
        (5, Hexahedron, 8), (17, Hexahedron, 20), (12, Hexahedron, 27), (92, Hexahedron, 64), (93, Hexahedron, 125),
        (6, Prism, 6), (18, Prism, 15), (13, Prism, 18),
        (7, Pyramid, 5), (19, Pyramid, 13), (14, Pyramid, 14),
    ]
};

impl ElementKind {
    /// The kind of Gmsh element type number `t`; a type outside the table
    /// (polygons, polyhedra, orders above those listed) is
    /// [`GmshError::Unsupported`].
    pub fn from_gmsh(t: i32) -> GResult<Self> {
        use ElementKind::*;
        Ok(match t {
            15 => Point,
            1 => Line2,
            8 => Line3,
            2 => Triangle3,
            9 => Triangle6,
            3 => Quad4,
            16 => Quad8,
            10 => Quad9,
            4 => Tetrahedron4,
            11 => Tetrahedron10,
            5 => Hexahedron8,
            17 => Hexahedron20,
            12 => Hexahedron27,
            6 => Prism6,
            7 => Pyramid5,
            _ => match TABLE.iter().find(|e| e.0 as i32 == t) {
                Some(e) => Other(GmshType(e.0)),
                None => return Err(GmshError::Unsupported(format!("element type {t} is not supported (Lagrange points, lines, triangles, quadrilaterals, tetrahedra, hexahedra, prisms and pyramids of Gmsh's fixed-size types are)"))),
            },
        })
    }

    /// Gmsh's element type number, the inverse of [`ElementKind::from_gmsh`].
    pub fn gmsh_type(self) -> i32 {
        use ElementKind::*;
        match self {
            Point => 15,
            Line2 => 1,
            Line3 => 8,
            Triangle3 => 2,
            Triangle6 => 9,
            Quad4 => 3,
            Quad8 => 16,
            Quad9 => 10,
            Tetrahedron4 => 4,
            Tetrahedron10 => 11,
            Hexahedron8 => 5,
            Hexahedron20 => 17,
            Hexahedron27 => 12,
            Prism6 => 6,
            Pyramid5 => 7,
            Other(t) => t.number(),
        }
    }

    fn entry(self) -> &'static (u8, Shape, usize) {
        let t = self.gmsh_type();
        // Every kind is made from the table (named kinds by their numbers,
        // `Other` only by `from_gmsh`), so the lookup always finds it.
        TABLE.iter().find(|e| e.0 as i32 == t).unwrap_or(&TABLE[0])
    }

    /// The element's shape.
    pub fn shape(self) -> Shape {
        self.entry().1
    }

    /// Nodes per element, corners and higher-order nodes together.
    pub fn nodes(self) -> usize {
        self.entry().2
    }

    /// Topological dimension: 0 for points up to 3 for solids.
    pub fn dim(self) -> usize {
        self.shape().dim()
    }

    /// Corner nodes (the first ones in Gmsh's ordering).
    pub fn corners(self) -> usize {
        self.shape().corners()
    }

    /// A name for reports: the shape and the node count, as
    /// `Tetrahedron10`.
    pub fn name(self) -> String {
        let shape = match self.shape() {
            Shape::Quadrilateral => "Quad".to_string(),
            s => format!("{s:?}"),
        };
        if self.shape() == Shape::Point { shape } else { format!("{shape}{}", self.nodes()) }
    }

    /// Whether a solver of fem takes cells of this kind: triangles and
    /// tetrahedra of order 1 and 2 (the simplex solvers), quadrilaterals
    /// and hexahedra of order 1 and 2 (the Q_p solvers, by their corners).
    pub fn solver_cell(self) -> bool {
        use ElementKind::*;
        matches!(self, Triangle3 | Triangle6 | Tetrahedron4 | Tetrahedron10 | Quad4 | Quad8 | Quad9 | Hexahedron8 | Hexahedron20 | Hexahedron27)
    }

    /// Whether the kind is a triangle or tetrahedron.
    pub fn is_simplex(self) -> bool {
        matches!(self.shape(), Shape::Triangle | Shape::Tetrahedron)
    }
}
