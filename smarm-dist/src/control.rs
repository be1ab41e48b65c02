//! Control messages: the tuple at the head of every distribution message
//! (`{2, '', ToPid}` for SEND, `{6, FromPid, '', ToName}` for REG_SEND,
//! ...), read into [`Control`] and written from it.

use crate::pid::Pid;
use crate::term::{Atom, FixInteger, Term, atom, tuple};

/// SEND: `{2, Unused, ToPid}`, message follows.
pub const SEND: i32 = 2;
/// REG_SEND: `{6, FromPid, Unused, ToName}`, message follows.
pub const REG_SEND: i32 = 6;
/// SEND_SENDER: `{22, FromPid, ToPid}`, message follows.
pub const SEND_SENDER: i32 = 22;
/// ALIAS_SEND: `{33, FromPid, Alias}`, message follows.
pub const ALIAS_SEND: i32 = 33;
/// LINK: `{1, FromPid, ToPid}`.
pub const LINK: i32 = 1;
/// EXIT: `{3, FromPid, ToPid, Reason}`, a linked process ended.
pub const EXIT: i32 = 3;
/// EXIT2: `{8, FromPid, ToPid, Reason}`, `exit(Pid, Reason)`.
pub const EXIT2: i32 = 8;
/// UNLINK_ID: `{35, Id, FromPid, ToPid}`.
pub const UNLINK_ID: i32 = 35;
/// UNLINK_ID_ACK: `{36, Id, FromPid, ToPid}`.
pub const UNLINK_ID_ACK: i32 = 36;
/// MONITOR_P: `{19, FromPid, ToProc, Ref}` (ToProc a pid or a name).
pub const MONITOR_P: i32 = 19;
/// DEMONITOR_P: `{20, FromPid, ToProc, Ref}`.
pub const DEMONITOR_P: i32 = 20;
/// MONITOR_P_EXIT: `{21, FromProc, ToPid, Ref, Reason}`.
pub const MONITOR_P_EXIT: i32 = 21;

/// A control message this node acts on.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// A message to a pid of ours.
    Send {
        /// The sender, when the peer said (SEND_SENDER).
        from: Option<Pid>,
        /// The receiver.
        to: Pid,
    },
    /// A message to a name registered on this node.
    RegSend {
        /// The sender.
        from: Pid,
        /// The name.
        name: String,
    },
    /// A message to an alias (a reference) of ours.
    AliasSend {
        /// The sender.
        from: Pid,
        /// The alias.
        alias: Term,
    },
    /// `from` links to `to`.
    Link {
        /// The process linking.
        from: Pid,
        /// The process linked to.
        to: Pid,
    },
    /// The process `from`, linked to `to`, ended with `reason` (EXIT), or
    /// sent `to` an exit signal (EXIT2, `exit2` set).
    Exit {
        /// The process that ended.
        from: Pid,
        /// Its linked partner.
        to: Pid,
        /// Why.
        reason: Term,
        /// An `exit/2` signal rather than a link's.
        exit2: bool,
    },
    /// `from` unlinks from `to` (UNLINK_ID), or acknowledges that (`ack`).
    Unlink {
        /// The unlink operation's id.
        id: Term,
        /// The process unlinking.
        from: Pid,
        /// Its partner.
        to: Pid,
        /// UNLINK_ID_ACK rather than UNLINK_ID.
        ack: bool,
    },
    /// `from` monitors `to` (a pid, or a registered name as an atom).
    MonitorP {
        /// The watcher.
        from: Pid,
        /// The watched process: a pid term or a name atom.
        to: Term,
        /// The monitor's reference.
        reference: Term,
    },
    /// `from` no longer monitors `to`.
    DemonitorP {
        /// The watcher.
        from: Pid,
        /// The watched process.
        to: Term,
        /// The monitor's reference.
        reference: Term,
    },
    /// The process `from` that `to` monitored ended with `reason`.
    MonitorPExit {
        /// The watched process (as the monitor named it).
        from: Term,
        /// The watcher.
        to: Pid,
        /// The monitor's reference.
        reference: Term,
        /// Why it ended.
        reason: Term,
    },
    /// A control message this node ignores (the operation code).
    Unknown(i32),
}

