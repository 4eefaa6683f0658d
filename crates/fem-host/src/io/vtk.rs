//! VTK XML unstructured grids (`.vtu`), the files ParaView and VisIt open:
//! a quadrilateral, hexahedral, triangle or tetrahedron mesh with fields at its vertices and on
//! its cells, ASCII or binary (base64 of a 32-bit byte count and the
//! little-endian values, VTK's inline `binary` format). Written through a
//! temporary file renamed into place; time series as ParaView `.pvd`
//! collections. [`read_fields`] reads back the
//! arrays of such a file, for tests and for post-processing in Rust.

use crate::mesh::simplex::SimplexMesh;
use crate::mesh::Mesh;
use crate::space::Space;
use base64::Engine;
use std::path::Path;
use thiserror::Error;

/// Why VTK output could not be written or a `.vtu` file read back.
#[derive(Debug, Error)]
pub enum VtkError {
    /// A field's length is neither one nor three values per vertex (or
    /// cell).
    #[error("field `{name}` has {got} values, the mesh needs {want}")]
    FieldLength {
        /// The field's name.
        name: String,
        /// Values the field holds.
        got: usize,
        /// Vertices (or cells) of the mesh: the length of a scalar field.
        want: usize,
    },
    /// [`read_fields`] met text that is not a `.vtu` file as [`vtu`] writes
    /// them (unclosed tags, bad base64, unparsable numbers).
    #[error("not a VTK file fem can read back: {0}")]
    Parse(String),
    /// Cells this writer has no VTK type for.
    #[error("no VTK output for {0}")]
    Unsupported(String),
    /// Writing the file (or renaming it into place) failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file that was to be written.
        path: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// How the data arrays of a `.vtu` file are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Decimal text in shortest round-trip form: readable, no precision
    /// lost, but larger than binary.
    Ascii,
    /// VTK's inline `binary` format: base64 of a 32-bit byte count and the
    /// little-endian values.
    Binary,
}

/// A named array of scalars, one per vertex or per cell.
#[derive(Clone, Copy, Debug)]
pub struct Field<'a> {
    /// Array name, as ParaView lists it.
    pub name: &'a str,
    /// One value per vertex (or cell), or three per item for a vector
    /// field, interleaved x, y, z.
    pub values: &'a [f64],
}

/// VTK cell types.
const VTK_TRIANGLE: u8 = 5;
const VTK_TETRA: u8 = 10;
const VTK_QUAD: u8 = 9;
const VTK_HEXAHEDRON: u8 = 12;
const VTK_QUADRATIC_TRIANGLE: u8 = 22;
const VTK_QUADRATIC_TETRA: u8 = 24;

/// The cells of a grid as VTK lists them.
pub(crate) struct Grid<'a> {
    pub(crate) coords: &'a [[f64; 3]],
    /// Vertices of each cell in VTK's order, `nv` per cell.
    pub(crate) conn: Vec<i64>,
    pub(crate) nv: usize,
    pub(crate) kind: u8,
}

impl Grid<'_> {
    fn n_cells(&self) -> usize {
        self.conn.len() / self.nv
    }
}

/// The `.vtu` text of `mesh` with `points` fields (per vertex) and `cells`
/// fields (per cell); a field of three values per item is a vector.
pub fn vtu(mesh: &Mesh, points: &[Field], cells: &[Field], enc: Encoding) -> Result<String, VtkError> {
    let nv = mesh.vertices_per_cell();
    let conn = mesh.cells.iter().flat_map(|c| crate::mesh::CYCLIC_ORDER[..nv].iter().map(move |&k| c[k] as i64)).collect();
    let kind = if mesh.dim == 2 { VTK_QUAD } else { VTK_HEXAHEDRON };
    grid_vtu(&Grid { coords: &mesh.coords, conn, nv, kind }, points, cells, enc)
}

