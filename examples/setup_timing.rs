//! Times the host set-up stages of a GPU solve (mesh, DOFs, layout, cell
//! data, CSR pattern and positions, ELLPACK planes and slot positions,
//! colourings) at a given size:
//! `cargo run --release --example setup_timing -- DIM DEGREE DOFS`.

use fem::host::mesh::BoxMesh;
use fem::host::operator::cell_data::CellData;
use fem::host::operator::colouring::TwoLevel;
use fem::host::operator::csr::Csr;
use fem::host::operator::ell::Ell;
use fem::host::operator::gpu::plane_stride;
use fem::host::space::{DirichletMode, Layout, Space};
use fem::host::CpuBackend;
use std::time::Instant;

fn main() {
    let a: Vec<usize> = std::env::args().skip(1).map(|s| s.parse().expect("DIM DEGREE DOFS")).collect();
    let (dim, p, dofs) = (a[0], a[1], a[2]);
    let cells = fem::solve::cells_for_dofs(dim, p, dofs);
    let cpu = CpuBackend::new(None).unwrap();
    let t = Instant::now();
    let lap = |what: &str, t: &mut Instant| {
        println!("{what:<24} {:>8.3} s", t.elapsed().as_secs_f64());
        *t = Instant::now();
    };
    let mut t0 = t;
    let mesh = BoxMesh::structured(dim, cells).build().unwrap();
    lap("mesh", &mut t0);
    let space = Space::tensor(&mesh, p).unwrap();
    lap("space", &mut t0);
    let layout = Layout::new(&space, DirichletMode::Eliminate);
    lap("layout", &mut t0);
    let _cd = CellData::<f64>::new(&space, &layout);
    lap("cell data", &mut t0);
    let csr = Csr::<f64>::pattern(&cpu, &layout).unwrap();
    lap("csr pattern", &mut t0);
    let pos = csr.element_positions(&layout);
    lap("element positions", &mut t0);
    let ld = plane_stride(csr.n_rows);
    let _slots = Ell::slots_of_csr_positions(&csr, &pos, ld).unwrap();
    lap("ellpack slot positions", &mut t0);
    let _planes = Ell::planes_of_csr(&csr, ld);
    lap("ellpack planes", &mut t0);
    let _tl = TwoLevel::new(&layout, 128).unwrap();
    lap("two-level colouring", &mut t0);
    println!("{} DOFs, {} cells, total {:.3} s", space.n_dofs, mesh.n_cells(), t.elapsed().as_secs_f64());
}
