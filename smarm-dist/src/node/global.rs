//! Cluster-wide names: OTP's `global` (protocol version 8, as OTP 25 to
//! 27 speak it), so `global:whereis_name/1` on an Erlang node finds a
//! name a smarm process registered, and [`Global::whereis_name`] finds
//! one an Erlang process registered; `{global, Name}` works as a call
//! target both ways.
//!
//! The node runs `global_name_server` (registered under that name, as on
//! every Erlang node) and a locker beside it:
//!
//! - when a node comes up, each side casts `init_connect` (its version,
//!   a tag of its own, its locker's pid) to the other's server;
//! - the cluster lock `{global, [LockerA, LockerB]}` is then taken on both
//!   sides (`set_lock` calls from the locker, each side's own partition),
//!   each side tells the other with `lock_set`, and the two exchange their
//!   whole name tables (`exchange`);
//! - each side resolves the names both hold for different pids (the node
//!   with the smaller name resolves, by running the method of its own
//!   holder's registration), answers `resolved`, applies both sets of
//!   operations, tells its other known nodes (`new_nodes`) and releases
//!   the lock; the peer is then *known*;
//! - a registration takes the lock `{global, Registrar}` on every known
//!   node, then calls `{register, Name, Pid, Method}` on each; every node
//!   monitors the pid and forgets the name when it ends or its node goes;
//! - a peer that lost its connection to a known node tells the others
//!   (`lost_connection`); one that holds both is told `remove_connection`
//!   and disconnects (OTP's `prevent_overlapping_partitions`).
//!
//! Reads ([`Global::whereis_name`]) look at a table the server keeps,
//! without a message, as OTP reads its ETS table.
//!
//! # Invariants
//!
//! - (GL1) The server never waits on another node: every call it would
//!   make (`set_lock`, `del_lock`) is made by the locker actor, so two
//!   nodes locking each other at once cannot deadlock.
//! - (GL2) A name is in the table with a monitor on its pid; its monitor
//!   firing (the process ended, its node went away) removes it.
//! - (GL3) Each message of a sync carries the receiver's own tag for that
//!   connection; one with another tag (an earlier connection's) is
//!   ignored.

use super::{CallError, Dest, Mailbox, Message, Node, NodeEvent, RegisterError, SendError};
use crate::pid::Pid;
use crate::term::{
    Atom, BigInteger, ExternalFun, FixInteger, List, Term, ToTerm, atom, atom_name, list_elements,
    tuple,
};
use smarm_core::Mutex;
use smarm_core::channel::{Receiver, Sender, channel};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

/// The protocol version this node speaks.
const VSN: i32 = 8;
/// The registered name of the server, as on every Erlang node.
pub(super) const SERVER: &str = "global_name_server";
/// How long a `set_lock` or `register` call to another node may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a global registration did not happen.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum GlobalError {
    /// The name is registered already (to another pid, or this one).
    #[error("the global name {0} is registered already")]
    Taken(String),
    /// The process is registered already, under another name: as OTP's
    /// `global` (without `global_multi_name_action = allow`), a process
    /// has one global name.
    #[error(
        "the process {pid} is registered globally already, as {name}: a process has one \
         global name (unregister that one first)"
    )]
    AlreadyNamed {
        /// The process.
        pid: String,
        /// The name it holds.
        name: String,
    },
    /// The node's `global` server is gone (its node stopped).
    #[error("the global name server is not running (its node stopped)")]
    Stopped,
}

/// What happens to the two holders of a name when two partitions that
/// each registered it meet again (OTP's resolve methods; the pid on the
/// node with the smaller name wins in each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Resolve {
    /// The loser is killed (`global:random_exit_name/3`, Erlang's
    /// default).
    #[default]
    Exit,
    /// The loser receives `{global_name_conflict, Name}`
    /// (`global:random_notify_name/3`).
    Notify,
    /// Both lose the name and receive `{global_name_conflict, Name,
    /// Other}` (`global:notify_all_name/3`).
    NotifyAll,
}

impl Resolve {
    fn function(self) -> &'static str {
        match self {
            Resolve::Exit => "random_exit_name",
            Resolve::Notify => "random_notify_name",
            Resolve::NotifyAll => "notify_all_name",
        }
    }

    /// The method as Erlang sends it: `fun global:F/3`.
    fn to_method(self) -> Term {
        Term::from(ExternalFun {
            module: Atom::from("global"),
            function: Atom::from(self.function()),
            arity: 3,
        })
    }

    /// The method a registration carries. A fun of module `global` other
    /// than the two named ones is the default (`register_name/2` sends a
    /// local fun that calls `random_exit_name`); a user's own fun cannot
    /// run here and resolves as the default.
    fn of_method(method: &Term) -> Resolve {
        match method {
            Term::ExternalFun(f) if f.module.name == "global" => match f.function.name.as_str() {
                "random_notify_name" => Resolve::Notify,
                "notify_all_name" => Resolve::NotifyAll,
                _ => Resolve::Exit,
            },
            _ => Resolve::Exit,
        }
    }
}

/// The node's `global` names (module docs): register this node's
/// processes under cluster-wide names, and find any process so named.
/// Cheap to clone.
///
/// ```no_run
/// use smarm::dist::{Node, term};
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let node = Node::start("shop@localhost", "secret").unwrap();
///     let global = node.global().unwrap();
///     let cashier = node.mailbox();
///     global.register_name(term::atom("cashier"), cashier.pid()).unwrap();
///     // In Erlang: global:whereis_name(cashier) is its pid, and
///     // gen_server:call({global, cashier}, Request) reaches it.
///     assert_eq!(global.whereis_name(term::atom("cashier")), Some(cashier.pid().clone()));
///     // And a name an Erlang process registered:
///     let _ = global.call(term::atom("ledger"), term::atom("total"), Duration::from_secs(5));
///     node.stop();
/// });
/// ```
#[derive(Clone)]
pub struct Global {
    node: Node,
    shared: Arc<Mutex<Shared>>,
}

