//! Gmsh `.msh` files, format 4.1, ASCII and binary: nodes, elements of the
//! common Lagrange types (first and second order points, lines, triangles,
//! quadrilaterals, tetrahedra, hexahedra), physical groups and their names.
//!
//! Every count the file declares is checked against the bytes left before
//! anything is allocated, so a hostile header cannot make the reader
//! reserve gigabytes; every defect is an error naming the section and,
//! in ASCII files, the line.

use crate::mesh::Mesh;
use std::collections::HashMap;
use std::path::Path;
use thiserror::Error;

/// Why a `.msh` file could not be read, converted or written.
#[derive(Debug, Error)]
pub enum GmshError {
    /// The file breaks the format: a malformed or truncated section, or a
    /// count larger than the bytes left.
    #[error("{section}, line {line}: {message}")]
    Syntax {
        /// The section being read (`header`, `$Nodes`, `$Elements`, ...).
        section: String,
        /// 1-based line of the defect; meaningful in ASCII files only.
        line: usize,
        /// What is wrong there.
        message: String,
    },
    /// A valid file this reader does not take (format other than 4.1,
    /// big-endian data, prisms, pyramids, parametric nodes), or cells the
    /// requested mesh kind cannot hold.
    #[error("{0}")]
    Unsupported(String),
    /// The file parses but does not describe a usable mesh (no sections, no
    /// 2D or 3D elements, undefined nodes, unknown physical groups, cells
    /// that fail validation).
    #[error("invalid mesh: {0}")]
    Invalid(String),
    /// The file could not be read, or not written and renamed into place.
    #[error("cannot read or write {path}: {source}")]
    Io {
        /// The file concerned.
        path: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}

type GResult<T> = std::result::Result<T, GmshError>;

/// The element types read, with Gmsh's type numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
}

impl ElementKind {
    /// The kind of Gmsh element type number `t`; any other type (prisms,
    /// pyramids, orders above 2) is [`GmshError::Unsupported`].
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
            6 | 13 | 18 => return Err(GmshError::Unsupported(format!("element type {t} (prism) is not supported"))),
            7 | 14 | 19 => return Err(GmshError::Unsupported(format!("element type {t} (pyramid) is not supported"))),
            _ => return Err(GmshError::Unsupported(format!("element type {t} is not supported (points, lines, triangles, quadrilaterals, tetrahedra and hexahedra of order 1 and 2 are)"))),
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
        }
    }

    /// Nodes per element, corners and higher-order nodes together.
    pub fn nodes(self) -> usize {
        use ElementKind::*;
        match self {
            Point => 1,
            Line2 => 2,
            Line3 => 3,
            Triangle3 => 3,
            Triangle6 => 6,
            Quad4 => 4,
            Quad8 => 8,
            Quad9 => 9,
            Tetrahedron4 => 4,
            Tetrahedron10 => 10,
            Hexahedron8 => 8,
            Hexahedron20 => 20,
            Hexahedron27 => 27,
        }
    }

    /// Topological dimension: 0 for points up to 3 for solids.
    pub fn dim(self) -> usize {
        use ElementKind::*;
        match self {
            Point => 0,
            Line2 | Line3 => 1,
            Triangle3 | Triangle6 | Quad4 | Quad8 | Quad9 => 2,
            _ => 3,
        }
    }

    /// Corner nodes (the first ones in Gmsh's ordering).
    pub fn corners(self) -> usize {
        use ElementKind::*;
        match self {
            Point => 1,
            Line2 | Line3 => 2,
            Triangle3 | Triangle6 => 3,
            Quad4 | Quad8 | Quad9 | Tetrahedron4 | Tetrahedron10 => 4,
            _ => 8,
        }
    }
}

/// The elements of one entity of one type.
#[derive(Clone, Debug, PartialEq)]
pub struct ElementBlock {
    /// Element type of every element in the block.
    pub kind: ElementKind,
    /// Dimension of the geometric entity the block belongs to (the
    /// elements' own dimension).
    pub entity_dim: usize,
    /// Gmsh's tag of that entity; with `entity_dim` it names the entity.
    pub entity_tag: i32,
    /// Physical groups of the entity.
    pub physical: Vec<i32>,
    /// Node indices (into [`GmshMesh::nodes`]), `kind.nodes()` per element.
    pub connectivity: Vec<u32>,
}

