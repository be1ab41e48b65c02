//! Control messages: the tuple at the head of every distribution message
//! (`{2, '', ToPid}` for SEND, `{6, FromPid, '', ToName}` for REG_SEND,
//! ...), read into [`Control`] and written from it.
//!
//! Every operation code of the protocol (`erl_dist_protocol`, OTP 26)
//! reads into a variant; forms that differ only in a flag share one
//! (SEND and SEND_SENDER, EXIT and EXIT2, UNLINK_ID and its ACK), the
//! `_TT` forms read into [`Control::Traced`] around their plain form, and
//! the `PAYLOAD_` forms into their plain form with the reason taken from
//! the term that follows. Only codes the protocol does not define read as
//! [`Control::Unknown`]. [`Control::read`] also checks the term that
//! follows the control: present for a send, a spawn request and a
//! `PAYLOAD_` form, absent otherwise.

use crate::pid::Pid;
use crate::term::{self, TermError};
use crate::term::{Atom, FixInteger, List, Term, atom, display, list_elements, tuple};
use thiserror::Error;

/// LINK: `{1, FromPid, ToPid}`.
pub const LINK: i32 = 1;
/// SEND: `{2, Unused, ToPid}`, message follows.
pub const SEND: i32 = 2;
/// EXIT: `{3, FromPid, ToPid, Reason}`, a linked process ended.
pub const EXIT: i32 = 3;
/// UNLINK: `{4, FromPid, ToPid}`, the link protocol before OTP 26.
pub const UNLINK: i32 = 4;
/// NODE_LINK: `{5}`.
pub const NODE_LINK: i32 = 5;
/// REG_SEND: `{6, FromPid, Unused, ToName}`, message follows.
pub const REG_SEND: i32 = 6;
/// GROUP_LEADER: `{7, FromPid, ToPid}`.
pub const GROUP_LEADER: i32 = 7;
/// EXIT2: `{8, FromPid, ToPid, Reason}`, `exit(Pid, Reason)`.
pub const EXIT2: i32 = 8;
/// SEND_TT: `{12, Unused, ToPid, TraceToken}`, message follows.
pub const SEND_TT: i32 = 12;
/// EXIT_TT: `{13, FromPid, ToPid, TraceToken, Reason}`.
pub const EXIT_TT: i32 = 13;
/// REG_SEND_TT: `{16, FromPid, Unused, ToName, TraceToken}`, message follows.
pub const REG_SEND_TT: i32 = 16;
/// EXIT2_TT: `{18, FromPid, ToPid, TraceToken, Reason}`.
pub const EXIT2_TT: i32 = 18;
/// MONITOR_P: `{19, FromPid, ToProc, Ref}` (ToProc a pid or a name).
pub const MONITOR_P: i32 = 19;
/// DEMONITOR_P: `{20, FromPid, ToProc, Ref}`.
pub const DEMONITOR_P: i32 = 20;
/// MONITOR_P_EXIT: `{21, FromProc, ToPid, Ref, Reason}`.
pub const MONITOR_P_EXIT: i32 = 21;
/// SEND_SENDER: `{22, FromPid, ToPid}`, message follows.
pub const SEND_SENDER: i32 = 22;
/// SEND_SENDER_TT: `{23, FromPid, ToPid, TraceToken}`, message follows.
pub const SEND_SENDER_TT: i32 = 23;
/// PAYLOAD_EXIT: `{24, FromPid, ToPid}`, reason follows.
pub const PAYLOAD_EXIT: i32 = 24;
/// PAYLOAD_EXIT_TT: `{25, FromPid, ToPid, TraceToken}`, reason follows.
pub const PAYLOAD_EXIT_TT: i32 = 25;
/// PAYLOAD_EXIT2: `{26, FromPid, ToPid}`, reason follows.
pub const PAYLOAD_EXIT2: i32 = 26;
/// PAYLOAD_EXIT2_TT: `{27, FromPid, ToPid, TraceToken}`, reason follows.
pub const PAYLOAD_EXIT2_TT: i32 = 27;
/// PAYLOAD_MONITOR_P_EXIT: `{28, FromProc, ToPid, Ref}`, reason follows.
pub const PAYLOAD_MONITOR_P_EXIT: i32 = 28;
/// SPAWN_REQUEST: `{29, ReqId, From, GroupLeader, {M, F, Arity}, Opts}`,
/// the argument list follows.
pub const SPAWN_REQUEST: i32 = 29;
/// SPAWN_REQUEST_TT: SPAWN_REQUEST with a trace token last.
pub const SPAWN_REQUEST_TT: i32 = 30;
/// SPAWN_REPLY: `{31, ReqId, To, Flags, Result}`.
pub const SPAWN_REPLY: i32 = 31;
/// SPAWN_REPLY_TT: SPAWN_REPLY with a trace token last.
pub const SPAWN_REPLY_TT: i32 = 32;
/// ALIAS_SEND: `{33, FromPid, Alias}`, message follows.
pub const ALIAS_SEND: i32 = 33;
/// ALIAS_SEND_TT: `{34, FromPid, Alias, TraceToken}`, message follows.
pub const ALIAS_SEND_TT: i32 = 34;
/// UNLINK_ID: `{35, Id, FromPid, ToPid}`.
pub const UNLINK_ID: i32 = 35;
/// UNLINK_ID_ACK: `{36, Id, FromPid, ToPid}`.
pub const UNLINK_ID_ACK: i32 = 36;

