//! Cluster-wide process groups: OTP's `pg` scope protocol, so Erlang
//! processes, smarm mailboxes and mailboxes on other smarm nodes are
//! members of one group, and `pg:get_members(Group)` on any node lists
//! them all.
//!
//! A scope is a registered process on every node that takes part (the
//! default scope is named `pg`, as OTP's). It keeps the members of its own
//! node and, for each peer scope it knows, that scope's members:
//!
//! - starting, and whenever a node comes up, it sends `{discover, Self}`
//!   to the scope of the same name there;
//! - a `discover` is answered with `{'$gen_cast', {sync, Self, Groups}}`
//!   (every local member by group), and the sender is monitored and
//!   discovered back if it was not known;
//! - a `sync` replaces what is known of its sender's members;
//! - a local join or leave is sent to every known peer scope as
//!   `{join, Self, Group, Pids}` or `{leave, Self, Pids, Groups}`; a local
//!   member that ends leaves every group it was in;
//! - a peer scope that ends, or whose node goes away (its monitor fires,
//!   `noconnection` among the reasons), takes its members with it.
//!
//! Reads ([`PgScope::members`]) look at a table the scope keeps, without
//! a message, as OTP reads its ETS table; joins and leaves go through the
//! scope's actor, so each peer sees them in the order they were made.
//! Membership is eventually consistent, as OTP's.
//!
//! # Invariants
//!
//! - (G1) The table holds, for each group, every member the scope knows:
//!   its own node's, and those of the peer scopes it monitors. A peer's
//!   members enter only after its `discover` or `sync` (a `join` from a
//!   scope not known is ignored, as OTP does), and leave with it.
//! - (G2) Each local member is monitored once, however many groups it is
//!   in; its monitor is taken down when it leaves its last group.

use super::{Mailbox, Message, Node, NodeEvent, RegisterError};
use crate::pid::Pid;
use crate::term::{Term, ToTerm, atom, list_elements, tuple};
use smarm_core::Mutex;
use smarm_core::channel::{Receiver, Sender, channel};
use std::collections::HashMap;
use std::sync::Arc;
use thiserror::Error;

/// The name of the default scope, as OTP's.
pub(super) const DEFAULT_SCOPE: &str = "pg";

/// Why a join was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PgError {
    /// Only processes of the scope's own node may join through it, as in
    /// OTP (`{nolocal, Pid}`).
    #[error("{pid:?} is not a process of this node ({node}); join it through its own node's scope")]
    NotLocal {
        /// The pid.
        pid: Pid,
        /// This node.
        node: String,
    },
    /// The scope's actor is gone (its node stopped).
    #[error("the pg scope {0} is not running (its node stopped)")]
    Stopped(String),
}

/// A group's members as the scope knows them.
#[derive(Default, Clone)]
struct Members {
    all: Vec<Pid>,
    local: Vec<Pid>,
}

type Table = HashMap<Term, Members>;

/// What a caller asks of the scope's actor.
enum Command {
    Join(Term, Vec<Pid>, Sender<()>),
    Leave(Term, Vec<Pid>, Sender<bool>),
}

/// A process group scope on a node (module docs): join this node's
/// processes to groups, and read the members the whole cluster has.
/// Cheap to clone.
///
/// ```no_run
/// use smarm::dist::{Node, term};
///
/// smarm::run(|| {
///     let node = Node::start("shop@localhost", "secret").unwrap();
///     let pg = node.pg().unwrap();
///     let worker = node.mailbox();
///     pg.join(term::atom("workers"), worker.pid()).unwrap();
///     // In Erlang, after pg:start_link(): pg:get_members(workers) lists it.
///     assert_eq!(pg.members(term::atom("workers")), vec![worker.pid().clone()]);
///     node.stop();
/// });
/// ```
#[derive(Clone)]
pub struct PgScope {
    name: String,
    node_name: String,
    table: Arc<Mutex<Table>>,
    commands: Sender<Command>,
}

