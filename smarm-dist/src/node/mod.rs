//! A distributed node: its name and cookie, its EPMD registration, its
//! listener, its connections to other nodes, and the mailboxes of its
//! node-visible processes.
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

mod call;
mod current;
mod kernel;
mod link;
mod monitor;
mod serve;

pub use current::{call, node, nodes, send};
pub use serve::Servable;

pub use call::{CallError, GenCall, ReplyTo};

use crate::control::Control;
use crate::epmd::{self, NodeEntry, Registration};
use crate::flags::{self, Flags};
use crate::handshake::{self, HandshakeError, Local, Status};
use crate::pid::Pid;
use crate::term::{self, FromTerm, FromTermError, Term, ToTerm};
use smarm_core::channel::{channel, Receiver, Sender};
use smarm_core::io::net::{TcpListener, TcpStream};
use smarm_core::{Mutex, RecvError, RecvTimeoutError};
use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Erlang's default `net_ticktime`.
pub const DEFAULT_TICKTIME: Duration = Duration::from_secs(60);
/// The longest frame a node reads unless told otherwise (64 MiB).
pub const DEFAULT_MAX_FRAME: usize = 64 << 20;
/// The pass-through tag that starts a message sent without an atom cache.
const PASS_THROUGH: u8 = 112;

/// Why a node could not start.
#[derive(Debug, Error)]
pub enum StartError {
    /// The name is not `name@host`.
    #[error(
        "smarm::dist::Node::start: {0:?} is not a node name: give name@host, as \"shop@localhost\""
    )]
    BadName(String),
    /// No cookie was given and `~/.erlang.cookie` could not be read.
    #[error("smarm::dist::Node::start: no cookie given and {path} could not be read ({error}): pass one with Builder::cookie")]
    NoCookie {
        /// The cookie file tried.
        path: String,
        /// Why it could not be read.
        error: io::Error,
    },
    /// The listener could not be bound.
    #[error("smarm::dist::Node::start: cannot listen on {addr}: {error}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The error.
        error: io::Error,
    },
    /// Neither an EPMD answered nor could one be served.
    #[error("smarm::dist::Node::start: no EPMD on port {port}, and serving one failed: {error}")]
    Epmd {
        /// The EPMD port.
        port: u16,
        /// The error.
        error: io::Error,
    },
    /// EPMD already has a node of this name.
    #[error("smarm::dist::Node::start: a node named {0:?} is already registered with EPMD")]
    NameTaken(String),
}

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
}

impl Message {
    /// The message as a `T` ([`FromTerm`]).
    ///
    /// ```
    /// use smarm_dist::{term, Message, ToTerm};
    ///
    /// let msg = Message { from: None, term: (term::atom("add"), 2).to_term() };
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
    /// Control messages this node does not act on.
    pub ignored_controls: AtomicU64,
    /// Handshakes that failed (wrong cookie, refused, malformed).
    pub failed_handshakes: AtomicU64,
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

/// What the writer of a connection is handed.
enum Out {
    Frame(Vec<u8>),
    Close,
}

struct Conn {
    tx: Outbox,
    flags: Flags,
    /// Tells this connection from a later one to the same peer (N2).
    id: u64,
}

#[derive(Default)]
struct State {
    names: HashMap<String, (u32, Sender<Message>)>,
    mailboxes: HashMap<u32, Sender<Message>>,
    conns: HashMap<String, Conn>,
    /// Peers this node is connecting to right now.
    connecting: HashSet<String>,
    /// Peers whose connection to this node is in its handshake.
    accepting: HashSet<String>,
    /// Sends waiting for a handshake with a peer to settle: dropped (so
    /// their receivers wake) when one ends or a connection is registered.
    settle_waiters: HashMap<String, Vec<Sender<()>>>,
    subscribers: Vec<Sender<NodeEvent>>,
    /// Actors of the node, stopped by `Node::stop`.
    actors: Vec<smarm_core::Pid>,
    stopped: bool,
    next_id: u32,
    /// The id of the next UNLINK_ID this node sends.
    next_unlink_id: u64,
    next_conn: u64,
    /// Monitors this node's mailboxes hold on processes, by reference.
    watching: HashMap<Term, monitor::Watch>,
    /// Monitors held on this node's mailboxes, by mailbox id.
    watched: HashMap<u32, Vec<monitor::Watcher>>,
    next_ref: u64,
    /// Links across nodes, by (our pid's id, the remote pid).
    links: HashMap<(u32, Pid), link::LinkEntry>,
    /// The actor that made each mailbox, for links made to it.
    owners: HashMap<u32, smarm_core::Pid>,
}

impl State {
    /// A handshake with `peer` ended, or its connection is registered:
    /// wake the sends waiting for it.
    fn settled(&mut self, peer: &str) {
        self.settle_waiters.remove(peer);
    }

    /// A channel that closes when a handshake with `peer` settles.
    fn await_settle(&mut self, peer: &str) -> Receiver<()> {
        let (tx, rx) = channel();
        self.settle_waiters
            .entry(peer.to_string())
            .or_default()
            .push(tx);
        rx
    }

