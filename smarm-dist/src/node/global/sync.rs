//! Synchronising with a node that connects (module docs): `init_connect`,
//! the cluster lock, the exchange of name tables, their resolution and
//! the end of the sync; and `lost_connection`, which keeps partitions
//! from overlapping.

use super::*;

impl Server {
    // ---- connecting (module docs) ----

    pub(super) fn node_up(&mut self, mailbox: &Mailbox, peer: &str) {
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

    pub(super) fn init_connect(&mut self, mailbox: &Mailbox, peer: &str, msg: &Term) {
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
    pub(super) fn try_lock(&mut self, peer: &str, delay: Duration) {
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

    pub(super) fn lock_done(&mut self, mailbox: &Mailbox, d: LockDone) {
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
    pub(super) fn lock_is_set(&mut self, mailbox: &Mailbox, peer: &str) {
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

    pub(super) fn name_list(&self) -> Term {
        list(
            self.names
                .iter()
                .map(|(n, e)| tuple(vec![n.clone(), e.pid.to_term(), e.method.clone()]))
                .collect(),
        )
    }

    /// Once we sent ours and have theirs: resolve, and answer `resolved`.
    pub(super) fn resolve(&mut self, mailbox: &Mailbox, peer: &str) {
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
    pub(super) fn exchange_names(
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
    pub(super) fn finish(&mut self, mailbox: &Mailbox, peer: &str) {
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

    pub(super) fn release_job(&self, peer: &str, nodes: Vec<String>, id: Option<Term>) {
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
    pub(super) fn in_sync(&self, mailbox: &Mailbox, node: &str) {
        let msg = tuple(vec![atom("in_sync"), atom(&self.me), atom("true")]);
        self.send_to(mailbox, node, cast(msg));
    }

    /// `{lost_connection, A, XCreation, OpId, B}`: A lost B. A node that
    /// knows both would join two partitions that do not see each other:
    /// it asks the one it can still reach (not us) to disconnect, as
    /// OTP's `prevent_overlapping_partitions`.
    pub(super) fn lost_connection(
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
