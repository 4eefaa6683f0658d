//! Conversions of a file's mesh into the meshes fem's solvers take, and
//! the physical groups as boundary facets and material regions.

use super::{ElementBlock, ElementKind, GResult, GmshError, GmshMesh};
use crate::mesh::Mesh;
use crate::space::{BoundaryPart, CellMesh, Space};

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
        let top = self.top_cells(|k| k.solver_cell() && !k.is_simplex(), "the Q_p solvers take quadrilaterals and hexahedra of order 1 and 2 (triangles and tetrahedra go to the simplex solvers)")?;
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
        Ok(self.to_simplex_mesh_and_nodes()?.0)
    }

    /// [`GmshMesh::to_simplex_mesh`] and, per file node, its mesh vertex
    /// (`u32::MAX` for nodes no cell uses).
    pub fn to_simplex_mesh_and_nodes(&self) -> GResult<(crate::mesh::simplex::SimplexMesh, Vec<u32>)> {
        let dim = self.dim();
        if dim < 2 {
            return Err(GmshError::Invalid("the file has no 2D or 3D elements".into()));
        }
        let top = self.top_cells(|k| k.solver_cell() && k.is_simplex(), "the simplex solvers take triangles and tetrahedra of order 1 and 2 (quadrilaterals and hexahedra go to the Q_p solvers)")?;
        let (coords, cells, used) = self.corner_cells::<4>(&top, &[0, 1, 2, 3][..=dim], u32::MAX)?;
        let mut mesh = crate::mesh::simplex::SimplexMesh { dim, coords, cells };
        for c in 0..mesh.n_cells() {
            if mesh.signed_volume(c) < 0.0 {
                mesh.cells[c].swap(0, 1);
            }
        }
        mesh.validate().map_err(|e| GmshError::Invalid(e.to_string()))?;
        Ok((mesh, used))
    }

    /// Whether the cells of the highest dimension are triangles or
    /// tetrahedra (else quadrilaterals or hexahedra, or a mix the
    /// conversions refuse).
    pub fn is_simplex(&self) -> bool {
        let dim = self.dim();
        self.blocks.iter().filter(|b| b.kind.dim() == dim).all(|b| b.kind.is_simplex())
    }

    /// The file's cells of the highest dimension as the mesh a nodal space
    /// is built on and, per file node, its mesh vertex (which
    /// [`GmshMesh::boundary`] takes); meshes that mix cell kinds are refused.
    pub fn cell_mesh(&self) -> crate::Result<(CellMesh, Vec<u32>)> {
        let dim = self.dim();
        let top = || self.blocks.iter().filter(|b| b.kind.dim() == dim);
        if top().any(|b| b.kind.is_simplex()) && top().any(|b| !b.kind.is_simplex()) {
            let kinds: std::collections::BTreeSet<String> = top().map(|b| b.kind.name()).collect();
            return Err(GmshError::Unsupported(format!("the mesh's {dim}D cells mix {}: a space takes one kind of cell (triangles, quadrilaterals, tetrahedra or hexahedra, first or second order)", kinds.into_iter().collect::<Vec<_>>().join(", "))).into());
        }
        if self.is_simplex() {
            let (mesh, nodes) = self.to_simplex_mesh_and_nodes()?;
            Ok((CellMesh::Simplex(mesh), nodes))
        } else {
            let (mesh, nodes) = self.to_mesh_and_nodes()?;
            Ok((CellMesh::Tensor(mesh), nodes))
        }
    }

    /// The nodal space of degree `degree` on the file's cells (P1/P2 on
    /// triangles and tetrahedra, Q_p on quadrilaterals and hexahedra) and,
    /// per file node, its mesh vertex, which [`GmshMesh::boundary`] takes.
    pub fn space(&self, degree: usize) -> crate::Result<(Space, Vec<u32>)> {
        let (mesh, nodes) = self.cell_mesh()?;
        Ok((mesh.space(degree)?, nodes))
    }

    /// The boundary part made of physical groups `groups` (names or
    /// numbers) of the facet dimension, for boundary conditions on the
    /// space of [`GmshMesh::space`] (`nodes` its node map). A group
    /// the file lacks, or one of another dimension, is an error listing
    /// the boundary groups the file has.
    pub fn boundary(&self, groups: &[String], nodes: &[u32]) -> GResult<BoundaryPart> {
        Ok(BoundaryPart::Facets { name: groups.join(","), keys: self.group_facets(groups, nodes)? })
    }

    /// The blocks of the highest dimension, or an error naming every
    /// element type among them that `accept` refuses, with its count, and
    /// saying what the solver takes (`takes`).
    fn top_cells(&self, accept: impl Fn(ElementKind) -> bool, takes: &str) -> GResult<Vec<&ElementBlock>> {
        let dim = self.dim();
        let top: Vec<&ElementBlock> = self.blocks.iter().filter(|b| b.kind.dim() == dim).collect();
        let mut refused: Vec<(ElementKind, usize)> = Vec::new();
        for b in top.iter().filter(|b| !accept(b.kind)) {
            match refused.iter_mut().find(|r| r.0 == b.kind) {
                Some(r) => r.1 += b.len(),
                None => refused.push((b.kind, b.len())),
            }
        }
        if refused.is_empty() {
            return Ok(top);
        }
        let list: Vec<String> = refused.iter().map(|(k, n)| format!("{} ({n})", k.name())).collect();
        Err(GmshError::Unsupported(format!("the mesh's {dim}D cells include {}, which this solver cannot use: {takes}", list.join(", "))))
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