/// Every operation code the protocol defines.
pub const DEFINED: [i32; 30] = [
    LINK,
    SEND,
    EXIT,
    UNLINK,
    NODE_LINK,
    REG_SEND,
    GROUP_LEADER,
    EXIT2,
    SEND_TT,
    EXIT_TT,
    REG_SEND_TT,
    EXIT2_TT,
    MONITOR_P,
    DEMONITOR_P,
    MONITOR_P_EXIT,
    SEND_SENDER,
    SEND_SENDER_TT,
    PAYLOAD_EXIT,
    PAYLOAD_EXIT_TT,
    PAYLOAD_EXIT2,
    PAYLOAD_EXIT2_TT,
    PAYLOAD_MONITOR_P_EXIT,
    SPAWN_REQUEST,
    SPAWN_REQUEST_TT,
    SPAWN_REPLY,
    SPAWN_REPLY_TT,
    ALIAS_SEND,
    ALIAS_SEND_TT,
    UNLINK_ID,
    UNLINK_ID_ACK,
];

/// A distribution message's type byte: no atom cache, the control and
/// its message follow as plain external terms.
pub const PASS_THROUGH: u8 = 112;

/// SPAWN_REPLY's flag: the link was set up.
pub const SPAWN_REPLY_LINKED: u32 = 1;
/// SPAWN_REPLY's flag: the monitor was set up.
pub const SPAWN_REPLY_MONITORED: u32 = 2;

