//! A distributed node: its name and cookie, its EPMD registration, its
//! listener, its connections to other nodes (over TCP or TLS), and the
//! mailboxes of its node-visible processes.
//!
//! # Design
//!
//! A node is a set of actors in the runtime that started it: the EPMD
//! keeper (holds the registration; serves EPMD itself when none answers),
//! the acceptor, `net_kernel` (answers pings, `kernel.rs`), and per
//! connection a reader and a writer. The reader
//! owns the socket's receiving side: it decodes each frame and delivers
//! it into a local mailbox with `try_send`, so a full bounded mailbox
//! drops (and counts) the message instead of stalling the connection. The
//! sending side is an `Outbox`: a sending actor that finds the connection
//! idle writes its frame to the socket itself (no actor hop on a round
//! trip); otherwise the frame goes to the connection's writer, which
//! writes what waits in one system call, and sends a tick when nothing
//! waited for a quarter of the tick time. The reader declares the peer
//! down when it has received nothing for the whole tick time.
//!
//! The rooms, as OTP splits `net_kernel`, `dist_util` and
//! `inet_tcp_dist`: `builder.rs` starts a node (options, cookie, EPMD);
//! `connection.rs` makes and accepts connections (handshake, registration,
//! the reader); `wire.rs` is the framing and the sending side (`Outbox`,
//! the writer); `mailbox.rs` the node-visible mailboxes; `tables.rs` the
//! tables under the node's lock (processes, connections, signals);
//! `kernel.rs` is `net_kernel`; `dispatch.rs` acts on every control
//! message a peer sends, through the handlers of `mailbox.rs` (sends),
//! `link.rs` and `monitor.rs` (the signals across nodes) and `spawn.rs`
//! (spawn requests both ways, which `erpc` rides on); `exports.rs` the
//! functions other nodes may run and `rex.rs` the `rpc` server; `pg.rs`
//! process groups across the cluster; `global.rs` cluster-wide names;
//! `call.rs`, `serve.rs` and `current.rs` calls, served gen_servers and
//! the current node.
//!
//! # Invariants
//!
//! - (N1) At most one connection per peer is registered in the table,
//!   and at most one handshake with a peer is under way on this node: a
//!   send that needs a connection waits for one being accepted from the
//!   peer or made by another send; when both nodes connect at once, the
//!   greater name's attempt wins (`nok` / `ok_simultaneous`), and an
//!   `alive` answer is confirmed only if this side has no connection.
//! - (N2) A connection is removed from the table, and a `NodeDown` sent to
//!   every subscriber, exactly once: by its reader, when the socket ends,
//!   a frame is malformed, or the peer stops ticking.
//! - (N3) Nothing a peer sends is decoded before it passes `term::check`,
//!   and no frame longer than the node's `max_frame` is read.
//! - (N4) A handshake ends (done or cut off) within the node's handshake
//!   timeout, and at most `max_handshakes` incoming ones run at once: the
//!   acceptor closes a connection beyond that before reading from it.

mod builder;
mod call;
mod connection;
mod current;
mod dispatch;
mod exports;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz;
mod global;
mod kernel;
mod link;
mod mailbox;
mod monitor;
mod pg;
mod rex;
mod serve;
mod spawn;
mod tables;
mod wire;

pub use current::{call, node, nodes, send};
pub use serve::Servable;

pub use builder::{Builder, StartError};
pub use call::{CallError, GenCall, ReplyTo};
pub use exports::Raise;
pub use global::{Global, GlobalError, Resolve};
pub use mailbox::{Mailbox, RegisterError};
pub use pg::{PgError, PgScope};
pub use spawn::ErpcError;

use tables::State;
use wire::{Out, encode_frame};

use crate::control::Control;
use crate::epmd;
use crate::flags;
use crate::handshake::{HandshakeError, Local};
use crate::pid::Pid;
use crate::term::{FromTerm, FromTermError, Term, ToTerm};
use smarm_core::Mutex;
use smarm_core::channel::{Receiver, channel};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;
use thiserror::Error;

/// How many incoming connections may be in their handshake at once, by
/// default ([`Builder::max_handshakes`]).
pub const DEFAULT_MAX_HANDSHAKES: usize = 64;

