//! `#[fem_kernel]` accepts a user physics and rejects what it cannot
//! generate, pointing at the offending tokens. The cases are compiled as
//! a user's kernel crate is, against this crate, whose build script then
//! runs in trybuild's own target directory: the diagnostics need no
//! device code, so that build compiles no PTX.

#[test]
fn fem_kernel_diagnostics() {
    std::env::set_var("FEM_PTX", "off");
    std::env::remove_var("FEM_REQUIRE_PTX");
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass_reaction_diffusion.rs");
    t.compile_fail("tests/ui/fail_*.rs");
}
