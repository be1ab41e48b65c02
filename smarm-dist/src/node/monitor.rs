//! Process monitors across nodes, as Erlang's `erlang:monitor(process,
//! Proc)`: a mailbox monitors a pid or a `{Name, Node}` and receives
//! `{'DOWN', Ref, process, Proc, Reason}` when it ends, `noproc` if it did
//! not exist, `noconnection` if its node goes away; a process on another
//! node monitors one of ours and hears `normal` (or `panic`) when the
//! mailbox is dropped.
//!
//! Invariants:
//! - (M1) A monitor is recorded before its MONITOR_P is sent, so an
//!   answer that comes at once finds it; each fires at most once (the
//!   record is removed by whoever fires it, under the state lock).
//! - (M2) When a connection goes down, every monitor of ours on its node
//!   fires with `noconnection`, and every monitor its processes held on
//!   ours is forgotten (N2's single removal runs this once).

use super::{Message, Node, SendError, State};
use crate::control::Control;
use crate::node::{Dest, Mailbox};
use crate::pid::Pid;
use crate::term::{Atom, Reference, Term, atom, tuple};

/// A monitor a mailbox of ours holds.
pub(super) struct Watch {
    mailbox: u32,
    /// The watched process as MONITOR_P named it (a pid or a name atom).
    sent: Term,
    /// As the `DOWN` message names it (a pid, or `{Name, Node}`).
    down: Term,
    node: String,
}

/// A monitor a process elsewhere holds on a mailbox of ours.
pub(super) struct Watcher {
    pid: Pid,
    reference: Term,
    /// Our mailbox as the watcher named it.
    target: Term,
}

/// `{'DOWN', Ref, process, Proc, Reason}`.
pub(super) fn down_message(reference: &Term, proc_: &Term, reason: Term) -> Term {
    tuple(vec![
        atom("DOWN"),
        reference.clone(),
        atom("process"),
        proc_.clone(),
        reason,
    ])
}

/// Record that our mailbox `mailbox` watches `sent` on `node` under
/// `reference` (M1: before the request goes out, or as its answer
/// comes); its `DOWN` names the process `down`.
pub(super) fn watch(
    s: &mut State,
    reference: Term,
    mailbox: u32,
    sent: Term,
    down: Term,
    node: &str,
) {
    s.signals.watching.insert(
        reference,
        Watch {
            mailbox,
            sent,
            down,
            node: node.to_string(),
        },
    );
}

/// The connection to `peer` is gone (M2).
pub(super) fn node_down(s: &mut State, peer: &str) {
    let fired: Vec<_> = s
        .signals
        .watching
        .extract_if(|_, w| w.node == peer)
        .collect();
    for (reference, w) in fired {
        if let Some(tx) = s.procs.mailboxes.get(&w.mailbox) {
            let term = down_message(&reference, &w.down, atom("noconnection"));
            let _ = tx.try_send(Message::new(Pid::from_term(&w.down), term));
        }
    }
    for watchers in s.signals.watched.values_mut() {
        watchers.retain(|w| w.pid.node() != peer);
    }
}

impl Node {
    /// A reference unique to this node's incarnation.
    pub(super) fn new_reference(&self) -> Term {
        let n = self
            .with_state(|s| {
                s.signals.next_ref += 1;
                s.signals.next_ref
            })
            .unwrap_or(0);
        Term::from(Reference {
            node: Atom::from(self.name()),
            id: vec![(n & 0x3ffff) as u32, (n >> 18) as u32, (n >> 50) as u32],
            creation: self.creation(),
        })
    }

    /// The mailbox with `pid` (a pid term) or name `name` (an atom) here.
    fn resolve(&self, s: &State, proc_: &Term) -> Option<u32> {
        match proc_ {
            Term::Atom(a) => s.procs.names.get(&a.name).map(|(id, _)| *id),
            other => {
                let pid = Pid::from_term(other)?;
                (pid.node() == self.name()
                    && pid.creation() == self.creation()
                    && s.procs.mailboxes.contains_key(&pid.id()))
                .then_some(pid.id())
            }
        }
    }

    /// A peer's MONITOR_P: `from` watches `to` (a pid or a name of ours);
    /// `noproc` at once if there is no such process.
    pub(super) fn monitored_by(&self, from: Pid, to: Term, reference: Term) {
        let id = self.with_state(|s| self.resolve(s, &to)).flatten();
        match id {
            Some(id) => self.watched_by(from, id, reference, to),
            None => {
                let node = from.node().to_string();
                let exit = Control::MonitorPExit {
                    from: to,
                    to: from,
                    reference,
                    reason: atom("noproc"),
                };
                let _ = self.post(&node, exit, None, false);
            }
        }
    }

