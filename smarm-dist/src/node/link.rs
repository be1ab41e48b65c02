//! Links across nodes: a smarm actor and a process on another node that
//! share a fate, as `link/1` makes them in Erlang.
//!
//! Each link has a proxy actor on this node, linked (smarm's own link) to
//! the smarm actor and trapping exits. When the actor ends, the proxy
//! sends EXIT with the actor's reason as a term (`normal`, `panic`,
//! `shutdown` for a stop or a shutdown, `killed`, the reason of the linked
//! actor whose exit stopped it, or the text of an `exit_with`). When
//! the remote process ends (EXIT), or its node goes away
//! (`noconnection`), the proxy ends with that reason: `normal` reaches the
//! actor only if it traps exits, anything else stops it or, if it traps
//! exits, arrives as an [`Exit`](smarm_core::Exit) whose reason is
//! `Shutdown`, `Killed`, `NoProc`, or `Custom` with the remote reason's
//! text. So a supervisor supervises through such a link as through a
//! local one.
//!
//! An exit signal from another node (`exit(Pid, Reason)`, EXIT2) follows
//! [`ExitSignal`](smarm_core::ExitSignal)'s rules for the actor that owns
//! the pid: `normal` is ignored unless it traps exits, `kill` ends it in
//! any case, and any other reason ends it with that reason; a trapping
//! owner gets `{'EXIT', From, Reason}` in the pid's mailbox.
//!
//! Invariants:
//! - (L1) A link is in the table from before its LINK is sent (or its
//!   proxy starts, for one made by the peer) until it fires or is
//!   unlinked; whoever removes it delivers its one signal.
//! - (L2) When a connection goes down, every link to its node fires with
//!   `noconnection` (run from N2's single removal).

use super::{Mailbox, Node, SendError, State};
use crate::control::Control;
use crate::pid::Pid;
use crate::term::{Atom, Term, atom};
use smarm_core::DownReason;
use smarm_core::channel::{Sender, channel};

/// What a link's proxy is told.
pub(super) enum LinkSignal {
    /// The remote end ended (or its node went away) with this reason.
    Exit(Term),
    /// The remote end unlinked.
    Unlink,
}

/// A link's entry: its proxy's inbox, and the smarm actor it stands for.
pub(super) struct LinkEntry {
    proxy: Sender<LinkSignal>,
    owner: smarm_core::Pid,
}

impl Mailbox {
    /// Send the exit signal `reason` to the process `to` from this
    /// mailbox, as Erlang's `exit(To, Reason)` (EXIT2): a process that
    /// does not trap exits ends with `reason` unless it is `normal`; one
    /// that traps them gets `{'EXIT', From, Reason}`; `kill` ends it in
    /// any case. A pid of this node gets the `{'EXIT', From, Reason}`
    /// message in its mailbox.
    pub fn exit(&self, to: &Pid, reason: impl crate::term::ToTerm) -> Result<(), SendError> {
        let signal = Control::Exit {
            from: self.pid.clone(),
            to: to.clone(),
            reason: reason.into_term(),
            exit2: true,
        };
        self.node.post(to.node(), signal, None, true)
    }
}

/// The connection to `peer` is gone (L2).
pub(super) fn node_down(s: &mut State, peer: &str) {
    let fired: Vec<(u32, Pid)> = s
        .signals
        .links
        .keys()
        .filter(|(_, r)| r.node() == peer)
        .cloned()
        .collect();
    for key in fired {
        if let Some(entry) = s.signals.links.remove(&key) {
            let _ = entry.proxy.send(LinkSignal::Exit(atom("noconnection")));
        }
    }
}

/// A smarm actor's end, as an exit reason term. An actor stopped by a
/// linked actor's exit ends, as an Erlang process does, with that actor's
/// reason.
pub(super) fn reason_term(reason: &DownReason) -> Term {
    match reason {
        DownReason::Exit => atom("normal"),
        DownReason::Panic => atom("panic"),
        DownReason::Stopped | DownReason::Shutdown => atom("shutdown"),
        DownReason::NoProc => atom("noproc"),
        DownReason::Linked(link) => reason_term(&link.reason),
        DownReason::Killed => atom("killed"),
        DownReason::StackOverflow => atom("stack_overflow"),
        DownReason::HeapLimit => atom("heap_limit"),
        DownReason::Custom(r) => atom(r.as_str()),
        _ => atom("unknown"),
    }
}

/// A remote exit reason as a smarm one: `normal`, `shutdown`, `killed`
/// and `noproc` as their `DownReason`s, any other as `Custom` with its text
/// (an atom's name, `boom`, or another term's Erlang form).
fn down_reason(reason: &Term) -> DownReason {
    match reason {
        Term::Atom(Atom { name }) => match name.as_str() {
            "normal" => DownReason::Exit,
            "shutdown" => DownReason::Shutdown,
            "killed" => DownReason::Killed,
            "noproc" => DownReason::NoProc,
            other => DownReason::from(other),
        },
        other => DownReason::from(crate::term::display(other).to_string()),
    }
}

