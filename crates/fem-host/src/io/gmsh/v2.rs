//! The `$Nodes` and `$Elements` sections of MSH 2.2. Counts are text even
//! in binary files; elements carry their own tags (physical group first,
//! then the elementary entity, then partitions, which are skipped) and, in
//! binary files, come in runs of one type under a three-`int` header.

use super::{Cursor, ElementKind, GResult, GmshMesh, RawBlock};
use std::collections::HashMap;

pub(super) fn read_nodes(c: &mut Cursor, binary: bool, mesh: &mut GmshMesh) -> GResult<()> {
    let n = c.text_count("nodes", 4)?;
    if binary {
        c.start_binary();
    }
    mesh.nodes.reserve(n);
    mesh.node_tags.reserve(n);
    for _ in 0..n {
        mesh.node_tags.push(c.int_tag()?);
        mesh.nodes.push([c.real()?, c.real()?, c.real()?]);
    }
    Ok(())
}

/// The blocks of one element type, physical group and entity, in order of
/// first appearance.
struct Grouper<'r> {
    raw: &'r mut Vec<RawBlock>,
    index: HashMap<(ElementKind, i32, i32), usize>,
    tags: Vec<i32>,
    nodes: Vec<u64>,
}

impl Grouper<'_> {
    /// Reads one element's `nt` tags and its nodes and files it.
    fn element(&mut self, c: &mut Cursor, kind: ElementKind, nt: i32) -> GResult<()> {
        if nt < 0 {
            return c.err(format!("an element with {nt} tags"));
        }
        let nt = c.check_fits(nt as u64, "tags", 1)?;
        self.tags.clear();
        for _ in 0..nt {
            self.tags.push(c.int()?);
        }
        self.nodes.clear();
        for _ in 0..kind.nodes() {
            self.nodes.push(c.int_tag()?);
        }
        let (tags, nodes) = (std::mem::take(&mut self.tags), std::mem::take(&mut self.nodes));
        self.push(kind, &tags, nodes.iter().copied());
        (self.tags, self.nodes) = (tags, nodes);
        Ok(())
    }

    fn push(&mut self, kind: ElementKind, tags: &[i32], nodes: impl Iterator<Item = u64>) {
        let physical = tags.first().copied().unwrap_or(0);
        let entity = tags.get(1).copied().unwrap_or(0);
        let raw = &mut *self.raw;
        let i = *self.index.entry((kind, physical, entity)).or_insert_with(|| {
            let physical = if physical == 0 { Vec::new() } else { vec![physical] };
            raw.push(RawBlock { kind, dim: kind.dim(), entity, physical: Some(physical), node_tags: Vec::new() });
            raw.len() - 1
        });
        raw[i].node_tags.extend(nodes);
    }
}

pub(super) fn read_elements(c: &mut Cursor, binary: bool, raw: &mut Vec<RawBlock>) -> GResult<()> {
    let total = c.text_count("elements", 2)?;
    let mut g = Grouper { raw, index: HashMap::new(), tags: Vec::new(), nodes: Vec::new() };
    if !binary {
        // number, type, tag count, tags, nodes: one line per element
        for _ in 0..total {
            c.int()?;
            let kind = ElementKind::from_gmsh(c.int()?)?;
            let nt = c.int()?;
            g.element(c, kind, nt)?;
        }
        return Ok(());
    }
    // runs of one type and tag count under a header; each element is its
    // number, its tags and its nodes
    c.start_binary();
    let mut read = 0usize;
    while read < total {
        let kind = ElementKind::from_gmsh(c.int()?)?;
        let n = c.int()?;
        let nt = c.int()?;
        if n <= 0 || nt < 0 || read + n as usize > total {
            return c.err(format!("a run of {n} elements with {nt} tags, {read} of {total} read"));
        }
        let n = c.check_fits(n as u64, "elements in a run", 1 + nt as usize + kind.nodes())?;
        for _ in 0..n {
            c.int()?;
            g.element(c, kind, nt)?;
        }
        read += n;
    }
    Ok(())
}

/// Merges the copies MSH 2.2 writes of an entity in several physical
/// groups (the same elements once per group) into one block with every
/// group; blocks of one entity whose elements differ stay apart. Blocks
/// are found by a hash of their type, entity and nodes, so a file of many
/// small blocks costs no more than a linear pass.
pub(super) fn merge_copies(raw: Vec<RawBlock>) -> Vec<RawBlock> {
    use std::hash::{Hash, Hasher};
    let key = |b: &RawBlock| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (b.kind, b.entity, &b.node_tags).hash(&mut h);
        h.finish()
    };
    let mut out: Vec<RawBlock> = Vec::with_capacity(raw.len());
    let mut seen: HashMap<u64, Vec<usize>> = HashMap::new();
    for b in raw {
        let k = key(&b);
        let twin = seen.get(&k).and_then(|c| c.iter().copied().find(|&i| out[i].kind == b.kind && out[i].entity == b.entity && out[i].node_tags == b.node_tags && out[i].physical != b.physical));
        match twin {
            Some(i) => out[i].physical.get_or_insert_with(Vec::new).extend(b.physical.unwrap_or_default()),
            None => {
                seen.entry(k).or_default().push(out.len());
                out.push(b);
            }
        }
    }
    out
}
