#![no_main]
//! Any bytes: the Matrix Market reader returns a matrix or an error.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = fem_host::io::matrix_market::read(data) {
        let _ = c.to_csr::<f64>();
    }
});