    /// A pid number for a new mailbox or link end: never 0 (the node's
    /// own), and after the counter wraps, never one a live mailbox holds.
    fn next_pid_id(&mut self) -> u32 {
        loop {
            let id = self.next_id;
            self.next_id = self.next_id.wrapping_add(1).max(1);
            if !self.mailboxes.contains_key(&id) {
                return id;
            }
        }
    }
}

struct Inner {
    local: Local,
    alive: String,
    port: u16,
    ticktime: Duration,
    max_frame: usize,
    epmd_port: u16,
    state: Mutex<State>,
    stats: Stats,
    epmd_server: std::sync::OnceLock<epmd::Server>,
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

/// Options for starting a node.
#[derive(Debug, Clone)]
pub struct Builder {
    name: String,
    cookie: Option<String>,
    listen: Option<SocketAddr>,
    ticktime: Duration,
    max_frame: usize,
    epmd_port: Option<u16>,
}

impl Builder {
    /// A node named `name` (`name@host`).
    pub fn new(name: &str) -> Builder {
        Builder {
            name: name.to_string(),
            cookie: None,
            listen: None,
            ticktime: DEFAULT_TICKTIME,
            max_frame: DEFAULT_MAX_FRAME,
            epmd_port: None,
        }
    }

    /// The cookie; without one, `~/.erlang.cookie` is read, as Erlang does.
    pub fn cookie(mut self, cookie: &str) -> Builder {
        self.cookie = Some(cookie.to_string());
        self
    }

    /// Listen for other nodes on `addr` (default: all IPv4 addresses, a
    /// port the kernel picks).
    pub fn listen(mut self, addr: SocketAddr) -> Builder {
        self.listen = Some(addr);
        self
    }

    /// Erlang's `net_ticktime`: a peer silent this long is declared down
    /// (default 60 s). Both sides of a connection should agree.
    ///
    /// # Panics
    ///
    /// If `ticktime` is under 400 ms (ticks go every quarter of it).
    pub fn ticktime(mut self, ticktime: Duration) -> Builder {
        assert!(
            ticktime >= Duration::from_millis(400),
            "smarm::dist::Builder::ticktime: {ticktime:?} is too short; give at least 400 ms"
        );
        self.ticktime = ticktime;
        self
    }

    /// The longest frame accepted from a peer (default 64 MiB); a longer
    /// one closes the connection.
    pub fn max_frame(mut self, bytes: usize) -> Builder {
        self.max_frame = bytes;
        self
    }

    /// EPMD's port (default `ERL_EPMD_PORT`, else 4369).
    pub fn epmd_port(mut self, port: u16) -> Builder {
        self.epmd_port = Some(port);
        self
    }

    /// Start the node: listen, register with EPMD (serving EPMD if none
    /// answers), accept connections.
    ///
    /// # Panics
    ///
    /// Outside a smarm actor: the node's actors run in the caller's
    /// runtime.
    pub fn start(self) -> Result<Node, StartError> {
        smarm_core::require_actor("smarm::dist::Node::start");
        let Some((alive, _host)) = self
            .name
            .split_once('@')
            .filter(|(a, h)| !a.is_empty() && !h.is_empty())
        else {
            return Err(StartError::BadName(self.name));
        };
        let alive = alive.to_string();
        let cookie = match self.cookie {
            Some(c) => c,
            None => read_cookie_file()?,
        };
        let addr = self
            .listen
            .unwrap_or_else(|| SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)));
        let listener =
            TcpListener::bind(addr).map_err(|error| StartError::Listen { addr, error })?;
        let port = listener
            .local_addr()
            .map_err(|error| StartError::Listen { addr, error })?
            .port();
        let epmd_port = self.epmd_port.unwrap_or_else(epmd::port_from_env);
        let entry = NodeEntry::new(&alive, port);
        let (registration, server) = register_or_serve(epmd_port, &entry)?;
        let node = Node {
            inner: Arc::new(Inner {
                local: Local {
                    name: self.name,
                    cookie,
                    flags: Flags::offered(),
                    creation: registration.creation,
                },
                alive,
                port,
                ticktime: self.ticktime,
                max_frame: self.max_frame,
                epmd_port,
                state: Mutex::new(State {
                    next_id: 1,
                    next_unlink_id: 1,
                    ..State::default()
                }),
                stats: Stats::default(),
                epmd_server: std::sync::OnceLock::new(),
            }),
        };
        if let Some(server) = server {
            let _ = node.inner.epmd_server.set(server);
        }
        // Before the acceptor: a peer that connects finds it (K1).
        node.start_kernel();
        let keeper = node.clone();
        node.spawn("smarm.dist.epmd_keeper", move || {
            keeper.keep_registration(registration)
        });
        let acceptor = node.clone();
        node.spawn("smarm.dist.acceptor", move || {
            acceptor.accept_loop(listener)
        });
        current::started(&node);
        Ok(node)
    }
}