impl ElementBlock {
    /// Number of elements in the block.
    pub fn len(&self) -> usize {
        self.connectivity.len() / self.kind.nodes()
    }

    /// Whether the block holds no elements.
    pub fn is_empty(&self) -> bool {
        self.connectivity.is_empty()
    }
}

/// A mesh as the file holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct GmshMesh {
    /// Node coordinates x, y, z in file order (Gmsh writes all three, in 2D
    /// too).
    pub nodes: Vec<[f64; 3]>,
    /// Gmsh's tag of each node.
    pub node_tags: Vec<u64>,
    /// Element blocks of every dimension, in file order.
    pub blocks: Vec<ElementBlock>,
    /// (dimension, tag) → name.
    pub physical_names: Vec<(usize, i32, String)>,
}

/// Reads a `.msh` file.
pub fn read_path(path: &Path) -> GResult<GmshMesh> {
    let data = std::fs::read(path).map_err(|source| GmshError::Io { path: path.display().to_string(), source })?;
    read(&data)
}

/// A cursor over the file: ASCII tokens or binary values.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    binary: bool,
    section: &'static str,
}

impl<'a> Cursor<'a> {
    fn line(&self) -> usize {
        1 + self.data[..self.pos.min(self.data.len())].iter().filter(|&&b| b == b'\n').count()
    }

    fn err<T>(&self, message: impl Into<String>) -> GResult<T> {
        Err(GmshError::Syntax { section: self.section.into(), line: self.line(), message: message.into() })
    }

