//! Gmsh `.msh` files of formats 2.2, 4.0 and 4.1, ASCII and binary (either
//! byte order): nodes, elements of every fixed-size Lagrange type (points
//! to hexahedra, prisms and pyramids, orders as in [`kind`]), physical
//! groups and their names. Sections come in any order; sections the reader
//! does not use (`$Comments`, `$NodeData`, `$Periodic`, ...) are skipped.
//!
//! Every count the file declares is checked against the bytes left before
//! anything is allocated, so a hostile header cannot make the reader
//! reserve gigabytes; every defect is an error naming the section and,
//! in ASCII files, the line.
//!
//! Why not the `mshio` crate: it reads MSH 4.1 only, and half of the
//! files users bring (deal.II's, most meshers' and tutorials') are 2.2.

mod convert;
mod cursor;
pub mod info;
pub mod kind;
mod v2;
mod v4;
mod write;

pub use kind::{ElementKind, Shape};
pub use write::{write, write_path, write_regions, write_to, SIDES};

use cursor::Cursor;
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
    /// A valid file this reader does not take (another format version,
    /// element types outside the table), or cells the requested mesh kind
    /// cannot hold.
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

pub(crate) type GResult<T> = std::result::Result<T, GmshError>;

/// A version of the MSH format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Version {
    /// MSH 2.2 (also read for 2.0 and 2.1, which share its layout):
    /// physical and elementary tags on every element, no entities.
    #[serde(rename = "2.2")]
    V2_2,
    /// MSH 4.0: entity blocks, `int` tags.
    #[serde(rename = "4.0")]
    V4_0,
    /// MSH 4.1: entity blocks, `size_t` tags, node tags before coordinates.
    #[serde(rename = "4.1")]
    V4_1,
}

impl Version {
    /// Every version, oldest first.
    pub const ALL: [Version; 3] = [Version::V2_2, Version::V4_0, Version::V4_1];

    /// The version as the header writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V2_2 => "2.2",
            Version::V4_0 => "4.0",
            Version::V4_1 => "4.1",
        }
    }

    fn parse(s: &str) -> GResult<Self> {
        Ok(match s {
            "2" | "2.0" | "2.1" | "2.2" => Version::V2_2,
            "4" | "4.0" => Version::V4_0,
            "4.1" => Version::V4_1,
            v => return Err(GmshError::Unsupported(format!("MSH format version {v} is not supported (2.2, 4.0 and 4.1 are; re-export with Gmsh's -format msh41)"))),
        })
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a file was stored: its version and whether its data are binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FileFormat {
    /// The format version.
    pub version: Version,
    /// Binary (true) or ASCII data.
    pub binary: bool,
}

impl Default for FileFormat {
    fn default() -> Self {
        FileFormat { version: Version::V4_1, binary: false }
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

/// A mesh as the file holds it. In MSH 2.2 an entity in several physical
/// groups has its elements written once per group; the reader merges
/// those copies back into one block with every group.
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
    /// The version and encoding the file had (what [`write_to`] writes
    /// when given this format).
    pub format: FileFormat,
}



/// Elements as read, before node tags are resolved: one block of one type
/// of one entity. MSH 2.2 gives the physical groups with the elements;
/// MSH 4 gives them with the entity (`None` here).
pub(crate) struct RawBlock {
    kind: ElementKind,
    dim: usize,
    entity: i32,
    physical: Option<Vec<i32>>,
    node_tags: Vec<u64>,
}

/// Parses a `.msh` file of any supported version from its bytes.
pub fn read(data: &[u8]) -> GResult<GmshMesh> {
    let mut c = Cursor::new(data);
    c.skip_space();
    if c.left() == 0 {
        return Err(GmshError::Invalid("the file is empty".into()));
    }
    let w = c.word()?;
    if w == "$NOD" {
        return Err(GmshError::Unsupported("MSH 1 files (starting with $NOD) are not supported (2.2, 4.0 and 4.1 are; re-export with Gmsh's -format msh41)".into()));
    }
    // Comments may precede the format header.
    let mut w = w;
    while w == "$Comments" {
        c.section = "$Comments";
        c.skip_section("Comments")?;
        w = c.word()?;
    }
    if w != "$MeshFormat" {
        return c.err(format!("the file must start with $MeshFormat, not `{w}`"));
    }
    let format = read_header(&mut c)?;
    read_sections(c, format)
}

/// The `$MeshFormat` section: version, encoding, and in binary files the
/// byte order (the integer 1 as written).
fn read_header(c: &mut Cursor) -> GResult<FileFormat> {
    c.section = "$MeshFormat";
    let version = Version::parse(c.word()?)?;
    let file_type: i32 = c.parse("the file type")?;
    let size: i32 = c.parse("the data size")?;
    if size != 8 {
        return Err(GmshError::Unsupported(format!("data size {size} is not supported (8 is)")));
    }
    let binary = match file_type {
        0 => false,
        1 => {
            c.start_binary();
            let one = c.int()?;
            c.swap = match one {
                1 => false,
                0x0100_0000 => true,
                v => return c.err(format!("the byte-order mark is {v}, not 1")),
            };
            true
        }
        t => return c.err(format!("file type {t} is neither 0 (ASCII) nor 1 (binary)")),
    };
    c.expect_end("MeshFormat")?;
    Ok(FileFormat { version, binary })
}

fn read_sections(mut c: Cursor, format: FileFormat) -> GResult<GmshMesh> {
    let mut mesh = GmshMesh { nodes: Vec::new(), node_tags: Vec::new(), blocks: Vec::new(), physical_names: Vec::new(), format };
    let mut entities: HashMap<(usize, i32), Vec<i32>> = HashMap::new();
    let mut raw: Vec<RawBlock> = Vec::new();
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
            "PhysicalNames" => read_physical_names(&mut c, &mut mesh.physical_names)?,
            "Entities" if format.version != Version::V2_2 => {
                c.section = "$Entities";
                if format.binary {
                    c.start_binary();
                }
                v4::read_entities(&mut c, format.version, &mut entities)?;
                c.expect_end("Entities")?;
            }
            "Nodes" if !have_nodes => {
                c.section = "$Nodes";
                match format.version {
                    Version::V2_2 => v2::read_nodes(&mut c, format.binary, &mut mesh)?,
                    v => {
                        if format.binary {
                            c.start_binary();
                        }
                        v4::read_nodes(&mut c, v, &mut mesh)?;
                    }
                }
                c.expect_end("Nodes")?;
                have_nodes = true;
            }
            "Elements" if !have_elements => {
                c.section = "$Elements";
                match format.version {
                    Version::V2_2 => v2::read_elements(&mut c, format.binary, &mut raw)?,
                    v => {
                        if format.binary {
                            c.start_binary();
                        }
                        v4::read_elements(&mut c, v, &mut raw)?;
                    }
                }
                c.expect_end("Elements")?;
                have_elements = true;
            }
            "Nodes" | "Elements" => return c.err(format!("a second ${name} section")),
            other => {
                c.section = "unknown section";
                c.skip_section(other)?;
            }
        }
    }
    if !have_nodes || !have_elements {
        return Err(GmshError::Invalid("the file lacks a $Nodes or $Elements section".into()));
    }
    if format.version == Version::V2_2 {
        raw = v2::merge_copies(raw);
    }
    resolve(mesh, raw, &entities)
}

