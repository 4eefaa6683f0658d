//! The host memory a problem may use, and its refusal before the problem
//! is made: one that cannot fit gets a message with its size, where it
//! would otherwise be stopped by the system part-way through its set-up.
//! (The device's free memory is the backend's: `CudaBackend::free_bytes`.)

use crate::{Error, Result};

/// The host memory available now (`MemAvailable` of /proc/meminfo), where
/// the system says.
pub fn host_available() -> Option<usize> {
    kib_field(&std::fs::read_to_string("/proc/meminfo").ok()?, "MemAvailable:")
}

/// This process's resident memory now (`VmRSS`) and at its peak so far
/// (`VmHWM`), of `/proc/self/status`; `None` where the system does not say.
pub fn resident_bytes() -> Option<(usize, usize)> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    Some((kib_field(&text, "VmRSS:")?, kib_field(&text, "VmHWM:")?))
}

/// Bytes of the `name  N kB` line of a /proc file's `text`.
fn kib_field(text: &str, name: &str) -> Option<usize> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// This process's peak resident memory, 0 where the system does not say.
pub fn peak_rss_bytes() -> usize {
    resident_bytes().map_or(0, |(_, peak)| peak)
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
    fn resident_memory_grows_with_what_is_touched_and_the_peak_is_kept() {
        let Some((before, peak_before)) = resident_bytes() else {
            eprintln!("skipped: /proc/self/status does not say");
            return;
        };
        assert!(before > 0 && peak_before >= before);
        // 64 MiB written page by page is resident until it is dropped
        let big = vec![1u8; 64 << 20];
        let (during, peak_during) = resident_bytes().unwrap();
        assert!(during >= before + (60 << 20), "{before} → {during}");
        assert!(peak_during >= during);
        drop(std::hint::black_box(big));
        // the kernel's resident count lags each thread's last pages (the
        // other tests' threads run beside this one), so a peak read later
        // may sit a little below one read before: the 64 MiB stay in it
        let slack = 16 << 20;
        let (_, peak_after) = resident_bytes().unwrap();
        assert!(peak_after + slack >= peak_during && peak_rss_bytes() + slack >= peak_during, "{peak_during} → {peak_after}");
        assert!(peak_after >= before + (48 << 20), "{before} → peak {peak_after}");
    }

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