impl std::fmt::Debug for Global {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Global")
            .field("node", &self.node.name())
            .finish()
    }
}

/// What readers see without asking the server.
#[derive(Default)]
pub(super) struct Shared {
    names: HashMap<Term, Pid>,
    known: Vec<String>,
}

impl Global {
    fn read<T>(&self, f: impl FnOnce(&Shared) -> T) -> Option<T> {
        self.shared.lock().ok().map(|s| f(&s))
    }

    /// The process registered as `name` anywhere in the cluster this node
    /// has synchronised with (`global:whereis_name/1`).
    pub fn whereis_name(&self, name: impl ToTerm) -> Option<Pid> {
        let name = name.into_term();
        self.read(|s| s.names.get(&name).cloned()).flatten()
    }

    /// Every global name (`global:registered_names/0`).
    pub fn registered_names(&self) -> Vec<Term> {
        self.read(|s| s.names.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The nodes this node has synchronised names with.
    pub fn known_nodes(&self) -> Vec<String> {
        self.read(|s| s.known.clone()).unwrap_or_default()
    }

    /// Register `pid` (any process's, of this node or another) as `name`
    /// on every known node (`global:register_name/2`); a conflict met
    /// later is resolved as [`Resolve::Exit`]. Errs if the name is taken,
    /// or if `pid` holds another global name already (as OTP's `global`
    /// answers `no`).
    ///
    /// # Panics
    ///
    /// Outside a smarm actor.
    pub fn register_name(&self, name: impl ToTerm, pid: &Pid) -> Result<(), GlobalError> {
        self.register_name_with(name, pid, Resolve::default())
    }

    /// [`register_name`](Self::register_name) with the conflict method
    /// `resolve` (`global:register_name/3`).
    ///
    /// # Panics
    ///
    /// Outside a smarm actor.
    pub fn register_name_with(
        &self,
        name: impl ToTerm,
        pid: &Pid,
        resolve: Resolve,
    ) -> Result<(), GlobalError> {
        smarm_core::require_actor("smarm::dist::Global::register_name");
        let name = name.into_term();
        let request = tuple(vec![
            atom("register"),
            name.clone(),
            pid.to_term(),
            resolve.to_method(),
        ]);
        self.trans_all_known(|registrar, nodes| {
            if self.whereis_name(name.clone()).is_some() {
                return Err(GlobalError::Taken(crate::term::display(&name).to_string()));
            }
            // OTP's check_dupname: one global name per process.
            let held = self
                .read(|s| {
                    s.names
                        .iter()
                        .find(|(_, holder)| *holder == pid)
                        .map(|(held, _)| held.clone())
                })
                .flatten();
            if let Some(held) = held {
                return Err(GlobalError::AlreadyNamed {
                    pid: pid.to_string(),
                    name: crate::term::display(&held).to_string(),
                });
            }
            multi_call(registrar, nodes, &request);
            Ok(())
        })?
    }

    /// Remove `name` on every known node (`global:unregister_name/1`);
    /// `false` if it was not registered.
    ///
    /// # Panics
    ///
    /// Outside a smarm actor.
    pub fn unregister_name(&self, name: impl ToTerm) -> Result<bool, GlobalError> {
        smarm_core::require_actor("smarm::dist::Global::unregister_name");
        let name = name.into_term();
        self.trans_all_known(|registrar, nodes| {
            if self.whereis_name(name.clone()).is_none() {
                return false;
            }
            multi_call(
                registrar,
                nodes,
                &tuple(vec![atom("unregister"), name.clone()]),
            );
            true
        })
    }

    /// Send `msg` to the process registered as `name` (`global:send/2`);
    /// `false` if no process is.
    pub fn send(&self, name: impl ToTerm, msg: impl ToTerm) -> Result<bool, SendError> {
        match self.whereis_name(name) {
            Some(pid) => self.node.send(&pid, msg).map(|()| true),
            None => Ok(false),
        }
    }

    /// A `gen_server:call` to the process registered as `name`, as
    /// `gen_server:call({global, Name}, Request, Timeout)`.
    pub fn call(
        &self,
        name: impl ToTerm,
        request: impl ToTerm,
        timeout: Duration,
    ) -> Result<Term, CallError> {
        let name = name.into_term();
        match self.whereis_name(name.clone()) {
            Some(pid) => self.node.call(&pid, request, timeout),
            None => Err(CallError::Down {
                reason: tuple(vec![atom("noproc"), tuple(vec![atom("global"), name])]),
            }),
        }
    }

    /// Run `f` holding the lock `{global, Registrar}` on this node and
    /// every known one, as OTP's `trans_all_known`: the boss (the greatest
    /// node name) first, then the others; on a refusal, release and try
    /// again after a growing random pause.
    fn trans_all_known<T>(
        &self,
        f: impl FnOnce(&Mailbox, &[String]) -> T,
    ) -> Result<T, GlobalError> {
        let registrar = self.node.mailbox();
        let id = tuple(vec![atom("global"), registrar.pid().to_term()]);
        let me = self.node.name().to_string();
        let mut pause = Duration::from_millis(125);
        loop {
            if self.node.with_state(|s| s.stopped).unwrap_or(true) {
                return Err(GlobalError::Stopped);
            }
            let known = self.read(|s| s.known.clone()).ok_or(GlobalError::Stopped)?;
            let mut nodes = known.clone();
            nodes.push(me.clone());
            nodes.sort();
            let locker = Locker {
                mailbox: &registrar,
                id: id.clone(),
            };
            if let Some(locked) = locker.lock_all(&nodes) {
                if self.read(|s| s.known.clone()).as_ref() == Some(&known) {
                    let result = f(&registrar, &nodes);
                    locker.release(&locked);
                    return Ok(result);
                }
                locker.release(&locked);
            }
            smarm_core::sleep(jitter(pause));
            pause = (pause * 2).min(Duration::from_secs(8));
        }
    }
}

/// Call every node's server with `request` from `from` (OTP's
/// `gen_server:multi_call`); a node that does not answer is skipped.
fn multi_call(from: &Mailbox, nodes: &[String], request: &Term) {
    for node in nodes {
        let to = Dest::from((SERVER, node.as_str()));
        let _ = from.call_from(to, request.clone(), CALL_TIMEOUT, drop);
    }
}

/// A random pause of up to `max`.
fn jitter(max: Duration) -> Duration {
    let mut bytes = [0u8; 8];
    // SAFETY: getrandom writes at most `bytes.len()` bytes into the buffer.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    let r = if n == 8 { u64::from_ne_bytes(bytes) } else { 0 };
    let nanos = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX).max(1);
    Duration::from_nanos(r % nanos)
}

/// Takes and releases a lock on a set of nodes, calling each node's
/// server from one mailbox (the lock's holder).
struct Locker<'m> {
    mailbox: &'m Mailbox,
    /// `{ResourceId, RequesterId}`.
    id: Term,
}

