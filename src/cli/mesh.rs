//! `fem mesh-gen` and `fem mesh-info`: Gmsh files.

use crate::*;

/// A Gmsh format version on the command line.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum MshVersion {
    #[value(name = "2.2")]
    V22,
    #[value(name = "4.0")]
    V40,
    #[value(name = "4.1")]
    V41,
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn mesh_gen(output: &std::path::Path, dim: usize, cells: usize, unstructured: bool, binary: bool, format: MshVersion, simplex: bool) -> CliResult {
    use fem::host::io::gmsh::{self, FileFormat, GmshMesh, Version};
    let version = match format {
        MshVersion::V22 => Version::V2_2,
        MshVersion::V40 => Version::V4_0,
        MshVersion::V41 => Version::V4_1,
    };
    let file = if simplex {
        use fem::host::mesh::simplex::SimplexBox;
        let b = if unstructured { SimplexBox::unstructured(dim, cells, 1) } else { SimplexBox { dim, cells, perturb: 0.0, shuffle: false, seed: 1 } };
        GmshMesh::from_simplex_mesh(&b.build()?)
    } else {
        let mesh = fem::solve::mesh(dim, cells, unstructured, 1).build()?;
        GmshMesh::from_box_mesh(&mesh, &vec![0; mesh.n_cells()], &["domain"])?
    };
    let bytes = gmsh::write_to(&file, FileFormat { version, binary })?;
    fem::host::io::atomic_write(output, &bytes).map_err(|e| format!("cannot write {}: {e}", output.display()))?;
    let cells = file.blocks.iter().filter(|b| b.kind.dim() == dim).map(|b| b.len()).sum::<usize>();
    eprintln!("wrote {} (MSH {version}, {cells} cells, {} vertices)", output.display(), file.nodes.len());
    Ok(true)
}

pub(crate) fn mesh_info(file: &std::path::Path, json: bool) -> CliResult {
    let mesh = fem::host::io::gmsh::read_path(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let info = mesh.info();
    if json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        println!("file: {}", file.display());
        print!("{info}");
    }
    Ok(true)
}
