//! Solves across ranks: one process (or thread) a rank, each with its
//! own backend (a CPU or one GPU), the mesh's cells partitioned among them
//! ([`partition`]), each rank owning some nodes and reading its
//! neighbours' as ghosts ([`piece`]), ghost values exchanged before every
//! operator application ([`halo`], [`operator`]), and global sums in the
//! Krylov methods ([`backend`]). The ranks talk through a
//! [`Communicator`]: MPI (feature `mpi`) between processes, threads in
//! one process, or none for one rank.
//!
//! Rank 0 alone builds the whole space, partitions it and cuts every
//! rank's piece ([`share`]); each rank then receives its share, and
//! assembles and solves on its piece alone.

pub mod amg;
pub mod amg_device;
pub mod backend;
pub mod bricks;
pub mod comm;
pub mod halo;
pub mod layout;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod newton;
pub mod operator;
pub mod packing;
pub mod partition;
pub mod piece;
pub mod rows;
pub mod share;

pub use backend::Distributed;
pub use bricks::Bricks;
pub use comm::{agree, Communicator, Serial, Threads};
pub use halo::{Halo, HaloBackend};
pub use layout::Layout;
pub use newton::{DistributedReport, Ranks};
pub use operator::{HaloOperator, Overlap};
pub use partition::{Partition, Partitioner};
pub use piece::Piece;
pub use share::{AuxAt, Share, Whole};