impl Locker<'_> {
    /// Lock on `nodes` (sorted), the greatest first; the nodes locked, or
    /// `None` (with those it took released) if one refused.
    fn lock_all(&self, nodes: &[String]) -> Option<Vec<String>> {
        self.lock_all_with(nodes, drop)
    }

    fn lock_all_with(
        &self,
        nodes: &[String],
        mut other: impl FnMut(Message),
    ) -> Option<Vec<String>> {
        let mut locked = Vec::new();
        for node in nodes.iter().rev() {
            let reply = self.mailbox.call_from(
                Dest::from((SERVER, node.as_str())),
                tuple(vec![atom("set_lock"), self.id.clone()]),
                CALL_TIMEOUT,
                &mut other,
            );
            match reply {
                Ok(t) if t == atom("true") => locked.push(node.clone()),
                // A node without a global server grants it, as OTP's
                // multi_call counts it a bad node.
                Err(CallError::Down { .. }) => {}
                _ => {
                    self.release(&locked);
                    return None;
                }
            }
        }
        Some(locked)
    }

    /// Release on `nodes`, the greatest (the boss) last.
    fn release(&self, nodes: &[String]) {
        let mut nodes = nodes.to_vec();
        nodes.sort();
        if let Some(boss) = nodes.pop() {
            nodes.push(boss);
        }
        for node in &nodes {
            let _ = self.mailbox.call_from(
                Dest::from((SERVER, node.as_str())),
                tuple(vec![atom("del_lock"), self.id.clone()]),
                CALL_TIMEOUT,
                drop,
            );
        }
    }
}

impl Node {
    /// This node's `global` names (module docs). The node starts its
    /// `global_name_server` as it starts (as an Erlang node does), and
    /// synchronises with every node that connects; `Err` only if the
    /// name `global_name_server` was taken.
    ///
    /// # Panics
    ///
    /// Outside a smarm actor.
    pub fn global(&self) -> Result<Global, RegisterError> {
        smarm_core::require_actor("smarm::dist::Node::global");
        if let Some(shared) = self.with_state(|s| s.procs.global.clone()).flatten() {
            return Ok(Global {
                node: self.clone(),
                shared,
            });
        }
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (ready_tx, ready) = channel::<Result<(), RegisterError>>();
        let node = self.clone();
        let table = shared.clone();
        self.spawn("smarm.dist.global", move || {
            let mailbox = match node.register(SERVER) {
                Ok(m) => m,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let events = node.monitor_nodes();
            let locker_mailbox = node.mailbox();
            let (lock_tx, lock_rx) = channel::<LockJob>();
            let (done_tx, done_rx) = channel::<LockDone>();
            let locker_pid = locker_mailbox.pid().clone();
            let (other_tx, other_rx) = channel::<Message>();
            node.spawn("smarm.dist.global.locker", move || {
                locker_loop(&locker_mailbox, &lock_rx, &done_tx, &other_tx)
            });
            let _ = ready_tx.send(Ok(()));
            let mut server = Server {
                node: node.clone(),
                me: node.name().to_string(),
                locker: locker_pid,
                jobs: lock_tx,
                table,
                names: HashMap::new(),
                locks: HashMap::new(),
                known: BTreeMap::new(),
                sessions: HashMap::new(),
                early: HashMap::new(),
                next_tag: 0,
                lost: HashMap::new(),
                // Tells this incarnation's lost_connection reports apart.
                creation: (i64::from(node.creation()) << 20)
                    | i64::from(jitter(Duration::from_secs(1)).subsec_micros()),
                op_id: 0,
            };
            server.serve(&mailbox, &events, &done_rx, &other_rx);
        });
        match ready.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(RegisterError(SERVER.to_string())),
        }
        let _ = self.with_state(|s| s.procs.global = Some(shared.clone()));
        Ok(Global {
            node: self.clone(),
            shared,
        })
    }
}

/// A lock the server asks its locker to take for the sync with `peer`.
struct LockJob {
    peer: String,
    tag: u64,
    /// `{global, [LockerA, LockerB]}`.
    id: Term,
    nodes: Vec<String>,
    /// Wait this long first (OTP's lockers pause before each attempt).
    delay: Duration,
    /// Release instead: the lock was taken on these nodes.
    release: bool,
}

/// What the locker reports back.
struct LockDone {
    peer: String,
    tag: u64,
    locked: Option<Vec<String>>,
}

