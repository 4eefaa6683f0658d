#[fem_kernels::fem_kernel(elements(tri(p = 1, q = 1)))]
pub mod robin {
    use fem_kernels::fem_core::Real;
    pub fn f1<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[T; D]; 1] {
        [du[0]]
    }
    pub fn bg0<T: Real, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D], _n: &[T; D]) -> [[T; 1]; 1] {
        [[T::ONE]]
    }
}
#[fem_kernels::fem_kernel(elements(tri(p = 1, q = 1)))]
pub mod flux {
    use fem_kernels::fem_core::Real;
    pub fn f1<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[T; D]; 1] {
        [du[0]]
    }
    pub fn bf0<T: Real, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [T; 1] {
        [u[0]]
    }
}
fn main() {}
