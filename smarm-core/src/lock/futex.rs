//! Thin wrappers over `futex(2)` (private futexes, relative timeouts).

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Block while `*word == expected`, at most `timeout` (nanosecond precision,
/// `CLOCK_MONOTONIC` for relative waits). Every return (woken, EAGAIN,
/// ETIMEDOUT, EINTR) means "re-check your state".
pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    let ts;
    let ts_ptr: *const libc::timespec = match timeout {
        Some(d) => {
            ts = libc::timespec {
                tv_sec: libc::time_t::try_from(d.as_secs()).unwrap_or(libc::time_t::MAX),
                tv_nsec: d.subsec_nanos() as libc::c_long,
            };
            &ts
        }
        None => std::ptr::null(),
    };
    // SAFETY: `word.as_ptr()` points to a live, aligned u32 for the whole
    // call (we hold `&AtomicU32`); `ts_ptr` is null or points to `ts`, which
    // outlives the call. FUTEX_WAIT only reads both.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            ts_ptr,
        );
    }
}

/// Wake up to `n` threads blocked in [`wait`] on `word`.
pub(crate) fn wake(word: &AtomicU32, n: u32) {
    // SAFETY: `word.as_ptr()` is a live, aligned u32; FUTEX_WAKE does not
    // access memory beyond using the address as a key.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
        );
    }
}
