//! From `cargo new` to a GPU solve of your own physics.
//!
//! This walks the path `examples/user-physics` in the repository takes: a
//! kernel crate with the physics, a host crate that compiles it to PTX and
//! solves with the library's Newton on either backend.
//!
//! # 1. Two crates
//!
//! ```text
//! cargo new --bin my-solver
//! cargo new --lib my-solver/kernels
//! ```
//!
//! `my-solver/kernels/Cargo.toml` (the physics, compiled for the host and,
//! by the host crate's build script, to PTX):
//!
//! ```toml
//! [lib]
//! crate-type = ["rlib"]
//!
//! [dependencies]
//! fem-core = "0.1"
//! fem-kernels = "0.1"
//! fem-gpu-macros = "0.1"
//! ```
//!
//! `my-solver/Cargo.toml`:
//!
//! ```toml
//! [dependencies]
//! fem = { package = "fem-gpu", version = "0.1" }
//! fem-build = "0.1"
//! kernels = { path = "kernels" }
//!
//! [build-dependencies]
//! fem-build = "0.1"
//! ```
//!
//! # 2. The physics, pointwise
//!
//! The weak form is ∫ φ·f0(u, ∇u, a, x) + ∇φ : f1(u, ∇u, a, x) = 0; the
//! tangent is g0..g3 (∂f0/∂u, ∂f0/∂∇u, ∂f1/∂u, ∂f1/∂∇u; absent ones are
//! zero). Write them once, generic over the precision and the dimension;
//! `#[fem_kernel]` makes the CPU variants and the GPU entry points for the
//! elements listed (`kernels/src/lib.rs`):
//!
//! ```ignore
//! #![no_std]
//! #![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx, asm_experimental_arch))]
//! use fem_kernels as _; // the device prelude and panic handler of the PTX build
//!
//! /// −Δu + u³ = 1.
//! #[fem_macros::fem_kernel(components = 1, elements(tri(p = 2, q = 6), tet(p = 2, q = 4)), precision(f64))]
//! pub mod reaction {
//!     use fem_core::Real;
//!     pub fn f0<T: Real, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [T; 1] {
//!         [u[0] * u[0] * u[0] - T::ONE]
//!     }
//!     pub fn f1<T: Real, const D: usize>(_u: &[T; 1], du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[T; D]; 1] {
//!         [du[0]]
//!     }
//!     pub fn g0<T: Real, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[T; 1]; 1] {
//!         [[T::from_f64(3.0) * u[0] * u[0]]]
//!     }
//!     pub fn g3<T: Real, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D]) -> [[[[T; D]; D]; 1]; 1] {
//!         [[core::array::from_fn(|d| core::array::from_fn(|g| if d == g { T::ONE } else { T::ZERO }))]]
//!     }
//! }
//! pub use reaction::Reaction;
//! ```
//!
//! `elements(...)` lists what to compile: `tri` and `tet` of degree 1 or
//! 2, `quad` and `hex` of degree 1 to 8, each with a rule of
//! `fem_core::shape::Shape::rule_sizes` points (`q`). On the GPU a
//! variant runs by thread transposition where a block of its cells fits
//! shared memory, and one cell per thread where it does not (Q3 or vector
//! Q2 hexahedra), holding the cell's point values in local memory.
//!
//! # 3. PTX at build time
//!
//! `my-solver/build.rs` compiles the kernel crate with rustc's NVPTX
//! backend (see `fem-build`; without the device toolchain the table is
//! empty and the program runs on the CPU):
//!
//! ```ignore
//! fn main() {
//!     let root = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
//!     let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
//!     fem_build::PtxBuilder::new(root.join("kernels"))
//!         .build_or_warn()
//!         .write_embedding(&out.join("user_kernels_ptx.rs"), "USER_PTX")
//!         .unwrap();
//! }
//! ```
//!
//! # 4. Mesh, space, conditions, solve
//!
//! A mesh is generated or read ([`crate::host::io::gmsh::read_path`], any
//! MSH version); [`crate::host::space::Space`] puts P1/P2 or Q_p on
//! it; [`crate::host::space::Constraints`] holds Dirichlet values on a
//! [`crate::host::space::BoundaryPart`] (the whole boundary, Gmsh physical
//! groups via [`crate::host::io::gmsh::GmshMesh::boundary`], or a
//! predicate), and [`crate::host::space::Load`] the sources and Neumann
//! tractions. [`crate::host::problem::nonlinear::solve`] runs Newton with
//! a backtracking line search and a preconditioned Krylov method (Jacobi-CG
//! by default) on the backend it is given,
//! everything resident there:
//!
//! ```ignore
//! use fem::host::operator::pointwise::Aux;
//! use fem::host::problem::nonlinear::{solve, NewtonOptions, Setup};
//! use fem::host::space::{BoundaryPart, Constraints, Space};
//! include!(concat!(env!("OUT_DIR"), "/user_kernels_ptx.rs"));
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let file = fem::host::io::gmsh::read_path("part.msh".as_ref())?;
//!     let (space, nodes) = file.space(2)?;
//!     let clamp = file.boundary(&["clamp".into()], &nodes)?;
//!     let bcs = Constraints::none(&space, 1).dirichlet(&space, &clamp, |_x, u| u[0] = 0.0)?;
//!     let cpu = fem::host::CpuBackend::new(None)?;
//!     let setup = Setup::<kernels::Reaction>::constrained(&cpu, &space, Aux::None, &bcs, None)?;
//!     // the library's kernels and the physics' entry points on one GPU
//!     let gpu = fem::cuda(0)?.with_kernels(&USER_PTX)?;
//!     let (u, report) = solve(&gpu, &setup, &bcs.initial(), &NewtonOptions::default(), &mut |s| println!("{s:?}"))?;
//!     println!("Newton residuals {:?}", report.residuals);
//!     fem::host::io::vtk::write_nodal("u.vtu".as_ref(), &space, &[fem::host::io::vtk::Field { name: "u", values: &u }], &[], fem::host::io::vtk::Encoding::Binary)?;
//!     Ok(())
//! }
//! ```
//!
//! Pass `&cpu` instead of `&gpu` to run the same solve on the CPU backend;
//! the tests of `examples/user-physics` check that both give the same
//! solution to 1e-10. For millions of rows, build the set-up with
//! `Setup::constrained_on(&gpu, &cpu, ...)` (and the multigrid levels below
//! with `with_multigrid_on(&gpu, &cpu, &nested)`): the sparsity patterns
//! are then made on the GPU and brought back, the same as the host's.
//!
//! For large meshes Jacobi-CG needs more iterations at every refinement.
//! Multigrid keeps them flat: build the space on the file's mesh refined
//! uniformly, let the set-up rediscretise your physics on every level, and
//! ask Newton for it:
//!
//! ```ignore
//! use fem::host::problem::nonlinear::Precond;
//! use fem::host::space::NestedSpaces;
//! let (cells, nodes) = file.cell_mesh()?;
//! let nested = NestedSpaces::new(cells, 2, 4)?; // the file's mesh and 3 refinements
//! let space = nested.finest();
//! // ... constraints and set-up on `space` as above, then:
//! let setup = setup.with_multigrid(&cpu, &nested)?;
//! let o = NewtonOptions { precond: Precond::multigrid(), ..Default::default() };
//! ```
//!
//! Where there is no refinement hierarchy (the file's mesh as it is),
//! algebraic multigrid builds one from the assembled tangent alone; on P2
//! and higher spaces it coarsens the tangent's projection on the mesh's
//! vertices:
//!
//! ```ignore
//! use fem::host::solver::amg::AmgOptions;
//! let setup = setup.with_low_order(&space)?; // degree 1: unchanged
//! let o = NewtonOptions { precond: Precond::Amg(AmgOptions::default()), ..Default::default() };
//! ```
//!
//! A field with as many components as the space has dimensions
//! (elasticity) gets the rigid-body modes as its near-nullspace, any other
//! the constants. Smoothed by Chebyshev or Jacobi, the hierarchy is set up
//! on the GPU, through the low-order level too; `standard` aggregation
//! and the SPAI(1) and ℓ1-Jacobi smoothers are set up on the host.
//!
//! The tangent is assembled into ELL-WARP on the GPU and CSR on the CPU
//! unless [`crate::host::problem::nonlinear::Assembly`] says otherwise:
//! `assembly: Assembly::Sparse(SpmvFormat::Cusparse)` for another sparse
//! format, or `Assembly::Lma` to apply the element matrices as they are
//! (no assembly into CSR; Jacobi only).
//!
//! Outside Newton, every operator is a
//! [`crate::host::operator::LinearOperator`]: a matrix in any format, the
//! element matrices, the matrix-free and tensor-product operators, every
//! preconditioner (Jacobi, SSOR, SPAI, SAINV, multigrid) and a Krylov solve
//! itself ([`crate::host::solver::KrylovSolve`]). Any of them is the
//! operator or the preconditioner of [`crate::host::solver::Krylov::solve`]:
//!
//! ```ignore
//! use fem::host::solver::{CgOptions, Jacobi, Krylov, KrylovSolve};
//! let jacobi = Jacobi::new(&gpu, &a)?;
//! let inner = KrylovSolve { method: Krylov::Cg, a: &a, m: &jacobi, opts: CgOptions { rtol: 1e-3, ..Default::default() } };
//! let report = Krylov::Gmres { restart: 30 }.solve(&gpu, &a, &inner, &b, &mut x, CgOptions::default())?;
//! ```
//!
//! A transient problem M u̇ + R(u) = 0 steps with
//! [`crate::host::problem::nonlinear::time::integrate`] (θ-method or BDF2,
//! a Newton solve per step, a callback after each). Dirichlet values that
//! change in time are functions of x and t; give the integrator the
//! constraints, and it sets those rows on the backend to their values at
//! each step's time. A source or a boundary flux that changes in time is
//! written in the physics: a pointwise function that takes one more
//! argument, `t: T`, after the others, sees the time of each evaluation
//! (tₙ in the θ-method's explicit part, tₙ₊₁ in the step's solve):
//!
//! ```ignore
//! /// f0 = −f(x, t): a heat source that moves with time.
//! pub fn f0<T: Real, const D: usize>(_u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], x: &[T; D], t: T) -> [T; 1] {
//!     [-(x[0] - t).cos()]
//! }
//! ```
//!
//! A load vector that changes in time can also be given as a function of
//! t that writes it (`Forcing { boundary, load: Some(&f) }`):
//!
//! ```ignore
//! use fem::host::problem::nonlinear::time::{integrate, Forcing, Scheme, TimeOptions};
//! let bcs = Constraints::none(&space, 1).dirichlet_in_time(&space, &clamp, |x, t, u| u[0] = (t * x[0]).sin())?;
//! let o = TimeOptions { dt: 1e-2, steps: 100, scheme: Scheme::Bdf2, newton: NewtonOptions::default() };
//! let (u, report) = integrate(&gpu, &setup, &space, &bcs.initial(), Forcing::boundary(&bcs), &o, &mut |_step, _t, _u| Ok(()))?;
//! ```
//!
//! # 5. Neumann and Robin conditions as physics
//!
//! A condition that depends on the solution (a convective or radiative
//! boundary, a spring support, a follower load) is a boundary term of the
//! weak form, ∫_Γ φ·bf0(u, ∇u, a, x, n), written in the same module as the
//! rest, with its linearisation bg0 = ∂bf0/∂u and bg1 = ∂bf0/∂∇u (n is the
//! outward unit normal; ∇u is the cell's gradient at the boundary):
//!
//! ```ignore
//! /// ∂u/∂n + u³ = 0 on the boundary the set-up names.
//! pub fn bf0<T: Real, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D], _n: &[T; D]) -> [T; 1] {
//!     [u[0] * u[0] * u[0]]
//! }
//! pub fn bg0<T: Real, const D: usize>(u: &[T; 1], _du: &[[T; D]; 1], _a: &[T; 0], _da: &[[T; D]; 0], _x: &[T; D], _n: &[T; D]) -> [[T; 1]; 1] {
//!     [[T::from_f64(3.0) * u[0] * u[0]]]
//! }
//! ```
//!
//! The set-up says where it acts (before `with_multigrid` or
//! `with_p_multigrid_on`, which carry it to every level); Newton then
//! evaluates it on the chosen facets of either backend, one more element
//! after the cells. Its linearisation is kept as the cells' tangent is:
//! element matrices with an assembled tangent, bg0 and bg1 at the facet
//! points beside partial assembly or the matrix-free action:
//!
//! ```ignore
//! let cooled = file.boundary(&["skin".into()], &nodes)?;
//! let setup = setup.with_boundary_term(&space, &cooled)?;
//! ```
//!
//! The shipped [`crate::kernels::physics::Radiation`] is such a physics.
//!
//! # 6. Across ranks
//!
//! The same set-up runs on every rank of an MPI job (or ranks run as
//! threads, [`crate::host::distributed::Threads`]), each with its own
//! backend. Rank 0 alone builds the whole space, its conditions and load,
//! partitions the cells and cuts every rank's share: its piece (the nodes
//! it owns and the ghosts it reads), the piece's space, and the
//! conditions, load and auxiliary values there. The other ranks wait idle
//! and receive theirs; each builds its set-up on its piece, and Newton's
//! updates run across the ranks, the halo exchanged before every product
//! (through NCCL between GPUs):
//!
//! ```ignore
//! use fem::host::distributed::{agree, mpi::Mpi, newton, Communicator, Partition, Partitioner, Share, Whole};
//! let comm = Mpi::init()?; // feature `mpi`, under mpirun
//! let made = match comm.rank() {
//!     0 => {
//!         // the whole problem, on rank 0 only
//!         let partition = Partition::new(&space, comm.size(), Partitioner::Metis)?;
//!         let whole = Whole { space: &space, constraints: &constraints, load: &load, aux: Aux::None, boundary: None };
//!         Some(Share::cut(&whole, &partition)?)
//!     }
//!     _ => None,
//! };
//! let share = Share::scatter(&comm, made)?;
//! let setup = Setup::<MyPhysics>::constrained(&cpu, &share.space, share.aux(), &share.constraints, Some(&share.load))?;
//! // u on the piece: its owned rows, then its ghosts as their owners hold them
//! let (local, report) = newton::solve(&gpu, &comm, &share.piece, &setup, &share.constraints.initial(), &NewtonOptions::default())?;
//! let u = share.piece.gather(&comm, 1, &local[..share.piece.owned])?; // the whole solution, on rank 0
//! ```
//!
//! (A rank's error before a collective would leave the others waiting:
//! [`crate::host::distributed::agree`] makes every rank's result one, as
//! `fem solve` does around each step.)
//!
//! Jacobi, Chebyshev–Jacobi, AMG and no preconditioner run across ranks,
//! with CG, BiCGStab or GMRES: their dot products and norms are sums over
//! the ranks' owned rows ([`crate::host::distributed::Distributed`]). AMG
//! (`Precond::Amg`) builds a partitioned hierarchy
//! ([`crate::host::distributed::amg`]): each level's rows stay with their
//! owner, with a halo of their own.
//!
//! # 7. Without writing code
//!
//! The shipped physics solve from the command line on any Gmsh file:
//!
//! ```text
//! fem solve --mesh bracket.msh --physics elasticity --degree 2 \
//!     --dirichlet-group clamp --neumann-group load=0:0:-1 --load one --vtk u.vtu
//! mpirun -np 4 fem solve --mesh bracket.msh --physics elasticity --degree 2 \
//!     --dirichlet-group clamp --neumann-group load=0:0:-1 --load one --vtk u.pvtu
//! ```
