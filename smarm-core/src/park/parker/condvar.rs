//! Portable and loom parker: a `Mutex<bool>` permit and a `Condvar`.
//!
//! Under loom the deadline is ignored (loom has no clock): a park blocks
//! until a permit, so a model that never delivers one deadlocks, which loom
//! reports. That is how the models assert "no lost wake".

use crate::loom::{Condvar, Mutex};
use std::time::Instant;

pub(crate) struct Parker {
    permit: Mutex<bool>,
    cv: Condvar,
}

impl Parker {
    pub(crate) fn new() -> Self {
        Parker {
            permit: Mutex::new(false),
            cv: Condvar::new(),
        }
    }

    /// Block until a permit or `deadline`. `true` = a permit was consumed.
    pub(crate) fn park(&self, deadline: Option<Instant>) -> bool {
        // The permit lock guards a bool; a panic while holding it cannot
        // leave it torn, so poisoning is ignored.
        let mut permit = self.permit.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if *permit {
                *permit = false;
                return true;
            }
            #[cfg(loom)]
            {
                let _ = deadline;
                permit = self.cv.wait(permit).unwrap_or_else(|e| e.into_inner());
            }
            #[cfg(not(loom))]
            match deadline {
                None => permit = self.cv.wait(permit).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let now = Instant::now();
                    if d <= now {
                        return false;
                    }
                    permit = match self.cv.wait_timeout(permit, d - now) {
                        Ok((g, _)) => g,
                        Err(e) => e.into_inner().0,
                    };
                }
            }
        }
    }

    /// Deliver a permit, waking the owner if it is blocked.
    pub(crate) fn unpark(&self) {
        let mut permit = self.permit.lock().unwrap_or_else(|e| e.into_inner());
        *permit = true;
        self.cv.notify_one();
    }
}
