//! The one sync facade: atomics, fences, `Mutex`, `Condvar` and `UnsafeCell`
//! come from loom under `--cfg loom` and from std otherwise.
//!
//! Everything concurrent in smarm-core imports from here, so the loom models
//! exercise the same code the runtime runs.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};

// The condvar parker backs loom builds and non-Linux targets only.
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(all(not(loom), not(target_os = "linux")))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
