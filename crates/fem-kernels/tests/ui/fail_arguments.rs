#[fem_kernels::fem_kernel(elements(tri(p = 1, q = 1)))]
pub mod p {
    use fem_kernels::fem_core::Real;
    pub fn f1<T: Real, const D: usize>(du: &[[T; D]; 1]) -> [[T; D]; 1] {
        [du[0]]
    }
}
fn main() {}
