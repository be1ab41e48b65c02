//! Erlang distribution for smarm: a smarm node speaks EPMD and the
//! distribution protocol (version 6, OTP 23 and later), so it joins a
//! cluster of BEAM nodes (Erlang, Elixir, Gleam) or of other smarm nodes,
//! and processes on either side address each other by pid and by
//! registered name.
//!
//! ```no_run
//! use smarm_dist::{term, Node};
//!
//! smarm::run(|| {
//!     let node = Node::start("shop@localhost", "secret").unwrap();
//!     let inbox = node.register("inbox").unwrap();
//!     // From an Erlang shell started with -sname erl -setcookie secret:
//!     //   {inbox, 'shop@localhost'} ! {self(), ping}.
//!     let msg = inbox.recv().unwrap();
//!     if let Some(from) = msg.from {
//!         inbox.send(&from, term::atom("pong")).unwrap();
//!     }
//!     node.stop();
//! });
//! ```
//!
//! Layers, each importing only from those above it in this list:
//! [`flags`] and [`term`] (capability flags, the External Term Format
//! behind a bounds check), [`pid`](Pid) and [`control`] (control
//! messages), [`epmd`] (client and built-in server), [`handshake`], and
//! [`node`](Node) (connections, mailboxes, sending).
//!
//! Traffic is not encrypted and the cookie is the only gate: run nodes
//! on a network you trust.

pub mod control;
pub mod epmd;
pub mod flags;
pub mod handshake;
mod node;
mod pid;
pub mod term;

pub use node::{
    Builder, CallError, DEFAULT_MAX_FRAME, DEFAULT_TICKTIME, Dest, GenCall, Mailbox, Message, Node,
    NodeEvent, RegisterError, ReplyTo, SendError, Servable, StartError, Stats, call, node, nodes,
    send,
};
pub use pid::Pid;
/// `#[derive(Term)]`: [`ToTerm`] and [`FromTerm`] for a struct or enum
/// (the mapping is in [`term::convert`]).
pub use smarm_macros::Term;
pub use term::{FromTerm, FromTermError, Term, ToTerm};

/// The guide's chapter on distribution, whose examples run as this
/// crate's doctests.
#[cfg(doctest)]
#[doc = include_str!("../../guide/src/distribution.md")]
pub struct GuideDistribution;
