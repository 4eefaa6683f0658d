#[fem_kernels::fem_kernel(elements(tri(p = 1, q = 2)))]
pub mod p {
    use fem_kernels::fem_core::Real;
    pub fn f1<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[T; D]; 1] {
        [du[0]]
    }
}
fn main() {}
