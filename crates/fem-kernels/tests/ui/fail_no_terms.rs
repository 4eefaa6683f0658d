#[fem_kernels::fem_kernel(elements(tri(p = 1, q = 1)))]
pub mod nothing {
    pub fn helper() {}
}
fn main() {}