/// A remote `exit(Pid, Reason)` (EXIT2) as the exit signal it is: `kill`
/// cannot be trapped; `normal`, `shutdown` and any other reason follow
/// [`ExitSignal`](smarm_core::ExitSignal)'s rules.
fn exit_signal(reason: &Term) -> smarm_core::ExitSignal {
    match down_reason(reason) {
        DownReason::Exit => smarm_core::ExitSignal::Normal,
        DownReason::Shutdown => smarm_core::ExitSignal::Shutdown,
        _ if matches!(reason, Term::Atom(Atom { name }) if name == "kill") => {
            smarm_core::ExitSignal::Kill
        }
        DownReason::Custom(text) => smarm_core::ExitSignal::Reason(text),
        other => smarm_core::ExitSignal::from(other.to_string()),
    }
}

impl Node {
    /// Link the calling actor with the process `remote` on another node
    /// (Erlang's `link/1`; module docs). A process that does not exist, or
    /// a node that cannot be reached, ends the link at once with `noproc`
    /// or `noconnection`, as in Erlang.
    ///
    /// # Panics
    ///
    /// Outside a smarm actor.
    pub fn link(&self, remote: &Pid) {
        smarm_core::require_actor("smarm::dist::Node::link");
        let local = self.endpoint_pid();
        self.link_spawned(local.clone(), remote.clone());
        let request = Control::Link {
            from: local.clone(),
            to: remote.clone(),
        };
        if self.post(remote.node(), request, None, true).is_err() {
            self.fire_link(local.id(), remote, atom("noconnection"));
        }
    }

    /// Link the calling actor, as our pid `local`, with `remote`: the
    /// link's entry and proxy, without a LINK (the caller sends one, or
    /// the peer asked for the link). Returns once the proxy is linked to
    /// the actor, so an exit right after is seen.
    pub(super) fn link_spawned(&self, local: Pid, remote: Pid) {
        let owner = smarm_core::self_pid();
        let (tx, rx) = channel::<LinkSignal>();
        let entry = LinkEntry { proxy: tx, owner };
        let _ = self.with_state(|s| s.signals.links.insert((local.id(), remote.clone()), entry)); // (L1)
        let node = self.clone();
        let (ready_tx, ready) = channel::<()>();
        self.spawn("smarm.dist.link", move || {
            let exits = smarm_core::trap_exit(true);
            smarm_core::link(owner);
            let _ = ready_tx.send(());
            node.proxy(local, remote, owner, exits, rx)
        });
        let _ = ready.recv(); // linked to the proxy before the LINK goes out
    }

    /// Our pid `local` ends with `reason`: each of its links hears that
    /// reason itself (L1: removed here, so its proxy sends nothing).
    pub(super) fn end_links(&self, local: &Pid, reason: &Term) {
        let ended: Vec<Pid> = self
            .with_state(|s| {
                let remotes: Vec<Pid> = s
                    .signals
                    .links
                    .keys()
                    .filter(|(id, _)| *id == local.id())
                    .map(|(_, r)| r.clone())
                    .collect();
                for r in &remotes {
                    s.signals.links.remove(&(local.id(), r.clone()));
                }
                remotes
            })
            .unwrap_or_default();
        for remote in ended {
            let exit = Control::Exit {
                from: local.clone(),
                to: remote.clone(),
                reason: reason.clone(),
                exit2: false,
            };
            let _ = self.post(remote.node(), exit, None, false);
        }
    }

    /// Remove the calling actor's links with the process `remote` (Erlang's
    /// `unlink/1`, by the UNLINK_ID protocol): from now on neither end's
    /// exit reaches the other, including an exit already on its way.
    /// Unlinking what is not linked does nothing.
    ///
    /// # Panics
    ///
    /// Outside a smarm actor.
    pub fn unlink(&self, remote: &Pid) {
        smarm_core::require_actor("smarm::dist::Node::unlink");
        let owner = smarm_core::self_pid();
        let removed = self
            .with_state(|s| {
                let keys: Vec<(u32, Pid)> = s
                    .signals
                    .links
                    .iter()
                    .filter(|((_, r), e)| r == remote && e.owner == owner)
                    .map(|(k, _)| k.clone())
                    .collect();
                let removed: Vec<(u32, LinkEntry, u64)> = keys
                    .into_iter()
                    .filter_map(|k| {
                        let entry = s.signals.links.remove(&k)?;
                        let id = s.signals.next_unlink_id;
                        s.signals.next_unlink_id += 1;
                        Some((k.0, entry, id))
                    })
                    .collect();
                removed
            })
            .unwrap_or_default();
        for (local, entry, id) in removed {
            let _ = entry.proxy.send(LinkSignal::Unlink);
            let request = Control::Unlink {
                id: crate::term::ToTerm::to_term(&id),
                from: Pid::new(self.name(), local, 0, self.creation()),
                to: remote.clone(),
                ack: false,
            };
            let _ = self.post(remote.node(), request, None, false);
        }
    }