fn op(t: &Term) -> Option<(i32, &[Term])> {
    let Term::Tuple(t) = t else { return None };
    match t.elements.first() {
        Some(Term::FixInteger(FixInteger { value })) => Some((*value, &t.elements[1..])),
        _ => None,
    }
}

fn atom_name(t: &Term) -> Option<String> {
    match t {
        Term::Atom(Atom { name }) => Some(name.clone()),
        _ => None,
    }
}

impl Control {
    /// Read a control tuple; `None` if it is not one.
    pub fn parse(t: &Term) -> Option<Control> {
        let (code, rest) = op(t)?;
        Some(match (code, rest) {
            (SEND, [_, to]) => Control::Send {
                from: None,
                to: Pid::from_term(to)?,
            },
            (SEND_SENDER, [from, to]) => Control::Send {
                from: Some(Pid::from_term(from)?),
                to: Pid::from_term(to)?,
            },
            (REG_SEND, [from, _, name]) => Control::RegSend {
                from: Pid::from_term(from)?,
                name: atom_name(name)?,
            },
            (ALIAS_SEND, [from, alias]) => Control::AliasSend {
                from: Pid::from_term(from)?,
                alias: alias.clone(),
            },
            (LINK, [from, to]) => Control::Link {
                from: Pid::from_term(from)?,
                to: Pid::from_term(to)?,
            },
            (code @ (EXIT | EXIT2), [from, to, reason]) => Control::Exit {
                from: Pid::from_term(from)?,
                to: Pid::from_term(to)?,
                reason: reason.clone(),
                exit2: code == EXIT2,
            },
            (code @ (UNLINK_ID | UNLINK_ID_ACK), [id, from, to]) => Control::Unlink {
                id: id.clone(),
                from: Pid::from_term(from)?,
                to: Pid::from_term(to)?,
                ack: code == UNLINK_ID_ACK,
            },
            (MONITOR_P, [from, to, reference]) => Control::MonitorP {
                from: Pid::from_term(from)?,
                to: to.clone(),
                reference: reference.clone(),
            },
            (DEMONITOR_P, [from, to, reference]) => Control::DemonitorP {
                from: Pid::from_term(from)?,
                to: to.clone(),
                reference: reference.clone(),
            },
            (MONITOR_P_EXIT, [from, to, reference, reason]) => Control::MonitorPExit {
                from: from.clone(),
                to: Pid::from_term(to)?,
                reference: reference.clone(),
                reason: reason.clone(),
            },
            (code, _) => Control::Unknown(code),
        })
    }

    /// The control tuple of this message.
    pub fn to_term(&self) -> Term {
        let int = |v: i32| Term::from(FixInteger::from(v));
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
            Control::Unknown(code) => tuple(vec![int(*code)]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_messages_round_trip() {
        let a = Pid::new("a@localhost", 5, 0, 9);
        let b = Pid::new("b@localhost", 7, 1, 3);
        for c in [
            Control::Send {
                from: None,
                to: a.clone(),
            },
            Control::Send {
                from: Some(b.clone()),
                to: a.clone(),
            },
            Control::RegSend {
                from: a.clone(),
                name: "counter".into(),
            },
            Control::MonitorP {
                from: a.clone(),
                to: atom("counter"),
                reference: atom("r"),
            },
            Control::Link {
                from: a.clone(),
                to: b.clone(),
            },
            Control::Exit {
                from: a.clone(),
                to: b.clone(),
                reason: atom("boom"),
                exit2: true,
            },
            Control::Unlink {
                id: Term::from(FixInteger::from(3)),
                from: b.clone(),
                to: a.clone(),
                ack: false,
            },
            Control::DemonitorP {
                from: a.clone(),
                to: b.to_term(),
                reference: atom("r"),
            },
            Control::MonitorPExit {
                from: b.to_term(),
                to: a.clone(),
                reference: atom("r"),
                reason: atom("noconnection"),
            },
        ] {
            assert_eq!(Control::parse(&c.to_term()), Some(c));
        }
        assert_eq!(
            Control::parse(&tuple(vec![Term::from(FixInteger::from(99)), atom("x")])),
            Some(Control::Unknown(99))
        );
        assert_eq!(Control::parse(&atom("nope")), None);
    }
}
