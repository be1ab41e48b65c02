//! Fuzz target: `smarm_dist::fuzz::frames` on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| smarm_dist::fuzz::frames(bytes));
