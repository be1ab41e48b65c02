//! Per-slot cold data, under the slot's Leaf-class lock.

use super::{Outcome, WaitId};
use std::any::Any;

/// Who waits in `join` for a slot's actor: an actor's wait, or a task
/// awaiting the `JoinHandle` as a future (its waker boxed: the cold data
/// stays within its line).
pub(crate) enum Joiner {
    Wait(WaitId),
    Task(Box<std::task::Waker>),
}

/// What a slot keeps about its actor beyond the state word. A vacant
/// slot's cold data is already set up for its next tenant (no joiner, no
/// outcome, a handle alive), so spawning does not take this lock.
pub(crate) struct Cold {
    /// Who is blocked in `join`.
    pub(crate) joiner: Option<Joiner>,
    /// How it finished, until the `JoinHandle` takes it.
    pub(crate) outcome: Option<Outcome>,
    /// Whether a `JoinHandle` for this incarnation still exists (slot (I4)).
    pub(crate) handle_alive: bool,
    /// The signal layer's record (monitors, links, exit trapping; its own
    /// type, so held type-erased here, boxed twice to keep this pointer
    /// thin: the slot's cold line stays one line): allocated on first use,
    /// taken at finalisation.
    pub(crate) signals: Option<Box<Box<dyn Any + Send>>>,
}

impl Cold {
    /// The state of a vacant slot, ready for its next tenant.
    pub(crate) fn vacant() -> Self {
        Cold {
            joiner: None,
            outcome: None,
            handle_alive: true,
            signals: None,
        }
    }
}
