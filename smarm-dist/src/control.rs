//! Control messages: the tuple at the head of every distribution message
//! (`{2, '', ToPid}` for SEND, `{6, FromPid, '', ToName}` for REG_SEND,
//! ...), read into [`Control`] and written from it.

use crate::pid::Pid;
use crate::term::{atom, tuple, Atom, FixInteger, Term};

/// SEND: `{2, Unused, ToPid}`, message follows.
pub const SEND: i32 = 2;
/// REG_SEND: `{6, FromPid, Unused, ToName}`, message follows.
pub const REG_SEND: i32 = 6;
/// SEND_SENDER: `{22, FromPid, ToPid}`, message follows.
pub const SEND_SENDER: i32 = 22;
/// ALIAS_SEND: `{33, FromPid, Alias}`, message follows.
pub const ALIAS_SEND: i32 = 33;

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
