//! Registry errors: every send error hands the message back.

use smarm_core::Pid;
use std::fmt;
use thiserror::Error;

/// Why [`register`](super::register) failed. An actor holds at most one
/// name per message type, each bound to one channel (Erlang allows one
/// name per process; smarm one per message type the actor accepts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RegisterError {
    /// A live actor already holds the name.
    #[error(
        "smarm: the name {name:?} is held by the live actor {holder}; unregister it first or pick another name"
    )]
    NameTaken {
        /// The name.
        name: &'static str,
        /// Its live holder.
        holder: Pid,
    },
    /// The caller already holds another name for this message type.
    #[error(
        "smarm: this actor already holds the name {held:?} for messages of type {msg}; an actor takes one name per message type (unregister {held:?} first)"
    )]
    AlreadyNamed {
        /// The name asked for.
        name: &'static str,
        /// The name it holds for the same type.
        held: &'static str,
        /// The message type.
        msg: &'static str,
    },
    /// The caller holds the name already, for another message type.
    #[error(
        "smarm: this actor holds the name {name:?} for messages of type {registered}, not {asked}; one name has one message type"
    )]
    OtherType {
        /// The name.
        name: &'static str,
        /// The type it is registered for.
        registered: &'static str,
        /// The type asked for.
        asked: &'static str,
    },
    /// The caller already published a different channel for this message
    /// type (by another `register` or `install`): the name would silently
    /// redirect it.
    #[error(
        "smarm: this actor already published another channel for messages of type {msg}; register the name with that channel (a clone of its Sender)"
    )]
    OtherChannel {
        /// The name asked for.
        name: &'static str,
        /// The message type.
        msg: &'static str,
    },
}

/// Why a registry send did not deliver. Every variant carries the message
/// back.
pub enum SendError<M> {
    /// No live actor holds the name.
    Unresolved(M),
    /// That actor incarnation is gone (even if its slot was reused).
    Dead(M),
    /// The actor is alive but published no channel for this message type.
    NoChannel(M),
    /// The actor's channel for this type is closed (its receiver dropped).
    Closed(M),
    /// A process group had no live member to deliver to.
    NoMember(M),
}

impl<M> SendError<M> {
    /// The undelivered message.
    pub fn into_inner(self) -> M {
        match self {
            SendError::Unresolved(m)
            | SendError::Dead(m)
            | SendError::NoChannel(m)
            | SendError::Closed(m)
            | SendError::NoMember(m) => m,
        }
    }

    fn what(&self) -> &'static str {
        match self {
            SendError::Unresolved(_) => "no live actor holds the name",
            SendError::Dead(_) => "the actor is gone",
            SendError::NoChannel(_) => "the actor published no channel for this message type",
            SendError::Closed(_) => "the actor's channel is closed",
            SendError::NoMember(_) => "the process group has no live member",
        }
    }
}

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let variant = match self {
            SendError::Unresolved(_) => "Unresolved",
            SendError::Dead(_) => "Dead",
            SendError::NoChannel(_) => "NoChannel",
            SendError::Closed(_) => "Closed",
            SendError::NoMember(_) => "NoMember",
        };
        write!(f, "SendError::{variant}(..)")
    }
}

impl<M> fmt::Display for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "smarm: send failed: {}", self.what())
    }
}

impl<M> std::error::Error for SendError<M> {}

impl<M> PartialEq for SendError<M> {
    /// Compares the variant only (the payload need not be comparable).
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}
