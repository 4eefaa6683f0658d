//! VTK XML unstructured grids (`.vtu`), the files ParaView and VisIt open:
//! a quadrilateral or hexahedral mesh with fields at its vertices and on
//! its cells, ASCII or binary (base64 of a 32-bit byte count and the
//! little-endian values, VTK's inline `binary` format). Written through a
//! temporary file renamed into place. [`read_fields`] reads back the
//! arrays of such a file, for tests and for post-processing in Rust.

use crate::mesh::Mesh;
use base64::Engine;
use std::path::Path;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum VtkError {
    #[error("field `{name}` has {got} values, the mesh needs {want}")]
    FieldLength { name: String, got: usize, want: usize },
    #[error("not a VTK file fem can read back: {0}")]
    Parse(String),
    #[error("cannot write {path}: {source}")]
    Io { path: String, source: std::io::Error },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Ascii,
    Binary,
}

/// A named array of scalars, one per vertex or per cell.
#[derive(Clone, Copy, Debug)]
pub struct Field<'a> {
    pub name: &'a str,
    pub values: &'a [f64],
}

/// VTK cell types.
const VTK_QUAD: u8 = 9;
const VTK_HEXAHEDRON: u8 = 12;

/// The `.vtu` text of `mesh` with `points` fields (per vertex) and `cells`
/// fields (per cell).
pub fn vtu(mesh: &Mesh, points: &[Field], cells: &[Field], enc: Encoding) -> Result<String, VtkError> {
    check(points, mesh.n_vertices())?;
    check(cells, mesh.n_cells())?;
    let nv = mesh.vertices_per_cell();
    let mut s = String::from("<?xml version=\"1.0\"?>\n<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt32\">\n<UnstructuredGrid>\n");
    s += &format!("<Piece NumberOfPoints=\"{}\" NumberOfCells=\"{}\">\n<PointData>\n", mesh.n_vertices(), mesh.n_cells());
    for f in points {
        s += &array("Float64", f.name, 1, &Values::F64(f.values.to_vec()), enc);
    }
    s += "</PointData>\n<CellData>\n";
    for f in cells {
        s += &array("Float64", f.name, 1, &Values::F64(f.values.to_vec()), enc);
    }
    s += "</CellData>\n<Points>\n";
    let xyz: Vec<f64> = mesh.coords.iter().flat_map(|x| x.iter().copied()).collect();
    s += &array("Float64", "Points", 3, &Values::F64(xyz), enc);
    s += "</Points>\n<Cells>\n";
    let conn: Vec<i64> = mesh.cells.iter().flat_map(|c| crate::mesh::CYCLIC_ORDER[..nv].iter().map(move |&k| c[k] as i64)).collect();
    let offsets: Vec<i64> = (1..=mesh.n_cells()).map(|c| (c * nv) as i64).collect();
    let kind = if mesh.dim == 2 { VTK_QUAD } else { VTK_HEXAHEDRON };
    s += &array("Int64", "connectivity", 1, &Values::I64(conn), enc);
    s += &array("Int64", "offsets", 1, &Values::I64(offsets), enc);
    s += &array("UInt8", "types", 1, &Values::U8(vec![kind; mesh.n_cells()]), enc);
    s += "</Cells>\n</Piece>\n</UnstructuredGrid>\n</VTKFile>\n";
    Ok(s)
}

/// Writes [`vtu`] to `path` whole or not at all.
pub fn write_path(path: &Path, mesh: &Mesh, points: &[Field], cells: &[Field], enc: Encoding) -> Result<(), VtkError> {
    let text = vtu(mesh, points, cells, enc)?;
    crate::io::atomic_write(path, text.as_bytes()).map_err(|source| VtkError::Io { path: path.display().to_string(), source })
}

fn check(fields: &[Field], want: usize) -> Result<(), VtkError> {
    match fields.iter().find(|f| f.values.len() != want) {
        Some(f) => Err(VtkError::FieldLength { name: f.name.into(), got: f.values.len(), want }),
        None => Ok(()),
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