/// [`vtu`] for a triangle or tetrahedron mesh.
pub fn vtu_simplex(mesh: &SimplexMesh, points: &[Field], cells: &[Field], enc: Encoding) -> Result<String, VtkError> {
    let nv = mesh.vertices_per_cell();
    let conn = mesh.cells.iter().flat_map(|c| c[..nv].iter().map(|&v| v as i64)).collect();
    let kind = if mesh.dim == 2 { VTK_TRIANGLE } else { VTK_TETRA };
    grid_vtu(&Grid { coords: &mesh.coords, conn, nv, kind }, points, cells, enc)
}

pub(crate) fn grid_vtu(g: &Grid, points: &[Field], cells: &[Field], enc: Encoding) -> Result<String, VtkError> {
    let (n_points, n_cells) = (g.coords.len(), g.n_cells());
    let mut s = String::from("<?xml version=\"1.0\"?>\n<VTKFile type=\"UnstructuredGrid\" version=\"2.2\" byte_order=\"LittleEndian\" header_type=\"UInt32\">\n<UnstructuredGrid>\n");
    s += &format!("<Piece NumberOfPoints=\"{n_points}\" NumberOfCells=\"{n_cells}\">\n<PointData>\n");
    for f in points {
        s += &array("Float64", f.name, components(f, n_points)?, &Values::F64(f.values.to_vec()), enc);
    }
    s += "</PointData>\n<CellData>\n";
    for f in cells {
        s += &array("Float64", f.name, components(f, n_cells)?, &Values::F64(f.values.to_vec()), enc);
    }
    s += "</CellData>\n<Points>\n";
    let xyz: Vec<f64> = g.coords.iter().flat_map(|x| x.iter().copied()).collect();
    s += &array("Float64", "Points", 3, &Values::F64(xyz), enc);
    s += "</Points>\n<Cells>\n";
    let offsets: Vec<i64> = (1..=n_cells).map(|c| (c * g.nv) as i64).collect();
    s += &array("Int64", "connectivity", 1, &Values::I64(g.conn.clone()), enc);
    s += &array("Int64", "offsets", 1, &Values::I64(offsets), enc);
    s += &array("UInt8", "types", 1, &Values::U8(vec![g.kind; n_cells]), enc);
    s += "</Cells>\n</Piece>\n</UnstructuredGrid>\n</VTKFile>\n";
    Ok(s)
}

/// The `.vtu` text of a space with `points` fields per node (one or
/// three values each) and `cells` fields per cell. P1/P2 simplices become
/// linear or quadratic triangles and tetrahedra, whose node order
/// (corners, then the edge midpoints of
/// [`fem_core::shape::Shape::edges`]) is VTK's; Q1 cells become
/// quadrilaterals and hexahedra on the shared nodes, and Q_p cells above
/// Lagrange cells of order p ([`super::vtk_lagrange`]), so ParaView draws
/// the polynomial field the solver computed.
pub fn vtu_nodal(space: &Space, points: &[Field], cells: &[Field], enc: Encoding) -> Result<String, VtkError> {
    use fem_core::shape::Shape;
    let kind = match (space.shape, space.degree) {
        (Shape::Triangle, 1) => VTK_TRIANGLE,
        (Shape::Tetrahedron, 1) => VTK_TETRA,
        (Shape::Triangle, 2) => VTK_QUADRATIC_TRIANGLE,
        (Shape::Tetrahedron, 2) => VTK_QUADRATIC_TETRA,
        (Shape::Quadrilateral | Shape::Hexahedron, 1) => {
            // the tensor order of a Q1 cell's nodes is its vertices' order
            let nv = space.nb();
            let conn = space.cell_dofs.chunks(nv).flat_map(|c| crate::mesh::CYCLIC_ORDER[..nv].iter().map(move |&k| c[k] as i64)).collect();
            let kind = if space.dim() == 2 { VTK_QUAD } else { VTK_HEXAHEDRON };
            return grid_vtu(&Grid { coords: &space.dof_coords, conn, nv, kind }, points, cells, enc);
        }
        (Shape::Quadrilateral | Shape::Hexahedron, p) => return tensor_vtu(space, p, points, cells, enc),
        (s, p) => return Err(VtkError::Unsupported(format!("{} cells of degree {p}", s.name()))),
    };
    let conn = space.cell_dofs.iter().map(|&d| d as i64).collect();
    grid_vtu(&Grid { coords: &space.dof_coords, conn, nv: space.nb(), kind }, points, cells, enc)
}

