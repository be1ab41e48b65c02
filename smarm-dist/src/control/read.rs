//! Reading a control tuple (and the term that follows it) into a
//! [`Control`].

use super::*;
use crate::term::{FixInteger, List, display, list_elements};

fn atom_name(t: &Term) -> Option<String> {
    term::atom_name(t).map(str::to_string)
}

fn small_int(t: &Term) -> Option<i64> {
    match t {
        Term::FixInteger(FixInteger { value }) => Some(i64::from(*value)),
        _ => None,
    }
}

fn traced(control: Control, token: &Term) -> Control {
    Control::Traced {
        control: Box::new(control),
        token: token.clone(),
    }
}

/// Whether a term must follow the operation `code`.
fn takes_payload(code: i32) -> bool {
    matches!(
        code,
        SEND | SEND_TT
            | REG_SEND
            | REG_SEND_TT
            | SEND_SENDER
            | SEND_SENDER_TT
            | ALIAS_SEND
            | ALIAS_SEND_TT
            | PAYLOAD_EXIT
            | PAYLOAD_EXIT_TT
            | PAYLOAD_EXIT2
            | PAYLOAD_EXIT2_TT
            | PAYLOAD_MONITOR_P_EXIT
            | SPAWN_REQUEST
            | SPAWN_REQUEST_TT
    )
}

impl Control {
    /// Read a distribution message's control tuple and the term that
    /// follows it: the control and the message (a send's message, a spawn
    /// request's argument list; a `PAYLOAD_` form's reason is moved into
    /// the control).
    pub fn read(
        control: &Term,
        payload: Option<Term>,
    ) -> Result<(Control, Option<Term>), ControlError> {
        let Term::Tuple(t) = control else {
            return Err(ControlError::NotControl(display(control).to_string()));
        };
        let Some(Term::FixInteger(FixInteger { value: code })) = t.elements.first() else {
            return Err(ControlError::NotControl(display(control).to_string()));
        };
        let code = *code;
        let shape = || ControlError::Shape {
            code,
            term: display(control).to_string(),
        };
        let known = Control::parse_elements(code, &t.elements[1..]);
        if matches!(known, Some(Control::Unknown(_))) {
            return Ok((Control::Unknown(code), payload));
        }
        let known = known.ok_or_else(shape)?;
        match (takes_payload(code), payload) {
            (false, None) => Ok((known, None)),
            (false, Some(_)) => Err(ControlError::UnexpectedPayload(code)),
            (true, None) => Err(ControlError::MissingPayload(code)),
            (true, Some(p)) => match code {
                PAYLOAD_EXIT
                | PAYLOAD_EXIT_TT
                | PAYLOAD_EXIT2
                | PAYLOAD_EXIT2_TT
                | PAYLOAD_MONITOR_P_EXIT => Ok((known.with_reason(p), None)),
                _ => Ok((known, Some(p))),
            },
        }
    }

    /// The reason of a `PAYLOAD_` form, put in its place.
    fn with_reason(self, payload: Term) -> Control {
        match self {
            Control::Exit {
                from, to, exit2, ..
            } => Control::Exit {
                from,
                to,
                reason: payload,
                exit2,
            },
            Control::MonitorPExit {
                from,
                to,
                reference,
                ..
            } => Control::MonitorPExit {
                from,
                to,
                reference,
                reason: payload,
            },
            Control::Traced { control, token } => Control::Traced {
                control: Box::new(control.with_reason(payload)),
                token,
            },
            other => other,
        }
    }

