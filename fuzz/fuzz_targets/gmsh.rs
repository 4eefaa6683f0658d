#![no_main]
//! Any bytes, in any MSH version: the Gmsh reader returns a mesh or an error, never panics,
//! and never allocates more than the input can describe.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = fem_host::io::gmsh::read(data) {
        let _ = m.info();
        let _ = m.to_mesh();
        let _ = m.to_simplex_mesh();
    }
});