impl std::fmt::Debug for PgScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgScope").field("name", &self.name).finish()
    }
}

impl PgScope {
    /// The scope's name (its registered name on every node).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Join `pid`, a process of this node (a mailbox's pid, a served
    /// gen_server's), to `group` (any term), as `pg:join(Scope, Group,
    /// Pid)`. A process may join a group more than once, and must leave
    /// it as many times; it leaves every group when it ends.
    pub fn join(&self, group: impl ToTerm, pid: &Pid) -> Result<(), PgError> {
        self.join_all(group, std::slice::from_ref(pid))
    }

    /// Join several processes of this node to `group` at once.
    pub fn join_all(&self, group: impl ToTerm, pids: &[Pid]) -> Result<(), PgError> {
        if let Some(pid) = pids.iter().find(|p| p.node() != self.node_name) {
            return Err(PgError::NotLocal {
                pid: pid.clone(),
                node: self.node_name.clone(),
            });
        }
        let (tx, rx) = channel();
        self.commands
            .send(Command::Join(group.into_term(), pids.to_vec(), tx))
            .map_err(|_| PgError::Stopped(self.name.clone()))?;
        rx.recv().map_err(|_| PgError::Stopped(self.name.clone()))
    }

    /// `pid` leaves `group` once, as `pg:leave`; `false` if it was not a
    /// member (OTP's `not_joined`).
    pub fn leave(&self, group: impl ToTerm, pid: &Pid) -> bool {
        let (tx, rx) = channel();
        let asked = Command::Leave(group.into_term(), vec![pid.clone()], tx);
        self.commands.send(asked).is_ok() && rx.recv().unwrap_or(false)
    }

    /// Every member of `group` the scope knows, on every node
    /// (`pg:get_members`), in no particular order.
    pub fn members(&self, group: impl ToTerm) -> Vec<Pid> {
        self.read(&group.into_term(), |m| m.all.clone())
    }

    /// The members of `group` on this node (`pg:get_local_members`).
    pub fn local_members(&self, group: impl ToTerm) -> Vec<Pid> {
        self.read(&group.into_term(), |m| m.local.clone())
    }

    /// Every group with a member (`pg:which_groups`).
    pub fn groups(&self) -> Vec<Term> {
        self.table
            .lock()
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default()
    }

    fn read(&self, group: &Term, f: impl FnOnce(&Members) -> Vec<Pid>) -> Vec<Pid> {
        self.table
            .lock()
            .ok()
            .and_then(|t| t.get(group).map(f))
            .unwrap_or_default()
    }
}

impl Node {
    /// The default process group scope, `pg` (module docs), started on
    /// first use. An Erlang node takes part once it runs `pg:start_link()`
    /// (or its kernel was started with `start_pg`).
    pub fn pg(&self) -> Result<PgScope, RegisterError> {
        self.pg_scope(DEFAULT_SCOPE)
    }

    /// The process group scope `name` (`pg:start_link(Name)`), started on
    /// first use: groups in it are apart from every other scope's, and
    /// only nodes that run a scope of this name share them. Fails if the
    /// name is registered on this node for something else.
    pub fn pg_scope(&self, name: &str) -> Result<PgScope, RegisterError> {
        if let Some(scope) = self
            .with_state(|s| s.procs.scopes.get(name).cloned())
            .flatten()
        {
            return Ok(scope);
        }
        let (commands, rx) = channel();
        let scope = PgScope {
            name: name.to_string(),
            node_name: self.name().to_string(),
            table: Arc::new(Mutex::new(Table::new())),
            commands,
        };
        let (ready_tx, ready) = channel::<Result<(), RegisterError>>();
        let node = self.clone();
        let table = scope.table.clone();
        let scope_name = name.to_string();
        self.spawn(&format!("smarm.dist.pg.{name}"), move || {
            let mailbox = match node.register(&scope_name) {
                Ok(m) => m,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let events = node.monitor_nodes();
            let _ = ready_tx.send(Ok(()));
            Server {
                name: scope_name,
                me: mailbox.pid().clone(),
                local: HashMap::new(),
                remote: HashMap::new(),
                table,
            }
            .serve(&node, &mailbox, &events, &rx);
        });
        match ready.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(RegisterError(name.to_string())),
        }
        let _ = self.with_state(|s| s.procs.scopes.insert(name.to_string(), scope.clone()));
        Ok(scope)
    }
}