/// The locker: takes and releases the sync locks, so the server never
/// waits on another node (GL1). Messages to its pid that are not call
/// replies (a peer's `{lock_set, Pid, false, Known}`) go to the server.
fn locker_loop(
    mailbox: &Mailbox,
    jobs: &Receiver<LockJob>,
    done: &Sender<LockDone>,
    other: &Sender<Message>,
) {
    loop {
        match smarm_core::select(&[jobs, mailbox.selectable()]) {
            0 => match jobs.try_recv() {
                Ok(Some(job)) => {
                    let locker = Locker {
                        mailbox,
                        id: job.id.clone(),
                    };
                    if job.release {
                        locker.release(&job.nodes);
                        continue;
                    }
                    smarm_core::sleep(job.delay);
                    let locked = locker.lock_all_with(&job.nodes, |m| {
                        let _ = other.send(m);
                    });
                    let report = LockDone {
                        peer: job.peer,
                        tag: job.tag,
                        locked,
                    };
                    if done.send(report).is_err() {
                        return;
                    }
                }
                Ok(None) => {}
                Err(_) => return,
            },
            _ => match mailbox.try_recv() {
                Ok(Some(m)) => {
                    if other.send(m).is_err() {
                        return;
                    }
                }
                Ok(None) => {}
                Err(_) => return,
            },
        }
    }
}

/// A registration: the pid, its resolve method (opaque), and the monitor
/// that removes it (GL2).
struct Entry {
    pid: Pid,
    method: Term,
    monitor: Term,
}

/// A lock: who asked for it, and the processes holding it.
struct Lock {
    requester: Term,
    holders: Vec<(Pid, Term)>,
}

/// The sync with one peer (module docs), from `init_connect` to known.
struct Session {
    /// Our tag for this connection, and the peer's, version and locker.
    tag: u64,
    his: Option<(Term, Pid)>,
    /// The lock id, once both lockers are known.
    lock_id: Option<Term>,
    /// The locker is trying to lock.
    locking: bool,
    /// Nodes we hold the sync lock on.
    locked: Option<Vec<String>>,
    /// We told the peer `lock_set true`; the peer told us.
    told: bool,
    heard: bool,
    exchanged: bool,
    /// The peer's names, our resolution of them, the peer's resolution.
    theirs: Option<Vec<Term>>,
    ours: Option<(Vec<Term>, Vec<Term>)>,
    resolved: Option<(Vec<Term>, Vec<String>)>,
}

struct Server {
    node: Node,
    me: String,
    locker: Pid,
    jobs: Sender<LockJob>,
    table: Arc<Mutex<Shared>>,
    names: HashMap<Term, Entry>,
    locks: HashMap<Term, Lock>,
    /// Synced peers and their protocol versions.
    known: BTreeMap<String, i32>,
    sessions: HashMap<String, Session>,
    /// `init_connect`s that came before their node's up event.
    early: HashMap<String, Term>,
    next_tag: u64,
    /// `lost_connection`s seen, by the pair of nodes: creation, op id.
    lost: HashMap<(String, String), (Term, Term)>,
    creation: i64,
    op_id: i64,
}

/// A tag as Erlang sends it back: a small integer while it fits (a term
/// compares unequal to the bignum of the same value).
fn tag_term(tag: u64) -> Term {
    match i32::try_from(tag) {
        Ok(small) => int(small),
        Err(_) => Term::from(BigInteger::from(tag)),
    }
}

fn int(v: i32) -> Term {
    Term::from(FixInteger::from(v))
}

fn list(v: Vec<Term>) -> Term {
    Term::from(List::from(v))
}

fn elements(t: &Term) -> &[Term] {
    match t {
        Term::Tuple(t) => &t.elements,
        _ => &[],
    }
}

/// `{lock_set, Locker, true | false, Known, HisTag}`: whether our side of
/// the sync lock is taken.
fn lock_set(locker: &Pid, granted: bool, known: Vec<Term>, his_tag: Term) -> Term {
    tuple(vec![
        atom("lock_set"),
        locker.to_term(),
        atom(if granted { "true" } else { "false" }),
        list(known),
        his_tag,
    ])
}

/// Act on what a ready source holds; `false` once it is closed.
fn on<T, E>(got: Result<Option<T>, E>, act: impl FnOnce(T)) -> bool {
    match got {
        Ok(Some(v)) => {
            act(v);
            true
        }
        Ok(None) => true,
        Err(_) => false,
    }
}

fn cast(msg: Term) -> Term {
    tuple(vec![atom("$gen_cast"), msg])
}

impl Server {
    fn serve(
        &mut self,
        mailbox: &Mailbox,
        events: &Receiver<NodeEvent>,
        done: &Receiver<LockDone>,
        other: &Receiver<Message>,
    ) {
        for peer in self.node.nodes() {
            self.node_up(mailbox, &peer);
        }
        loop {
            let ready = smarm_core::select(&[mailbox.selectable(), events, done, other]);
            let alive = match ready {
                0 => on(mailbox.try_recv(), |m| self.message(mailbox, m)),
                1 => on(events.try_recv(), |e| match e {
                    NodeEvent::Up(peer) => self.node_up(mailbox, &peer),
                    NodeEvent::Down(peer) => self.node_down(mailbox, &peer),
                }),
                2 => on(done.try_recv(), |d| self.lock_done(mailbox, d)),
                _ => on(other.try_recv(), |m| self.message(mailbox, m)),
            };
            if !alive {
                return;
            }
        }
    }

    fn publish(&self) {
        if let Ok(mut t) = self.table.lock() {
            t.names = self
                .names
                .iter()
                .map(|(n, e)| (n.clone(), e.pid.clone()))
                .collect();
            t.known = self.known.keys().cloned().collect();
        }
    }

    fn send_to(&self, mailbox: &Mailbox, node: &str, msg: Term) {
        let _ = mailbox.send((SERVER, node), msg);
    }

    // ---- connecting (module docs) ----

    fn node_up(&mut self, mailbox: &Mailbox, peer: &str) {
        if self.known.contains_key(peer) || self.sessions.contains_key(peer) {
            return;
        }
        self.next_tag += 1;
        let tag = self.next_tag;
        self.sessions.insert(
            peer.to_string(),
            Session {
                tag,
                his: None,
                lock_id: None,
                locking: false,
                locked: None,
                told: false,
                heard: false,
                exchanged: false,
                theirs: None,
                ours: None,
                resolved: None,
            },
        );
        let hello = tuple(vec![
            atom("init_connect"),
            tuple(vec![int(VSN), tag_term(tag)]),
            atom(&self.me),
            tuple(vec![
                atom("locker"),
                atom("no_longer_a_pid"),
                list(vec![]),
                self.locker.to_term(),
            ]),
        ]);
        self.send_to(mailbox, peer, cast(hello));
        if let Some(early) = self.early.remove(peer) {
            self.init_connect(mailbox, peer, &early);
        }
    }