/// A Q_p space's fields on Lagrange cells: every cell's nodes and values
/// gathered (per component) and resampled to VTK's equispaced nodes.
fn tensor_vtu(space: &Space, p: usize, points: &[Field], cells: &[Field], enc: Encoding) -> Result<String, VtkError> {
    let (mut gll, mut w) = (vec![0.0; p + 1], vec![0.0; p + 1]);
    fem_core::quadrature::gauss_lobatto(&mut gll, &mut w);
    let coords: Vec<[f64; 3]> = space.cell_dofs.iter().map(|&d| space.dof_coords[d as usize]).collect();
    let grid = super::vtk_lagrange::LagrangeGrid::new(space.shape.dim(), &gll, &coords)?;
    let mut resampled = Vec::with_capacity(points.len());
    for f in points {
        let nc = components(f, space.n_dofs)?;
        let mut out = vec![0.0; coords.len() * nc];
        for c in 0..nc {
            let local: Vec<f64> = space.cell_dofs.iter().map(|&d| f.values[d as usize * nc + c]).collect();
            for (k, v) in grid.resample(&local)?.into_iter().enumerate() {
                out[k * nc + c] = v;
            }
        }
        resampled.push(out);
    }
    let fields: Vec<Field> = points.iter().zip(&resampled).map(|(f, v)| Field { name: f.name, values: v }).collect();
    grid.vtu(&fields, cells, enc)
}

/// Writes [`vtu_nodal`] to `path` whole or not at all.
pub fn write_nodal(path: &Path, space: &Space, points: &[Field], cells: &[Field], enc: Encoding) -> Result<(), VtkError> {
    write_text(path, &vtu_nodal(space, points, cells, enc)?)
}

/// Writes [`vtu`] to `path` whole or not at all.
pub fn write_path(path: &Path, mesh: &Mesh, points: &[Field], cells: &[Field], enc: Encoding) -> Result<(), VtkError> {
    write_text(path, &vtu(mesh, points, cells, enc)?)
}

/// Writes [`vtu_simplex`] to `path` whole or not at all.
pub fn write_simplex(path: &Path, mesh: &SimplexMesh, points: &[Field], cells: &[Field], enc: Encoding) -> Result<(), VtkError> {
    write_text(path, &vtu_simplex(mesh, points, cells, enc)?)
}

pub(crate) fn write_text(path: &Path, text: &str) -> Result<(), VtkError> {
    crate::io::atomic_write(path, text.as_bytes()).map_err(|source| VtkError::Io { path: path.display().to_string(), source })
}

/// A ParaView collection (`.pvd`) of `(time, file)` pieces: a time series
/// opened as one dataset. File names are written as given (relative to
/// the collection's directory).
pub fn write_collection(path: &Path, pieces: &[(f64, String)]) -> Result<(), VtkError> {
    let mut s = String::from("<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n<Collection>\n");
    for (t, file) in pieces {
        s += &format!("<DataSet timestep=\"{t:?}\" group=\"\" part=\"0\" file=\"{file}\"/>\n");
    }
    s += "</Collection>\n</VTKFile>\n";
    write_text(path, &s)
}