/// Erlang's default `net_ticktime`.
pub const DEFAULT_TICKTIME: Duration = Duration::from_secs(60);
/// The longest frame a node reads unless told otherwise (64 MiB).
pub const DEFAULT_MAX_FRAME: usize = 64 << 20;

/// How long [`Node::stop`] lets its connections' writers write what was
/// sent before the stop, in all.
pub const FLUSH_GRACE: Duration = Duration::from_secs(1);

/// Why a message could not be sent to another node.
#[derive(Debug, Error)]
pub enum SendError {
    /// The node name has no host part.
    #[error("{0:?} is not a node name (name@host)")]
    BadNode(String),
    /// The node's host has no EPMD, or EPMD does not know the node.
    #[error("node {node} is not known to the EPMD on its host: {why}")]
    NoNode {
        /// The node.
        node: String,
        /// What the lookup said.
        why: String,
    },
    /// The connection could not be made.
    #[error("cannot connect to node {node}: {error}")]
    Connect {
        /// The node.
        node: String,
        /// The error.
        error: HandshakeError,
    },
    /// The connection closed before the message was handed to it.
    #[error("the connection to node {0} closed")]
    Closed(String),
    /// The node was stopped.
    #[error("this node was stopped")]
    Stopped,
    /// No node runs in this process (`smarm::dist::send` and `call`
    /// need one).
    #[error("smarm::dist: no node is running in this process: start one with Node::start")]
    NotAlive,
}

/// A message from another node (or this one) to a node-visible mailbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The sender, when the control message names one (REG_SEND,
    /// SEND_SENDER, ALIAS_SEND).
    pub from: Option<Pid>,
    /// The message.
    pub term: Term,
    /// The sequential trace token (`seq_trace`) the message travelled
    /// with, when its sender had one (the `_TT` control messages); boxed,
    /// as most messages have none and every message is moved through a
    /// channel.
    pub trace_token: Option<Box<Term>>,
}

impl Message {
    /// A message from `from` (if known) without a trace token.
    pub fn new(from: Option<Pid>, term: Term) -> Message {
        Message {
            from,
            term,
            trace_token: None,
        }
    }

    /// The message as a `T` ([`FromTerm`]).
    ///
    /// ```
    /// use smarm_dist::{term, Message, ToTerm};
    ///
    /// let msg = Message::new(None, (term::atom("add"), 2).to_term());
    /// let (op, n): (term::Atom, i32) = msg.decode().unwrap();
    /// assert_eq!((op.name.as_str(), n), ("add", 2));
    /// ```
    pub fn decode<T: FromTerm>(&self) -> Result<T, FromTermError> {
        T::from_term(&self.term)
    }
}

/// A change in the set of connected nodes ([`Node::monitor_nodes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeEvent {
    /// A connection to the node is up.
    Up(String),
    /// The connection to the node is gone (closed, malformed, or it
    /// stopped ticking).
    Down(String),
}

/// Counters of what a node dropped, for monitoring and tests.
#[derive(Debug, Default)]
pub struct Stats {
    /// Messages to a name or pid that is not (or no longer) here.
    pub undeliverable: AtomicU64,
    /// Messages dropped because the receiving mailbox was full.
    pub dropped_full: AtomicU64,
    /// Frames that did not decode (the connection was closed).
    pub malformed: AtomicU64,
    /// Control messages this node does not act on: GROUP_LEADER (smarm
    /// actors have none) and operation codes the protocol does not define.
    pub ignored_controls: AtomicU64,
    /// Handshakes that failed (wrong cookie, refused, malformed, not
    /// finished in time).
    pub failed_handshakes: AtomicU64,
    /// Incoming connections closed at once because the most handshakes
    /// allowed at a time were under way ([`Builder::max_handshakes`]).
    pub busy_handshakes: AtomicU64,
}

/// Where a message goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    /// A process, by pid.
    Pid(Pid),
    /// A name registered on a node: `{Name, Node} ! Msg`.
    Name {
        /// The registered name.
        name: String,
        /// The node.
        node: String,
    },
}

impl From<Pid> for Dest {
    fn from(p: Pid) -> Dest {
        Dest::Pid(p)
    }
}

impl From<&Pid> for Dest {
    fn from(p: &Pid) -> Dest {
        Dest::Pid(p.clone())
    }
}