    fn init_connect(&mut self, mailbox: &Mailbox, peer: &str, msg: &Term) {
        // {init_connect, {Vsn, HisTag, ...}, Node, {locker, _, _, HisLocker}}
        let [_, vsn, _, locker] = elements(msg) else {
            return;
        };
        let (Some(his_tag), Some(his_locker)) = (
            elements(vsn).get(1).cloned(),
            elements(locker).get(3).and_then(Pid::from_term),
        ) else {
            return;
        };
        let Some(s) = self.sessions.get_mut(peer) else {
            if !self.known.contains_key(peer) {
                self.early.insert(peer.to_string(), msg.clone());
            }
            return;
        };
        let mut lockers = [self.locker.clone(), his_locker.clone()];
        lockers.sort_by(erlang_pid_order);
        // {ResourceId, RequesterId}: both lockers compute the same one.
        let id = tuple(vec![
            atom("global"),
            list(lockers.iter().map(Pid::to_term).collect()),
        ]);
        s.his = Some((his_tag.clone(), his_locker));
        s.lock_id = Some(id);
        let ack = tuple(vec![
            atom("init_connect_ack"),
            atom(&self.me),
            his_tag,
            tag_term(s.tag),
        ]);
        self.send_to(mailbox, peer, ack);
        self.try_lock(peer, Duration::from_millis(200));
    }

    /// Ask the locker to take the sync lock for `peer`: on our own
    /// partition (and on the peer, unless it asked us first).
    fn try_lock(&mut self, peer: &str, delay: Duration) {
        let me = self.me.clone();
        let mut nodes: Vec<String> = self.known.keys().cloned().collect();
        nodes.push(me);
        let Some(s) = self.sessions.get_mut(peer) else {
            return;
        };
        if s.locking || s.locked.is_some() {
            return;
        }
        let Some(id) = s.lock_id.clone() else { return };
        if !s.heard {
            nodes.push(peer.to_string());
        }
        nodes.sort();
        nodes.dedup();
        s.locking = true;
        let _ = self.jobs.send(LockJob {
            peer: peer.to_string(),
            tag: s.tag,
            id,
            nodes,
            delay: jitter(delay),
            release: false,
        });
    }

    fn lock_done(&mut self, mailbox: &Mailbox, d: LockDone) {
        let known: Vec<Term> = self.known.keys().map(|k| atom(k)).collect();
        let Some(s) = self.sessions.get_mut(&d.peer) else {
            if let Some(nodes) = d.locked {
                self.release_job(&d.peer, nodes, None);
            }
            return;
        };
        if s.tag != d.tag {
            return;
        }
        s.locking = false;
        let Some((his_tag, _)) = s.his.clone() else {
            return;
        };
        match d.locked {
            Some(nodes) => {
                s.locked = Some(nodes);
                if !s.told {
                    s.told = true;
                    let set = lock_set(&self.locker, true, known, his_tag);
                    self.send_to(mailbox, &d.peer, cast(set));
                }
                self.lock_is_set(mailbox, &d.peer);
            }
            None => {
                if s.heard {
                    // The peer locked and asked; we could not: say so.
                    s.heard = false;
                    let no = lock_set(&self.locker, false, known, his_tag);
                    self.send_to(mailbox, &d.peer, cast(no));
                }
                self.try_lock(&d.peer, Duration::from_secs(2));
            }
        }
    }

    /// Both sides hold the lock: send our names.
    fn lock_is_set(&mut self, mailbox: &Mailbox, peer: &str) {
        let names = self.name_list();
        let Some(s) = self.sessions.get_mut(peer) else {
            return;
        };
        if !(s.heard && s.locked.is_some()) || s.exchanged {
            return;
        }
        let Some((his_tag, _)) = s.his.clone() else {
            return;
        };
        s.exchanged = true;
        let exchange = tuple(vec![
            atom("exchange"),
            atom(&self.me),
            names,
            list(vec![]),
            his_tag,
        ]);
        self.send_to(mailbox, peer, cast(exchange));
        self.resolve(mailbox, peer);
    }

    fn name_list(&self) -> Term {
        list(
            self.names
                .iter()
                .map(|(n, e)| tuple(vec![n.clone(), e.pid.to_term(), e.method.clone()]))
                .collect(),
        )
    }

    /// Once we sent ours and have theirs: resolve, and answer `resolved`.
    fn resolve(&mut self, mailbox: &Mailbox, peer: &str) {
        let Some(s) = self.sessions.get(peer) else {
            return;
        };
        if !s.exchanged || s.ours.is_some() {
            return;
        }
        let Some(theirs) = s.theirs.clone() else {
            return;
        };
        let Some((his_tag, _)) = s.his.clone() else {
            return;
        };
        let (ops, resolved) = self.exchange_names(mailbox, peer, &theirs);
        let known: Vec<Term> = self
            .known
            .iter()
            .map(|(n, v)| tuple(vec![atom(n), int(*v)]))
            .collect();
        let msg = tuple(vec![
            atom("resolved"),
            atom(&self.me),
            list(resolved.clone()),
            list(known),
            atom("unused"),
            list(vec![]),
            his_tag,
        ]);
        self.send_to(mailbox, peer, cast(msg));
        if let Some(s) = self.sessions.get_mut(peer) {
            s.ours = Some((ops, resolved));
        }
        self.finish(mailbox, peer);
    }