/// What a scope knows of a peer scope: its monitor and its members.
struct Peer {
    monitor: Term,
    groups: HashMap<Term, Vec<Pid>>,
}

/// The scope's actor (module docs).
struct Server {
    name: String,
    me: Pid,
    /// Local members: their monitor and the groups they are in (G2).
    local: HashMap<Pid, (Term, Vec<Term>)>,
    remote: HashMap<Pid, Peer>,
    table: Arc<Mutex<Table>>,
}

fn pids_term(pids: &[Pid]) -> Term {
    match pids {
        [one] => one.to_term(),
        many => Term::from(crate::term::List::from(
            many.iter().map(Pid::to_term).collect::<Vec<_>>(),
        )),
    }
}

/// A pid or a list of pids, as `join` and `leave` carry them.
fn pids_of(t: &Term) -> Option<Vec<Pid>> {
    match Pid::from_term(t) {
        Some(p) => Some(vec![p]),
        None => list_elements(t)?.iter().map(Pid::from_term).collect(),
    }
}

impl Server {
    fn serve(
        mut self,
        node: &Node,
        mailbox: &Mailbox,
        events: &Receiver<NodeEvent>,
        commands: &Receiver<Command>,
    ) {
        for peer in node.nodes() {
            self.discover(mailbox, &peer);
        }
        loop {
            match smarm_core::select(&[mailbox.selectable(), events, commands]) {
                0 => match mailbox.try_recv() {
                    Ok(Some(msg)) => self.message(mailbox, msg),
                    Ok(None) => {}
                    Err(_) => return,
                },
                1 => match events.try_recv() {
                    Ok(Some(NodeEvent::Up(peer))) => self.discover(mailbox, &peer),
                    // The peer scope's monitor says `noconnection`.
                    Ok(Some(NodeEvent::Down(_)) | None) => {}
                    Err(_) => return,
                },
                _ => match commands.try_recv() {
                    Ok(Some(Command::Join(group, pids, done))) => {
                        self.join_local(mailbox, group, &pids);
                        let _ = done.send(());
                    }
                    Ok(Some(Command::Leave(group, pids, done))) => {
                        let left = self.leave_local(mailbox, &group, &pids);
                        let _ = done.send(left);
                    }
                    Ok(None) => {}
                    Err(_) => return,
                },
            }
        }
    }

    fn discover(&self, mailbox: &Mailbox, peer: &str) {
        let hello = tuple(vec![atom("discover"), self.me.to_term()]);
        let _ = mailbox.send((self.name.as_str(), peer), hello);
    }

    fn table(&self, f: impl FnOnce(&mut Table)) {
        if let Ok(mut t) = self.table.lock() {
            f(&mut t);
        }
    }

    /// Every local member by group: what a `sync` carries.
    fn local_groups(&self) -> Term {
        let mut groups: HashMap<&Term, Vec<Term>> = HashMap::new();
        for (pid, (_, gs)) in &self.local {
            for g in gs {
                groups.entry(g).or_default().push(pid.to_term());
            }
        }
        Term::from(crate::term::List::from(
            groups
                .into_iter()
                .map(|(g, pids)| tuple(vec![g.clone(), Term::from(crate::term::List::from(pids))]))
                .collect::<Vec<_>>(),
        ))
    }

    fn broadcast(&self, mailbox: &Mailbox, msg: &Term) {
        for peer in self.remote.keys() {
            let _ = mailbox.send(peer, msg.clone());
        }
    }

