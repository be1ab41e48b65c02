//! Writing a [`Control`] as its tuple, plain or in its `_TT` form.

use super::*;
use crate::term::{FixInteger, List, atom, tuple};

impl Control {
    /// The control tuple of this message. The `PAYLOAD_` forms are not
    /// written (this node does not offer `DFLAG_EXIT_PAYLOAD`); a
    /// traced message without a `_TT` form is written plain.
    pub fn to_term(&self) -> Term {
        let int = |v: i32| Term::from(FixInteger::from(v));
        let u32_term = |v: u32| match i32::try_from(v) {
            Ok(v) => Term::from(FixInteger::from(v)),
            Err(_) => Term::from(crate::term::BigInteger::from(v)),
        };
        match self {
            Control::Send { from: None, to } => tuple(vec![int(SEND), atom(""), to.to_term()]),
            Control::Send {
                from: Some(from),
                to,
            } => tuple(vec![int(SEND_SENDER), from.to_term(), to.to_term()]),
            Control::RegSend { from, name } => {
                tuple(vec![int(REG_SEND), from.to_term(), atom(""), atom(name)])
            }
            Control::AliasSend { from, alias } => {
                tuple(vec![int(ALIAS_SEND), from.to_term(), alias.clone()])
            }
            Control::Link { from, to } => tuple(vec![int(LINK), from.to_term(), to.to_term()]),
            Control::Exit {
                from,
                to,
                reason,
                exit2,
            } => tuple(vec![
                int(if *exit2 { EXIT2 } else { EXIT }),
                from.to_term(),
                to.to_term(),
                reason.clone(),
            ]),
            Control::Unlink { id, from, to, ack } => tuple(vec![
                int(if *ack { UNLINK_ID_ACK } else { UNLINK_ID }),
                id.clone(),
                from.to_term(),
                to.to_term(),
            ]),
            Control::UnlinkLegacy { from, to } => {
                tuple(vec![int(UNLINK), from.to_term(), to.to_term()])
            }
            Control::NodeLink => tuple(vec![int(NODE_LINK)]),
            Control::GroupLeader { from, to } => {
                tuple(vec![int(GROUP_LEADER), from.to_term(), to.to_term()])
            }
            Control::MonitorP {
                from,
                to,
                reference,
            } => tuple(vec![
                int(MONITOR_P),
                from.to_term(),
                to.clone(),
                reference.clone(),
            ]),
            Control::DemonitorP {
                from,
                to,
                reference,
            } => tuple(vec![
                int(DEMONITOR_P),
                from.to_term(),
                to.clone(),
                reference.clone(),
            ]),
            Control::MonitorPExit {
                from,
                to,
                reference,
                reason,
            } => tuple(vec![
                int(MONITOR_P_EXIT),
                from.clone(),
                to.to_term(),
                reference.clone(),
                reason.clone(),
            ]),
            Control::SpawnRequest {
                id,
                from,
                group_leader,
                module,
                function,
                arity,
                options,
            } => tuple(vec![
                int(SPAWN_REQUEST),
                id.clone(),
                from.to_term(),
                group_leader.clone(),
                tuple(vec![atom(module), atom(function), u32_term(*arity)]),
                Term::from(List::from(options.clone())),
            ]),
            Control::SpawnReply {
                id,
                to,
                flags,
                result,
            } => tuple(vec![
                int(SPAWN_REPLY),
                id.clone(),
                to.to_term(),
                u32_term(*flags),
                result.clone(),
            ]),
            Control::Traced { control, token } => traced_term(control, token),
            Control::Unknown(code) => tuple(vec![int(*code)]),
        }
    }
}

/// The `_TT` form of `control`: its plain tuple with the token put where
/// the protocol puts it (last, or before an exit's reason), and the code
/// that names it.
fn traced_term(control: &Control, token: &Term) -> Term {
    let plain = control.to_term();
    let Term::Tuple(mut t) = plain else {
        return plain;
    };
    let code = match control {
        Control::Send { from: None, .. } => SEND_TT,
        Control::Send { from: Some(_), .. } => SEND_SENDER_TT,
        Control::RegSend { .. } => REG_SEND_TT,
        Control::AliasSend { .. } => ALIAS_SEND_TT,
        Control::Exit { exit2: false, .. } => EXIT_TT,
        Control::Exit { exit2: true, .. } => EXIT2_TT,
        Control::SpawnRequest { .. } => SPAWN_REQUEST_TT,
        Control::SpawnReply { .. } => SPAWN_REPLY_TT,
        Control::Link { .. }
        | Control::Unlink { .. }
        | Control::UnlinkLegacy { .. }
        | Control::NodeLink
        | Control::GroupLeader { .. }
        | Control::MonitorP { .. }
        | Control::DemonitorP { .. }
        | Control::MonitorPExit { .. }
        | Control::Traced { .. }
        | Control::Unknown(_) => return Term::Tuple(t),
    };
    t.elements[0] = Term::from(FixInteger::from(code));
    if matches!(control, Control::Exit { .. }) {
        let last = t.elements.len() - 1;
        t.elements.insert(last, token.clone());
    } else {
        t.elements.push(token.clone());
    }
    Term::Tuple(t)
}
