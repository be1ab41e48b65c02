//! OTP behaviours on top of the smarm runtime.
//!
//! This crate will host the typed registry, process groups, gen_server and
//! supervisor. It uses only `smarm-core`'s public API plus the extension
//! surface core documents for it; it has no behaviours yet.

pub use smarm_core as core;