    fn message(&mut self, mailbox: &Mailbox, msg: Message) {
        let Term::Tuple(t) = &msg.term else { return };
        let tag = |name: &str| t.elements.first() == Some(&atom(name));
        match &t.elements[..] {
            [_, peer] | [_, peer, _] if tag("discover") => {
                if let Some(peer) = Pid::from_term(peer) {
                    self.discovered(mailbox, peer);
                }
            }
            [_, Term::Tuple(cast)] if tag("$gen_cast") => {
                if let [sync, peer, groups] = &cast.elements[..]
                    && *sync == atom("sync")
                    && let Some(peer) = Pid::from_term(peer)
                    && let Some(groups) = list_elements(groups)
                {
                    self.synced(mailbox, peer, &groups);
                }
            }
            [_, peer, group, pids] if tag("join") => {
                if let (Some(peer), Some(pids)) = (Pid::from_term(peer), pids_of(pids)) {
                    self.joined_remote(&peer, group, pids);
                }
            }
            [_, peer, pids, groups] if tag("leave") => {
                if let (Some(peer), Some(pids), Some(groups)) =
                    (Pid::from_term(peer), pids_of(pids), list_elements(groups))
                {
                    self.left_remote(&peer, &pids, &groups);
                }
            }
            [_, reference, _, who, _] if tag("DOWN") => {
                if let Some(who) = Pid::from_term(who) {
                    self.down(mailbox, reference, who);
                }
            }
            _ => {}
        }
    }

    fn discovered(&mut self, mailbox: &Mailbox, peer: Pid) {
        let sync = tuple(vec![
            atom("$gen_cast"),
            tuple(vec![atom("sync"), self.me.to_term(), self.local_groups()]),
        ]);
        let _ = mailbox.send(&peer, sync);
        if !self.remote.contains_key(&peer) {
            let monitor = mailbox.monitor(&peer);
            let hello = tuple(vec![atom("discover"), self.me.to_term()]);
            let _ = mailbox.send(&peer, hello);
            self.remote.insert(
                peer,
                Peer {
                    monitor,
                    groups: HashMap::new(),
                },
            );
        }
    }

    /// A peer's full list of members replaces what was known of it (G1).
    fn synced(&mut self, mailbox: &Mailbox, peer: Pid, groups: &[Term]) {
        let mut new: HashMap<Term, Vec<Pid>> = HashMap::new();
        for g in groups {
            if let Term::Tuple(t) = g
                && let [group, pids] = &t.elements[..]
                && let Some(pids) = list_elements(pids)
            {
                let pids = pids.iter().filter_map(Pid::from_term);
                new.entry(group.clone()).or_default().extend(pids);
            }
        }
        let old = match self.remote.get_mut(&peer) {
            Some(p) => std::mem::take(&mut p.groups),
            None => {
                let monitor = mailbox.monitor(&peer);
                let fresh = Peer {
                    monitor,
                    groups: HashMap::new(),
                };
                self.remote.insert(peer.clone(), fresh);
                HashMap::new()
            }
        };
        self.table(|t| {
            for (group, pids) in &old {
                remove_members(t, group, pids, false);
            }
            for (group, pids) in &new {
                t.entry(group.clone())
                    .or_default()
                    .all
                    .extend(pids.iter().cloned());
            }
        });
        if let Some(p) = self.remote.get_mut(&peer) {
            p.groups = new;
        }
    }

    fn joined_remote(&mut self, peer: &Pid, group: &Term, pids: Vec<Pid>) {
        let Some(p) = self.remote.get_mut(peer) else {
            return; // not (or no longer) in this scope's overlay (G1)
        };
        p.groups
            .entry(group.clone())
            .or_default()
            .extend(pids.iter().cloned());
        self.table(|t| t.entry(group.clone()).or_default().all.extend(pids));
    }