/// `$PhysicalNames`, the same text in every version.
fn read_physical_names(c: &mut Cursor, names: &mut Vec<(usize, i32, String)>) -> GResult<()> {
    c.section = "$PhysicalNames";
    let n: usize = c.parse("a count")?;
    if n > c.left() / 4 {
        return c.err(format!("declares {n} names, more than the file can hold"));
    }
    for _ in 0..n {
        let dim: usize = c.parse("a dimension")?;
        if dim > 3 {
            return c.err(format!("a physical name of dimension {dim}"));
        }
        let tag: i32 = c.parse("a tag")?;
        let line = c.rest_of_line();
        let name = line.strip_prefix('"').and_then(|l| l.strip_suffix('"')).unwrap_or(&line).to_string();
        names.push((dim, tag, name));
    }
    c.expect_end("PhysicalNames")
}

/// Turns node tags into node indices and attaches the entities' physical
/// groups.
fn resolve(mut mesh: GmshMesh, raw: Vec<RawBlock>, entities: &HashMap<(usize, i32), Vec<i32>>) -> GResult<GmshMesh> {
    let index: HashMap<u64, u32> = mesh.node_tags.iter().enumerate().map(|(i, &t)| (t, i as u32)).collect();
    if index.len() != mesh.node_tags.len() {
        return Err(GmshError::Invalid("two nodes share a tag".into()));
    }
    for b in raw {
        let (dim, tag) = (b.dim, b.entity);
        let connectivity = b
            .node_tags
            .iter()
            .map(|t| index.get(t).copied().ok_or_else(|| GmshError::Invalid(format!("an element of entity ({dim}, {tag}) refers to node {t}, which the file does not define"))))
            .collect::<GResult<Vec<u32>>>()?;
        let physical = b.physical.unwrap_or_else(|| entities.get(&(dim, tag)).cloned().unwrap_or_default());
        mesh.blocks.push(ElementBlock { kind: b.kind, entity_dim: dim, entity_tag: tag, physical, connectivity });
    }
    Ok(mesh)
}

/// Reads a `.msh` file.
pub fn read_path(path: &Path) -> GResult<GmshMesh> {
    let data = std::fs::read(path).map_err(|source| GmshError::Io { path: path.display().to_string(), source })?;
    read(&data)
}
