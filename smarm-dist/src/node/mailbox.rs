//! Node-visible mailboxes: a pid (and maybe a registered name) other
//! nodes can send to, received from by the actor that holds it.

use super::{Dest, Message, Node, SendError};
use crate::pid::Pid;
use crate::term;
use crate::term::{Term, ToTerm};
use smarm_core::channel::{Receiver, Sender, channel};
use smarm_core::{RecvError, RecvTimeoutError};
use std::time::Duration;
use thiserror::Error;
/// The name is registered on this node already.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("smarm::dist::Node::register: the name {0:?} is already registered on this node")]
pub struct RegisterError(pub String);

/// A node-visible mailbox: a pid (and perhaps a name) other nodes can
/// send to, and the receiving end of its messages. Dropping it
/// unregisters both.
#[derive(Debug)]
pub struct Mailbox {
    pub(super) pid: Pid,
    pub(super) name: Option<String>,
    pub(super) rx: Inbox,
    pub(super) node: Node,
    /// The exit reason its watchers hear, where not the default.
    pub(super) exit: Option<Term>,
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

#[derive(Debug)]
pub(super) enum Inbox {
    Unbounded(Receiver<Message>),
    Bounded(smarm_core::BoundedReceiver<Message>),
}

impl Drop for Mailbox {
    fn drop(&mut self) {
        let (id, name) = (self.pid.id(), self.name.take());
        let _ = self.node.with_state(|s| {
            s.procs.mailboxes.remove(&id);
            s.procs.owners.remove(&id);
            if let Some(name) = name
                && s.procs
                    .names
                    .get(&name)
                    .is_some_and(|(held, _)| *held == id)
            {
                s.procs.names.remove(&name);
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

impl Node {
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
    /// is dropped and counted ([`Stats::dropped_full`](super::Stats::dropped_full)), since the
    /// connection's reader must never wait; a send from this node into it
    /// is dropped the same way.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0.
    pub fn register_bounded(&self, name: &str, capacity: usize) -> Result<Mailbox, RegisterError> {
        self.mailbox_with(Some(name), Some(capacity))
    }

    /// Whether `to` is a mailbox of this node that the calling actor owns
    /// (a call to it could not be answered).
    pub(super) fn owned_by_caller(&self, to: &super::Dest) -> bool {
        let Some(me) = smarm_core::try_self_pid() else {
            return false;
        };
        let here = self.name();
        self.with_state(|s| {
            let id = match to {
                super::Dest::Pid(pid) if pid.node() == here => Some(pid.id()),
                super::Dest::Name { name, node } if node == here => {
                    s.procs.names.get(name).map(|(id, _)| *id)
                }
                _ => None,
            };
            id.and_then(|id| s.procs.owners.get(&id)) == Some(&me)
        })
        .unwrap_or(false)
    }

    /// Hand a message for the pid `to` to its mailbox, if `to` is one of
    /// this incarnation's (never waits: a connection's reader must not
    /// stall).
    pub(super) fn deliver_to_pid(
        &self,
        from: Option<Pid>,
        to: &Pid,
        term: Term,
        trace_token: Option<Term>,
    ) {
        let tx = (to.node() == self.name() && to.creation() == self.creation())
            .then(|| {
                self.with_state(|s| s.procs.mailboxes.get(&to.id()).cloned())
                    .flatten()
            })
            .flatten();
        self.deliver_into(tx, from, term, trace_token);
    }

    /// Hand a message for the name `name` to its mailbox.
    pub(super) fn deliver_to_name(
        &self,
        from: Option<Pid>,
        name: &str,
        term: Term,
        trace_token: Option<Term>,
    ) {
        let tx = self
            .with_state(|s| s.procs.names.get(name).map(|(_, tx)| tx.clone()))
            .flatten();
        self.deliver_into(tx, from, term, trace_token);
    }

    fn deliver_into(
        &self,
        tx: Option<Sender<Message>>,
        from: Option<Pid>,
        term: Term,
        trace_token: Option<Term>,
    ) {
        let Some(tx) = tx else {
            self.count(|s| &s.undeliverable);
            return;
        };
        let message = Message {
            from,
            term,
            trace_token: trace_token.map(Box::new),
        };
        match tx.try_send(message) {
            Ok(()) => {}
            Err(smarm_core::TrySendError::Full(_)) => self.count(|s| &s.dropped_full),
            Err(smarm_core::TrySendError::Disconnected(_)) => self.count(|s| &s.undeliverable),
        }
    }

    /// A mailbox with a new pid, registered as `name` if that is free.
    pub(super) fn mailbox_with(
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
                if let Some(name) = name
                    && s.procs.names.contains_key(name)
                {
                    return None;
                }
                let id = s.procs.next_pid_id();
                s.procs.mailboxes.insert(id, tx.clone());
                if smarm_core::in_actor() {
                    s.procs.owners.insert(id, smarm_core::self_pid());
                }
                if let Some(name) = name {
                    s.procs.names.insert(name.to_string(), (id, tx));
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
}
