//! Linux parker: a futex word with states EMPTY, PARKED, POLLING and
//! NOTIFIED.
//!
//! The std-parker protocol: `unpark` swaps in NOTIFIED and futex-wakes iff it
//! displaced PARKED; `park` CASes EMPTY→PARKED, waits while the word is
//! PARKED, and consumes NOTIFIED on every exit path. Only the owning
//! scheduler thread parks, so at most one thread waits on the word.
//!
//! A polling park blocks in the IO poller instead of the futex: it stores
//! the poller's wake fd, then CASes EMPTY→POLLING; an `unpark` that
//! displaces POLLING writes the wake fd, which ends the poll. The fd is
//! read after the swap that saw POLLING, and the CAS to POLLING publishes
//! it (Release/Acquire), so the write always names the poll's own fd.

use crate::lock::futex;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::time::{Duration, Instant};

const EMPTY: u32 = 0;
const PARKED: u32 = 1;
const NOTIFIED: u32 = 2;
const POLLING: u32 = 3;

pub(crate) struct Parker {
    state: AtomicU32,
    /// The wake fd of the poll in progress (valid while the word is POLLING).
    wake_fd: AtomicI32,
}

impl Parker {
    pub(crate) fn new() -> Self {
        Parker {
            state: AtomicU32::new(EMPTY),
            wake_fd: AtomicI32::new(-1),
        }
    }

    /// Block until a permit or `deadline`. `true` = a permit was consumed.
    pub(crate) fn park(&self, deadline: Option<Instant>) -> bool {
        self.park_as(PARKED, deadline, |timeout| {
            futex::wait(&self.state, PARKED, timeout);
            // Woken, spurious or timed out: the word decides.
            false
        })
    }

    /// Block in `poll` (given the time left, `None` = no deadline) until a
    /// permit, `deadline`, or a `poll` that reports work (`true`). An
    /// `unpark` meanwhile writes `wake_fd`, which `poll` must watch.
    /// Returns `true` unless the deadline passed with neither.
    pub(crate) fn park_polling(
        &self,
        deadline: Option<Instant>,
        wake_fd: RawFd,
        poll: impl FnMut(Option<Duration>) -> bool,
    ) -> bool {
        // Published by the CAS to POLLING.
        self.wake_fd.store(wake_fd, Ordering::Relaxed);
        self.park_as(POLLING, deadline, poll)
    }

    /// Enter state `blocked`, then `block` until a permit, the deadline,
    /// or a `block` that reports work; NOTIFIED is consumed on every exit.
    fn park_as(
        &self,
        blocked: u32,
        deadline: Option<Instant>,
        mut block: impl FnMut(Option<Duration>) -> bool,
    ) -> bool {
        if self
            .state
            .compare_exchange(EMPTY, blocked, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // Only NOTIFIED can be here: one thread parks at a time.
            self.state.store(EMPTY, Ordering::Release);
            return true;
        }
        loop {
            let Some(timeout) = remaining(deadline) else {
                // Cancel the park. The swap races a concurrent unpark: if
                // NOTIFIED landed first, report the wake (a permit is never
                // lost).
                return self.state.swap(EMPTY, Ordering::Acquire) == NOTIFIED;
            };
            if block(timeout) {
                self.state.swap(EMPTY, Ordering::Acquire);
                return true;
            }
            if self
                .state
                .compare_exchange(NOTIFIED, EMPTY, Ordering::Acquire, Ordering::Acquire)
                .is_ok()
            {
                return true;
            }
        }
    }

    /// Deliver a permit, waking the owner if it is blocked.
    pub(crate) fn unpark(&self) {
        match self.state.swap(NOTIFIED, Ordering::AcqRel) {
            PARKED => futex::wake(&self.state, 1),
            POLLING => interrupt(self.wake_fd.load(Ordering::Relaxed)),
            _ => {}
        }
    }
}

/// The time left until `deadline`: `Some(None)` for no deadline, `None` once
/// it has passed.
fn remaining(deadline: Option<Instant>) -> Option<Option<Duration>> {
    match deadline {
        None => Some(None),
        Some(d) => {
            let now = crate::clock::instant();
            (d > now).then(|| Some(d - now))
        }
    }
}

/// Make the poll watching eventfd `fd` return.
fn interrupt(fd: RawFd) {
    let one = 1u64;
    // SAFETY: writes 8 bytes from a live local. `fd` is the runtime's wake
    // eventfd, which lives as long as the runtime (the caller holds it).
    unsafe { libc::write(fd, (&raw const one).cast(), 8) };
}
