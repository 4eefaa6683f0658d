//! The options given on the command line (not defaulted), and which of
//! them a command's path or backend reads: `fem solve` has three paths
//! (the Q_p Poisson formats, the pipeline of `--mesh` with `--physics`,
//! simplices, Neumann or Robin groups or Dirichlet values, and the hole
//! benchmark), and some options of `fem bp` and `fem residual` steer GPU
//! launches only. An option given where it would be ignored is an error
//! before any work.

use clap::parser::ValueSource;
use clap::{ArgMatches, Command};
use fem::host::AnyBackend;
use std::sync::OnceLock;

/// The ids of the options given to the subcommand that runs.
static GIVEN: OnceLock<Vec<String>> = OnceLock::new();

/// Records the options given to the innermost subcommand of `matches`
/// (parsed by `command`).
pub(crate) fn record_given(command: &Command, matches: &ArgMatches) {
    let (mut c, mut m) = (command, matches);
    while let Some((name, sub)) = m.subcommand() {
        match c.find_subcommand(name) {
            Some(found) => (c, m) = (found, sub),
            None => break,
        }
    }
    let ids = c.get_arguments().map(|a| a.get_id().as_str()).filter(|id| m.value_source(id) == Some(ValueSource::CommandLine)).map(String::from).collect();
    GIVEN.set(ids).ok();
}

/// Whether option `id` was given on the command line.
pub(crate) fn given(id: &str) -> bool {
    GIVEN.get().is_some_and(|g| g.iter().any(|x| x == id))
}

/// An error on the CPU backend for the first of `gpu_only` (id, what it
/// steers) that was given.
pub(crate) fn refuse_on_cpu(any: &AnyBackend, gpu_only: &[(&str, &str)]) -> Result<(), String> {
    match gpu_only.iter().find(|(id, _)| matches!(any, AnyBackend::Cpu(_)) && given(id)) {
        Some((id, what)) => Err(format!("--{} {what}; the CPU backend has no such choice", id.replace('_', "-"))),
        None => Ok(()),
    }
}

/// Options every path reads.
const COMMON: &[&str] = &["problem", "degree", "backend", "rtol", "max_iterations", "json", "vtk", "vtk_ascii", "png"];

/// The Q_p Poisson formats' options.
pub(crate) const FORMATS: &[&str] = &[
    "dim", "cells", "dofs", "unstructured", "mesh", "dirichlet_group", "kappa", "format", "symmetric", "scatter", "threads_per_row", "local", "numbering", "dirichlet", "precision", "no_jacobi", "bench", "products",
];

/// The pipeline's options.
pub(crate) const PIPELINE: &[&str] = &[
    "mesh", "physics", "dirichlet_group", "neumann_group", "robin_group", "load", "krylov", "refine", "restart", "time_steps", "dt", "scheme", "vtk_every", "young", "poisson_ratio", "format", "scatter", "precond", "smoother", "cycle", "smoothing_steps", "chebyshev_degree", "ordering", "precision", "amg_strength", "amg_smoother", "amg_cycle", "amg_aggregation", "amg_setup", "partitioner", "write_system", "pmg_degrees",
];

/// The hole benchmark's options.
pub(crate) const HOLE: &[&str] = &["dim", "levels", "solver", "precond", "smoother", "cycle", "smoothing_steps", "ordering", "precision", "amg_strength", "amg_smoother", "amg_cycle", "amg_aggregation", "amg_setup"];

/// An error naming the options given to `fem solve` that a path reading
/// `reads` (and [`COMMON`]) ignores; `path` says which path in the message.
pub(crate) fn refuse_unread(reads: &[&str], path: &str) -> Result<(), String> {
    refuse_all_but(&[COMMON, reads].concat(), path)
}

/// An error naming the options given that are not among `reads`.
pub(crate) fn refuse_all_but(reads: &[&str], path: &str) -> Result<(), String> {
    let given = GIVEN.get().map_or(&[][..], |g| g.as_slice());
    let unread: Vec<String> = given.iter().filter(|id| !reads.contains(&id.as_str())).map(|id| format!("--{}", id.replace('_', "-"))).collect();
    match unread.len() {
        0 => Ok(()),
        1 => Err(format!("{} does not apply to {path}", unread[0])),
        _ => Err(format!("{} do not apply to {path}", unread.join(", "))),
    }
}