impl<N: Into<String>, M: Into<String>> From<(N, M)> for Dest {
    fn from((name, node): (N, M)) -> Dest {
        Dest::Name {
            name: name.into(),
            node: node.into(),
        }
    }
}

struct Inner {
    local: Local,
    alive: String,
    port: u16,
    ticktime: Duration,
    max_frame: usize,
    handshake_timeout: Duration,
    max_handshakes: usize,
    /// Incoming connections in their handshake now.
    handshaking: std::sync::atomic::AtomicUsize,
    epmd_port: u16,
    state: Mutex<State>,
    stats: Stats,
    epmd_server: std::sync::OnceLock<epmd::Server>,
    /// TLS for every connection, when configured.
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::TlsConfig>,
}

/// A distributed node (module docs). Cheap to clone; every clone is the
/// same node.
#[derive(Clone)]
pub struct Node {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("name", &self.inner.local.name)
            .field("port", &self.inner.port)
            .finish()
    }
}

impl Node {
    /// Start a node named `name` (`name@host`) with `cookie`: see
    /// [`Builder`] for the other options.
    ///
    /// ```no_run
    /// smarm::run(|| {
    ///     let node = smarm::dist::Node::start("shop@localhost", "secret").unwrap();
    ///     let counter = node.register("counter").unwrap();
    ///     // An Erlang shell: {counter, 'shop@localhost'} ! {self(), hello}.
    ///     let msg = counter.recv().unwrap();
    ///     println!("{:?}", msg.term);
    ///     node.stop();
    /// });
    /// ```
    ///
    /// # Panics
    ///
    /// Outside a smarm actor.
    pub fn start(name: &str, cookie: &str) -> Result<Node, StartError> {
        Builder::new(name).cookie(cookie).start()
    }

    /// Options for a node named `name`.
    pub fn builder(name: &str) -> Builder {
        Builder::new(name)
    }

    /// Its full name.
    pub fn name(&self) -> &str {
        &self.inner.local.name
    }

    /// The port it accepts other nodes on.
    pub fn port(&self) -> u16 {
        self.inner.port
    }

    /// Its creation (from EPMD).
    pub fn creation(&self) -> u32 {
        self.inner.local.creation
    }

    /// Whether this node serves EPMD itself (none answered at its start).
    pub fn serves_epmd(&self) -> bool {
        self.inner.epmd_server.get().is_some()
    }

    /// What it dropped.
    pub fn stats(&self) -> &Stats {
        &self.inner.stats
    }

