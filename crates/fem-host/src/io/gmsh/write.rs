//! Writing `.msh` files in every version the reader takes, and the box
//! meshes fem generates as such files (sides as boundary groups).

use super::{ElementBlock, ElementKind, FileFormat, GResult, GmshError, GmshMesh, Version};
use crate::mesh::Mesh;
use std::path::Path;

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
    write_regions(mesh, binary, &vec![0; mesh.cells.len()], &["domain"]).expect("one region, every cell in it, tags within range")
}

/// [`write()`] with cells in material regions: cell `c` in physical group
/// `1 + region[c]`, named `names[region[c]]`, one entity per region
/// (cells are written region by region, so that is their order when read).
pub fn write_regions(mesh: &Mesh, binary: bool, region: &[u32], names: &[&str]) -> GResult<Vec<u8>> {
    write_to(&GmshMesh::from_box_mesh(mesh, region, names)?, FileFormat { version: Version::V4_1, binary })
}

/// Writes `mesh` to `path` (MSH 4.1) through a temporary file renamed
/// into place.
pub fn write_path(mesh: &Mesh, binary: bool, path: &Path) -> GResult<()> {
    crate::io::atomic_write(path, &write(mesh, binary)).map_err(|source| GmshError::Io { path: path.display().to_string(), source })
}

impl GmshMesh {
    /// The file [`write_regions`] writes, as a mesh: boundary facets in one
    /// block per side of the unit box (physical `11 + side`), then the
    /// cells of each region (physical `1 + region`).
    pub fn from_box_mesh(mesh: &Mesh, region: &[u32], names: &[&str]) -> GResult<GmshMesh> {
        use crate::mesh::CYCLIC_ORDER as GMSH;
        if region.len() != mesh.cells.len() || region.iter().any(|&r| r as usize >= names.len()) {
            return Err(GmshError::Invalid(format!("{} region indices for {} cells and {} region names", region.len(), mesh.cells.len(), names.len())));
        }
        let dim = mesh.dim;
        let (kind, nv) = if dim == 2 { (ElementKind::Quad4, 4) } else { (ElementKind::Hexahedron8, 8) };
        let (facet_kind, fv) = if dim == 2 { (ElementKind::Line2, 2) } else { (ElementKind::Quad4, 4) };
        let mut sides: Vec<Vec<u32>> = vec![Vec::new(); 7];
        for (c, axis, side) in crate::mesh::boundary_facets(mesh) {
            let f = crate::mesh::facet_vertices(mesh, c, axis, side);
            sides[side_of(mesh, &f[..fv])].extend(GMSH[..fv].iter().map(|&k| f[k]));
        }
        let present: Vec<usize> = (0..7).filter(|&s| !sides[s].is_empty()).collect();
        let by_region: Vec<Vec<u32>> = (0..names.len()).map(|r| (0..mesh.cells.len()).filter(|&c| region[c] as usize == r).flat_map(|c| GMSH[..nv].iter().map(move |&k| mesh.cells[c][k])).collect()).collect();
        let used: Vec<usize> = (0..names.len()).filter(|&r| !by_region[r].is_empty()).collect();
        let side_name = |s: usize| if s < 6 { SIDES[s] } else { "boundary" };
        let mut physical_names: Vec<(usize, i32, String)> = used.iter().map(|&r| (dim, r as i32 + 1, names[r].to_string())).collect();
        physical_names.extend(present.iter().map(|&s| (dim - 1, 11 + s as i32, side_name(s).to_string())));
        let mut blocks: Vec<ElementBlock> = present.iter().enumerate().map(|(e, &s)| ElementBlock { kind: facet_kind, entity_dim: dim - 1, entity_tag: e as i32 + 1, physical: vec![11 + s as i32], connectivity: std::mem::take(&mut sides[s]) }).collect();
        blocks.extend(used.iter().map(|&r| ElementBlock { kind, entity_dim: dim, entity_tag: r as i32 + 1, physical: vec![r as i32 + 1], connectivity: by_region[r].clone() }));
        Ok(GmshMesh { nodes: mesh.coords.clone(), node_tags: (1..=mesh.coords.len() as u64).collect(), blocks, physical_names, format: FileFormat::default() })
    }
}

