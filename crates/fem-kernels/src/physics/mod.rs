//! The physics fem ships, each written as pointwise functions with
//! `#[fem_kernel]`, exactly as a user writes their own: the macro
//! generates the CPU variants and the PTX entry points.

pub mod cardiac;
pub mod elasticity;
pub mod mass;
pub mod minimal_surface;
pub mod neo_hookean;
pub mod poisson;
pub mod radiation;

pub use cardiac::Monodomain;
pub use elasticity::Elasticity;
pub use mass::Mass;
pub use minimal_surface::MinimalSurface;
pub use neo_hookean::NeoHookean;
pub use poisson::Poisson;
pub use radiation::Radiation;