    /// A fresh pid of this node for a link's local end.
    fn endpoint_pid(&self) -> Pid {
        let id = self.with_state(|s| s.procs.next_pid_id()).unwrap_or(0);
        Pid::new(self.name(), id, 0, self.creation())
    }

    /// Fire link (`local`, `remote`) with `reason`, if it is still there.
    pub(super) fn fire_link(&self, local: u32, remote: &Pid, reason: Term) {
        if let Some(entry) = self
            .with_state(|s| s.signals.links.remove(&(local, remote.clone())))
            .flatten()
        {
            let _ = entry.proxy.send(LinkSignal::Exit(reason));
        }
    }

    /// A peer's LINK: `from` links to `to`, a pid of ours.
    pub(super) fn linked_by(&self, from: Pid, to: Pid) {
        let owner = (to.node() == self.name() && to.creation() == self.creation())
            .then(|| {
                self.with_state(|s| s.procs.owners.get(&to.id()).copied())
                    .flatten()
            })
            .flatten()
            .filter(|o| smarm_core::is_alive(*o));
        let Some(owner) = owner else {
            // Linking to a process that is not there: it is dead.
            let exit = Control::Exit {
                from: to,
                to: from.clone(),
                reason: atom("noproc"),
                exit2: false,
            };
            let _ = self.post(from.node(), exit, None, false);
            return;
        };
        let (tx, rx) = channel::<LinkSignal>();
        let entry = LinkEntry { proxy: tx, owner };
        let _ = self.with_state(|s| s.signals.links.insert((to.id(), from.clone()), entry)); // (L1)
        let node = self.clone();
        self.spawn("smarm.dist.link", move || {
            let exits = smarm_core::trap_exit(true);
            smarm_core::link(owner);
            node.proxy(to, from, owner, exits, rx)
        });
    }

    /// A peer's EXIT2: `exit(To, Reason)` from `from` to a pid of ours, by
    /// Erlang's rules: its owner ends with the reason (`normal` ignored,
    /// `kill` in any case), or, trapping exits, the mailbox gets
    /// `{'EXIT', From, Reason}`.
    pub(super) fn exit_signal(&self, from: Pid, to: Pid, reason: Term) {
        let owner = self
            .with_state(|s| s.procs.owners.get(&to.id()).copied())
            .flatten()
            .filter(|_| to.node() == self.name() && to.creation() == self.creation());
        let Some(owner) = owner else {
            self.count(|s| &s.undeliverable);
            return;
        };
        if smarm_core::signal::exit_from_node(owner, exit_signal(&reason)) {
            let term = crate::term::tuple(vec![atom("EXIT"), from.to_term(), reason]);
            self.deliver_to_pid(Some(from), &to, term, None);
        }
    }

    /// A peer's UNLINK_ID: the link goes, and the peer hears UNLINK_ID_ACK
    /// before any other signal from `to`.
    pub(super) fn unlinked_by(&self, id: Term, from: Pid, to: Pid) {
        self.unlinked_legacy(from.clone(), to.clone());
        let ack = Control::Unlink {
            id,
            from: to,
            to: from.clone(),
            ack: true,
        };
        let _ = self.post(from.node(), ack, None, false);
    }

    /// A peer's UNLINK (the protocol before OTP 26, with no
    /// acknowledgement): the link goes.
    pub(super) fn unlinked_legacy(&self, from: Pid, to: Pid) {
        if let Some(entry) = self
            .with_state(|s| s.signals.links.remove(&(to.id(), from)))
            .flatten()
        {
            let _ = entry.proxy.send(LinkSignal::Unlink);
        }
    }

    /// A link's proxy: `local` (a pid of ours) is linked with `remote`,
    /// and stands for the smarm actor `owner` (module docs).
    fn proxy(
        &self,
        local: Pid,
        remote: Pid,
        owner: smarm_core::Pid,
        exits: Option<smarm_core::Receiver<smarm_core::Exit>>,
        signals: smarm_core::Receiver<LinkSignal>,
    ) {
        let Some(exits) = exits else { return };
        loop {
            match smarm_core::select(&[&exits, &signals]) {
                0 => {
                    let Ok(exit) = exits.recv() else { return };
                    if exit.from != owner {
                        continue;
                    }
                    // The actor ended: the remote end hears why, once.
                    if self
                        .with_state(|s| s.signals.links.remove(&(local.id(), remote.clone())))
                        .flatten()
                        .is_some()
                    {
                        let reason = reason_term(&exit.reason);
                        let signal = Control::Exit {
                            from: local,
                            to: remote.clone(),
                            reason,
                            exit2: false,
                        };
                        let _ = self.post(remote.node(), signal, None, false);
                    }
                    return;
                }
                _ => match signals.recv() {
                    Ok(LinkSignal::Exit(reason)) => {
                        if matches!(&reason, Term::Atom(Atom { name }) if name == "normal") {
                            return; // a normal end reaches only an actor that traps exits
                        }
                        smarm_core::exit_with(down_reason(&reason));
                    }
                    Ok(LinkSignal::Unlink) | Err(_) => {
                        smarm_core::unlink(owner);
                        return;
                    }
                },
            }
        }
    }
}
