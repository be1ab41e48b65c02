//! Where a control message is acted on: one `match` over every variant
//! of [`Control`] with no wildcard arm, so a new variant does not compile
//! until it is handled here. Each arm calls the handler in the file of
//! the table it changes: sends in `mailbox.rs`, links and exit signals in
//! `link.rs`, monitors in `monitor.rs`, spawn requests in `spawn.rs`.
//!
//! A `_TT` form (sent by a process with a `seq_trace` token) acts as its
//! plain form; a message it carries keeps the token
//! ([`Message::trace_token`](super::Message::trace_token)).

use super::Node;
use crate::control::{Control, ControlError};
use crate::term::Term;
use std::sync::atomic::Ordering;

impl Node {
    /// Act on `control` from a peer (or from this node, posting to
    /// itself), with the term that follows it as [`Control::read`] left
    /// it: a send's message, a spawn request's arguments.
    pub(super) fn dispatch(
        &self,
        control: Control,
        payload: Option<Term>,
        token: Option<Term>,
    ) -> Result<(), ControlError> {
        // `Control::read` has checked that a payload follows exactly the
        // controls that take one; a caller posting to itself does too.
        let message =
            |code: i32, payload: Option<Term>| payload.ok_or(ControlError::MissingPayload(code));
        match control {
            Control::Send { from, to } => {
                let m = message(crate::control::SEND, payload)?;
                self.deliver_to_pid(from, &to, m, token);
            }
            Control::RegSend { from, name } => {
                let m = message(crate::control::REG_SEND, payload)?;
                self.deliver_to_name(Some(from), &name, m, token);
            }
            Control::AliasSend { .. } => {
                // This node hands out no aliases.
                message(crate::control::ALIAS_SEND, payload)?;
                self.count(|s| &s.undeliverable);
            }
            Control::Link { from, to } => self.linked_by(from, to),
            Control::Exit {
                from,
                to,
                reason,
                exit2: false,
            } => self.fire_link(to.id(), &from, reason),
            Control::Exit {
                from,
                to,
                reason,
                exit2: true,
            } => self.exit_signal(from, to, reason),
            Control::Unlink {
                id,
                from,
                to,
                ack: false,
            } => self.unlinked_by(id, from, to),
            // The link left the table when `unlink` sent its UNLINK_ID, so
            // an EXIT that crossed it was ignored (link.rs, L1).
            Control::Unlink { ack: true, .. } => {}
            Control::UnlinkLegacy { from, to } => self.unlinked_legacy(from, to),
            Control::NodeLink => {}
            // smarm actors have no group leader: I/O is the process's own.
            Control::GroupLeader { .. } => self.count(|s| &s.ignored_controls),
            Control::MonitorP {
                from,
                to,
                reference,
            } => self.monitored_by(from, to, reference),
            Control::DemonitorP {
                from, reference, ..
            } => self.demonitored_by(&from, &reference),
            Control::MonitorPExit {
                from,
                to,
                reference,
                reason,
            } => self.monitor_fired(from, &to, &reference, reason),
            Control::SpawnRequest {
                id,
                from,
                module,
                function,
                arity,
                options,
                ..
            } => {
                let args = message(crate::control::SPAWN_REQUEST, payload)?;
                self.spawn_requested(id, from, (module, function, arity), options, args, token);
            }
            Control::SpawnReply {
                id,
                to,
                flags,
                result,
            } => self.spawn_replied(id, &to, flags, result),
            Control::Traced { control, token } => {
                return self.dispatch(*control, payload, Some(token));
            }
            Control::Unknown(_) => self.count(|s| &s.ignored_controls),
        }
        Ok(())
    }

    /// Add one to a counter of [`Stats`](super::Stats).
    pub(super) fn count(&self, which: impl FnOnce(&super::Stats) -> &std::sync::atomic::AtomicU64) {
        which(&self.inner.stats).fetch_add(1, Ordering::Relaxed);
    }
}