/// A parallel `.vtu` (`.pvtu`): the `pieces` files (one a rank, names
/// relative to its directory) read as one dataset, whose point and cell
/// fields are named with their components.
pub fn write_parallel(path: &Path, pieces: &[String], points: &[(&str, usize)], cells: &[(&str, usize)]) -> Result<(), VtkError> {
    let declare = |fields: &[(&str, usize)]| -> String { fields.iter().map(|(n, c)| format!("<PDataArray type=\"Float64\" Name=\"{n}\" NumberOfComponents=\"{c}\"/>\n")).collect() };
    let mut s = String::from("<?xml version=\"1.0\"?>\n<VTKFile type=\"PUnstructuredGrid\" version=\"2.2\" byte_order=\"LittleEndian\" header_type=\"UInt32\">\n<PUnstructuredGrid GhostLevel=\"0\">\n");
    s += &format!("<PPointData>\n{}</PPointData>\n<PCellData>\n{}</PCellData>\n", declare(points), declare(cells));
    s += "<PPoints>\n<PDataArray type=\"Float64\" Name=\"Points\" NumberOfComponents=\"3\"/>\n</PPoints>\n";
    for p in pieces {
        s += &format!("<Piece Source=\"{p}\"/>\n");
    }
    s += "</PUnstructuredGrid>\n</VTKFile>\n";
    write_text(path, &s)
}

/// Components of a field over `n` items: one (scalar) or three (vector).
fn components(f: &Field, n: usize) -> Result<usize, VtkError> {
    match f.values.len() {
        l if l == n => Ok(1),
        l if l == 3 * n && n > 0 => Ok(3),
        got => Err(VtkError::FieldLength { name: f.name.into(), got, want: n }),
    }
}

enum Values {
    F64(Vec<f64>),
    I64(Vec<i64>),
    U8(Vec<u8>),
}

fn array(ty: &str, name: &str, components: usize, v: &Values, enc: Encoding) -> String {
    let (format, body) = match enc {
        Encoding::Ascii => {
            let text: Vec<String> = match v {
                Values::F64(x) => x.iter().map(|a| format!("{a:?}")).collect(),
                Values::I64(x) => x.iter().map(|a| a.to_string()).collect(),
                Values::U8(x) => x.iter().map(|a| a.to_string()).collect(),
            };
            ("ascii", text.join(" "))
        }
        Encoding::Binary => {
            let raw: Vec<u8> = match v {
                Values::F64(x) => x.iter().flat_map(|a| a.to_le_bytes()).collect(),
                Values::I64(x) => x.iter().flat_map(|a| a.to_le_bytes()).collect(),
                Values::U8(x) => x.clone(),
            };
            let mut block = (raw.len() as u32).to_le_bytes().to_vec();
            block.extend_from_slice(&raw);
            ("binary", base64::engine::general_purpose::STANDARD.encode(block))
        }
    };
    format!("<DataArray type=\"{ty}\" Name=\"{name}\" NumberOfComponents=\"{components}\" format=\"{format}\">\n{body}\n</DataArray>\n")
}

/// The Float64 arrays of a `.vtu` file written by [`vtu`]: (name, values).
pub fn read_fields(text: &str) -> Result<Vec<(String, Vec<f64>)>, VtkError> {
    let bad = |m: &str| VtkError::Parse(m.into());
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<DataArray ") {
        let tag_end = rest[start..].find('>').ok_or_else(|| bad("unclosed DataArray tag"))? + start;
        let tag = &rest[start..tag_end];
        let close = rest[tag_end..].find("</DataArray>").ok_or_else(|| bad("DataArray without its end"))? + tag_end;
        let body = rest[tag_end + 1..close].trim();
        let attr = |k: &str| tag.split(&format!("{k}=\"")).nth(1).and_then(|t| t.split('"').next()).unwrap_or("");
        if attr("type") == "Float64" {
            let values = if attr("format") == "binary" {
                let bytes = base64::engine::general_purpose::STANDARD.decode(body).map_err(|e| VtkError::Parse(e.to_string()))?;
                if bytes.len() < 4 || u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as usize != bytes.len() - 4 || (bytes.len() - 4) % 8 != 0 {
                    return Err(bad("binary block length"));
                }
                bytes[4..].chunks(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
            } else {
                body.split_whitespace().map(|w| w.parse::<f64>().map_err(|_| bad("a value that is not a number"))).collect::<Result<Vec<f64>, _>>()?
            };
            out.push((attr("Name").to_string(), values));
        }
        rest = &rest[close..];
    }
    Ok(out)
}
