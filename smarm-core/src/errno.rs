//! The calling thread's `errno`, read where it is read: the one way the
//! runtime turns a failed system call into an `io::Error`.
//!
//! `std::io::Error::last_os_error` reaches `errno` through std's
//! declaration of `__errno_location`, which tells the compiler the
//! function always returns the same pointer on a thread (`ffi_const`).
//! In an actor that is false across a park: the actor can resume on
//! another scheduler thread. With the call inlined into a retry loop that
//! parks (an `accept` that waits for readiness, then tries again), the
//! compiler computes the address once, before the first park, and later
//! reads the errno of the thread the actor started on: another
//! scheduler's, which may hold anything (an `ENOENT` from an epoll
//! re-arm, seen as `accept` failing with "No such file or directory").
//!
//! # Invariants
//!
//! - (E1) `errno` is read through [`last_os_error`], out of line, right
//!   after the failed call, on the thread that made it; clippy's
//!   `disallowed-methods` (clippy.toml) holds every crate of the
//!   workspace to it.

/// The error of the system call that just failed on this thread (E1).
#[inline(never)]
#[allow(clippy::disallowed_methods)] // the one reading, out of line
pub(crate) fn last_os_error() -> std::io::Error {
    std::io::Error::last_os_error()
}
