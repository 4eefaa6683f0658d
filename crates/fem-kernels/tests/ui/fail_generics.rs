#[fem_kernels::fem_kernel(elements(tri(p = 1, q = 1)))]
pub mod p {
    pub fn f1(_u: &[f64; 1], du: &[[f64; 2]; 1], _a: &[f64; 0], _da: &[[f64; 2]; 0], _x: &[f64; 2]) -> [[f64; 2]; 1] {
        [du[0]]
    }
}
fn main() {}
