//! How a behaviour's loop ends, for gen_server, typed actors and
//! supervisors: run the loop under `catch_unwind`, turn a stop request
//! or a panic into a [`StopReason`], let the behaviour clean up outside the
//! unwind (a stop is set aside so the cleanup may block), then end the
//! actor the way the loop ended: a stop stays a stop, a panic stays that
//! panic, `StopReason::Error` from the loop exits abnormally without
//! the panic hook's message, and `StopReason::Exit` ends the actor with its
//! reason.

use super::StopReason;
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

/// A loop that has ended, not yet acted on.
pub(crate) struct Ended {
    /// Why, for `terminate`.
    pub(crate) reason: StopReason,
    /// The unwind to resume once cleaned up (a stop or a panic).
    unwind: Option<Box<dyn Any + Send>>,
}

/// Run `body` (the behaviour's loop, returning why it stopped) to its end.
pub(crate) fn run(body: impl FnOnce() -> StopReason) -> Ended {
    let ended = catch_unwind(AssertUnwindSafe(body));
    // Others may run before the cleanup, as on threads (sim faults (F2)).
    smarm_core::fault_pause("a behaviour is switched out before its terminate");
    match ended {
        Ok(reason) => Ended {
            reason,
            unwind: None,
        },
        Err(payload) if smarm_core::stop::is_stop(&*payload) => {
            smarm_core::stop::clear_stop(); // the cleanup may block
            Ended {
                reason: StopReason::Shutdown,
                unwind: Some(payload),
            }
        }
        Err(payload) => Ended {
            reason: StopReason::Error(panic_message(&*payload)),
            unwind: Some(payload),
        },
    }
}

impl Ended {
    /// Whether the loop ended by a panic (which the runtime reports as a
    /// crash once the actor ends).
    pub(crate) fn panicked(&self) -> bool {
        self.unwind.is_some() && matches!(self.reason, StopReason::Error(_))
    }

    /// End the actor as the loop ended (call after cleaning up).
    pub(crate) fn finish(self) {
        match (self.unwind, self.reason) {
            (Some(payload), _) => resume_unwind(payload),
            (None, StopReason::Error(why)) => resume_unwind(Box::new(StopReason::Error(why))),
            (None, StopReason::Exit(reason)) if reason != smarm_core::DownReason::Exit => {
                smarm_core::exit_with(reason)
            }
            (None, _) => {}
        }
    }
}

/// The text of a panic payload, for [`StopReason::Error`].
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(reason) = payload.downcast_ref::<StopReason>() {
        reason.to_string()
    } else {
        "panicked".to_string()
    }
}