    fn left_remote(&mut self, peer: &Pid, pids: &[Pid], groups: &[Term]) {
        let Some(p) = self.remote.get_mut(peer) else {
            return;
        };
        for group in groups {
            if let Some(members) = p.groups.get_mut(group) {
                for pid in pids {
                    if let Some(i) = members.iter().position(|m| m == pid) {
                        members.swap_remove(i);
                    }
                }
                if members.is_empty() {
                    p.groups.remove(group);
                }
            }
        }
        self.table(|t| {
            for group in groups {
                remove_members(t, group, pids, false);
            }
        });
    }

    fn join_local(&mut self, mailbox: &Mailbox, group: Term, pids: &[Pid]) {
        for pid in pids {
            match self.local.get_mut(pid) {
                Some((_, groups)) => groups.push(group.clone()),
                None => {
                    let monitor = mailbox.monitor(pid); // (G2)
                    self.local
                        .insert(pid.clone(), (monitor, vec![group.clone()]));
                }
            }
        }
        self.table(|t| {
            let m = t.entry(group.clone()).or_default();
            m.all.extend(pids.iter().cloned());
            m.local.extend(pids.iter().cloned());
        });
        let msg = tuple(vec![
            atom("join"),
            self.me.to_term(),
            group,
            pids_term(pids),
        ]);
        self.broadcast(mailbox, &msg);
    }

    fn leave_local(&mut self, mailbox: &Mailbox, group: &Term, pids: &[Pid]) -> bool {
        let mut left = vec![];
        for pid in pids {
            let Some((monitor, groups)) = self.local.get_mut(pid) else {
                continue;
            };
            let Some(i) = groups.iter().position(|g| g == group) else {
                continue;
            };
            groups.swap_remove(i);
            if groups.is_empty() {
                mailbox.demonitor(monitor);
                self.local.remove(pid);
            }
            left.push(pid.clone());
        }
        if left.is_empty() {
            return false;
        }
        self.table(|t| remove_members(t, group, &left, true));
        let msg = tuple(vec![
            atom("leave"),
            self.me.to_term(),
            pids_term(&left),
            Term::from(crate::term::List::from(vec![group.clone()])),
        ]);
        self.broadcast(mailbox, &msg);
        true
    }

    /// A monitor fired: a local member ended, or a peer scope (or its
    /// node) went away.
    fn down(&mut self, mailbox: &Mailbox, reference: &Term, who: Pid) {
        if self.local.get(&who).is_some_and(|(m, _)| m == reference) {
            let groups = self.local.remove(&who).map(|(_, g)| g).unwrap_or_default();
            self.table(|t| {
                for group in &groups {
                    remove_members(t, group, std::slice::from_ref(&who), true);
                }
            });
            let msg = tuple(vec![
                atom("leave"),
                self.me.to_term(),
                who.to_term(),
                Term::from(crate::term::List::from(groups)),
            ]);
            self.broadcast(mailbox, &msg);
        } else if self
            .remote
            .get(&who)
            .is_some_and(|p| p.monitor == *reference)
        {
            let groups = self
                .remote
                .remove(&who)
                .map(|p| p.groups)
                .unwrap_or_default();
            self.table(|t| {
                for (group, pids) in &groups {
                    remove_members(t, group, pids, false);
                }
            });
        }
        // Else a monitor taken down as it fired: nothing to do.
    }
}

/// Take one occurrence of each of `pids` out of `group` (and out of its
/// local members, for a local leave); a group left empty goes.
fn remove_members(t: &mut Table, group: &Term, pids: &[Pid], local: bool) {
    let Some(m) = t.get_mut(group) else { return };
    for pid in pids {
        if let Some(i) = m.all.iter().position(|p| p == pid) {
            m.all.swap_remove(i);
        }
        if local && let Some(i) = m.local.iter().position(|p| p == pid) {
            m.local.swap_remove(i);
        }
    }
    if m.all.is_empty() {
        t.remove(group);
    }
}
