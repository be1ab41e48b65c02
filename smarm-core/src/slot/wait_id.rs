//! `WaitId`: one wait of one actor, as its wakers name it.

use super::Pid;

/// One wait of one actor: its pid and the epoch the wait opened on the
/// slot word. A wake carrying it is delivered only while the actor is
/// still in that wait (slot (I3)); once the wait is over, it is stale and
/// changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WaitId {
    pub(crate) pid: Pid,
    pub(crate) epoch: u32,
}