    /// The nodes it is connected to (Erlang's `nodes()`).
    pub fn nodes(&self) -> Vec<String> {
        self.with_state(|s| s.conns.peers.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Subscribe to connections coming up and going down
    /// (`net_kernel:monitor_nodes(true)`).
    pub fn monitor_nodes(&self) -> Receiver<NodeEvent> {
        let (tx, rx) = channel();
        let _ = self.with_state(|s| s.conns.subscribers.push(tx));
        rx
    }

    /// The pid standing for the node itself, the sender of messages sent
    /// with [`Node::send`].
    pub fn node_pid(&self) -> Pid {
        Pid::new(self.name(), 0, 0, self.creation())
    }

    /// Send `term` to `to` (a [`Pid`] or `(name, node)`), from the node
    /// itself. A message to this node is delivered at once; to another,
    /// the connection is made first if there is none. As in Erlang, a
    /// message to a process that does not exist is dropped silently.
    pub fn send(&self, to: impl Into<Dest>, msg: impl ToTerm) -> Result<(), SendError> {
        let term = msg.into_term();
        self.send_from(&self.node_pid(), to.into(), term)
    }

    fn send_from(&self, from: &Pid, to: Dest, term: Term) -> Result<(), SendError> {
        let (node, control) = match to {
            Dest::Pid(pid) => (
                pid.node().to_string(),
                Control::Send {
                    from: Some(from.clone()),
                    to: pid,
                },
            ),
            Dest::Name { name, node } => (
                node,
                Control::RegSend {
                    from: from.clone(),
                    name,
                },
            ),
        };
        self.post(&node, control, Some(term), true)
    }

    /// Hand `control` (and its `message`) to `node`: this node handles it
    /// itself when it is local; else it goes to the connection's writer,
    /// connecting first only if `connect`.
    fn post(
        &self,
        node: &str,
        control: Control,
        message: Option<Term>,
        connect: bool,
    ) -> Result<(), SendError> {
        if node == self.name() {
            // What this node posts itself has the shape `dispatch` takes.
            let _ = self.dispatch(control, message, None);
            return Ok(());
        }
        let (tx, peer_flags) = if connect {
            self.connection(node)?
        } else {
            self.with_state(|s| s.conns.peers.get(node).map(|c| (c.tx.clone(), c.flags)))
                .flatten()
                .ok_or_else(|| SendError::Closed(node.to_string()))?
        };
        // A peer without SEND_SENDER gets a plain SEND.
        let control = match control {
            Control::Send { to, .. } if !peer_flags.has(flags::SEND_SENDER) => {
                Control::Send { from: None, to }
            }
            c => c,
        };
        let frame = encode_frame(&control.to_term(), message.as_ref());
        tx.send(frame)
            .map_err(|_| SendError::Closed(node.to_string()))
    }

    /// Stop the node: its listener, connections and EPMD registration
    /// (and the EPMD it served, if it did). What was sent before the stop
    /// is written first, as a closed TCP socket delivers what was written
    /// to it: each connection's writer is given up to [`FLUSH_GRACE`] in
    /// all (a peer that does not read cannot hold the stop longer).
    /// Mailboxes see their channel close once they are dropped by their
    /// owners.
    pub fn stop(&self) {
        let (actors, conns) = self
            .with_state(|s| {
                s.stopped = true;
                let conns: Vec<_> = s
                    .conns
                    .peers
                    .values_mut()
                    .map(|conn| {
                        // Behind every frame already queued (O1).
                        conn.tx.try_send(Out::Close);
                        (conn.closer.try_clone().ok(), conn.writer_done.take())
                    })
                    .collect();
                s.conns.subscribers.clear();
                (std::mem::take(&mut s.procs.actors), conns)
            })
            .unwrap_or_default();
        let deadline = smarm_core::time::now() + FLUSH_GRACE;
        for (closer, writer_done) in conns {
            if let Some(done) = writer_done {
                let left = deadline.saturating_duration_since(smarm_core::time::now());
                let _ = done.recv_timeout(left);
            }
            // The peer sees the connection go now, not at its tick
            // timeout, even if the writer could not finish.
            if let Some(closer) = closer {
                let _ = closer.shutdown(std::net::Shutdown::Both);
            }
        }
        for a in actors {
            smarm_core::request_stop(a);
        }
        if let Some(server) = self.inner.epmd_server.get() {
            server.stop();
        }
    }

    /// Whether [`stop`](Self::stop) was called.
    fn is_stopped(&self) -> bool {
        self.with_state(|s| s.stopped).unwrap_or(true)
    }

    fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> Option<R> {
        self.inner.state.lock().ok().map(|mut s| f(&mut s))
    }

    /// Start a registered process of the node's own (`net_kernel`,
    /// `rex`): an actor that registers `name` and runs `serve`; returns
    /// once the name is registered. If the name is taken, says what
    /// `fails` without it.
    fn start_service(
        &self,
        name: &'static str,
        fails: &'static str,
        serve: impl FnOnce(Node, Mailbox) + Send + 'static,
    ) {
        let (ready_tx, ready) = smarm_core::channel::channel::<()>();
        let node = self.clone();
        self.spawn(&format!("smarm.dist.{name}"), move || {
            let Ok(mailbox) = node.register(name) else {
                log(&format!("{name}: the name is taken; {fails}"));
                return;
            };
            let _ = ready_tx.send(());
            serve(node, mailbox);
        });
        // Only a spawn failure (the runtime is stopping) leaves it unsent.
        let _ = ready.recv();
    }

    /// Spawn one of the node's actors (stopped by `stop`); `false` if the
    /// runtime would not spawn it.
    fn spawn(&self, label: &str, f: impl FnOnce() + Send + 'static) -> bool {
        match smarm_core::Builder::new().name(label).spawn(f) {
            Ok(h) => {
                let pid = h.pid();
                drop(h);
                let _ = self.with_state(|s| s.procs.actors.push(pid));
                true
            }
            Err(_) => false,
        }
    }
}

fn log(what: &str) {
    eprintln!("smarm::dist: {what}");
}
