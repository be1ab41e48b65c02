//! The sync facade of the lock-free structures here: atomics come from
//! loom under `--cfg loom` and from std otherwise, so the loom models run
//! the same code the registry runs.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