/// The cookie in `~/.erlang.cookie`.
fn read_cookie_file() -> Result<String, StartError> {
    let path = std::env::var("HOME").unwrap_or_default() + "/.erlang.cookie";
    match std::fs::read_to_string(&path) {
        Ok(c) => Ok(c.trim().to_string()),
        Err(error) => Err(StartError::NoCookie { path, error }),
    }
}

/// Register `entry` with the EPMD on `port`, serving EPMD first if none
/// answers (another node may win the race to serve: then register there).
fn register_or_serve(
    port: u16,
    entry: &NodeEntry,
) -> Result<(Registration, Option<epmd::Server>), StartError> {
    // An EPMD that is going away (its node stopping) may accept and then
    // reset: such errors are tried again, for about a second.
    let transient = |e: &io::Error| {
        matches!(
            e.kind(),
            io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::UnexpectedEof
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::AddrInUse
        )
    };
    let mut last = None;
    for _ in 0..50 {
        match epmd::register(Ipv4Addr::LOCALHOST, port, entry) {
            Ok(r) => return Ok((r, None)),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                return Err(StartError::NameTaken(entry.name.clone()))
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                match epmd::Server::start(Ipv4Addr::LOCALHOST, port) {
                    Ok(server) => match epmd::register(Ipv4Addr::LOCALHOST, port, entry) {
                        Ok(r) => return Ok((r, Some(server))),
                        Err(error) => return Err(StartError::Epmd { port, error }),
                    },
                    // Someone else serves now, or the old server's port is
                    // not free yet: try again.
                    Err(e) => last = Some(e),
                }
            }
            Err(e) if transient(&e) => last = Some(e),
            Err(error) => return Err(StartError::Epmd { port, error }),
        }
        smarm_core::sleep(Duration::from_millis(20));
    }
    Err(StartError::Epmd {
        port,
        error: last.unwrap_or_else(|| io::Error::other("EPMD kept changing hands")),
    })
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
        self.with_state(|s| s.conns.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Subscribe to connections coming up and going down
    /// (`net_kernel:monitor_nodes(true)`).
    pub fn monitor_nodes(&self) -> Receiver<NodeEvent> {
        let (tx, rx) = channel();
        let _ = self.with_state(|s| s.subscribers.push(tx));
        rx
    }

    /// A new node-visible mailbox with a pid of its own.
    ///
    /// # Panics
    ///
    /// If the node's state could not be locked within the lock's timeout
    /// (an actor of the node is stuck: a bug worth reporting).
    pub fn mailbox(&self) -> Mailbox {
        match self.mailbox_with(None, None) {
            Ok(m) => m,
            Err(_) => panic!(
                "smarm::dist::Node::mailbox: the node's state stayed locked past its timeout"
            ),
        }
    }

    /// A new mailbox registered as `name` on this node, so that
    /// `{Name, Node} ! Msg` reaches it.
    pub fn register(&self, name: &str) -> Result<Mailbox, RegisterError> {
        self.mailbox_with(Some(name), None)
    }

    /// As [`register`](Node::register), with a bounded mailbox of
    /// `capacity` messages: a message from another node that finds it full
    /// is dropped and counted ([`Stats::dropped_full`]), since the
    /// connection's reader must never wait; a send from this node into it
    /// is dropped the same way.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0.
    pub fn register_bounded(&self, name: &str, capacity: usize) -> Result<Mailbox, RegisterError> {
        self.mailbox_with(Some(name), Some(capacity))
    }

    /// A mailbox with a new pid, registered as `name` if that is free.
    fn mailbox_with(
        &self,
        name: Option<&str>,
        capacity: Option<usize>,
    ) -> Result<Mailbox, RegisterError> {
        let (tx, rx) = match capacity {
            None => {
                let (tx, rx) = channel();
                (tx, Inbox::Unbounded(rx))
            }
            Some(cap) => {
                let (tx, rx) = smarm_core::channel::bounded(cap);
                (tx, Inbox::Bounded(rx))
            }
        };
        let id = self
            .with_state(|s| {
                if let Some(name) = name {
                    if s.names.contains_key(name) {
                        return None;
                    }
                }
                let id = s.next_pid_id();
                s.mailboxes.insert(id, tx.clone());
                if smarm_core::in_actor() {
                    s.owners.insert(id, smarm_core::self_pid());
                }
                if let Some(name) = name {
                    s.names.insert(name.to_string(), (id, tx));
                }
                Some(id)
            })
            .flatten()
            .ok_or_else(|| RegisterError(name.unwrap_or_default().to_string()))?;
        Ok(Mailbox {
            pid: Pid::new(self.name(), id, 0, self.creation()),
            name: name.map(str::to_string),
            rx,
            node: self.clone(),
            exit: None,
        })
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
            match message {
                Some(m) => self.deliver(control, m),
                None => self.control(control),
            }
            return Ok(());
        }
        let (tx, peer_flags) = if connect {
            self.connection(node)?
        } else {
            self.with_state(|s| s.conns.get(node).map(|c| (c.tx.clone(), c.flags)))
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
    /// (and the EPMD it served, if it did). Mailboxes see their channel
    /// close once they are dropped by their owners.
    pub fn stop(&self) {
        let actors = self
            .with_state(|s| {
                s.stopped = true;
                for conn in s.conns.values() {
                    conn.tx.try_send(Out::Close);
                }
                s.subscribers.clear();
                std::mem::take(&mut s.actors)
            })
            .unwrap_or_default();
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

    fn spawn(&self, label: &str, f: impl FnOnce() + Send + 'static) {
        if let Ok(h) = smarm_core::Builder::new().name(label).spawn(f) {
            let pid = h.pid();
            drop(h);
            let _ = self.with_state(|s| s.actors.push(pid));
        }
    }

    /// Hand a decoded message to its mailbox (never waits: N3's reader
    /// must not stall).
    fn deliver(&self, control: Control, term: Term) {
        let (from, tx) = match control {
            Control::Send { from, to } => {
                let tx = (to.node() == self.name() && to.creation() == self.creation())
                    .then(|| {
                        self.with_state(|s| s.mailboxes.get(&to.id()).cloned())
                            .flatten()
                    })
                    .flatten();
                (from, tx)
            }
            Control::RegSend { from, name } => (
                Some(from),
                self.with_state(|s| s.names.get(&name).map(|(_, tx)| tx.clone()))
                    .flatten(),
            ),
            other => {
                self.control(other);
                return;
            }
        };
        let Some(tx) = tx else {
            self.inner
                .stats
                .undeliverable
                .fetch_add(1, Ordering::Relaxed);
            return;
        };
        match tx.try_send(Message { from, term }) {
            Ok(()) => {}
            Err(smarm_core::TrySendError::Full(_)) => {
                self.inner
                    .stats
                    .dropped_full
                    .fetch_add(1, Ordering::Relaxed);
            }
            Err(smarm_core::TrySendError::Disconnected(_)) => {
                self.inner
                    .stats
                    .undeliverable
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    // ----- EPMD -----

    fn keep_registration(&self, mut registration: Registration) {
        let entry = NodeEntry::new(&self.inner.alive, self.inner.port);
        loop {
            registration.wait_closed();
            // EPMD went away: register again (serving it ourselves if no
            // one does), every second until it takes.
            loop {
                smarm_core::sleep(Duration::from_secs(1));
                if let Ok((r, server)) = register_or_serve(self.inner.epmd_port, &entry) {
                    if let Some(server) = server {
                        let _ = self.inner.epmd_server.set(server);
                    }
                    registration = r;
                    break;
                }
            }
        }
    }

    // ----- connections -----

    /// The writer of the connection to `peer`, connecting first if needed.
    fn connection(&self, peer: &str) -> Result<(Outbox, Flags), SendError> {
        let existing = self
            .with_state(|s| {
                if s.stopped {
                    return Err(SendError::Stopped);
                }
                Ok(s.conns.get(peer).map(|c| (c.tx.clone(), c.flags)))
            })
            .ok_or(SendError::Stopped)??;
        if let Some(c) = existing {
            return Ok(c);
        }
        self.connect(peer)
    }

    fn connect(&self, peer: &str) -> Result<(Outbox, Flags), SendError> {
        let Some((alive, host)) = peer.split_once('@') else {
            return Err(SendError::BadNode(peer.to_string()));
        };
        let lookup = || {
            self.with_state(|s| s.conns.get(peer).map(|c| (c.tx.clone(), c.flags)))
                .flatten()
        };
        // One handshake with a peer at a time: wait for one it started
        // with us (or that a send of ours started) before starting another.
        let deadline = Instant::now() + handshake::HANDSHAKE_TIMEOUT;
        loop {
            let busy = self
                .with_state(|s| {
                    if s.conns.contains_key(peer) {
                        return Some(None);
                    }
                    if s.accepting.contains(peer) || s.connecting.contains(peer) {
                        return Some(Some(s.await_settle(peer)));
                    }
                    s.connecting.insert(peer.to_string());
                    None
                })
                .flatten();
            match busy {
                Some(None) => {
                    if let Some(c) = lookup() {
                        return Ok(c);
                    }
                }
                Some(Some(settled)) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(SendError::Closed(peer.to_string()));
                    }
                    let _ = settled.recv_timeout(left);
                }
                None => break, // ours to make
            }
        }
        let result = self.handshake_to(peer, alive, host);
        let _ = self.with_state(|s| {
            s.connecting.remove(peer);
            s.settled(peer);
        });
        match result {
            Ok(Some(c)) => Ok(c),
            // Lost a simultaneous connect: the winner is in the table.
            Ok(None) => lookup().ok_or_else(|| SendError::Closed(peer.to_string())),
            // The peer's own attempt wins (its name is the greater), or we
            // had a connection by the time it said alive: use that one.
            Err(SendError::Connect {
                error: HandshakeError::Refused { ref status, .. },
                ..
            }) if status == "nok" || status == "alive" => loop {
                let waiting = self
                    .with_state(|s| match s.conns.get(peer) {
                        Some(c) => Ok((c.tx.clone(), c.flags)),
                        None => Err(s.await_settle(peer)),
                    })
                    .ok_or(SendError::Stopped)?;
                let left = deadline.saturating_duration_since(Instant::now());
                match waiting {
                    Ok(c) => return Ok(c),
                    Err(_) if left.is_zero() => return Err(SendError::Closed(peer.to_string())),
                    Err(settled) => drop(settled.recv_timeout(left)),
                }
            },
            Err(e) => Err(e),
        }
    }

    /// Look `peer` up, connect and shake hands; registers the connection.
    fn handshake_to(
        &self,
        peer: &str,
        alive: &str,
        host: &str,
    ) -> Result<Option<(Outbox, Flags)>, SendError> {
        let host_ip = resolve_v4(host).map_err(|e| SendError::NoNode {
            node: peer.to_string(),
            why: format!("cannot resolve {host}: {e}"),
        })?;
        let entry = epmd::port_please(host_ip, self.inner.epmd_port, alive)
            .map_err(|e| SendError::NoNode {
                node: peer.to_string(),
                why: e.to_string(),
            })?
            .ok_or_else(|| SendError::NoNode {
                node: peer.to_string(),
                why: "not registered".into(),
            })?;
        let mut stream =
            TcpStream::connect(SocketAddr::from((host_ip, entry.port))).map_err(|e| {
                SendError::Connect {
                    node: peer.to_string(),
                    error: e.into(),
                }
            })?;
        let _ = stream.set_nodelay(true);
        let have_none = || {
            self.with_state(|s| !s.conns.contains_key(peer))
                .unwrap_or(false)
        };
        let remote = handshake::initiate(&mut stream, &self.inner.local, peer, have_none).map_err(
            |error| {
                if !matches!(error, HandshakeError::Refused { .. }) {
                    self.inner
                        .stats
                        .failed_handshakes
                        .fetch_add(1, Ordering::Relaxed);
                }
                SendError::Connect {
                    node: peer.to_string(),
                    error,
                }
            },
        )?;
        Ok(self.established(stream, remote))
    }

    /// A handshake succeeded: register the connection (N1) and start its
    /// reader and writer. `None` if one to the peer was registered first.
    fn established(&self, stream: TcpStream, peer: handshake::Peer) -> Option<(Outbox, Flags)> {
        let Ok(write_half) = stream.try_clone() else {
            return None;
        };
        let (queue, rx) = channel::<Out>();
        let tx = Outbox {
            tx: queue,
            direct: Arc::new(Direct {
                stream: Mutex::new(write_half),
                queued: AtomicUsize::new(0),
                last_write: AtomicU64::new(0),
                epoch: Instant::now(),
            }),
        };
        let registered = self
            .with_state(|s| {
                if s.stopped || s.conns.contains_key(&peer.name) {
                    return None;
                }
                s.next_conn += 1;
                let id = s.next_conn;
                s.conns.insert(
                    peer.name.clone(),
                    Conn {
                        tx: tx.clone(),
                        flags: peer.flags,
                        id,
                    },
                );
                s.subscribers
                    .retain(|sub| sub.send(NodeEvent::Up(peer.name.clone())).is_ok());
                s.settled(&peer.name);
                Some(id)
            })
            .flatten()?;
        let writer = self.clone();
        let ticktime = self.inner.ticktime;
        let out = tx.clone();
        self.spawn("smarm.dist.writer", move || {
            write_loop(&out, rx, ticktime);
            drop(writer);
        });
        let reader = self.clone();
        let name = peer.name.clone();
        self.spawn("smarm.dist.reader", move || {
            reader.read_loop(stream, &name, registered)
        });
        Some((tx, peer.flags))
    }

    /// Remove connection `id` to `peer` and announce it down (N2): the
    /// monitors on its processes fire with `noconnection`, and its
    /// processes' monitors on ours are forgotten.
    fn connection_down(&self, peer: &str, id: u64) {
        let _ = self.with_state(|s| {
            if s.conns.get(peer).is_some_and(|c| c.id == id) {
                if let Some(c) = s.conns.remove(peer) {
                    c.tx.try_send(Out::Close);
                }
                s.subscribers
                    .retain(|sub| sub.send(NodeEvent::Down(peer.to_string())).is_ok());
                monitor::node_down(s, peer);
                link::node_down(s, peer);
            }
        });
    }

    fn accept_loop(&self, listener: TcpListener) {
        loop {
            let Ok((stream, _)) = listener.accept() else {
                // Out of descriptors, say: let some close before trying again.
                smarm_core::sleep(Duration::from_millis(10));
                continue;
            };
            let node = self.clone();
            self.spawn("smarm.dist.accepting", move || node.accept_one(stream));
        }
    }

    fn accept_one(&self, mut stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        let me = self.name().to_string();
        let mut accepting: Option<String> = None;
        let decide = |peer: &str| {
            let status = self
                .with_state(|s| {
                    let status = if s.accepting.contains(peer) {
                        Status::Nok // a handshake from it is under way already
                    } else if s.conns.contains_key(peer) {
                        Status::Alive
                    } else if s.connecting.contains(peer) {
                        // Both sides connect: the greater name's attempt wins.
                        if me.as_str() > peer {
                            Status::Nok
                        } else {
                            Status::OkSimultaneous
                        }
                    } else {
                        Status::Ok
                    };
                    if status != Status::Nok {
                        // Until this handshake ends, no other one to the
                        // peer starts here (`connect` waits for it).
                        s.accepting.insert(peer.to_string());
                    }
                    status
                })
                .unwrap_or(Status::Nok);
            if status != Status::Nok {
                accepting = Some(peer.to_string());
            }
            status
        };
        match handshake::accept(&mut stream, &self.inner.local, decide) {
            Ok(peer) => {
                // "alive" answered true: our connection to it is stale.
                let old = self
                    .with_state(|s| s.conns.get(&peer.name).map(|c| c.id))
                    .flatten();
                if let Some(id) = old {
                    self.connection_down(&peer.name, id);
                }
                let _ = self.established(stream, peer);
            }
            Err(HandshakeError::Refused { .. }) => {}
            Err(e) => {
                self.inner
                    .stats
                    .failed_handshakes
                    .fetch_add(1, Ordering::Relaxed);
                log(&format!(
                    "handshake from {:?} failed: {e}",
                    stream.peer_addr().ok()
                ));
            }
        }
        if let Some(peer) = accepting {
            let _ = self.with_state(|s| {
                s.accepting.remove(&peer);
                s.settled(&peer);
            });
        }
    }

    /// The reader of a connection (module docs, N2, N3).
    fn read_loop(&self, mut stream: TcpStream, peer: &str, id: u64) {
        let ticktime = self.inner.ticktime;
        let why = (|| -> Result<(), String> {
            stream
                .set_read_timeout(Some(ticktime / 4))
                .map_err(|e| e.to_string())?;
            let mut last = Instant::now();
            let mut reader = FrameReader::new();
            loop {
                let frame = match reader.next(&mut stream, self.inner.max_frame) {
                    Ok(Next::Frame(frame)) => frame,
                    Ok(Next::Idle) => {
                        if last.elapsed() > ticktime {
                            return Err(format!("no tick for {ticktime:?} (net_ticktime)"));
                        }
                        continue;
                    }
                    Err(e) => {
                        if matches!(e, FrameError::TooLong { .. }) {
                            self.inner.stats.malformed.fetch_add(1, Ordering::Relaxed);
                        }
                        return Err(e.to_string());
                    }
                };
                last = Instant::now();
                if frame.is_empty() {
                    continue; // a tick
                }
                if let Err(e) = self.handle_frame(&reader.buf[frame]) {
                    self.inner.stats.malformed.fetch_add(1, Ordering::Relaxed);
                    return Err(format!("malformed message: {e}"));
                }
            }
        })();
        if let Err(why) = why {
            log(&format!("connection to {peer} closed: {why}"));
        }
        let _ = stream.shutdown(std::net::Shutdown::Both);
        self.connection_down(peer, id);
    }

    fn handle_frame(&self, frame: &[u8]) -> Result<(), String> {
        if frame[0] != PASS_THROUGH {
            return Err(format!(
                "unsupported message type {} (no atom cache is negotiated)",
                frame[0]
            ));
        }
        let (control, end) = term::decode_at(frame, 1).map_err(|e| e.to_string())?;
        let message = if end < frame.len() {
            let (m, end) = term::decode_at(frame, end).map_err(|e| e.to_string())?;
            if end != frame.len() {
                return Err(format!("{} bytes after the message", frame.len() - end));
            }
            Some(m)
        } else {
            None
        };
        match (Control::parse(&control), message) {
            (Some(c @ (Control::Send { .. } | Control::RegSend { .. })), Some(m)) => {
                self.deliver(c, m)
            }
            (
                Some(
                    c
                    @ (Control::Send { .. } | Control::RegSend { .. } | Control::AliasSend { .. }),
                ),
                None,
            ) => {
                return Err(format!("{c:?} without its message"));
            }
            (Some(Control::AliasSend { .. }), Some(_)) => {
                // This node hands out no aliases.
                self.inner
                    .stats
                    .undeliverable
                    .fetch_add(1, Ordering::Relaxed);
            }
            (Some(c), _) => self.control(c),
            (None, _) => return Err("the control message is not a tuple with an operation".into()),
        }
        Ok(())
    }
}

/// Resolve `host` to an IPv4 address (`localhost` and literals at once;
/// other names on the blocking pool, so the scheduler does not wait).
fn resolve_v4(host: &str) -> io::Result<Ipv4Addr> {
    if host == "localhost" {
        return Ok(Ipv4Addr::LOCALHOST);
    }
    if let Ok(ip) = host.parse() {
        return Ok(ip);
    }
    let host = host.to_string();
    smarm_core::io::block_on_io(move || {
        (host.as_str(), 0)
            .to_socket_addrs()?
            .find_map(|a| match a {
                SocketAddr::V4(v4) => Some(*v4.ip()),
                SocketAddr::V6(_) => None,
            })
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no IPv4 address"))
    })
}

/// The writer of a connection: frames as they come, a tick when idle.
/// Frames waiting in the channel are written together, up to this many
/// bytes at once: one system call for a burst of messages.
const WRITE_BATCH: usize = 64 << 10;

fn write_loop(out: &Outbox, rx: Receiver<Out>, ticktime: Duration) {
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    loop {
        // Wait for a frame without taking it: frames are taken only under
        // the stream's lock, so a direct write cannot overtake one (O1).
        let ready = smarm_core::select_timeout(&[&rx], ticktime / 4).is_some();
        let mut stream = out.direct.lock_stream();
        let (mut taken, mut closing) = (0, false);
        while batch.len() < WRITE_BATCH {
            match rx.try_recv() {
                Ok(Some(Out::Frame(frame))) => {
                    batch.extend_from_slice(&frame);
                    taken += 1;
                }
                Ok(None) => break,
                Ok(Some(Out::Close)) | Err(_) => {
                    closing = true;
                    break;
                }
            }
        }
        if !ready && taken == 0 && !closing {
            batch.extend_from_slice(&[0, 0, 0, 0]); // a tick
        }
        let written = batch.is_empty() || stream.write_all(&batch).is_ok();
        out.direct.wrote();
        out.direct.queued.fetch_sub(taken, Ordering::AcqRel);
        batch.clear();
        if !written || closing {
            let _ = stream.shutdown(std::net::Shutdown::Both);
            return;
        }
    }
}

/// The sending side of a connection: its writer's queue, and the socket
/// itself, written at once by a sender that finds the connection idle.
///
/// A round trip then crosses no writer actor: a frame sent while nothing
/// waits in the queue, the lock is free and nothing was written in the
/// last [`BURST`], is written by the sending actor itself. Anything else
/// goes to the writer, which batches a burst into one system call.
///
/// - (O1) Frames reach the socket in the order they were sent by each
///   sender: a direct write happens only under the stream lock with
///   `queued` at 0, and `queued` counts every frame from before it enters
///   the queue until the writer has written it (under the same lock).
#[derive(Clone)]
struct Outbox {
    tx: Sender<Out>,
    direct: Arc<Direct>,
}

struct Direct {
    stream: Mutex<TcpStream>,
    /// Frames handed to the writer and not yet written (O1).
    queued: AtomicUsize,
    /// When the socket was last written, in ns since `epoch`.
    last_write: AtomicU64,
    epoch: Instant,
}

/// Frames closer together than this go to the writer, to be batched.
const BURST: Duration = Duration::from_micros(50);

impl Direct {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn wrote(&self) {
        self.last_write.store(self.now(), Ordering::Relaxed);
    }

    /// The stream, waiting as long as a direct write holds it (that
    /// writer is parked on a full socket: the peer's backpressure).
    fn lock_stream(&self) -> smarm_core::MutexGuard<'_, TcpStream> {
        loop {
            if let Ok(guard) = self.stream.lock() {
                return guard;
            }
        }
    }
}

impl Outbox {
    /// Send one frame (O1): written at once if the connection is idle,
    /// else queued for the writer. `Err` if the connection is closed.
    fn send(&self, frame: Vec<u8>) -> Result<(), ()> {
        let d = &*self.direct;
        let idle = || {
            d.queued.load(Ordering::Acquire) == 0
                && d.now().saturating_sub(d.last_write.load(Ordering::Relaxed))
                    > BURST.as_nanos() as u64
        };
        // Only an actor may park in a write; callbacks queue.
        if smarm_core::in_actor() && idle() {
            if let Some(mut stream) = d.stream.try_lock() {
                if d.queued.load(Ordering::Acquire) == 0 {
                    let written = stream.write_all(&frame);
                    d.wrote();
                    return written.map_err(|_| ());
                }
            }
        }
        d.queued.fetch_add(1, Ordering::AcqRel);
        self.tx.send(Out::Frame(frame)).map_err(|_| {
            d.queued.fetch_sub(1, Ordering::AcqRel);
        })
    }

    fn try_send(&self, out: Out) {
        let _ = self.tx.try_send(out);
    }
}

/// Frames read through a buffer, so a burst of small messages costs one
/// system call per buffer, not two per message.
/// Why a connection's reader could not read its next frame.
#[derive(Debug, Error)]
enum FrameError {
    /// The socket failed, or the peer closed it.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The frame's length is over the node's `max_frame`: not read.
    #[error("a frame of {len} bytes, over the limit of {max}")]
    TooLong {
        /// The length the frame claims.
        len: usize,
        /// The node's limit.
        max: usize,
    },
}

struct FrameReader {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

/// What the reader found.
enum Next {
    /// A frame (empty: a tick).
    Frame(std::ops::Range<usize>),
    /// The read timed out with nothing buffered: the peer is idle.
    Idle,
}

impl FrameReader {
    fn new() -> FrameReader {
        FrameReader {
            buf: vec![0; WRITE_BATCH],
            start: 0,
            end: 0,
        }
    }

    /// Make `n` bytes available from `start`, reading as needed; `false`
    /// if the read timed out with none of them buffered.
    fn fill(&mut self, stream: &mut TcpStream, n: usize) -> io::Result<bool> {
        if self.end - self.start >= n {
            return Ok(true);
        }
        if self.buf.len() - self.start < n {
            // Move what is buffered to the front, and grow for a big frame.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() < n {
                self.buf.resize(n, 0);
            }
        }
        while self.end - self.start < n {
            match stream.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the peer closed the connection",
                    ))
                }
                Ok(k) => self.end += k,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    if self.end == self.start {
                        return Ok(false);
                    }
                    // Mid-frame: the rest is on its way.
                }
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// The next frame, no longer than `max`.
    fn next(&mut self, stream: &mut TcpStream, max: usize) -> Result<Next, FrameError> {
        if !self.fill(stream, 4)? {
            return Ok(Next::Idle);
        }
        let b = &self.buf[self.start..self.start + 4];
        let n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        if n > max {
            return Err(FrameError::TooLong { len: n, max });
        }
        while !self.fill(stream, 4 + n)? {}
        let frame = self.start + 4..self.start + 4 + n;
        self.start += 4 + n;
        Ok(Next::Frame(frame))
    }
}