    fn parse_elements(code: i32, rest: &[Term]) -> Option<Control> {
        let pid = Pid::from_term;
        let nil = || Term::from(List::nil());
        Some(match (code, rest) {
            (LINK, [from, to]) => Control::Link {
                from: pid(from)?,
                to: pid(to)?,
            },
            (SEND, [_, to]) => Control::Send {
                from: None,
                to: pid(to)?,
            },
            (code @ (EXIT | EXIT2), [from, to, reason]) => Control::Exit {
                from: pid(from)?,
                to: pid(to)?,
                reason: reason.clone(),
                exit2: code == EXIT2,
            },
            (UNLINK, [from, to]) => Control::UnlinkLegacy {
                from: pid(from)?,
                to: pid(to)?,
            },
            (NODE_LINK, []) => Control::NodeLink,
            (REG_SEND, [from, _, name]) => Control::RegSend {
                from: pid(from)?,
                name: atom_name(name)?,
            },
            (GROUP_LEADER, [from, to]) => Control::GroupLeader {
                from: pid(from)?,
                to: pid(to)?,
            },
            (SEND_TT, [unused, to, token]) => traced(
                Control::parse_elements(SEND, &[unused.clone(), to.clone()])?,
                token,
            ),
            (code @ (EXIT_TT | EXIT2_TT), [from, to, token, reason]) => traced(
                Control::Exit {
                    from: pid(from)?,
                    to: pid(to)?,
                    reason: reason.clone(),
                    exit2: code == EXIT2_TT,
                },
                token,
            ),
            (REG_SEND_TT, [from, unused, name, token]) => traced(
                Control::parse_elements(REG_SEND, &[from.clone(), unused.clone(), name.clone()])?,
                token,
            ),
            (MONITOR_P, [from, to, reference]) => Control::MonitorP {
                from: pid(from)?,
                to: to.clone(),
                reference: reference.clone(),
            },
            (DEMONITOR_P, [from, to, reference]) => Control::DemonitorP {
                from: pid(from)?,
                to: to.clone(),
                reference: reference.clone(),
            },
            (MONITOR_P_EXIT, [from, to, reference, reason]) => Control::MonitorPExit {
                from: from.clone(),
                to: pid(to)?,
                reference: reference.clone(),
                reason: reason.clone(),
            },
            (SEND_SENDER, [from, to]) => Control::Send {
                from: Some(pid(from)?),
                to: pid(to)?,
            },
            (SEND_SENDER_TT, [from, to, token]) => traced(
                Control::parse_elements(SEND_SENDER, &[from.clone(), to.clone()])?,
                token,
            ),
            (code @ (PAYLOAD_EXIT | PAYLOAD_EXIT2), [from, to]) => Control::Exit {
                from: pid(from)?,
                to: pid(to)?,
                reason: nil(),
                exit2: code == PAYLOAD_EXIT2,
            },
            (code @ (PAYLOAD_EXIT_TT | PAYLOAD_EXIT2_TT), [from, to, token]) => traced(
                Control::Exit {
                    from: pid(from)?,
                    to: pid(to)?,
                    reason: nil(),
                    exit2: code == PAYLOAD_EXIT2_TT,
                },
                token,
            ),
            (PAYLOAD_MONITOR_P_EXIT, [from, to, reference]) => Control::MonitorPExit {
                from: from.clone(),
                to: pid(to)?,
                reference: reference.clone(),
                reason: nil(),
            },
            (SPAWN_REQUEST, [id, from, group_leader, mfa, options]) => {
                let Term::Tuple(mfa) = mfa else { return None };
                let [module, function, arity] = &mfa.elements[..] else {
                    return None;
                };
                Control::SpawnRequest {
                    id: id.clone(),
                    from: pid(from)?,
                    group_leader: group_leader.clone(),
                    module: atom_name(module)?,
                    function: atom_name(function)?,
                    arity: u32::try_from(small_int(arity)?).ok()?,
                    options: list_elements(options)?,
                }
            }
            (SPAWN_REQUEST_TT, [id, from, group_leader, mfa, options, token]) => traced(
                Control::parse_elements(
                    SPAWN_REQUEST,
                    &[
                        id.clone(),
                        from.clone(),
                        group_leader.clone(),
                        mfa.clone(),
                        options.clone(),
                    ],
                )?,
                token,
            ),
            (SPAWN_REPLY, [id, to, flags, result]) => Control::SpawnReply {
                id: id.clone(),
                to: pid(to)?,
                flags: u32::try_from(small_int(flags)?).ok()?,
                result: result.clone(),
            },
            (SPAWN_REPLY_TT, [id, to, flags, result, token]) => traced(
                Control::parse_elements(
                    SPAWN_REPLY,
                    &[id.clone(), to.clone(), flags.clone(), result.clone()],
                )?,
                token,
            ),
            (ALIAS_SEND, [from, alias]) => Control::AliasSend {
                from: pid(from)?,
                alias: alias.clone(),
            },
            (ALIAS_SEND_TT, [from, alias, token]) => traced(
                Control::parse_elements(ALIAS_SEND, &[from.clone(), alias.clone()])?,
                token,
            ),
            (code @ (UNLINK_ID | UNLINK_ID_ACK), [id, from, to]) => Control::Unlink {
                id: id.clone(),
                from: pid(from)?,
                to: pid(to)?,
                ack: code == UNLINK_ID_ACK,
            },
            // A code of the protocol with elements of the wrong shape.
            (code, _) if DEFINED.contains(&code) => return None,
            (code, _) => Control::Unknown(code),
        })
    }

    /// The message as this node acts on it: a [`Traced`](Control::Traced)
    /// one's plain form and its token, anything else as it is.
    pub fn untraced(self) -> (Control, Option<Term>) {
        match self {
            Control::Traced { control, token } => {
                let (control, _) = control.untraced();
                (control, Some(token))
            }
            other => (other, None),
        }
    }
}