    fn left(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    fn skip_space(&mut self) {
        while self.pos < self.data.len() && self.data[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    /// The next whitespace-delimited ASCII token.
    fn word(&mut self) -> GResult<&'a str> {
        self.skip_space();
        let start = self.pos;
        while self.pos < self.data.len() && !self.data[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        if start == self.pos {
            return self.err("unexpected end of file");
        }
        std::str::from_utf8(&self.data[start..self.pos]).or_else(|_| self.err("a token that is not text"))
    }

    fn parse<T: std::str::FromStr>(&mut self, what: &str) -> GResult<T> {
        let w = self.word()?;
        w.parse().or_else(|_| self.err(format!("expected {what}, found `{w}`")))
    }

    fn bytes<const N: usize>(&mut self) -> GResult<[u8; N]> {
        if self.left() < N {
            return self.err("unexpected end of binary data");
        }
        let b: [u8; N] = self.data[self.pos..self.pos + N].try_into().expect("length checked");
        self.pos += N;
        Ok(b)
    }

    fn int(&mut self) -> GResult<i32> {
        if self.binary { Ok(i32::from_le_bytes(self.bytes()?)) } else { self.parse("an integer") }
    }

    fn size(&mut self) -> GResult<u64> {
        if self.binary { Ok(u64::from_le_bytes(self.bytes()?)) } else { self.parse("a count") }
    }

    fn real(&mut self) -> GResult<f64> {
        let v = if self.binary { f64::from_le_bytes(self.bytes()?) } else { self.parse("a number")? };
        if v.is_finite() { Ok(v) } else { self.err("a coordinate that is not finite") }
    }

    /// A count of items of at least `numbers` numbers each, checked against
    /// the bytes left (a number takes at least 4 bytes in binary, 2 in
    /// ASCII with its separator).
    fn count(&mut self, what: &str, numbers: usize) -> GResult<usize> {
        let n = self.size()?;
        let min_bytes = numbers as u64 * if self.binary { 4 } else { 2 };
        if n.saturating_mul(min_bytes) > self.left() as u64 {
            return self.err(format!("declares {n} {what}, more than the {} bytes left can hold", self.left()));
        }
        Ok(n as usize)
    }

    fn expect_end(&mut self, name: &str) -> GResult<()> {
        let w = self.word()?;
        if w != format!("$End{name}") {
            return self.err(format!("expected $End{name}, found `{w}`"));
        }
        Ok(())
    }

    /// Skips an unknown section up to its `$End` marker.
    fn skip_section(&mut self, name: &str) -> GResult<()> {
        let end = format!("$End{name}");
        let hay = &self.data[self.pos..];
        match hay.windows(end.len()).position(|w| w == end.as_bytes()) {
            Some(i) => {
                self.pos += i + end.len();
                Ok(())
            }
            None => self.err(format!("section ${name} has no {end}")),
        }
    }
}

/// Parses a `.msh` 4.1 file from its bytes.
pub fn read(data: &[u8]) -> GResult<GmshMesh> {
    let mut c = Cursor { data, pos: 0, binary: false, section: "header" };
    c.skip_space();
    if c.left() == 0 {
        return Err(GmshError::Invalid("the file is empty".into()));
    }
    let w = c.word()?;
    if w != "$MeshFormat" {
        return c.err(format!("the file must start with $MeshFormat, not `{w}`"));
    }
    c.section = "$MeshFormat";
    let version = c.word()?;
    if version != "4.1" {
        return Err(GmshError::Unsupported(format!("MSH format version {version} is not supported (4.1 is; re-export with Gmsh's -format msh41)")));
    }
    let file_type: i32 = c.parse("the file type")?;
    let size: i32 = c.parse("the data size")?;
    if size != 8 {
        return Err(GmshError::Unsupported(format!("data size {size} is not supported (8 is)")));
    }
    let binary = match file_type {
        0 => false,
        1 => {
            c.binary = true;
            skip_newline(&mut c);
            if c.int()? != 1 {
                return Err(GmshError::Unsupported("big-endian binary files are not supported".into()));
            }
            c.binary = false;
            true
        }
        t => return c.err(format!("file type {t} is neither 0 (ASCII) nor 1 (binary)")),
    };
    c.expect_end("MeshFormat")?;
    let mesh = GmshMesh { nodes: Vec::new(), node_tags: Vec::new(), blocks: Vec::new(), physical_names: Vec::new() };
    read_sections(c, mesh, HashMap::new(), Vec::new(), binary)
}

fn read_sections(mut c: Cursor, mut mesh: GmshMesh, mut entities: HashMap<(usize, i32), Vec<i32>>, mut raw: Vec<(ElementKind, usize, i32, Vec<u64>)>, binary: bool) -> GResult<GmshMesh> {
    let (mut have_nodes, mut have_elements) = (false, false);
    loop {
        c.binary = false;
        c.skip_space();
        if c.left() == 0 {
            break;
        }
        let w = c.word()?;
        let Some(name) = w.strip_prefix('$') else { return c.err(format!("expected a section, found `{w}`")) };
        match name {
            "PhysicalNames" => {
                c.section = "$PhysicalNames";
                let n: usize = c.parse("a count")?;
                if n > c.left() / 4 {
                    return c.err(format!("declares {n} names, more than the file can hold"));
                }
                for _ in 0..n {
                    let dim: usize = c.parse("a dimension")?;
                    let tag: i32 = c.parse("a tag")?;
                    c.skip_space();
                    let rest = &c.data[c.pos..];
                    let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
                    let name = String::from_utf8_lossy(&rest[..end]).trim().trim_matches('"').to_string();
                    c.pos += end;
                    mesh.physical_names.push((dim, tag, name));
                }
                c.expect_end("PhysicalNames")?;
            }
            "Entities" => {
                c.section = "$Entities";
                c.binary = binary;
                skip_newline(&mut c);
                read_entities(&mut c, &mut entities)?;
                c.binary = false;
                c.expect_end("Entities")?;
            }
            "Nodes" => {
                c.section = "$Nodes";
                c.binary = binary;
                skip_newline(&mut c);
                read_nodes(&mut c, &mut mesh)?;
                c.binary = false;
                c.expect_end("Nodes")?;
                have_nodes = true;
            }
            "Elements" => {
                c.section = "$Elements";
                c.binary = binary;
                skip_newline(&mut c);
                read_elements(&mut c, &mut raw)?;
                c.binary = false;
                c.expect_end("Elements")?;
                have_elements = true;
            }
            other => {
                c.section = "unknown section";
                c.skip_section(other)?;
            }
        }
    }
    if !have_nodes || !have_elements {
        return Err(GmshError::Invalid("the file lacks a $Nodes or $Elements section".into()));
    }
    let index: HashMap<u64, u32> = mesh.node_tags.iter().enumerate().map(|(i, &t)| (t, i as u32)).collect();
    for (kind, dim, tag, tags) in raw {
        let connectivity = tags
            .iter()
            .map(|t| index.get(t).copied().ok_or_else(|| GmshError::Invalid(format!("an element of entity ({dim}, {tag}) refers to node {t}, which the file does not define"))))
            .collect::<GResult<Vec<u32>>>()?;
        let physical = entities.get(&(dim, tag)).cloned().unwrap_or_default();
        mesh.blocks.push(ElementBlock { kind, entity_dim: dim, entity_tag: tag, physical, connectivity });
    }
    Ok(mesh)
}

/// Binary data starts after the newline that ends the section's name.
fn skip_newline(c: &mut Cursor) {
    if c.binary && c.data.get(c.pos) == Some(&b'\n') {
        c.pos += 1;
    } else if c.binary && c.data.get(c.pos) == Some(&b'\r') {
        c.pos += if c.data.get(c.pos + 1) == Some(&b'\n') { 2 } else { 1 };
    }
}

fn read_entities(c: &mut Cursor, entities: &mut HashMap<(usize, i32), Vec<i32>>) -> GResult<()> {
    let counts = [c.size()?, c.size()?, c.size()?, c.size()?];
    for (dim, &n) in counts.iter().enumerate() {
        if n.saturating_mul(8) > c.left() as u64 {
            return c.err(format!("declares {n} entities of dimension {dim}, more than the file can hold"));
        }
        for _ in 0..n {
            let tag = c.int()?;
            let reals = if dim == 0 { 3 } else { 6 };
            for _ in 0..reals {
                c.real()?;
            }
            let np = c.count("physical tags", 1)?;
            let physical = (0..np).map(|_| c.int()).collect::<GResult<Vec<i32>>>()?;
            if dim > 0 {
                let nb = c.count("bounding entities", 1)?;
                for _ in 0..nb {
                    c.int()?;
                }
            }
            entities.insert((dim, tag), physical);
        }
    }
    Ok(())
}

fn read_nodes(c: &mut Cursor, mesh: &mut GmshMesh) -> GResult<()> {
    let blocks = c.count("node blocks", 4)?;
    let total = c.count("nodes", 4)?;
    c.size()?;
    c.size()?;
    mesh.nodes.reserve(total);
    mesh.node_tags.reserve(total);
    for _ in 0..blocks {
        let _dim = c.int()?;
        let _tag = c.int()?;
        let parametric = c.int()?;
        if parametric != 0 {
            return Err(GmshError::Unsupported("parametric node coordinates are not supported".into()));
        }
        let n = c.count("nodes in a block", 4)?;
        let first = mesh.node_tags.len();
        for _ in 0..n {
            mesh.node_tags.push(c.size()?);
        }
        for _ in 0..n {
            mesh.nodes.push([c.real()?, c.real()?, c.real()?]);
        }
        if mesh.node_tags.len() - first != n || mesh.nodes.len() > total {
            return c.err(format!("the blocks hold more than the {total} nodes declared"));
        }
    }
    if mesh.nodes.len() != total {
        return c.err(format!("{} nodes read, {total} declared", mesh.nodes.len()));
    }
    Ok(())
}

fn read_elements(c: &mut Cursor, raw: &mut Vec<(ElementKind, usize, i32, Vec<u64>)>) -> GResult<()> {
    let blocks = c.count("element blocks", 4)?;
    let total = c.count("elements", 2)?;
    c.size()?;
    c.size()?;
    let mut read = 0usize;
    for _ in 0..blocks {
        let dim = c.int()?;
        let tag = c.int()?;
        let kind = ElementKind::from_gmsh(c.int()?)?;
        if dim < 0 || dim as usize != kind.dim() {
            return c.err(format!("a block of entity dimension {dim} holds {kind:?} elements"));
        }
        let n = c.count("elements in a block", 1 + kind.nodes())?;
        let mut tags = Vec::with_capacity(n * kind.nodes());
        for _ in 0..n {
            c.size()?;
            for _ in 0..kind.nodes() {
                tags.push(c.size()?);
            }
        }
        read += n;
        raw.push((kind, dim as usize, tag, tags));
    }
    if read != total {
        return c.err(format!("{read} elements read, {total} declared"));
    }
    Ok(())
}

impl GmshMesh {
    /// The highest dimension of any element.
    pub fn dim(&self) -> usize {
        self.blocks.iter().map(|b| b.kind.dim()).max().unwrap_or(0)
    }

    /// The quadrilateral or hexahedral mesh the Q_p solvers take: the cells
    /// of the highest dimension, by their corner nodes (second-order
    /// elements keep their corners: the geometry becomes bilinear or
    /// trilinear), in fem's tensor vertex order, with the nodes no cell
    /// uses dropped. Validated (inverted cells are an error).
    pub fn to_mesh(&self) -> GResult<Mesh> {
        Ok(self.to_mesh_and_nodes()?.0)
    }

    /// [`GmshMesh::to_mesh`] and, per file node, its mesh vertex
    /// (`u32::MAX` for nodes no cell uses).
    pub fn to_mesh_and_nodes(&self) -> GResult<(Mesh, Vec<u32>)> {
        let dim = self.dim();
        if dim < 2 {
            return Err(GmshError::Invalid("the file has no 2D or 3D elements".into()));
        }
        let top: Vec<&ElementBlock> = self.blocks.iter().filter(|b| b.kind.dim() == dim).collect();
        let kinds: Vec<ElementKind> = top.iter().map(|b| b.kind).collect();
        if let Some(k) = kinds.iter().find(|k| matches!(k, ElementKind::Triangle3 | ElementKind::Triangle6 | ElementKind::Tetrahedron4 | ElementKind::Tetrahedron10)) {
            return Err(GmshError::Unsupported(format!("{k:?} cells need simplex elements; the Q_p solver takes quadrilaterals and hexahedra")));
        }
        // Gmsh numbers corners counter-clockwise; fem's vertex v sits at the corner whose bits are v's.
        let (coords, cells, used) = self.corner_cells::<8>(&top, &crate::mesh::CYCLIC_ORDER[..1 << dim], 0)?;
        let mesh = Mesh { dim, coords, cells };
        mesh.validate().map_err(|e| GmshError::Invalid(e.to_string()))?;
        Ok((mesh, used))
    }

    /// The triangle or tetrahedron mesh of the pointwise (simplex)
    /// solvers: the cells of the highest dimension by their corners
    /// (second-order cells keep their corners, so their mid-edge nodes are
    /// dropped), each cell oriented positively. Degenerate cells and nodes
    /// of no element are errors.
    pub fn to_simplex_mesh(&self) -> GResult<crate::mesh::simplex::SimplexMesh> {
        let dim = self.dim();
        let top: Vec<&ElementBlock> = self.blocks.iter().filter(|b| b.kind.dim() == dim && dim >= 2).collect();
        if top.is_empty() {
            return Err(GmshError::Invalid("the file has no 2D or 3D elements".into()));
        }
        if let Some(b) = top.iter().find(|b| !matches!(b.kind, ElementKind::Triangle3 | ElementKind::Triangle6 | ElementKind::Tetrahedron4 | ElementKind::Tetrahedron10)) {
            return Err(GmshError::Unsupported(format!("{:?} cells: this solver takes triangles or tetrahedra", b.kind)));
        }
        let (coords, cells, _) = self.corner_cells::<4>(&top, &[0, 1, 2, 3][..=dim], u32::MAX)?;
        let mut mesh = crate::mesh::simplex::SimplexMesh { dim, coords, cells };
        for c in 0..mesh.n_cells() {
            if mesh.signed_volume(c) < 0.0 {
                mesh.cells[c].swap(0, 1);
            }
        }
        mesh.validate().map_err(|e| GmshError::Invalid(e.to_string()))?;
        Ok(mesh)
    }

    /// The top-dimension cells `top` by their corners: corner k of a cell
    /// is its element node `corner[k]`, slots past the corners hold
    /// `fill`; vertices are numbered in order of first use. Returns the
    /// coordinates, the cells and, per file node, its vertex (`u32::MAX`
    /// for nodes no cell corner uses). Nodes of no element are an error.
    fn corner_cells<const N: usize>(&self, top: &[&ElementBlock], corner: &[usize], fill: u32) -> GResult<(Vec<[f64; 3]>, Vec<[u32; N]>, Vec<u32>)> {
        let loose = self.unreferenced_nodes();
        if !loose.is_empty() {
            let first: Vec<String> = loose.iter().take(5).map(|t| t.to_string()).collect();
            return Err(GmshError::Invalid(format!("{} nodes belong to no element (first: {})", loose.len(), first.join(", "))));
        }
        let mut used = vec![u32::MAX; self.nodes.len()];
        let (mut coords, mut cells) = (Vec::new(), Vec::new());
        for b in top {
            for e in b.connectivity.chunks(b.kind.nodes()) {
                let mut cell = [fill; N];
                for (slot, &k) in cell.iter_mut().zip(corner) {
                    let node = e[k] as usize;
                    if used[node] == u32::MAX {
                        used[node] = coords.len() as u32;
                        coords.push(self.nodes[node]);
                    }
                    *slot = used[node];
                }
                cells.push(cell);
            }
        }
        Ok((coords, cells, used))
    }

    /// The facets (as [`crate::mesh::facet_key`]s of the mesh whose node
    /// map is `nodes`) of the boundary physical groups in `groups`, each a
    /// name or a number.
    pub fn group_facets(&self, groups: &[String], nodes: &[u32]) -> GResult<std::collections::HashSet<[u32; 4]>> {
        let fdim = self.dim().saturating_sub(1);
        let present: Vec<i32> = self.blocks.iter().filter(|b| b.kind.dim() == fdim).flat_map(|b| b.physical.iter().copied()).collect();
        let tags = groups.iter().map(|g| self.group_tag(fdim, g, &present, "boundary")).collect::<GResult<Vec<i32>>>()?;
        let mut out = std::collections::HashSet::new();
        for b in self.blocks.iter().filter(|b| b.kind.dim() == fdim && b.physical.iter().any(|t| tags.contains(t))) {
            for e in b.connectivity.chunks(b.kind.nodes()) {
                let mut key = [u32::MAX; 4];
                for (k, &n) in e[..b.kind.corners()].iter().enumerate() {
                    key[k] = nodes[n as usize];
                    if key[k] == u32::MAX {
                        return Err(GmshError::Invalid(format!("a facet of physical group {:?} lies on a node no cell uses", b.physical)));
                    }
                }
                key[..b.kind.corners()].sort_unstable();
                out.insert(key);
            }
        }
        Ok(out)
    }

    /// The material region of every cell of [`GmshMesh::to_mesh`] and
    /// [`GmshMesh::to_simplex_mesh`] (same order): the first physical group
    /// of the cell's entity, 0 for a cell in none.
    pub fn cell_regions(&self) -> Vec<i32> {
        let dim = self.dim();
        self.blocks.iter().filter(|b| b.kind.dim() == dim).flat_map(|b| std::iter::repeat_n(b.physical.first().copied().unwrap_or(0), b.len())).collect()
    }

    /// Per-cell values from `(group, value)` pairs naming cell physical
    /// groups by name or number; cells of groups not named take `default`.
    /// A group the file does not have is an error listing those it has.
    pub fn region_values(&self, pairs: &[(String, f64)], default: f64) -> GResult<Vec<f64>> {
        let dim = self.dim();
        let regions = self.cell_regions();
        let mut table = std::collections::HashMap::new();
        let present: Vec<i32> = regions.iter().copied().filter(|&t| t != 0).collect();
        for (g, v) in pairs {
            table.insert(self.group_tag(dim, g, &present, "cell")?, *v);
        }
        Ok(regions.iter().map(|t| table.get(t).copied().unwrap_or(default)).collect())
    }

    /// The tag of physical group `g` of dimension `dim`, by name, or by
    /// number when that number is among the tags `present`; an error
    /// naming the `kind` of group and listing those present otherwise.
    fn group_tag(&self, dim: usize, g: &str, present: &[i32], kind: &str) -> GResult<i32> {
        let name_of = |t: i32| self.physical_names.iter().find(|n| n.0 == dim && n.1 == t).map(|n| n.2.as_str());
        let by_name = self.physical_names.iter().find(|n| n.0 == dim && n.2 == g).map(|n| n.1);
        if let Some(t) = by_name.or_else(|| g.parse::<i32>().ok().filter(|t| present.contains(t))) {
            return Ok(t);
        }
        let mut have = present.to_vec();
        have.sort_unstable();
        have.dedup();
        let listed: Vec<String> = have.iter().map(|&t| name_of(t).map_or(t.to_string(), |n| format!("{n} ({t})"))).collect();
        Err(GmshError::Invalid(format!("no {kind} physical group `{g}` (the file has: {})", if listed.is_empty() { "none".into() } else { listed.join(", ") })))
    }

    /// Nodes no element of any dimension refers to (first few), which a
    /// well-formed mesh does not have.
    pub fn unreferenced_nodes(&self) -> Vec<u64> {
        let mut used = vec![false; self.nodes.len()];
        for b in &self.blocks {
            for &n in &b.connectivity {
                used[n as usize] = true;
            }
        }
        (0..used.len()).filter(|&i| !used[i]).map(|i| self.node_tags[i]).collect()
    }
}

/// Names of the boundary groups [`write()`] gives a box's sides.
pub const SIDES: [&str; 6] = ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"];

/// The side of the unit box a boundary facet lies on (index into
/// [`SIDES`]), or 6 when it lies on none.
fn side_of(mesh: &Mesh, facet: &[u32]) -> usize {
    for a in 0..mesh.dim {
        for (s, plane) in [0.0, 1.0].iter().enumerate() {
            if facet.iter().all(|&v| (mesh.coords[v as usize][a] - plane).abs() < 1e-12) {
                return 2 * a + s;
            }
        }
    }
    6
}

/// Writes `mesh` as a `.msh` 4.1 file (ASCII or binary): the cells as
/// first-order quadrilaterals or hexahedra in physical group 1 `domain`,
/// and the boundary facets as lines or quadrilaterals in one physical
/// group per side of the unit box (`xmin` = 11, `xmax` = 12, ...; facets
/// on no side: `boundary` = 17), so boundary parts can be selected.
pub fn write(mesh: &Mesh, binary: bool) -> Vec<u8> {
    write_regions(mesh, binary, &vec![0; mesh.cells.len()], &["domain"]).expect("one region, every cell in it")
}

/// [`write()`] with cells in material regions: cell `c` in physical group
/// `1 + region[c]`, named `names[region[c]]`, one entity per region
/// (cells are written region by region, so that is their order when read).
pub fn write_regions(mesh: &Mesh, binary: bool, region: &[u32], names: &[&str]) -> GResult<Vec<u8>> {
    use crate::mesh::CYCLIC_ORDER as GMSH;
    if region.len() != mesh.cells.len() || region.iter().any(|&r| r as usize >= names.len()) {
        return Err(GmshError::Invalid(format!("{} region indices for {} cells and {} region names", region.len(), mesh.cells.len(), names.len())));
    }
    let dim = mesh.dim;
    let (kind, nv) = if dim == 2 { (ElementKind::Quad4, 4) } else { (ElementKind::Hexahedron8, 8) };
    let (facet_kind, fv) = if dim == 2 { (ElementKind::Line2, 2) } else { (ElementKind::Quad4, 4) };
    let mut sides: Vec<Vec<[u32; 4]>> = vec![Vec::new(); 7];
    for (c, axis, side) in crate::mesh::boundary_facets(mesh) {
        let f = crate::mesh::facet_vertices(mesh, c, axis, side);
        let ordered: [u32; 4] = [f[GMSH[0]], f[GMSH[1]], f[GMSH[2].min(fv - 1)], f[GMSH[3].min(fv - 1)]];
        sides[side_of(mesh, &f[..fv])].push(ordered);
    }
    let present: Vec<usize> = (0..7).filter(|&s| !sides[s].is_empty()).collect();
    let name = |s: usize| if s < 6 { SIDES[s] } else { "boundary" };
    let mut out = Vec::new();
    let mut w = Writer { out: &mut out, binary };
    w.text(&format!("$MeshFormat\n4.1 {} 8\n", binary as u8));
    if binary {
        w.out.extend_from_slice(&1i32.to_le_bytes());
        w.text("\n");
    }
    let by_region: Vec<Vec<usize>> = (0..names.len()).map(|r| (0..mesh.cells.len()).filter(|&c| region[c] as usize == r).collect()).collect();
    let used: Vec<usize> = (0..names.len()).filter(|&r| !by_region[r].is_empty()).collect();
    w.text(&format!("$EndMeshFormat\n$PhysicalNames\n{}\n", used.len() + present.len()));
    for &r in &used {
        w.text(&format!("{dim} {} \"{}\"\n", r + 1, names[r]));
    }
    for &s in &present {
        w.text(&format!("{} {} \"{}\"\n", dim - 1, 11 + s, name(s)));
    }
    w.text("$EndPhysicalNames\n$Entities\n");
    let mut counts = [0u64; 4];
    counts[dim - 1] = present.len() as u64;
    counts[dim] = used.len() as u64;
    for c in counts {
        w.size(c);
    }
    w.newline();
    // the sides (tags 1.., physical 11 + side), then the regions (tag and physical r + 1)
    for (tag, &s) in present.iter().enumerate() {
        entity(&mut w, tag as i32 + 1, 11 + s as i32);
    }
    for &r in &used {
        entity(&mut w, r as i32 + 1, r as i32 + 1);
    }
    w.text("$EndEntities\n$Nodes\n");
    let n = mesh.coords.len() as u64;
    for v in [1, n, 1, n] {
        w.size(v);
    }
    w.newline();
    w.int(dim as i32);
    w.int(1);
    w.int(0);
    w.size(n);
    w.newline();
    for t in 1..=n {
        w.size(t);
        w.newline();
    }
    for x in &mesh.coords {
        for &v in x {
            w.real(v);
        }
        w.newline();
    }
    w.text("$EndNodes\n$Elements\n");
    let nf: usize = present.iter().map(|&s| sides[s].len()).sum();
    let ne = mesh.cells.len() as u64;
    let total = ne + nf as u64;
    for v in [(used.len() + present.len()) as u64, total, 1, total] {
        w.size(v);
    }
    w.newline();
    let mut tag = 1u64;
    for (e, &s) in present.iter().enumerate() {
        w.int(dim as i32 - 1);
        w.int(e as i32 + 1);
        w.int(facet_kind.gmsh_type());
        w.size(sides[s].len() as u64);
        w.newline();
        for f in &sides[s] {
            w.size(tag);
            tag += 1;
            for &v in &f[..fv] {
                w.size(v as u64 + 1);
            }
            w.newline();
        }
    }
    for &r in &used {
        w.int(dim as i32);
        w.int(r as i32 + 1);
        w.int(kind.gmsh_type());
        w.size(by_region[r].len() as u64);
        w.newline();
        for &c in &by_region[r] {
            w.size(tag);
            tag += 1;
            for &k in &GMSH[..nv] {
                w.size(mesh.cells[c][k] as u64 + 1);
            }
            w.newline();
        }
    }
    w.text("$EndElements\n");
    Ok(out)
}

/// One entity line: its tag, a zero bounding box, one physical group, no
/// bounding entities.
fn entity(w: &mut Writer, tag: i32, physical: i32) {
    w.int(tag);
    for _ in 0..6 {
        w.real(0.0);
    }
    w.size(1);
    w.int(physical);
    w.size(0);
    w.newline();
}

/// Writes `mesh` to `path` through a temporary file renamed into place.
pub fn write_path(mesh: &Mesh, binary: bool, path: &Path) -> GResult<()> {
    crate::io::atomic_write(path, &write(mesh, binary)).map_err(|source| GmshError::Io { path: path.display().to_string(), source })
}

struct Writer<'a> {
    out: &'a mut Vec<u8>,
    binary: bool,
}

impl Writer<'_> {
    fn text(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }
    fn sep(&mut self) {
        if !self.binary && !matches!(self.out.last(), Some(b'\n') | None) {
            self.out.push(b' ');
        }
    }
    fn int(&mut self, v: i32) {
        if self.binary { self.out.extend_from_slice(&v.to_le_bytes()) } else { self.sep(); self.text(&v.to_string()) }
    }
    fn size(&mut self, v: u64) {
        if self.binary { self.out.extend_from_slice(&v.to_le_bytes()) } else { self.sep(); self.text(&v.to_string()) }
    }
    fn real(&mut self, v: f64) {
        if self.binary { self.out.extend_from_slice(&v.to_le_bytes()) } else { self.sep(); self.text(&format!("{v:?}")) }
    }
    fn newline(&mut self) {
        if !self.binary {
            self.out.push(b'\n');
        }
    }
}