/// A control message.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// A message to a pid (SEND; SEND_SENDER with `from`).
    Send {
        /// The sender, when the peer said (SEND_SENDER).
        from: Option<Pid>,
        /// The receiver.
        to: Pid,
    },
    /// A message to a registered name (REG_SEND).
    RegSend {
        /// The sender.
        from: Pid,
        /// The name.
        name: String,
    },
    /// A message to an alias, a reference (ALIAS_SEND).
    AliasSend {
        /// The sender.
        from: Pid,
        /// The alias.
        alias: Term,
    },
    /// `from` links to `to` (LINK).
    Link {
        /// The process linking.
        from: Pid,
        /// The process linked to.
        to: Pid,
    },
    /// The process `from`, linked to `to`, ended with `reason` (EXIT,
    /// PAYLOAD_EXIT), or sent `to` an exit signal (EXIT2, PAYLOAD_EXIT2,
    /// `exit2` set).
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
    /// `from` unlinks from `to` without an id (UNLINK, the link protocol
    /// OTP 26 no longer sends).
    UnlinkLegacy {
        /// The process unlinking.
        from: Pid,
        /// Its partner.
        to: Pid,
    },
    /// NODE_LINK, which no node has acted on for decades.
    NodeLink,
    /// `from` sets `to`'s group leader (GROUP_LEADER).
    GroupLeader {
        /// The process asking.
        from: Pid,
        /// The process whose group leader changes (to `from`).
        to: Pid,
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
    /// The process `from` that `to` monitored ended with `reason`
    /// (MONITOR_P_EXIT, PAYLOAD_MONITOR_P_EXIT).
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
    /// `from` asks for a process running `module:function/arity` here
    /// (SPAWN_REQUEST, `erlang:spawn_request/5`); the arguments follow.
    SpawnRequest {
        /// The request's reference (also the monitor's, if asked for).
        id: Term,
        /// The process asking: the new process's parent.
        from: Pid,
        /// The new process's group leader.
        group_leader: Term,
        /// The entry point's module.
        module: String,
        /// Its function.
        function: String,
        /// Its arity.
        arity: u32,
        /// The spawn options (`link`, `monitor`, ...).
        options: Vec<Term>,
    },
    /// The answer to a SPAWN_REQUEST (SPAWN_REPLY).
    SpawnReply {
        /// The request's reference.
        id: Term,
        /// The process that asked.
        to: Pid,
        /// [`SPAWN_REPLY_LINKED`] and [`SPAWN_REPLY_MONITORED`].
        flags: u32,
        /// The new pid, or the reason (an atom) it was not spawned.
        result: Term,
    },
    /// `control` sent by a process carrying a sequential trace token
    /// (`seq_trace`): the `_TT` forms. It acts as `control`.
    Traced {
        /// The message in its plain form.
        control: Box<Control>,
        /// The trace token.
        token: Term,
    },
    /// An operation code the protocol does not define.
    Unknown(i32),
}

/// Why a distribution message's control (or what follows it) is not one.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ControlError {
    /// Not a tuple starting with an integer.
    #[error("the control message is not a tuple with an operation code: {0}")]
    NotControl(String),
    /// A known operation with the wrong elements.
    #[error("control message {code} has the wrong shape: {term}")]
    Shape {
        /// The operation code.
        code: i32,
        /// The control tuple.
        term: String,
    },
    /// A send, spawn request or `PAYLOAD_` form without the term that
    /// follows it.
    #[error("control message {0} comes without the term that must follow it")]
    MissingPayload(i32),
    /// A term after a control message that takes none.
    #[error("control message {0} takes no term after it, but one follows")]
    UnexpectedPayload(i32),
}