    /// OTP's `exchange_names`: what to do with each of the peer's names.
    /// Returns (our operations, the operations the peer applies).
    fn exchange_names(
        &self,
        mailbox: &Mailbox,
        peer: &str,
        theirs: &[Term],
    ) -> (Vec<Term>, Vec<Term>) {
        let (mut ops, mut resolved) = (vec![], vec![]);
        let insert = |n: &Term, p: &Term, m: &Term| {
            tuple(vec![
                atom("insert"),
                tuple(vec![n.clone(), p.clone(), m.clone()]),
            ])
        };
        for entry in theirs {
            let [name, pid_term, method] = elements(entry) else {
                continue;
            };
            let Some(pid) = Pid::from_term(pid_term) else {
                continue;
            };
            match self.names.get(name) {
                None => ops.push(insert(name, pid_term, method)),
                Some(e) if e.pid == pid => {}
                Some(_) if self.me.as_str() > peer => {} // the peer resolves
                Some(e) => {
                    let winner = if e.pid.node() == self.me {
                        run_method(mailbox, Resolve::of_method(&e.method), name, &pid, &e.pid)
                    } else {
                        // Held on a third node: OTP asks it by rpc; the
                        // peer's registration stands, as on a failed rpc.
                        Some(pid.clone())
                    };
                    match winner {
                        Some(w) if w == pid => ops.push(insert(name, pid_term, method)),
                        Some(_) => resolved.push(insert(name, &e.pid.to_term(), &e.method)),
                        None => {
                            let delete = tuple(vec![atom("delete"), name.clone()]);
                            ops.push(delete.clone());
                            resolved.push(delete);
                        }
                    }
                }
            }
        }
        (ops, resolved)
    }

    /// Both resolutions are in: apply them, tell our other known nodes,
    /// release the lock; the peer is known.
    fn finish(&mut self, mailbox: &Mailbox, peer: &str) {
        let Some(s) = self.sessions.get(peer) else {
            return;
        };
        let (Some((ours, _)), Some((his_resolved, his_known))) =
            (s.ours.clone(), s.resolved.clone())
        else {
            return;
        };
        let Some(s) = self.sessions.remove(peer) else {
            return;
        };
        let applied: Vec<Term> = ours.into_iter().chain(his_resolved).collect();
        for op in &applied {
            self.apply(mailbox, op);
        }
        let old: Vec<String> = self.known.keys().cloned().collect();
        let mut new_nodes = vec![tuple(vec![atom(peer), int(VSN)])];
        self.known.insert(peer.to_string(), VSN);
        for n in his_known {
            if n != self.me && !self.known.contains_key(&n) {
                self.known.insert(n.clone(), VSN);
                new_nodes.push(tuple(vec![atom(&n), int(VSN)]));
                self.in_sync(mailbox, &n);
            }
        }
        if let Some(id) = s.lock_id.clone() {
            let lock = elements(&id)
                .get(1)
                .cloned()
                .unwrap_or_else(|| atom("undefined"));
            let news = tuple(vec![
                atom("new_nodes"),
                atom(&self.me),
                list(applied),
                list(vec![]),
                list(new_nodes),
                list(vec![
                    tuple(vec![atom("vsn"), int(VSN)]),
                    tuple(vec![atom("lock"), tuple(vec![atom("global"), lock])]),
                ]),
            ]);
            for n in &old {
                self.send_to(mailbox, n, cast(news.clone()));
            }
            if let Some(nodes) = s.locked {
                self.release_job(peer, nodes, Some(id));
            }
        }
        self.publish();
    }

    fn release_job(&self, peer: &str, nodes: Vec<String>, id: Option<Term>) {
        let Some(id) = id else { return };
        let _ = self.jobs.send(LockJob {
            peer: peer.to_string(),
            tag: 0,
            id,
            nodes,
            delay: Duration::ZERO,
            release: true,
        });
    }

    /// Tell `node` (connecting to it) that we are in sync with its
    /// cluster.
    fn in_sync(&self, mailbox: &Mailbox, node: &str) {
        let msg = tuple(vec![atom("in_sync"), atom(&self.me), atom("true")]);
        self.send_to(mailbox, node, cast(msg));
    }

    fn apply(&mut self, mailbox: &Mailbox, op: &Term) {
        match elements(op) {
            [kind, entry] if *kind == atom("insert") => {
                if let [name, pid, method] = elements(entry)
                    && let Some(pid) = Pid::from_term(pid)
                {
                    self.insert(mailbox, name.clone(), pid, method.clone());
                }
            }
            [kind, name] if *kind == atom("delete") => self.delete(mailbox, name),
            _ => {}
        }
    }

    fn insert(&mut self, mailbox: &Mailbox, name: Term, pid: Pid, method: Term) {
        self.delete(mailbox, &name);
        let monitor = mailbox.monitor(&pid); // (GL2)
        self.names.insert(
            name,
            Entry {
                pid,
                method,
                monitor,
            },
        );
    }

    fn delete(&mut self, mailbox: &Mailbox, name: &Term) {
        if let Some(e) = self.names.remove(name) {
            mailbox.demonitor(&e.monitor);
        }
    }

    // ---- messages ----

    fn message(&mut self, mailbox: &Mailbox, msg: Message) {
        if let Some(call) = msg.gen_call() {
            let reply = self.handle_call(mailbox, &call.request, &call.reply_to.pid);
            let _ = mailbox.reply(&call.reply_to, reply);
            self.publish();
            return;
        }
        if let Some(c) = msg.gen_cast() {
            let c = c.clone();
            self.handle_cast(mailbox, &c);
            self.publish();
            return;
        }
        let t = elements(&msg.term);
        let tag = t.first().and_then(atom_name).unwrap_or_default();
        match (tag, t) {
            ("DOWN", [_, reference, _, who, _]) => {
                if let Some(who) = Pid::from_term(who) {
                    self.down(reference, &who);
                }
            }
            ("remove_connection", [_, node]) => {
                if let Some(node) = atom_name(node) {
                    let node = node.to_string();
                    self.forget(&node);
                    self.node.disconnect(&node);
                }
            }
            ("lost_connection", [_, a, xcre, op_id, b]) => {
                if let (Some(a), Some(b)) = (atom_name(a), atom_name(b)) {
                    let (a, b) = (a.to_string(), b.to_string());
                    self.lost_connection(mailbox, &a, xcre, op_id, &b, &msg.term);
                }
            }
            ("lock_set", [_, _, answer, _]) if *answer == atom("false") => {
                // A peer's locker refused ours (sent to our locker): every
                // attempt in flight with it starts again later.
                let peers: Vec<String> = self
                    .sessions
                    .iter()
                    .filter(|(_, s)| s.told && !s.heard)
                    .map(|(p, _)| p.clone())
                    .collect();
                for p in peers {
                    self.lock_refused(&p);
                }
            }
            _ => {} // init_connect_ack and cancel_connect need nothing here
        }
        self.publish();
    }