impl GmshMesh {
    /// A triangle or tetrahedron mesh as a file: the cells as `Triangle3`
    /// or `Tetrahedron4` in physical group 1 `domain`, the facets of one
    /// cell only as `Line2` or `Triangle3` in group 2 `boundary`.
    pub fn from_simplex_mesh(mesh: &crate::mesh::simplex::SimplexMesh) -> GmshMesh {
        let dim = mesh.dim;
        let nv = dim + 1;
        let (kind, facet_kind) = if dim == 2 { (ElementKind::Triangle3, ElementKind::Line2) } else { (ElementKind::Tetrahedron4, ElementKind::Triangle3) };
        let mut seen: std::collections::HashMap<[u32; 3], (usize, [u32; 3])> = std::collections::HashMap::new();
        let mut order = Vec::new();
        for cell in &mesh.cells {
            for skip in 0..nv {
                // the facet opposite `skip`, oriented outwards
                let mut f = [u32::MAX; 3];
                let mut k = 0;
                for (i, &v) in cell[..nv].iter().enumerate() {
                    if i != skip {
                        f[k] = v;
                        k += 1;
                    }
                }
                if skip % 2 == 1 {
                    f.swap(0, 1);
                }
                let mut key = f;
                key[..dim].sort_unstable();
                let e = seen.entry(key).or_insert_with(|| {
                    order.push(key);
                    (0, f)
                });
                e.0 += 1;
            }
        }
        let facets: Vec<u32> = order.iter().filter_map(|k| seen.get(k).filter(|e| e.0 == 1)).flat_map(|e| e.1[..dim].to_vec()).collect();
        let cells: Vec<u32> = mesh.cells.iter().flat_map(|c| c[..nv].to_vec()).collect();
        let blocks = vec![
            ElementBlock { kind: facet_kind, entity_dim: dim - 1, entity_tag: 1, physical: vec![2], connectivity: facets },
            ElementBlock { kind, entity_dim: dim, entity_tag: 1, physical: vec![1], connectivity: cells },
        ];
        let physical_names = vec![(dim, 1, "domain".to_string()), (dim - 1, 2, "boundary".to_string())];
        GmshMesh { nodes: mesh.coords.clone(), node_tags: (1..=mesh.coords.len() as u64).collect(), blocks, physical_names, format: FileFormat::default() }
    }
}

/// One geometric entity as written: its dimension, tag, physical groups
/// and bounding box.
struct Entity {
    dim: usize,
    tag: i32,
    physical: Vec<i32>,
    lo: [f64; 3],
    hi: [f64; 3],
}

/// The entities of `g`'s non-empty blocks in order of first use (a
/// block's physical groups are its entity's), and the entity tag each
/// block is written under: its own, or a new one where MSH 2.2 gave blocks
/// of one elementary entity different physical groups, which MSH 4 keeps
/// per entity.
fn entities(g: &GmshMesh) -> (Vec<Entity>, Vec<i32>) {
    let mut out: Vec<Entity> = Vec::new();
    let mut tags = Vec::with_capacity(g.blocks.len());
    for b in &g.blocks {
        let same = |e: &Entity| e.dim == b.entity_dim && e.tag == b.entity_tag;
        let i = match out.iter().position(|e| same(e) && e.physical == b.physical) {
            Some(i) => i,
            None => {
                let taken = out.iter().any(same);
                let tag = if taken { g.blocks.iter().filter(|o| o.entity_dim == b.entity_dim).map(|o| o.entity_tag).chain(out.iter().filter(|e| e.dim == b.entity_dim).map(|e| e.tag)).max().unwrap_or(0) + 1 } else { b.entity_tag };
                out.push(Entity { dim: b.entity_dim, tag, physical: b.physical.clone(), lo: [f64::INFINITY; 3], hi: [f64::NEG_INFINITY; 3] });
                out.len() - 1
            }
        };
        tags.push(out[i].tag);
        for &n in &b.connectivity {
            let x = g.nodes[n as usize];
            for a in 0..3 {
                out[i].lo[a] = out[i].lo[a].min(x[a]);
                out[i].hi[a] = out[i].hi[a].max(x[a]);
            }
        }
    }
    (out, tags)
}

