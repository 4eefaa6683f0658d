//! `#[fem_kernel]` accepts a user physics and rejects what it cannot
//! generate, pointing at the offending tokens.

#[test]
fn fem_kernel_diagnostics() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass_reaction_diffusion.rs");
    t.compile_fail("tests/ui/fail_*.rs");
}