    /// `from` watches our mailbox `mailbox` (named `target` by the
    /// watcher) under `reference`.
    pub(super) fn watched_by(&self, from: Pid, mailbox: u32, reference: Term, target: Term) {
        let _ = self.with_state(|s| {
            s.signals.watched.entry(mailbox).or_default().push(Watcher {
                pid: from,
                reference,
                target,
            })
        });
    }

    /// A peer's DEMONITOR_P: `from` no longer watches.
    pub(super) fn demonitored_by(&self, from: &Pid, reference: &Term) {
        let _ = self.with_state(|s| {
            for watchers in s.signals.watched.values_mut() {
                watchers.retain(|w| !(&w.pid == from && &w.reference == reference));
            }
        });
    }

    /// A peer's MONITOR_P_EXIT: the process `from` that our mailbox `to`
    /// watched ended; the mailbox gets its `DOWN` (M1: once).
    pub(super) fn monitor_fired(&self, from: Term, to: &Pid, reference: &Term, reason: Term) {
        let _ = self.with_state(|s| {
            let w = s.signals.watching.remove(reference)?;
            if w.mailbox != to.id() {
                return None;
            }
            let tx = s.procs.mailboxes.get(&w.mailbox)?;
            let term = down_message(reference, &w.down, reason);
            let _ = tx.try_send(Message::new(Pid::from_term(&from), term));
            Some(())
        });
    }

    /// The mailbox `pid` is gone: its watchers hear `reason`, its own
    /// monitors are taken down.
    pub(super) fn mailbox_ended(&self, pid: &Pid, reason: Term) {
        let Some((watchers, watches)) = self.with_state(|s| {
            let watchers = s.signals.watched.remove(&pid.id()).unwrap_or_default();
            let mine: Vec<Term> = s
                .signals
                .watching
                .iter()
                .filter(|(_, w)| w.mailbox == pid.id())
                .map(|(r, _)| r.clone())
                .collect();
            let watches: Vec<(Term, Watch)> = mine
                .into_iter()
                .filter_map(|r| s.signals.watching.remove(&r).map(|w| (r, w)))
                .collect();
            (watchers, watches)
        }) else {
            return;
        };
        for w in watchers {
            let node = w.pid.node().to_string();
            let exit = Control::MonitorPExit {
                from: w.target,
                to: w.pid,
                reference: w.reference,
                reason: reason.clone(),
            };
            let _ = self.post(&node, exit, None, false);
        }
        for (reference, w) in watches {
            let demonitor = Control::DemonitorP {
                from: pid.clone(),
                to: w.sent,
                reference,
            };
            let _ = self.post(&w.node, demonitor, None, false);
        }
    }
}

impl Mailbox {
    /// Monitor `to` (a pid, or `(name, node)`), as `erlang:monitor(process,
    /// To)`: when it ends, this mailbox receives `{'DOWN', Ref, process,
    /// Proc, Reason}` with the returned `Ref`; `noproc` at once if it does
    /// not exist, `noconnection` if its node cannot be reached or goes
    /// away.
    pub fn monitor(&self, to: impl Into<Dest>) -> Term {
        let reference = self.node.new_reference();
        let (node, sent, down) = match to.into() {
            Dest::Pid(p) => (p.node().to_string(), p.to_term(), p.to_term()),
            Dest::Name { name, node } => {
                let down = tuple(vec![atom(&name), atom(&node)]);
                (node, atom(&name), down)
            }
        };
        let _ = self.node.with_state(|s| {
            let (sent, down) = (sent.clone(), down.clone());
            watch(s, reference.clone(), self.pid.id(), sent, down, &node); // (M1)
        });
        let request = Control::MonitorP {
            from: self.pid.clone(),
            to: sent,
            reference: reference.clone(),
        };
        if self.node.post(&node, request, None, true).is_err() {
            // The node is unreachable: the monitor fires at once.
            let fired = self
                .node
                .with_state(|s| s.signals.watching.remove(&reference))
                .flatten();
            if fired.is_some() {
                let _ = self.node.with_state(|s| {
                    if let Some(tx) = s.procs.mailboxes.get(&self.pid.id()) {
                        let term = down_message(&reference, &down, atom("noconnection"));
                        let _ = tx.try_send(Message::new(Pid::from_term(&down), term));
                    }
                });
            }
        }
        reference
    }

    /// Take the monitor `reference` down (`erlang:demonitor/1`): no `DOWN`
    /// arrives for it after this returns, though one already delivered
    /// stays in the mailbox. `false` if it was not active.
    pub fn demonitor(&self, reference: &Term) -> bool {
        let Some(w) = self
            .node
            .with_state(|s| s.signals.watching.remove(reference))
            .flatten()
        else {
            return false;
        };
        let request = Control::DemonitorP {
            from: self.pid.clone(),
            to: w.sent,
            reference: reference.clone(),
        };
        let _: Result<(), SendError> = self.node.post(&w.node, request, None, false);
        true
    }
}