/// Refuses a mesh the file could not hold as it is: nodes and tags of
/// different counts, elements on nodes that do not exist or cut short,
/// blocks whose entity dimension is not their elements', names with a
/// quote or a line break.
fn check(g: &GmshMesh) -> GResult<()> {
    let bad = |m: String| Err(GmshError::Invalid(m));
    if g.nodes.len() != g.node_tags.len() {
        return bad(format!("{} nodes and {} node tags", g.nodes.len(), g.node_tags.len()));
    }
    for b in &g.blocks {
        if b.connectivity.len() % b.kind.nodes() != 0 || b.entity_dim != b.kind.dim() {
            return bad(format!("a block of {} values of {} nodes per {} in an entity of dimension {}", b.connectivity.len(), b.kind.nodes(), b.kind.name(), b.entity_dim));
        }
        if let Some(n) = b.connectivity.iter().find(|&&n| n as usize >= g.nodes.len()) {
            return bad(format!("an element refers to node index {n} of {}", g.nodes.len()));
        }
    }
    if let Some(n) = g.physical_names.iter().find(|n| n.2.contains(['"', '\n'])) {
        return bad(format!("the physical name {:?} holds a quote or a line break", n.2));
    }
    Ok(())
}

/// Writes `g` in `format`'s version and encoding. Node tags are kept;
/// elements are numbered from 1 in block order. In MSH 4 all nodes form
/// one block of the first entity of the highest dimension; in MSH 2.2 an
/// entity in several physical groups has its elements written once per
/// group, as Gmsh does. Tags beyond an `int` are an error in 2.2 and 4.0.
pub fn write_to(g: &GmshMesh, format: FileFormat) -> GResult<Vec<u8>> {
    let v = format.version;
    check(g)?;
    if v != Version::V4_1 && g.node_tags.iter().any(|&t| t > i32::MAX as u64) {
        return Err(GmshError::Invalid(format!("node tags above {} cannot be written in MSH {v}", i32::MAX)));
    }
    let mut out = Vec::new();
    let mut w = Writer { out: &mut out, binary: format.binary, version: v };
    w.text(&format!("$MeshFormat\n{v} {} 8\n", format.binary as u8));
    if format.binary {
        w.out.extend_from_slice(&1i32.to_le_bytes());
        w.text("\n");
    }
    w.text("$EndMeshFormat\n");
    if !g.physical_names.is_empty() {
        w.text(&format!("$PhysicalNames\n{}\n", g.physical_names.len()));
        for (dim, tag, name) in &g.physical_names {
            w.text(&format!("{dim} {tag} \"{name}\"\n"));
        }
        w.text("$EndPhysicalNames\n");
    }
    if v == Version::V2_2 {
        write_v2(&mut w, g);
    } else {
        write_v4(&mut w, g);
    }
    Ok(out)
}

fn write_v2(w: &mut Writer, g: &GmshMesh) {
    w.text(&format!("$Nodes\n{}\n", g.nodes.len()));
    for (t, x) in g.node_tags.iter().zip(&g.nodes) {
        w.int(*t as i32);
        for &c in x {
            w.real(c);
        }
        w.newline();
    }
    w.end("Nodes");
    let copies = |b: &ElementBlock| b.physical.len().max(1);
    let total: usize = g.blocks.iter().map(|b| b.len() * copies(b)).sum();
    w.text(&format!("$Elements\n{total}\n"));
    let mut number = 1;
    for b in g.blocks.iter().filter(|b| !b.is_empty()) {
        let physicals: Vec<i32> = if b.physical.is_empty() { vec![0] } else { b.physical.clone() };
        for p in physicals {
            if w.binary {
                for h in [b.kind.gmsh_type(), b.len() as i32, 2] {
                    w.int(h);
                }
            }
            for e in b.connectivity.chunks(b.kind.nodes()) {
                w.int(number);
                number += 1;
                if !w.binary {
                    w.int(b.kind.gmsh_type());
                    w.int(2);
                }
                w.int(p);
                w.int(b.entity_tag);
                for &n in e {
                    w.int(g.node_tags[n as usize] as i32);
                }
                w.newline();
            }
        }
    }
    w.end("Elements");
}

