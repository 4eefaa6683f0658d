//! The file readers under deterministic mutation (the stable-toolchain
//! counterpart of the cargo-fuzz targets in `fuzz/`): flipped bytes,
//! truncations, inserted huge numbers and duplicated slices of valid Gmsh
//! (ASCII and binary) and Matrix Market files must give a result or an
//! error, never a panic, and never an allocation beyond what the bytes
//! can describe.

use fem::host::io::{gmsh, matrix_market};
use fem::host::mesh::BoxMesh;
use fem::host::rng::SplitMix64;
use std::time::Instant;

fn mutate(base: &[u8], rng: &mut SplitMix64) -> Vec<u8> {
    let mut v = base.to_vec();
    match rng.below(4) {
        0 => {
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(v.len());
                v[i] = rng.next_u64() as u8;
            }
        }
        1 => v.truncate(rng.below(v.len())),
        2 => {
            let i = rng.below(v.len());
            let huge: &[u8] = [&b"99999999999999999999"[..], b"18446744073709551615", b"-1", b"1e308", b"nan"][rng.below(5)];
            v.splice(i..i, huge.iter().copied());
        }
        _ => {
            let (a, b) = (rng.below(v.len()), rng.below(v.len()));
            let (a, b) = (a.min(b), a.max(b).min(a + 4096));
            let slice = v[a..b].to_vec();
            v.splice(b..b, slice);
        }
    }
    v
}

/// Reads 100 mutants of each base file (600 at least); `read` says whether one was accepted. Both outcomes
/// must occur, or the mutations test nothing.
fn survives(name: &str, bases: &[Vec<u8>], read: impl Fn(&[u8]) -> bool) {
    let mut rng = SplitMix64::new(2024);
    let t0 = Instant::now();
    let mut accepted = 0;
    let cases = 600.max(100 * bases.len());
    for case in 0..cases {
        let base = &bases[case % bases.len()];
        let input = mutate(base, &mut rng);
        accepted += read(&input) as usize;
    }
    assert!((cases / 30..cases - cases / 30).contains(&accepted), "{name}: {accepted} of {cases} mutants accepted");
    // Bounded work: declared sizes are checked before allocating.
    assert!(t0.elapsed().as_secs_f64() < 60.0, "{name}: {:?}", t0.elapsed());
}

#[test]
fn the_gmsh_reader_survives_mutated_files() {
    use gmsh::{FileFormat, GmshMesh, Version};
    // every version in ASCII and binary, quadrilaterals, hexahedra, triangles and tetrahedra
    let mut meshes: Vec<GmshMesh> = [2, 3].iter().map(|&dim| {
        let m = BoxMesh::unstructured(dim, 3, 1).build().unwrap();
        GmshMesh::from_box_mesh(&m, &vec![0; m.n_cells()], &["domain"]).unwrap()
    }).collect();
    meshes.extend([2, 3].iter().map(|&dim| GmshMesh::from_simplex_mesh(&fem::host::mesh::simplex::SimplexBox::unstructured(dim, 2, 1).build().unwrap())));
    let mut bases = Vec::new();
    for (i, m) in meshes.iter().enumerate() {
        for version in Version::ALL {
            bases.push(gmsh::write_to(m, FileFormat { version, binary: i % 2 == 0 }).unwrap());
            bases.push(gmsh::write_to(m, FileFormat { version, binary: i % 2 == 1 }).unwrap());
        }
    }
    survives("gmsh", &bases, |b| {
        gmsh::read(b).map(|m| {
            let _ = m.info();
            m.to_mesh().is_ok() || m.to_simplex_mesh().is_ok()
        }).unwrap_or(false)
    });
}

#[test]
fn the_matrix_market_reader_survives_mutated_files() {
    let cpu = fem::host::CpuBackend::new(Some(1)).unwrap();
    let csr = fem::host::sparse::generate::fem_matrix::<f64>(&cpu, 2, 2, 200, 1, false).unwrap();
    let bases: Vec<Vec<u8>> = [false, true]
        .iter()
        .map(|&sym| {
            let mut out = Vec::new();
            matrix_market::write(&csr, sym, &mut out).unwrap();
            out
        })
        .collect();
    survives("matrix market", &bases, |b| {
        matrix_market::read(b).and_then(|c| c.to_csr::<f64>()).is_ok()
    });
}
