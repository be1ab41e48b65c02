//! Portable and loom parker: a `Mutex<bool>` permit and a `Condvar`.
//!
//! Under loom the deadline is ignored (loom has no clock): a park blocks
//! until a permit, so a model that never delivers one deadlocks, which loom
//! reports. That is how the models assert "no lost wake".
//!
//! A polling park records its wake fd under the lock before it polls; an
//! `unpark` that finds one writes it, which ends the poll.

use crate::loom::{Condvar, Mutex};
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

struct State {
    permit: bool,
    /// The wake fd of the poll in progress, if one is.
    polling: Option<RawFd>,
}

pub(crate) struct Parker {
    permit: Mutex<State>,
    cv: Condvar,
}

impl Parker {
    pub(crate) fn new() -> Self {
        Parker {
            permit: Mutex::new(State {
                permit: false,
                polling: None,
            }),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> crate::loom::MutexGuard<'_, State> {
        // The lock guards plain data; a panic while holding it cannot leave
        // it torn, so poisoning is ignored.
        self.permit.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Block until a permit or `deadline`. `true` = a permit was consumed.
    pub(crate) fn park(&self, deadline: Option<Instant>) -> bool {
        let mut permit = self.lock();
        loop {
            if permit.permit {
                permit.permit = false;
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
                    let now = crate::clock::instant();
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

    /// As the futex parker's: block in `poll` until a permit, `deadline`,
    /// or a `poll` that reports work.
    pub(crate) fn park_polling(
        &self,
        deadline: Option<Instant>,
        wake_fd: RawFd,
        mut poll: impl FnMut(Option<Duration>) -> bool,
    ) -> bool {
        loop {
            let timeout = match deadline {
                None => None,
                Some(d) => {
                    let now = crate::clock::instant();
                    if d <= now {
                        return std::mem::take(&mut self.lock().permit);
                    }
                    Some(d - now)
                }
            };
            {
                let mut state = self.lock();
                if std::mem::take(&mut state.permit) {
                    return true;
                }
                state.polling = Some(wake_fd);
            }
            let found = poll(timeout);
            let mut state = self.lock();
            state.polling = None;
            if std::mem::take(&mut state.permit) || found {
                return true;
            }
        }
    }

    /// Deliver a permit, waking the owner if it is blocked.
    pub(crate) fn unpark(&self) {
        let mut state = self.lock();
        state.permit = true;
        if let Some(fd) = state.polling {
            let one = 1u64;
            // SAFETY: writes 8 bytes from a live local to the runtime's wake
            // eventfd, open while a poll is recorded (the poller holds it).
            unsafe { libc::write(fd, (&raw const one).cast(), 8) };
        }
        self.cv.notify_one();
    }
}