/// A frame: length, pass-through, control, message.
fn encode_frame(control: &Term, message: Option<&Term>) -> Vec<u8> {
    let mut frame = vec![0, 0, 0, 0, PASS_THROUGH];
    term::encode_into(control, &mut frame);
    if let Some(m) = message {
        term::encode_into(m, &mut frame);
    }
    let len = (frame.len() - 4) as u32;
    frame[..4].copy_from_slice(&len.to_be_bytes());
    frame
}

fn log(what: &str) {
    eprintln!("smarm::dist: {what}");
}

/// The name is registered on this node already.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("smarm::dist::Node::register: the name {0:?} is already registered on this node")]
pub struct RegisterError(pub String);

/// A node-visible mailbox: a pid (and perhaps a name) other nodes can
/// send to, and the receiving end of its messages. Dropping it
/// unregisters both.
#[derive(Debug)]
pub struct Mailbox {
    pid: Pid,
    name: Option<String>,
    rx: Inbox,
    node: Node,
    /// The exit reason its watchers hear, where not the default.
    exit: Option<Term>,
}

#[derive(Debug)]
enum Inbox {
    Unbounded(Receiver<Message>),
    Bounded(smarm_core::BoundedReceiver<Message>),
}

impl Mailbox {
    /// Its pid, to put in messages so that others can answer.
    pub fn pid(&self) -> &Pid {
        &self.pid
    }

