//! A recording of a backend's launches, made once and replayed: on the
//! GPU a CUDA graph, so that work of many small launches on fixed
//! buffers (a multigrid cycle: 50-odd launches at 292k rows, each shorter
//! than the host's time to launch it) costs one launch and runs without
//! gaps. Work that cannot be recorded (it reads results back mid-way)
//! is refused once and then runs as it is.

use std::sync::Mutex;

/// What [`crate::Backend::replay`] keeps for one piece of work, and the
/// key (the options it ran with) under which it stays valid.
pub struct Recording<K> {
    pub(crate) state: Mutex<(Option<K>, Recorded)>,
}

/// The state of a recording.
pub(crate) enum Recorded {
    /// Not run yet under this key.
    Empty,
    /// Run once as it is (its kernels loaded), to be recorded next time.
    Ran,
    /// A CUDA graph of the work.
    Graph(Graph),
    /// The work cannot be recorded; it runs as it is.
    Refused,
}

/// A CUDA graph held by a [`Recording`].
pub(crate) struct Graph(pub cudarc::driver::CudaGraph);

// SAFETY: a CUDA graph must not be used from two threads at once; it is
// only reached through the recording's mutex.
unsafe impl Send for Graph {}

impl<K> Default for Recording<K> {
    fn default() -> Self {
        Self { state: Mutex::new((None, Recorded::Empty)) }
    }
}

impl<K> Recording<K> {
    /// Whether the work now replays from a recording.
    pub fn replays(&self) -> bool {
        matches!(self.state.lock().unwrap_or_else(|e| e.into_inner()).1, Recorded::Graph(_))
    }

    /// Forgets the recording: the buffers or values it captured changed.
    pub fn clear(&mut self) {
        *self.state.get_mut().unwrap_or_else(|e| e.into_inner()) = (None, Recorded::Empty);
    }
}