fn write_v4(w: &mut Writer, g: &GmshMesh) {
    let v = w.version;
    let (ents, entity_tags) = entities(g);
    w.text("$Entities\n");
    for d in 0..4 {
        w.size(ents.iter().filter(|e| e.dim == d).count() as u64);
    }
    w.newline();
    for d in 0..4 {
        for e in ents.iter().filter(|e| e.dim == d) {
            w.int(e.tag);
            let reals: Vec<f64> = if d == 0 && v == Version::V4_1 { e.lo.to_vec() } else { e.lo.iter().chain(&e.hi).copied().collect() };
            for r in reals {
                w.real(if r.is_finite() { r } else { 0.0 });
            }
            w.size(e.physical.len() as u64);
            for &p in &e.physical {
                w.int(p);
            }
            if d > 0 {
                w.size(0);
            }
            w.newline();
        }
    }
    w.end("Entities");
    let host = ents.iter().filter(|e| e.dim == g.dim()).map(|e| (e.dim as i32, e.tag)).next().unwrap_or((0, 0));
    let n_blocks = g.blocks.iter().filter(|b| !b.is_empty()).count();
    let n = g.nodes.len() as u64;
    let (lo, hi) = (g.node_tags.iter().min().copied().unwrap_or(0), g.node_tags.iter().max().copied().unwrap_or(0));
    w.text("$Nodes\n");
    w.counts(1, n, lo, hi);
    w.entity(host.0, host.1);
    w.int(0);
    w.size(n);
    w.newline();
    if v == Version::V4_1 {
        for &t in &g.node_tags {
            w.tag(t);
            w.newline();
        }
    }
    for (t, x) in g.node_tags.iter().zip(&g.nodes) {
        if v == Version::V4_0 {
            w.tag(*t);
        }
        for &c in x {
            w.real(c);
        }
        w.newline();
    }
    w.end("Nodes");
    let total: usize = g.blocks.iter().map(|b| b.len()).sum();
    w.text("$Elements\n");
    w.counts(n_blocks as u64, total as u64, 1, total as u64);
    let mut number = 1;
    for (b, &tag) in g.blocks.iter().zip(&entity_tags).filter(|(b, _)| !b.is_empty()) {
        w.entity(b.entity_dim as i32, tag);
        w.int(b.kind.gmsh_type());
        w.size(b.len() as u64);
        w.newline();
        for e in b.connectivity.chunks(b.kind.nodes()) {
            w.tag(number);
            number += 1;
            for &n in e {
                w.tag(g.node_tags[n as usize]);
            }
            w.newline();
        }
    }
    w.end("Elements");
}

struct Writer<'a> {
    out: &'a mut Vec<u8>,
    binary: bool,
    version: Version,
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
    /// A node or element tag: `int` in 4.0, `size_t` in 4.1.
    fn tag(&mut self, t: u64) {
        if self.version == Version::V4_0 { self.int(t as i32) } else { self.size(t) }
    }
    /// A block's entity: tag first in 4.0, dimension first in 4.1.
    fn entity(&mut self, dim: i32, tag: i32) {
        let (a, b) = if self.version == Version::V4_0 { (tag, dim) } else { (dim, tag) };
        self.int(a);
        self.int(b);
    }
    /// A section's counts: 4.1 adds the smallest and largest tag.
    fn counts(&mut self, blocks: u64, n: u64, lo: u64, hi: u64) {
        self.size(blocks);
        self.size(n);
        if self.version == Version::V4_1 {
            self.size(lo);
            self.size(hi);
        }
        self.newline();
    }
    fn real(&mut self, v: f64) {
        if self.binary { self.out.extend_from_slice(&v.to_le_bytes()) } else { self.sep(); self.text(&format!("{v:?}")) }
    }
    fn newline(&mut self) {
        if !self.binary {
            self.out.push(b'\n');
        }
    }
    /// Closes a section; binary data end with a newline before the marker.
    fn end(&mut self, name: &str) {
        if self.binary {
            self.out.push(b'\n');
        }
        self.text(&format!("$End{name}\n"));
    }
}