/// Why a frame is not a distribution message.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum MessageError {
    /// An empty frame is a tick, not a message.
    #[error("an empty frame (a tick) is not a message")]
    Empty,
    /// Not a pass-through message (an atom cache was not negotiated).
    #[error("unsupported message type {0} (no atom cache is negotiated)")]
    Type(u8),
    /// A term that does not decode.
    #[error("{0}")]
    Term(#[from] TermError),
    /// Bytes after the message.
    #[error("{0} bytes after the message")]
    Trailing(usize),
    /// A control message that is not one.
    #[error("{0}")]
    Control(#[from] ControlError),
}

/// Read a frame's body (after its length): the type byte, the control
/// and the term after it, checked as [`Control::read`] checks them. Every
/// byte a peer sends after the handshake passes here first.
pub fn decode_message(frame: &[u8]) -> Result<(Control, Option<Term>), MessageError> {
    let (&kind, _) = frame.split_first().ok_or(MessageError::Empty)?;
    if kind != PASS_THROUGH {
        return Err(MessageError::Type(kind));
    }
    let (control, end) = term::decode_at(frame, 1)?;
    let message = if end < frame.len() {
        let (m, end) = term::decode_at(frame, end)?;
        if end != frame.len() {
            return Err(MessageError::Trailing(frame.len() - end));
        }
        Some(m)
    } else {
        None
    };
    Ok(Control::read(&control, message)?)
}

fn atom_name(t: &Term) -> Option<String> {
    match t {
        Term::Atom(Atom { name }) => Some(name.clone()),
        _ => None,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn a() -> Pid {
        Pid::new("a@localhost", 5, 0, 9)
    }

    fn b() -> Pid {
        Pid::new("b@localhost", 7, 1, 3)
    }

    fn n(v: i32) -> Term {
        Term::from(FixInteger::from(v))
    }

    fn list(elements: Vec<Term>) -> Term {
        Term::from(List::from(elements))
    }

    /// One message of every plain form, with the term that follows it.
    fn samples() -> Vec<(Control, Option<Term>)> {
        let msg = Some(atom("hello"));
        vec![
            (
                Control::Send {
                    from: None,
                    to: a(),
                },
                msg.clone(),
            ),
            (
                Control::Send {
                    from: Some(b()),
                    to: a(),
                },
                msg.clone(),
            ),
            (
                Control::RegSend {
                    from: a(),
                    name: "counter".into(),
                },
                msg.clone(),
            ),
            (
                Control::AliasSend {
                    from: b(),
                    alias: atom("alias"),
                },
                msg.clone(),
            ),
            (Control::Link { from: a(), to: b() }, None),
            (
                Control::Exit {
                    from: a(),
                    to: b(),
                    reason: atom("boom"),
                    exit2: false,
                },
                None,
            ),
            (
                Control::Exit {
                    from: a(),
                    to: b(),
                    reason: atom("boom"),
                    exit2: true,
                },
                None,
            ),
            (
                Control::Unlink {
                    id: n(3),
                    from: b(),
                    to: a(),
                    ack: false,
                },
                None,
            ),
            (
                Control::Unlink {
                    id: n(3),
                    from: b(),
                    to: a(),
                    ack: true,
                },
                None,
            ),
            (Control::UnlinkLegacy { from: b(), to: a() }, None),
            (Control::NodeLink, None),
            (Control::GroupLeader { from: b(), to: a() }, None),
            (
                Control::MonitorP {
                    from: a(),
                    to: atom("counter"),
                    reference: atom("r"),
                },
                None,
            ),
            (
                Control::DemonitorP {
                    from: a(),
                    to: b().to_term(),
                    reference: atom("r"),
                },
                None,
            ),
            (
                Control::MonitorPExit {
                    from: b().to_term(),
                    to: a(),
                    reference: atom("r"),
                    reason: atom("noconnection"),
                },
                None,
            ),
            (
                Control::SpawnRequest {
                    id: atom("req"),
                    from: b(),
                    group_leader: b().to_term(),
                    module: "erpc".into(),
                    function: "execute_call".into(),
                    arity: 4,
                    options: vec![atom("monitor"), tuple(vec![atom("reply"), atom("yes")])],
                },
                Some(list(vec![n(1), n(2)])),
            ),
            (
                Control::SpawnReply {
                    id: atom("req"),
                    to: b(),
                    flags: SPAWN_REPLY_MONITORED,
                    result: a().to_term(),
                },
                None,
            ),
        ]
    }

    #[test]
    fn every_form_round_trips_plain_and_traced() {
        let token = tuple(vec![n(0), atom("label"), n(0), b().to_term(), n(0)]);
        for (c, payload) in samples() {
            let back = Control::read(&c.to_term(), payload.clone());
            assert_eq!(back, Ok((c.clone(), payload.clone())), "{c:?}");
            let with_token = Control::Traced {
                control: Box::new(c.clone()),
                token: token.clone(),
            };
            let (back, back_payload) =
                Control::read(&with_token.to_term(), payload.clone()).unwrap();
            assert_eq!(back_payload, payload);
            let has_tt = matches!(
                c,
                Control::Send { .. }
                    | Control::RegSend { .. }
                    | Control::AliasSend { .. }
                    | Control::Exit { .. }
                    | Control::SpawnRequest { .. }
                    | Control::SpawnReply { .. }
            );
            if has_tt {
                assert_eq!(back, with_token, "{c:?}");
                assert_eq!(back.untraced(), (c, Some(token.clone())));
            } else {
                assert_eq!(back, c, "{c:?} has no traced form and is written plain");
            }
        }
    }

    #[test]
    fn every_code_the_protocol_defines_is_known_and_no_other() {
        let defined = [
            1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 16, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,
            31, 32, 33, 34, 35, 36,
        ];
        let token = atom("token");
        let mut codes = std::collections::BTreeSet::new();
        for (c, payload) in samples() {
            for form in [
                c.clone(),
                Control::Traced {
                    control: Box::new(c.clone()),
                    token: token.clone(),
                },
            ] {
                let Term::Tuple(t) = form.to_term() else {
                    unreachable!()
                };
                let Term::FixInteger(FixInteger { value }) = t.elements[0] else {
                    unreachable!()
                };
                let (read, _) = Control::read(&form.to_term(), payload.clone()).unwrap();
                assert!(!matches!(read, Control::Unknown(_)));
                codes.insert(value);
            }
        }
        // The PAYLOAD_ forms, which this node reads but does not write.
        for (code, elements) in [
            (PAYLOAD_EXIT, vec![a().to_term(), b().to_term()]),
            (
                PAYLOAD_EXIT_TT,
                vec![a().to_term(), b().to_term(), token.clone()],
            ),
            (PAYLOAD_EXIT2, vec![a().to_term(), b().to_term()]),
            (
                PAYLOAD_EXIT2_TT,
                vec![a().to_term(), b().to_term(), token.clone()],
            ),
            (
                PAYLOAD_MONITOR_P_EXIT,
                vec![a().to_term(), b().to_term(), atom("r")],
            ),
        ] {
            let mut t = vec![n(code)];
            t.extend(elements);
            let (read, rest) = Control::read(&tuple(t), Some(atom("why"))).unwrap();
            assert_eq!(rest, None, "the reason is moved into the control");
            let (plain, _) = read.untraced();
            match plain {
                Control::Exit { reason, exit2, .. } => {
                    assert_eq!(reason, atom("why"));
                    assert_eq!(exit2, matches!(code, PAYLOAD_EXIT2 | PAYLOAD_EXIT2_TT));
                }
                Control::MonitorPExit { reason, .. } => assert_eq!(reason, atom("why")),
                other => panic!("{code} read as {other:?}"),
            }
            codes.insert(code);
        }
        assert_eq!(codes.into_iter().collect::<Vec<_>>(), defined);
        for code in [0, 9, 10, 11, 14, 15, 17, 37, 99, -1] {
            assert_eq!(
                Control::read(&tuple(vec![n(code), atom("x")]), Some(atom("m"))),
                Ok((Control::Unknown(code), Some(atom("m"))))
            );
        }
    }

    #[test]
    fn a_malformed_control_says_what_is_wrong() {
        let send = tuple(vec![n(SEND), atom(""), a().to_term()]);
        assert_eq!(
            Control::read(&send, None),
            Err(ControlError::MissingPayload(SEND))
        );
        let link = tuple(vec![n(LINK), a().to_term(), b().to_term()]);
        assert_eq!(
            Control::read(&link, Some(atom("m"))),
            Err(ControlError::UnexpectedPayload(LINK))
        );
        let bad = tuple(vec![n(LINK), atom("not_a_pid"), b().to_term()]);
        assert!(matches!(
            Control::read(&bad, None),
            Err(ControlError::Shape { code: LINK, .. })
        ));
        let short = tuple(vec![n(SPAWN_REQUEST), atom("req")]);
        assert!(matches!(
            Control::read(&short, Some(list(vec![]))),
            Err(ControlError::Shape {
                code: SPAWN_REQUEST,
                ..
            })
        ));
        assert!(matches!(
            Control::read(&atom("nope"), None),
            Err(ControlError::NotControl(_))
        ));
        assert!(
            Control::read(&tuple(vec![atom("x")]), None)
                .unwrap_err()
                .to_string()
                .contains("not a tuple with an operation code")
        );
    }
}
