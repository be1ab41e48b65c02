//! Spawn requests across nodes (`erlang:spawn_request/5`, which `erpc`
//! and `rpc` ride on since OTP 23).
//!
//! This node does not offer `DFLAG_SPAWN`, so a peer does not send it a
//! SPAWN_REQUEST; one that does anyway is answered `notsup`, as BEAM
//! answers a request it cannot serve, so its `spawn_request` fails at once
//! rather than waiting.

use super::Node;
use crate::control::Control;
use crate::pid::Pid;
use crate::term::{Term, atom};

impl Node {
    /// A peer's SPAWN_REQUEST from `from` for `mfa` with `args`.
    pub(super) fn spawn_requested(
        &self,
        id: Term,
        from: Pid,
        _mfa: (String, String, u32),
        _options: Vec<Term>,
        _args: Term,
        _token: Option<Term>,
    ) {
        let reply = Control::SpawnReply {
            id,
            to: from.clone(),
            flags: 0,
            result: atom("notsup"),
        };
        let _ = self.post(from.node(), reply, None, false);
    }

    /// A peer's SPAWN_REPLY: this node sends no SPAWN_REQUEST, so none is
    /// awaited.
    pub(super) fn spawn_replied(&self, _id: Term, _to: &Pid, _flags: u32, _result: Term) {
        self.count(|s| &s.undeliverable);
    }
}
