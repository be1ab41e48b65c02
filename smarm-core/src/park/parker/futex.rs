//! Linux parker: a futex word with states EMPTY, PARKED and NOTIFIED.
//!
//! The std-parker protocol: `unpark` swaps in NOTIFIED and futex-wakes iff it
//! displaced PARKED; `park` CASes EMPTY→PARKED, waits while the word is
//! PARKED, and consumes NOTIFIED on every exit path. Only the owning
//! scheduler thread parks, so at most one thread waits on the word.

use crate::sync::futex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

const EMPTY: u32 = 0;
const PARKED: u32 = 1;
const NOTIFIED: u32 = 2;

pub(crate) struct Parker {
    state: AtomicU32,
}

impl Parker {
    pub(crate) fn new() -> Self {
        Parker {
            state: AtomicU32::new(EMPTY),
        }
    }

    /// Block until a permit or `deadline`. `true` = a permit was consumed.
    pub(crate) fn park(&self, deadline: Option<Instant>) -> bool {
        if self
            .state
            .compare_exchange(EMPTY, PARKED, Ordering::Acquire, Ordering::Acquire)
            .is_err()
        {
            // Only NOTIFIED can be here: one thread parks at a time.
            self.state.store(EMPTY, Ordering::Release);
            return true;
        }
        loop {
            let timeout = match deadline {
                None => None,
                Some(d) => {
                    let now = Instant::now();
                    if d <= now {
                        // Cancel the park. The swap races a concurrent
                        // unpark: if NOTIFIED landed first, report the wake
                        // (a permit is never lost).
                        return self.state.swap(EMPTY, Ordering::Acquire) == NOTIFIED;
                    }
                    Some(d - now)
                }
            };
            futex::wait(&self.state, PARKED, timeout);
            if self
                .state
                .compare_exchange(NOTIFIED, EMPTY, Ordering::Acquire, Ordering::Acquire)
                .is_ok()
            {
                return true;
            }
            // Spurious return or timeout with the word still PARKED: the
            // deadline check at the top decides.
        }
    }

    /// Deliver a permit, waking the owner if it is blocked.
    pub(crate) fn unpark(&self) {
        if self.state.swap(NOTIFIED, Ordering::Release) == PARKED {
            futex::wake(&self.state, 1);
        }
    }
}
