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

mod codes;
mod read;
#[cfg(test)]
mod tests;
mod write;

pub use codes::*;

use crate::pid::Pid;
use crate::term::{self, Term, TermError};
use thiserror::Error;

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
