//! How a slot's actor ended: its `Outcome` (kept for its `JoinHandle`) and
//! the `DownReason` its monitors and links are told. They are the slot's
//! record of its actor's end, so they live with the slot; the actor and
//! signal layers produce and read them.

use super::Pid;
use std::any::Any;

/// How an actor finished.
pub(crate) enum Outcome {
    /// Its closure returned.
    Exit,
    /// Its closure panicked with this payload.
    Panic(Box<dyn Any + Send>),
    /// It unwound because of [`request_stop`](crate::request_stop).
    Stopped,
    /// It was stopped by an exit signal from a linked actor.
    Killed(DownReason),
}

/// Why an actor went down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DownReason {
    /// It returned normally.
    Exit,
    /// It panicked (the payload goes to whoever joins it).
    Panic,
    /// It was stopped with [`request_stop`](crate::request_stop).
    Stopped,
    /// It did not exist (already finished, or never did) when the monitor
    /// or link was set up.
    NoProc,
    /// It was stopped by the abnormal exit of the linked actor `by`.
    Killed {
        /// The linked actor whose exit stopped it.
        by: Pid,
    },
}

impl DownReason {
    pub(crate) fn of(outcome: &Outcome) -> DownReason {
        match outcome {
            Outcome::Exit => DownReason::Exit,
            Outcome::Panic(_) => DownReason::Panic,
            Outcome::Stopped => DownReason::Stopped,
            Outcome::Killed(reason) => *reason,
        }
    }

    /// Whether this exit stops linked actors that do not trap exits (every
    /// reason but a normal exit, as in Erlang).
    pub fn is_abnormal(self) -> bool {
        self != DownReason::Exit
    }
}

impl std::fmt::Display for DownReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DownReason::Exit => write!(f, "exited normally"),
            DownReason::Panic => write!(f, "panicked"),
            DownReason::Stopped => write!(f, "was stopped"),
            DownReason::NoProc => write!(f, "did not exist"),
            DownReason::Killed { by } => write!(f, "was killed by the exit of linked actor {by}"),
        }
    }
}
