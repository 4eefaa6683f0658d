//! A global allocator that puts large arrays in transparent huge pages.
//!
//! Set-up builds arrays of hundreds of megabytes (maps per element-matrix
//! entry, patterns, levels) and writes each once. In 4 KiB pages, every
//! first write to a page faults, and with many threads the faults, not
//! the writes, bound these passes. Linux backs memory with 2 MiB pages
//! only where it is told to when transparent huge pages are in `madvise`
//! mode, a common default: this allocator maps every allocation of at
//! least [`LARGE`] bytes itself and advises huge pages for it, 512 times
//! fewer faults. Smaller ones go to the system allocator. The 6.29M-DOF
//! hole benchmark on an H200 machine (16 host cores) took 7.5–7.8 s with
//! the advice and 10.0–10.2 s without it, in one run; Q2 Poisson's CPU
//! assembly at 1M DOFs on 2 cores, 2.7–2.9 s against 3.3–3.7 s.
//!
//! What it does not do is keep freed blocks for reuse, as the system
//! allocator does: a loop that allocates and frees an array of all rows
//! per task pays for fresh pages every time (allocate it once per thread).
//!
//! The `fem` command uses it; a program of its own opts in with
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: fem::huge_pages::HugePages = fem::huge_pages::HugePages;
//! ```
//!
//! `FEM_HUGE_PAGES=0` in the environment turns the advice off (the
//! mapping stays): for comparisons, or where huge pages cost more than
//! they save.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

/// Allocations of at least this many bytes are mapped and advised.
pub const LARGE: usize = 2 << 20;

/// Bytes of a base page, the alignment of a mapping.
const PAGE: usize = 4096;

/// The allocator: [`System`] below [`LARGE`] bytes, a private anonymous
/// mapping advised `MADV_HUGEPAGE` from there up.
pub struct HugePages;

/// Whether large mappings are advised: 0 not yet read, 1 yes, 2 no.
static ADVISE: AtomicU8 = AtomicU8::new(0);

/// Whether `FEM_HUGE_PAGES` leaves the advice on (read once, by
/// `getenv`, which does not allocate).
fn advise() -> bool {
    match ADVISE.load(Ordering::Relaxed) {
        0 => {
            let off = unsafe {
                let v = libc::getenv(c"FEM_HUGE_PAGES".as_ptr());
                !v.is_null() && std::ffi::CStr::from_ptr(v).to_bytes() == b"0"
            };
            ADVISE.store(if off { 2 } else { 1 }, Ordering::Relaxed);
            !off
        }
        state => state == 1,
    }
}

/// Whether `layout` is one this allocator maps.
fn mapped(layout: &Layout) -> bool {
    layout.size() >= LARGE && layout.align() <= PAGE
}

/// `size` rounded up to whole pages: the length of its mapping.
fn length(size: usize) -> usize {
    size.div_ceil(PAGE) * PAGE
}

/// A fresh zeroed mapping of `size` bytes, advised; null when the system
/// refuses it.
unsafe fn map(size: usize) -> *mut u8 {
    let len = length(size);
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
    if p == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    if advise() {
        // advice only: memory in base pages is still memory
        unsafe { libc::madvise(p, len, libc::MADV_HUGEPAGE) };
    }
    p.cast()
}

unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if mapped(&layout) {
            unsafe { map(layout.size()) }
        } else {
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if mapped(&layout) {
            // a fresh anonymous mapping reads as zeros
            unsafe { map(layout.size()) }
        } else {
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if mapped(&layout) {
            unsafe { libc::munmap(ptr.cast(), length(layout.size())) };
        } else {
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (mapped(&layout), mapped(&new)) {
            (false, false) => unsafe { System.realloc(ptr, layout, new_size) },
            (true, true) => {
                // the kernel moves the pages, not their bytes, and the
                // mapping keeps its advice
                let p = unsafe { libc::mremap(ptr.cast(), length(layout.size()), length(new_size), libc::MREMAP_MAYMOVE) };
                if p == libc::MAP_FAILED {
                    std::ptr::null_mut()
                } else {
                    p.cast()
                }
            }
            _ => {
                // across the threshold: a new block of the other kind
                let p = unsafe { self.alloc(new) };
                if !p.is_null() {
                    unsafe {
                        std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                p
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `VmFlags` of the mapping that holds `p` (`/proc/self/smaps`).
    fn flags_at(p: *const u8) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let a = p as usize;
        let mut inside = false;
        for line in smaps.lines() {
            let head = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = head.split_once('-').and_then(|(l, h)| Some((usize::from_str_radix(l, 16).ok()?, usize::from_str_radix(h, 16).ok()?))) {
                inside = lo <= a && a < hi;
            } else if inside && line.starts_with("VmFlags:") {
                return Some(line.to_string());
            }
        }
        None
    }

    #[test]
    fn large_blocks_are_advised_mappings_and_keep_their_bytes() {
        let a = HugePages;
        unsafe {
            // below the threshold: the system's, not a mapping of its own
            let small = Layout::from_size_align(LARGE - 8, 8).unwrap();
            let p = a.alloc_zeroed(small);
            assert!(!p.is_null());
            assert!(std::slice::from_raw_parts(p, small.size()).iter().all(|&b| b == 0));
            for k in 0..small.size() {
                *p.add(k) = (k % 251) as u8;
            }
            // grown across the threshold, shrunk back, grown in place
            let p = a.realloc(p, small, 3 * LARGE + 5);
            let big = Layout::from_size_align(3 * LARGE + 5, 8).unwrap();
            assert!((0..small.size()).all(|k| *p.add(k) == (k % 251) as u8), "bytes lost growing into a mapping");
            assert_eq!(p as usize % PAGE, 0, "a large block is a mapping of its own");
            if advise() && std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
                let flags = flags_at(p).expect("the block's mapping is listed");
                assert!(flags.split_whitespace().any(|f| f == "hg"), "no huge-page advice: {flags}");
            }
            *p.add(big.size() - 1) = 7;
            let p = a.realloc(p, big, 9 * LARGE);
            let bigger = Layout::from_size_align(9 * LARGE, 8).unwrap();
            assert_eq!(*p.add(big.size() - 1), 7);
            assert!((0..small.size()).all(|k| *p.add(k) == (k % 251) as u8), "bytes lost moving the mapping");
            let p = a.realloc(p, bigger, 100);
            assert!((0..100).all(|k| *p.add(k) == (k % 251) as u8), "bytes lost shrinking out of a mapping");
            a.dealloc(p, Layout::from_size_align(100, 8).unwrap());
            // zeroed large blocks, and alignments above a page go to the system
            let z = Layout::from_size_align(LARGE, 8).unwrap();
            let q = a.alloc_zeroed(z);
            assert!(std::slice::from_raw_parts(q, z.size()).iter().all(|&b| b == 0));
            a.dealloc(q, z);
            let wide = Layout::from_size_align(LARGE, 2 * PAGE).unwrap();
            let w = a.alloc(wide);
            assert_eq!(w as usize % (2 * PAGE), 0);
            a.dealloc(w, wide);
        }
    }
}
