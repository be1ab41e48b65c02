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

mod locker;
mod resolve;
mod server;
mod sync;

use super::{CallError, Dest, Mailbox, Message, Node, NodeEvent, RegisterError, SendError};
use crate::pid::Pid;
use crate::term::{
    Atom, BigInteger, ExternalFun, FixInteger, List, Term, ToTerm, atom, atom_name, list_elements,
    tuple,
};
use locker::{LockDone, LockJob, Locker, locker_loop};
use resolve::*;
use server::*;
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
    let nanos = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX).max(1);
    Duration::from_nanos(crate::random::random_u64() % nanos)
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