    fn handle_call(&mut self, mailbox: &Mailbox, request: &Term, from: &Pid) -> Term {
        let t = elements(request);
        let tag = t.first().and_then(atom_name).unwrap_or_default();
        match (tag, t) {
            ("set_lock", [_, id]) => atom(if self.set_lock(mailbox, id, from) {
                "true"
            } else {
                "false"
            }),
            ("del_lock", [_, id]) => {
                self.del_lock(mailbox, id, from);
                atom("true")
            }
            ("register", [_, name, pid, method]) | ("register_ext", [_, name, pid, method, _]) => {
                if let Some(pid) = Pid::from_term(pid) {
                    self.insert(mailbox, name.clone(), pid, method.clone());
                }
                atom("yes")
            }
            ("unregister", [_, name]) => {
                self.delete(mailbox, name);
                atom("ok")
            }
            _ => atom("badarg"),
        }
    }

    fn set_lock(&mut self, mailbox: &Mailbox, id: &Term, from: &Pid) -> bool {
        let [resource, requester] = elements(id) else {
            return false;
        };
        match self.locks.get_mut(resource) {
            Some(l) if l.requester != *requester => false,
            Some(l) => {
                if !l.holders.iter().any(|(p, _)| p == from) {
                    let monitor = mailbox.monitor(from);
                    l.holders.push((from.clone(), monitor));
                }
                true
            }
            None => {
                let monitor = mailbox.monitor(from);
                self.locks.insert(
                    resource.clone(),
                    Lock {
                        requester: requester.clone(),
                        holders: vec![(from.clone(), monitor)],
                    },
                );
                true
            }
        }
    }

    fn del_lock(&mut self, mailbox: &Mailbox, id: &Term, from: &Pid) {
        let [resource, requester] = elements(id) else {
            return;
        };
        if let Some(l) = self.locks.get_mut(resource)
            && l.requester == *requester
        {
            if let Some(i) = l.holders.iter().position(|(p, _)| p == from) {
                let (_, monitor) = l.holders.swap_remove(i);
                mailbox.demonitor(&monitor);
            }
            if l.holders.is_empty() {
                self.locks.remove(resource);
            }
        }
    }

    fn handle_cast(&mut self, mailbox: &Mailbox, c: &Term) {
        let t = elements(c);
        let tag = t.first().and_then(atom_name).unwrap_or_default();
        let node_of = |i: usize| t.get(i).and_then(atom_name).map(str::to_string);
        let mine = |peer: &str, tag: Option<&Term>| {
            self.sessions
                .get(peer)
                .is_some_and(|s| tag == Some(&tag_term(s.tag))) // (GL3)
        };
        match tag {
            "init_connect" => {
                if let Some(peer) = node_of(2) {
                    self.init_connect(mailbox, &peer, c);
                }
            }
            "lock_set" => {
                // {lock_set, HisLocker, true | false, Known, MyTag}
                let Some(peer) = t
                    .get(1)
                    .and_then(Pid::from_term)
                    .map(|p| p.node().to_string())
                else {
                    return;
                };
                if t.len() != 5 || !mine(&peer, t.get(4)) {
                    return;
                }
                if t[2] == atom("true") {
                    if let Some(s) = self.sessions.get_mut(&peer) {
                        s.heard = true;
                    }
                    let locked = self.sessions.get(&peer).is_some_and(|s| s.locked.is_some());
                    if locked {
                        self.lock_is_set(mailbox, &peer);
                    } else {
                        // Lock our own partition and answer (the passive
                        // side of OTP's lockers).
                        self.try_lock(&peer, Duration::ZERO);
                    }
                } else {
                    self.lock_refused(&peer);
                }
            }
            "exchange" => {
                // {exchange, Node, Names, NamesExt, MyTag}
                let Some(peer) = node_of(1) else { return };
                if t.len() != 5 || !mine(&peer, t.get(4)) {
                    return;
                }
                let names = list_elements(&t[2]).unwrap_or_default();
                if let Some(s) = self.sessions.get_mut(&peer) {
                    s.theirs = Some(names);
                }
                self.resolve(mailbox, &peer);
            }
            "resolved" => {
                // {resolved, Node, HisResolved, HisKnown, unused, NamesExt, MyTag}
                let Some(peer) = node_of(1) else { return };
                if t.len() != 7 || !mine(&peer, t.get(6)) {
                    return;
                }
                let ops = list_elements(&t[2]).unwrap_or_default();
                let known = node_list(&t[3]);
                if let Some(s) = self.sessions.get_mut(&peer) {
                    s.resolved = Some((ops, known));
                }
                self.finish(mailbox, &peer);
            }
            "new_nodes" => {
                // {new_nodes, Node, Ops, NamesExt, NewNodes, ExtraInfo}
                if t.len() != 6 {
                    return;
                }
                for n in node_list(&t[4]) {
                    if n != self.me && !self.known.contains_key(&n) {
                        self.known.insert(n.clone(), VSN);
                        self.sessions.remove(&n);
                        self.in_sync(mailbox, &n);
                    }
                }
                for op in list_elements(&t[2]).unwrap_or_default() {
                    self.apply(mailbox, &op);
                }
            }
            "in_sync" => {
                // {in_sync, Node, true}: it synced with our cluster.
                if let Some(peer) = node_of(1)
                    && let Some(s) = self.sessions.remove(&peer)
                    && let (Some(nodes), Some(id)) = (s.locked, s.lock_id)
                {
                    self.release_job(&peer, nodes, Some(id));
                }
            }
            _ => {}
        }
    }

