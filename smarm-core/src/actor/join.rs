//! `JoinHandle`: waiting for an actor and collecting its outcome.

use super::{JoinError, Outcome, Pid};
use crate::scheduler::Shared;
use crate::scheduler::WaitingOn;
use crate::scheduler::{self, Wait};
use crate::slot::Slot;
use std::sync::Arc;

/// A handle to a spawned actor: [`join`](Self::join) waits for it and
/// reports how it finished; [`pid`](Self::pid) is its identity.
///
/// Dropping the handle detaches the actor: it keeps running and its slot
/// is reclaimed when it finishes. While the handle exists, a finished
/// actor's slot is kept (as a Unix zombie is) so that `join` can still
/// read its outcome; it counts against `Config::max_actors`.
pub struct JoinHandle {
    pid: Pid,
    shared: Arc<Shared>,
    released: bool,
}

impl std::fmt::Debug for JoinHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle")
            .field("pid", &self.pid)
            .finish()
    }
}

impl JoinHandle {
    pub(crate) fn new(pid: Pid, shared: &Shared) -> Self {
        JoinHandle {
            pid,
            shared: shared.to_arc(),
            released: false,
        }
    }

    /// The actor's pid.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Whether the actor has finished (so `join` will not block).
    pub fn is_finished(&self) -> bool {
        self.slot().cold.lock().outcome.is_some()
    }

    /// Wait for the actor to finish. `Ok(())` if its closure returned or it
    /// was stopped with [`request_stop`](crate::request_stop);
    /// `Err(JoinError)` with the payload if it panicked.
    ///
    /// ```
    /// smarm::run(|| {
    ///     assert!(smarm::spawn(|| {}).join().is_ok());
    ///     assert!(smarm::spawn(|| panic!("no")).join().is_err());
    /// });
    /// ```
    ///
    /// # Panics
    ///
    /// If the actor is still running and the caller is not an actor of the
    /// runtime that spawned it (only such an actor can park to wait).
    pub fn join(mut self) -> Result<(), JoinError> {
        loop {
            if let Some(outcome) = self.take_if_finished() {
                return to_result(outcome);
            }
            let in_own_runtime = scheduler::with_worker(|w, shared| {
                w.current.get().is_some() && std::ptr::eq(shared, Arc::as_ptr(&self.shared))
            }) == Some(true);
            if !in_own_runtime {
                panic!(
                    "smarm: JoinHandle::join on a running actor from outside its runtime; join it \
                     from an actor of the runtime that spawned it"
                );
            }
            // Open the wait before registering, so a finish in between
            // lands as a notification (slot (I3)).
            let wait = Wait::open("JoinHandle::join", WaitingOn::Join);
            let registered = {
                let mut cold = self.slot().cold.lock();
                let register = cold.outcome.is_none();
                if register {
                    cold.joiner = Some(wait.id());
                }
                register
            };
            if registered {
                wait.park();
            } else {
                wait.retire(); // it finished meanwhile: take it above
            }
        }
    }

    /// If the actor has finished, take its outcome and recycle the slot.
    fn take_if_finished(&mut self) -> Option<Outcome> {
        let outcome = self.slot().cold.lock().outcome.take()?;
        // `handle_alive` stays true: the cold data is ready for the next
        // tenant (slot (I4)).
        self.released = true;
        self.slot().word.recycle();
        self.shared.slots.release(self.pid.index());
        Some(outcome)
    }

    /// Give up the handle; if the actor has finished, take its outcome and
    /// recycle the slot (slot (I4)).
    fn release(&mut self) -> Option<Outcome> {
        if self.released {
            return None;
        }
        self.released = true;
        let slot = self.slot();
        let outcome = {
            let mut cold = slot.cold.lock();
            let outcome = cold.outcome.take();
            // Finished: the slot is recycled now, and its cold data is left
            // ready for the next tenant. Running: finalisation recycles it.
            cold.handle_alive = outcome.is_some();
            outcome
        };
        if outcome.is_some() {
            slot.word.recycle();
            self.shared.slots.release(self.pid.index());
        }
        outcome
    }

    /// The outcome, if the actor has finished; never parks.
    pub(crate) fn take_outcome_now(mut self) -> Option<Outcome> {
        self.release()
    }

    fn slot(&self) -> &Slot {
        match self.shared.slots.get(self.pid.index()) {
            Some(slot) => slot,
            None => unreachable!("a JoinHandle's slot exists for the life of its runtime"),
        }
    }
}

impl Drop for JoinHandle {
    fn drop(&mut self) {
        drop(self.release());
    }
}

fn to_result(outcome: Outcome) -> Result<(), JoinError> {
    match outcome {
        Outcome::Exit | Outcome::Stopped => Ok(()),
        Outcome::Panic(payload) => Err(JoinError { payload }),
        Outcome::Ended(reason) => Err(JoinError {
            payload: Box::new(crate::signal::Killed { reason }),
        }),
    }
}