    /// The name it is registered under, if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Wait for the next message.
    pub fn recv(&self) -> Result<Message, RecvError> {
        match &self.rx {
            Inbox::Unbounded(rx) => rx.recv(),
            Inbox::Bounded(rx) => rx.recv(),
        }
    }

    /// Wait for the next message at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Message, RecvTimeoutError> {
        match &self.rx {
            Inbox::Unbounded(rx) => rx.recv_timeout(timeout),
            Inbox::Bounded(rx) => rx.recv_timeout(timeout),
        }
    }

    /// The next message if one waits; `Err` once the node is stopped
    /// and nothing is left.
    pub fn try_recv(&self) -> Result<Option<Message>, RecvError> {
        match &self.rx {
            Inbox::Unbounded(rx) => rx.try_recv(),
            Inbox::Bounded(rx) => rx.try_recv(),
        }
    }

    /// The mailbox as an arm of [`smarm::select`](smarm_core::select), to
    /// wait for a message and something else at once; read the message
    /// with [`try_recv`](Self::try_recv).
    pub fn selectable(&self) -> &dyn smarm_core::Selectable {
        match &self.rx {
            Inbox::Unbounded(rx) => rx,
            Inbox::Bounded(rx) => rx,
        }
    }

    /// End the mailbox with `reason` as the exit reason its monitors and
    /// links hear (instead of `normal`).
    pub(super) fn close(mut self, reason: Term) {
        self.exit = Some(reason);
    }

    /// Messages waiting in it.
    pub fn len(&self) -> usize {
        match &self.rx {
            Inbox::Unbounded(rx) => rx.len(),
            Inbox::Bounded(rx) => rx.len(),
        }
    }

    /// Whether no message waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Send `term` to `to` with this mailbox as the sender.
    pub fn send(&self, to: impl Into<Dest>, msg: impl ToTerm) -> Result<(), SendError> {
        self.node.send_from(&self.pid, to.into(), msg.into_term())
    }
}

impl Drop for Mailbox {
    fn drop(&mut self) {
        let (id, name) = (self.pid.id(), self.name.take());
        let _ = self.node.with_state(|s| {
            s.mailboxes.remove(&id);
            s.owners.remove(&id);
            if let Some(name) = name {
                if s.names.get(&name).is_some_and(|(held, _)| *held == id) {
                    s.names.remove(&name);
                }
            }
        });
        // Its process ends: whoever watches it hears why (an owner
        // unwinding from a panic is reported as one).
        let reason = match self.exit.take() {
            Some(reason) => reason,
            None if std::thread::panicking() => term::atom("panic"),
            None => term::atom("normal"),
        };
        self.node.mailbox_ended(&self.pid, reason);
    }
}
