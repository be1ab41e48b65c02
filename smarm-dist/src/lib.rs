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
//! # Layers
//!
//! The crate is built in layers, each using only the layers below it (and
//! modules of its own row); `tests/layers.rs` reads this table and fails on
//! a `crate::` or `super::` path that reaches a row above its module's, and
//! on a folder whose modules sit on two rows.
//!
//! ```text layers
//! 0 flags epmd random
//! 1 term pid
//! 2 control handshake stream tls
//! 3 node
//! ```
//!
//! - 0: capability flags; EPMD (client and built-in server); random
//!   numbers for the protocol (`random`).
//! - 1: the External Term Format behind a bounds check ([`term`]), and
//!   Erlang pids ([`Pid`]): each converts to the other.
//! - 2: control messages ([`control`]); the handshake ([`handshake`]);
//!   a connection's byte stream, TCP or TLS (`TlsConfig`, feature `tls`).
//! - 3: the node ([`Node`]): connections, mailboxes, sending, links,
//!   monitors, calls, exported functions and `erpc` across nodes.
//!
//! Without TLS, traffic is not encrypted and the cookie is the only gate:
//! run such nodes on a network you trust, or turn on the `tls` feature
//! and give the node a `Builder::tls` configuration, as OTP's
//! `inet_tls_dist`.

pub mod control;
pub mod epmd;
pub mod flags;
pub mod handshake;
mod node;
mod pid;
mod random;
mod stream;
pub mod term;
#[cfg(feature = "tls")]
mod tls;

#[cfg(feature = "fuzzing")]
pub use node::fuzz;
pub use node::{
    Builder, CallError, DEFAULT_MAX_FRAME, DEFAULT_MAX_HANDSHAKES, DEFAULT_TICKTIME, Dest,
    ErpcError, FLUSH_GRACE, GenCall, Global, GlobalError, Mailbox, Message, Node, NodeEvent,
    PgError, PgScope, Raise, RegisterError, ReplyTo, Resolve, SendError, Servable, StartError,
    Stats, call, node, nodes, send,
};
pub use pid::Pid;
/// `#[derive(Term)]`: [`ToTerm`] and [`FromTerm`] for a struct or enum
/// (the mapping is in [`term::convert`]).
pub use smarm_macros::Term;
pub use term::{FromTerm, FromTermError, Term, ToTerm};
#[cfg(feature = "tls")]
pub use tls::{TlsConfig, TlsConfigError};

/// The guide's chapter on distribution, whose examples run as this
/// crate's doctests.
#[cfg(doctest)]
#[doc = include_str!("../../guide/src/distribution.md")]
pub struct GuideDistribution;
