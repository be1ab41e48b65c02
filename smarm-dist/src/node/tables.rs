//! The node's tables, under the node's one lock: its processes (names,
//! mailboxes, their owners, the node's actors), its connections (by peer,
//! the handshakes under way, the sends waiting for them, the `NodeEvent`
//! subscribers) and the signals across nodes (links and monitors).

use super::connection::Conn;
use super::{Message, NodeEvent, exports, global, link, monitor, pg, spawn};
use crate::pid::Pid;
use crate::term::Term;
use smarm_core::channel::{Receiver, Sender, channel};
use std::collections::{HashMap, HashSet};

/// Everything a node keeps under its lock.
#[derive(Default)]
pub(super) struct State {
    pub(super) procs: Processes,
    pub(super) conns: Connections,
    pub(super) signals: Signals,
    /// `Node::stop` has run.
    pub(super) stopped: bool,
}

impl State {
    /// The tables of a node that has just started: pid and unlink ids
    /// count from 1 (0 is the node's own pid, and no unlink).
    pub(super) fn new() -> State {
        let mut state = State::default();
        state.procs.next_id = 1;
        state.signals.next_unlink_id = 1;
        state
    }
}

/// The node-visible processes.
#[derive(Default)]
pub(super) struct Processes {
    /// Registered names: the mailbox id and its sender.
    pub(super) names: HashMap<String, (u32, Sender<Message>)>,
    pub(super) mailboxes: HashMap<u32, Sender<Message>>,
    /// The actor that made each mailbox, for links made to it.
    pub(super) owners: HashMap<u32, smarm_core::Pid>,
    /// Functions exported to other nodes, by module and function name.
    pub(super) exports: HashMap<(String, String), exports::Exported>,
    /// The process group scopes running on the node, by name.
    pub(super) scopes: HashMap<String, pg::PgScope>,
    /// The node's `global` table, once its server runs.
    pub(super) global: Option<std::sync::Arc<smarm_core::Mutex<global::Shared>>>,
    /// Actors of the node, stopped by `Node::stop`.
    pub(super) actors: Vec<smarm_core::Pid>,
    next_id: u32,
}

impl Processes {
    /// A pid number for a new mailbox or link end: never 0 (the node's
    /// own), and after the counter wraps, never one a live mailbox holds.
    pub(super) fn next_pid_id(&mut self) -> u32 {
        loop {
            let id = self.next_id;
            self.next_id = self.next_id.wrapping_add(1).max(1);
            if !self.mailboxes.contains_key(&id) {
                return id;
            }
        }
    }
}

/// The connections to other nodes (module docs (N1), (N2)).
#[derive(Default)]
pub(super) struct Connections {
    /// The registered connection of each peer.
    pub(super) peers: HashMap<String, Conn>,
    /// Peers this node is connecting to right now.
    pub(super) connecting: HashSet<String>,
    /// Peers whose connection to this node is in its handshake.
    pub(super) accepting: HashSet<String>,
    /// Sends waiting for a handshake with a peer to settle: dropped (so
    /// their receivers wake) when one ends or a connection is registered.
    settle_waiters: HashMap<String, Vec<Sender<()>>>,
    pub(super) subscribers: Vec<Sender<NodeEvent>>,
    /// Tells a connection from a later one to the same peer.
    pub(super) next_conn: u64,
}

impl Connections {
    /// A handshake with `peer` ended, or its connection is registered:
    /// wake the sends waiting for it.
    pub(super) fn settled(&mut self, peer: &str) {
        self.settle_waiters.remove(peer);
    }

    /// A channel that closes when a handshake with `peer` settles.
    pub(super) fn await_settle(&mut self, peer: &str) -> Receiver<()> {
        let (tx, rx) = channel();
        self.settle_waiters
            .entry(peer.to_string())
            .or_default()
            .push(tx);
        rx
    }
}

/// Links and monitors across nodes.
#[derive(Default)]
pub(super) struct Signals {
    /// Links across nodes, by (our pid's id, the remote pid).
    pub(super) links: HashMap<(u32, Pid), link::LinkEntry>,
    /// The id of the next UNLINK_ID this node sends.
    pub(super) next_unlink_id: u64,
    /// Monitors this node's mailboxes hold on processes, by reference.
    pub(super) watching: HashMap<Term, monitor::Watch>,
    /// Monitors held on this node's mailboxes, by mailbox id.
    pub(super) watched: HashMap<u32, Vec<monitor::Watcher>>,
    /// SPAWN_REQUESTs of ours awaiting their reply, by request id.
    pub(super) spawning: HashMap<Term, spawn::Pending>,
    pub(super) next_ref: u64,
}
