//! The per-scheduler parker: permit semantics, one backend per platform.
//!
//! Both backends export `Parker` with `new`, `park(deadline) -> bool`
//! (`true` = a permit was consumed, `false` = the deadline passed) and
//! `unpark`. An `unpark` before a `park` leaves a permit, so the park that
//! follows returns at once; this is what closes the window between a
//! scheduler's re-check and its block.

#[cfg(any(loom, not(target_os = "linux")))]
mod condvar;
#[cfg(all(target_os = "linux", not(loom)))]
mod futex;

#[cfg(any(loom, not(target_os = "linux")))]
pub(crate) use condvar::Parker;
#[cfg(all(target_os = "linux", not(loom)))]
pub(crate) use futex::Parker;