    fn lock_refused(&mut self, peer: &str) {
        let Some(s) = self.sessions.get_mut(peer) else {
            return;
        };
        s.heard = false;
        s.told = false;
        if let (Some(nodes), Some(id)) = (s.locked.take(), s.lock_id.clone()) {
            self.release_job(peer, nodes, Some(id));
        }
        self.try_lock(peer, Duration::from_secs(2));
    }

    /// A monitor fired: a name's process, or a lock holder, is gone.
    fn down(&mut self, reference: &Term, who: &Pid) {
        self.names
            .retain(|_, e| !(e.monitor == *reference && e.pid == *who));
        self.locks.retain(|_, l| {
            l.holders.retain(|(p, m)| !(p == who && m == reference));
            !l.holders.is_empty()
        });
    }

    fn node_down(&mut self, mailbox: &Mailbox, peer: &str) {
        let was_known = self.known.contains_key(peer) || self.sessions.contains_key(peer);
        self.forget(peer);
        self.names.retain(|_, e| e.pid.node() != peer);
        self.locks.retain(|_, l| {
            l.holders.retain(|(p, _)| p.node() != peer);
            !l.holders.is_empty()
        });
        if was_known {
            // (prevent_overlapping_partitions) tell the rest of the cluster.
            self.op_id += 1;
            let msg = tuple(vec![
                atom("lost_connection"),
                atom(&self.me),
                Term::from(BigInteger::from(self.creation)),
                Term::from(BigInteger::from(self.op_id)),
                atom(peer),
            ]);
            for n in self.known.keys() {
                self.send_to(mailbox, n, msg.clone());
            }
        }
        self.publish();
    }

    /// Drop `peer` from the known nodes and any sync with it.
    fn forget(&mut self, peer: &str) {
        self.known.remove(peer);
        self.early.remove(peer);
        if let Some(s) = self.sessions.remove(peer)
            && let (Some(nodes), Some(id)) = (s.locked, s.lock_id)
        {
            let nodes: Vec<String> = nodes.into_iter().filter(|n| n != peer).collect();
            self.release_job(peer, nodes, Some(id));
        }
    }

    /// `{lost_connection, A, XCreation, OpId, B}`: A lost B. A node that
    /// knows both would join two partitions that do not see each other:
    /// it asks the one it can still reach (not us) to disconnect, as
    /// OTP's `prevent_overlapping_partitions`.
    fn lost_connection(
        &mut self,
        mailbox: &Mailbox,
        a: &str,
        xcre: &Term,
        op_id: &Term,
        b: &str,
        msg: &Term,
    ) {
        let key = (a.to_string(), b.to_string());
        if let Some((c, o)) = self.lost.get(&key)
            && c == xcre
            && erlang_int(op_id) <= erlang_int(o)
        {
            return; // seen
        }
        self.lost.insert(key, (xcre.clone(), op_id.clone()));
        for n in self.known.keys().filter(|n| n.as_str() != a) {
            self.send_to(mailbox, n, msg.clone());
        }
        let remove = if b == self.me { a } else { b };
        if self.known.contains_key(remove) || self.sessions.contains_key(remove) {
            let ask = tuple(vec![atom("remove_connection"), atom(&self.me)]);
            self.send_to(mailbox, remove, ask);
            self.forget(remove);
        }
    }
}

fn erlang_int(t: &Term) -> Option<num_bigint::BigInt> {
    match t {
        Term::FixInteger(i) => Some(num_bigint::BigInt::from(i.value)),
        Term::BigInteger(b) => Some(b.value.clone()),
        _ => None,
    }
}

/// A list of nodes, as `[{Node, Vsn}]` or `[Node]`.
fn node_list(t: &Term) -> Vec<String> {
    list_elements(t)
        .unwrap_or_default()
        .iter()
        .filter_map(|e| match e {
            Term::Tuple(_) => elements(e).first().and_then(atom_name).map(str::to_string),
            other => atom_name(other).map(str::to_string),
        })
        .collect()
}

/// Erlang's order of pids (for the lock id both lockers compute alike):
/// serial, then number, then node, then creation.
fn erlang_pid_order(a: &Pid, b: &Pid) -> std::cmp::Ordering {
    (a.serial(), a.id(), a.node(), a.creation()).cmp(&(b.serial(), b.id(), b.node(), b.creation()))
}

/// Run a resolve method for `name`, held here by `ours` and by the peer's
/// `theirs`: the pid that keeps the name (`None`: neither).
fn run_method(
    mailbox: &Mailbox,
    method: Resolve,
    name: &Term,
    theirs: &Pid,
    ours: &Pid,
) -> Option<Pid> {
    // OTP's minmax: the pid on the smaller node name is the min.
    let (min, max) = if theirs.node() < ours.node() {
        (theirs, ours)
    } else {
        (ours, theirs)
    };
    match method {
        Resolve::Exit => {
            let _ = mailbox.exit(max, atom("kill"));
            Some(min.clone())
        }
        Resolve::Notify => {
            let _ = mailbox.send(max, tuple(vec![atom("global_name_conflict"), name.clone()]));
            Some(min.clone())
        }
        Resolve::NotifyAll => {
            let note = |to: &Pid, other: &Pid| {
                let _ = mailbox.send(
                    to,
                    tuple(vec![
                        atom("global_name_conflict"),
                        name.clone(),
                        other.to_term(),
                    ]),
                );
            };
            note(theirs, ours);
            note(ours, theirs);
            None
        }
    }
}
