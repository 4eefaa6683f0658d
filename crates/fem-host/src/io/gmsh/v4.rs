//! The `$Entities`, `$Nodes` and `$Elements` sections of MSH 4.0 and 4.1.
//! They differ in the width of tags (`int` in 4.0, `size_t` in 4.1), in
//! the order of a block's entity dimension and tag, in where node tags
//! stand (beside each node's coordinates in 4.0, before a block's
//! coordinates in 4.1), and in points' bounding boxes (a box in 4.0, a
//! point in 4.1).

use super::{Cursor, ElementKind, GResult, GmshError, GmshMesh, RawBlock, Version};
use std::collections::HashMap;

/// A tag: an `int` in 4.0, a `size_t` in 4.1.
fn tag(c: &mut Cursor, v: Version) -> GResult<u64> {
    if v == Version::V4_0 { c.int_tag() } else { c.size() }
}

/// A block's entity as (dimension, tag): 4.0 writes the tag first.
fn entity(c: &mut Cursor, v: Version) -> GResult<(i32, i32)> {
    let (a, b) = (c.int()?, c.int()?);
    let (dim, tag) = if v == Version::V4_0 { (b, a) } else { (a, b) };
    if !(0..=3).contains(&dim) {
        return c.err(format!("entity dimension {dim}"));
    }
    Ok((dim, tag))
}

pub(super) fn read_entities(c: &mut Cursor, v: Version, entities: &mut HashMap<(usize, i32), Vec<i32>>) -> GResult<()> {
    let counts = [c.size()?, c.size()?, c.size()?, c.size()?];
    for (dim, &n) in counts.iter().enumerate() {
        c.check_fits(n, &format!("entities of dimension {dim}"), 2)?;
        for _ in 0..n {
            let tag = c.int()?;
            let reals = if dim == 0 && v == Version::V4_1 { 3 } else { 6 };
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

pub(super) fn read_nodes(c: &mut Cursor, v: Version, mesh: &mut GmshMesh) -> GResult<()> {
    let blocks = c.count("node blocks", 4)?;
    let total = c.count("nodes", 4)?;
    if v == Version::V4_1 {
        c.size()?;
        c.size()?;
    }
    mesh.nodes.reserve(total);
    mesh.node_tags.reserve(total);
    for _ in 0..blocks {
        let (dim, _) = entity(c, v)?;
        let parametric = c.int()?;
        // Parametric coordinates follow x, y, z: in 4.0 as many as the
        // node type says, in 4.1 as many as the entity's dimension.
        let params = match (v, parametric) {
            (_, 0) => 0,
            (Version::V4_0, p @ 1..=3) => p as usize,
            (Version::V4_1, 1) => dim as usize,
            (_, p) => return c.err(format!("parametric flag {p}")),
        };
        let n = c.count("nodes in a block", 4)?;
        if mesh.nodes.len() + n > total {
            return c.err(format!("the blocks hold more than the {total} nodes declared"));
        }
        if v == Version::V4_1 {
            for _ in 0..n {
                mesh.node_tags.push(c.size()?);
            }
        }
        for _ in 0..n {
            if v == Version::V4_0 {
                mesh.node_tags.push(c.int_tag()?);
            }
            mesh.nodes.push([c.real()?, c.real()?, c.real()?]);
            for _ in 0..params {
                c.real()?;
            }
        }
    }
    if mesh.nodes.len() != total {
        return c.err(format!("{} nodes read, {total} declared", mesh.nodes.len()));
    }
    Ok(())
}

pub(super) fn read_elements(c: &mut Cursor, v: Version, raw: &mut Vec<RawBlock>) -> GResult<()> {
    let blocks = c.count("element blocks", 4)?;
    let total = c.count("elements", 2)?;
    if v == Version::V4_1 {
        c.size()?;
        c.size()?;
    }
    let mut read = 0usize;
    for _ in 0..blocks {
        let (dim, entity_tag) = entity(c, v)?;
        let kind = ElementKind::from_gmsh(c.int()?)?;
        if dim as usize != kind.dim() {
            return c.err(format!("a block of entity dimension {dim} holds {} elements", kind.name()));
        }
        let n = c.count("elements in a block", 1 + kind.nodes())?;
        let mut node_tags = Vec::with_capacity(n * kind.nodes());
        for _ in 0..n {
            tag(c, v)?;
            for _ in 0..kind.nodes() {
                node_tags.push(tag(c, v)?);
            }
        }
        read += n;
        raw.push(RawBlock { kind, dim: dim as usize, entity: entity_tag, physical: None, node_tags });
    }
    if read != total {
        return Err(GmshError::Syntax { section: c.section.into(), line: c.line(), message: format!("{read} elements read, {total} declared") });
    }
    Ok(())
}
