//! Per-slot cold data, under the slot's Leaf-class lock.

use crate::actor::{Outcome, Pid};

/// What a slot keeps about its actor beyond the state word.
#[derive(Default)]
pub(crate) struct Cold {
    /// Who spawned it (or the supervisor it was spawned under).
    pub(crate) parent: Option<Pid>,
    /// The actor blocked in `join`, with the epoch of that wait.
    pub(crate) joiner: Option<(Pid, u32)>,
    /// How it finished, until the `JoinHandle` takes it.
    pub(crate) outcome: Option<Outcome>,
    /// Whether a `JoinHandle` for this incarnation still exists (slot (I4)).
    pub(crate) handle_alive: bool,
}
