//! The host memory a problem may use, and its refusal before the problem
//! is made: one that cannot fit gets a message with its size, where it
//! would otherwise be stopped by the system part-way through its set-up.
//! (The device's free memory is the backend's: `CudaBackend::free_bytes`.)

use crate::{Error, Result};

/// The host memory available now (`MemAvailable` of /proc/meminfo), where
/// the system says.
pub fn host_available() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// Refuses `what`, which needs `needs` bytes of host memory at the least,
/// when more than that is not available; accepts it where the system
/// does not say.
pub fn ensure_host(what: &str, needs: usize) -> Result<()> {
    match host_available() {
        Some(available) if needs > available => Err(Error::HostMemoryTooSmall { what: what.to_string(), needs, available }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_than_the_host_has_is_refused_and_nothing_is_accepted() {
        let Some(have) = host_available() else {
            eprintln!("skipped: /proc/meminfo does not say what is available");
            return;
        };
        assert!(have > 0);
        assert!(ensure_host("nothing", 0).is_ok());
        match ensure_host("a huge problem", usize::MAX) {
            Err(Error::HostMemoryTooSmall { what, needs, available }) => {
                assert_eq!((what.as_str(), needs), ("a huge problem", usize::MAX));
                assert!(available > 0);
            }
            other => panic!("not refused: {other:?}"),
        }
    }
}
