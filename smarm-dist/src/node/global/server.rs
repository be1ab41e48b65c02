//! The `global_name_server` actor: its state (registrations, locks,
//! syncs in progress), its loop, and the messages it serves once a peer
//! is known: registrations, locks, monitors firing, nodes going down.

use super::*;

/// A registration: the pid, its resolve method (opaque), and the monitor
/// that removes it (GL2).
pub(super) struct Entry {
    pub(super) pid: Pid,
    pub(super) method: Term,
    pub(super) monitor: Term,
}

/// A lock: who asked for it, and the processes holding it.
pub(super) struct Lock {
    pub(super) requester: Term,
    pub(super) holders: Vec<(Pid, Term)>,
}

/// The sync with one peer (module docs), from `init_connect` to known.
pub(super) struct Session {
    /// Our tag for this connection, and the peer's, version and locker.
    pub(super) tag: u64,
    pub(super) his: Option<(Term, Pid)>,
    /// The lock id, once both lockers are known.
    pub(super) lock_id: Option<Term>,
    /// The locker is trying to lock.
    pub(super) locking: bool,
    /// Nodes we hold the sync lock on.
    pub(super) locked: Option<Vec<String>>,
    /// We told the peer `lock_set true`; the peer told us.
    pub(super) told: bool,
    pub(super) heard: bool,
    pub(super) exchanged: bool,
    /// The peer's names, our resolution of them, the peer's resolution.
    pub(super) theirs: Option<Vec<Term>>,
    pub(super) ours: Option<(Vec<Term>, Vec<Term>)>,
    pub(super) resolved: Option<(Vec<Term>, Vec<String>)>,
}

pub(super) struct Server {
    pub(super) node: Node,
    pub(super) me: String,
    pub(super) locker: Pid,
    pub(super) jobs: Sender<LockJob>,
    pub(super) table: Arc<Mutex<Shared>>,
    pub(super) names: HashMap<Term, Entry>,
    pub(super) locks: HashMap<Term, Lock>,
    /// Synced peers and their protocol versions.
    pub(super) known: BTreeMap<String, i32>,
    pub(super) sessions: HashMap<String, Session>,
    /// `init_connect`s that came before their node's up event.
    pub(super) early: HashMap<String, Term>,
    pub(super) next_tag: u64,
    /// `lost_connection`s seen, by the pair of nodes: creation, op id.
    pub(super) lost: HashMap<(String, String), (Term, Term)>,
    pub(super) creation: i64,
    pub(super) op_id: i64,
}

/// A tag as Erlang sends it back: a small integer while it fits (a term
/// compares unequal to the bignum of the same value).
pub(super) fn tag_term(tag: u64) -> Term {
    match i32::try_from(tag) {
        Ok(small) => int(small),
        Err(_) => Term::from(BigInteger::from(tag)),
    }
}

pub(super) fn int(v: i32) -> Term {
    Term::from(FixInteger::from(v))
}

pub(super) fn list(v: Vec<Term>) -> Term {
    Term::from(List::from(v))
}

pub(super) fn elements(t: &Term) -> &[Term] {
    match t {
        Term::Tuple(t) => &t.elements,
        _ => &[],
    }
}

/// `{lock_set, Locker, true | false, Known, HisTag}`: whether our side of
/// the sync lock is taken.
pub(super) fn lock_set(locker: &Pid, granted: bool, known: Vec<Term>, his_tag: Term) -> Term {
    tuple(vec![
        atom("lock_set"),
        locker.to_term(),
        atom(if granted { "true" } else { "false" }),
        list(known),
        his_tag,
    ])
}

/// Act on what a ready source holds; `false` once it is closed.
pub(super) fn on<T, E>(got: Result<Option<T>, E>, act: impl FnOnce(T)) -> bool {
    match got {
        Ok(Some(v)) => {
            act(v);
            true
        }
        Ok(None) => true,
        Err(_) => false,
    }
}

pub(super) fn cast(msg: Term) -> Term {
    tuple(vec![atom("$gen_cast"), msg])
}

impl Server {
    pub(super) fn serve(
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

    pub(super) fn publish(&self) {
        if let Ok(mut t) = self.table.lock() {
            t.names = self
                .names
                .iter()
                .map(|(n, e)| (n.clone(), e.pid.clone()))
                .collect();
            t.known = self.known.keys().cloned().collect();
        }
    }

    pub(super) fn send_to(&self, mailbox: &Mailbox, node: &str, msg: Term) {
        let _ = mailbox.send((SERVER, node), msg);
    }

    pub(super) fn apply(&mut self, mailbox: &Mailbox, op: &Term) {
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

    pub(super) fn insert(&mut self, mailbox: &Mailbox, name: Term, pid: Pid, method: Term) {
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

    pub(super) fn delete(&mut self, mailbox: &Mailbox, name: &Term) {
        if let Some(e) = self.names.remove(name) {
            mailbox.demonitor(&e.monitor);
        }
    }

    // ---- messages ----

    pub(super) fn message(&mut self, mailbox: &Mailbox, msg: Message) {
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

    pub(super) fn handle_call(&mut self, mailbox: &Mailbox, request: &Term, from: &Pid) -> Term {
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

    pub(super) fn set_lock(&mut self, mailbox: &Mailbox, id: &Term, from: &Pid) -> bool {
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

    pub(super) fn del_lock(&mut self, mailbox: &Mailbox, id: &Term, from: &Pid) {
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

    pub(super) fn handle_cast(&mut self, mailbox: &Mailbox, c: &Term) {
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

    pub(super) fn lock_refused(&mut self, peer: &str) {
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
    pub(super) fn down(&mut self, reference: &Term, who: &Pid) {
        self.names
            .retain(|_, e| !(e.monitor == *reference && e.pid == *who));
        self.locks.retain(|_, l| {
            l.holders.retain(|(p, m)| !(p == who && m == reference));
            !l.holders.is_empty()
        });
    }

    pub(super) fn node_down(&mut self, mailbox: &Mailbox, peer: &str) {
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
    pub(super) fn forget(&mut self, peer: &str) {
        self.known.remove(peer);
        self.early.remove(peer);
        if let Some(s) = self.sessions.remove(peer)
            && let (Some(nodes), Some(id)) = (s.locked, s.lock_id)
        {
            let nodes: Vec<String> = nodes.into_iter().filter(|n| n != peer).collect();
            self.release_job(peer, nodes, Some(id));
        }
    }
}
