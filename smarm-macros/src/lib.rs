//! Proc-macros for smarm.
//!
//! This crate will host `#[derive(Actor)]` for message enums and the Name
//! constants built on it. It has no macros yet; the runtime they expand to
//! lives in `smarm-core` and `smarm-otp`.
