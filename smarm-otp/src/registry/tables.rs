//! The registry's write side: the authoritative name table behind the
//! registry lock, and [`Locked`], the view every locked operation works
//! through, which keeps the lock-free side ([`ReadSide`]) in step.

use super::names::NameValue;
use super::read_side::{Inbox, Published, ReadSide};
use crossbeam_utils::CachePadded;
use smarm_core::hash::{BuildWordHasher, hash_bytes as name_hash};
use smarm_core::signal;
use smarm_core::{Pid, Sender};
use std::any::TypeId;
use std::collections::HashMap;

/// A name's holder, and the message type it was registered for (the
/// channel a send by that name uses).
#[derive(Clone, Copy)]
pub(super) struct Binding {
    pub(super) pid: Pid,
    pub(super) msg: TypeId,
    /// `msg`'s name, for errors.
    pub(super) msg_name: &'static str,
}

/// The authoritative name table (inboxes live only in [`ReadSide`]).
#[derive(Default)]
pub(super) struct Tables {
    pub(super) by_name: HashMap<&'static str, Binding, BuildWordHasher>,
    /// The names each actor holds (the reverse of `by_name`), to refresh
    /// their lock-free values when its inbox changes (read side (F5)).
    names_of: HashMap<Pid, Vec<&'static str>>,
}

/// The registry, locked: every change goes through here and is published
/// to the lock-free side ([`ReadSide`]) before the lock is released.
pub(super) struct Locked<'a> {
    pub(super) tables: &'a mut Tables,
    pub(super) read_side: &'a ReadSide,
}

impl Locked<'_> {
    /// The live holder of `name`, pruning a dead binding (I2).
    pub(super) fn holder(&mut self, name: &str) -> Option<Pid> {
        let pid = self.tables.by_name.get(name)?.pid;
        if smarm_core::is_alive(pid) {
            Some(pid)
        } else {
            self.unbind(name);
            None
        }
    }

    /// The message type `name` is bound for, and its name.
    pub(super) fn binding_type(&self, name: &str) -> Option<(TypeId, &'static str)> {
        self.tables.by_name.get(name).map(|b| (b.msg, b.msg_name))
    }

    /// The name `pid` holds for messages of type `msg`, if any.
    pub(super) fn name_for_type(&self, pid: Pid, msg: TypeId) -> Option<&'static str> {
        let names = self.tables.names_of.get(&pid)?;
        names
            .iter()
            .copied()
            .find(|n| self.tables.by_name.get(n).is_some_and(|b| b.msg == msg))
    }

    /// Bind `name` to `pid`, for messages of type `msg`.
    pub(super) fn bind(
        &mut self,
        name: &'static str,
        pid: Pid,
        msg: TypeId,
        msg_name: &'static str,
    ) {
        let binding = Binding { pid, msg, msg_name };
        if let Some(old) = self.tables.by_name.insert(name, binding) {
            self.forget_name_of(old.pid, name);
        }
        self.tables.names_of.entry(pid).or_default().push(name);
        self.refresh_name(name);
    }

    pub(super) fn unbind(&mut self, name: &str) {
        if let Some((name, old)) = self.tables.by_name.remove_entry(name) {
            self.forget_name_of(old.pid, name);
            self.read_side.names.set(name, None, &mut retire);
        }
    }

    fn forget_name_of(&mut self, pid: Pid, name: &str) {
        if let Some(names) = self.tables.names_of.get_mut(&pid) {
            names.retain(|n| *n != name);
            if names.is_empty() {
                self.tables.names_of.remove(&pid);
            }
        }
    }

    /// Republish `name`'s lock-free value from its binding and its
    /// holder's current inbox.
    fn refresh_name(&self, name: &'static str) {
        let value = self.tables.by_name.get(name).map(|b| {
            let inbox = self
                .read_side
                .inbox(b.pid.index())
                .filter(|i| i.pid == b.pid);
            NameValue::new(b.msg, inbox)
        });
        self.read_side.names.set(name, value, &mut retire);
    }

    /// Refresh the values of every name `pid` holds (read side (F5)).
    fn refresh_names_of(&self, pid: Pid) {
        if let Some(names) = self.tables.names_of.get(&pid) {
            for name in names {
                self.refresh_name(name);
            }
        }
    }

    /// Publish (or clear) the inbox of `index`, keeping the names of the
    /// replaced inbox's owner and of `pid` in step (read side (F5)).
    fn set_inbox(&self, index: u32, pid: Option<Pid>, inbox: Option<Inbox>) {
        let replaced = self.read_side.set_inbox(index, inbox);
        if let Some(old) = &replaced {
            self.refresh_names_of(old.pid);
        }
        if let Some(pid) = pid {
            self.refresh_names_of(pid);
        }
        // Only now does no published value point at it (F5).
        if let Some(old) = replaced {
            debug_assert!(
                !self.a_name_points_at(old.pid, &old),
                "registry: retiring an inbox a published name still points at (read side (F5))"
            );
            retire(old);
        }
    }

    /// Whether the published value of a name `pid` holds points at
    /// `inbox`: read side (F5) forbids retiring `inbox` while one does.
    fn a_name_points_at(&self, pid: Pid, inbox: &Inbox) -> bool {
        self.tables.names_of.get(&pid).is_some_and(|names| {
            names.iter().any(|name| {
                self.read_side
                    .name(name, name_hash(name.as_bytes()))
                    .and_then(NameValue::inbox)
                    .is_some_and(|i| std::ptr::eq(i, inbox))
            })
        })
    }

    /// The live inbox of `pid`, pruning the slot's inbox if its owner is
    /// dead (I2).
    pub(super) fn live_inbox(&mut self, pid: Pid) -> Option<&Inbox> {
        let stale = self
            .read_side
            .inbox(pid.index())
            .is_some_and(|i| !smarm_core::is_alive(i.pid));
        if stale {
            self.set_inbox(pid.index(), None, None);
        }
        self.read_side.inbox(pid.index()).filter(|i| i.pid == pid)
    }

    /// Publish `tx` as `pid`'s channel for `M`, replacing an inbox a
    /// previous tenant of the slot left.
    pub(super) fn publish<M: Send + 'static>(&mut self, pid: Pid, tx: Sender<M>) {
        let inbox = match self.read_side.inbox(pid.index()).filter(|i| i.pid == pid) {
            Some(current) => current.with(tx),
            None => {
                // Its first channel: forget it all when it exits (I4).
                signal::on_exit(pid, |pid, _| super::forget(pid));
                Inbox {
                    pid,
                    channels: vec![CachePadded::new(Published::new(tx))],
                }
            }
        };
        self.set_inbox(pid.index(), Some(pid), Some(inbox));
    }

    /// Remove every trace of the exited actor `pid` (I4).
    pub(super) fn forget(&mut self, pid: Pid) {
        if let Some(names) = self.tables.names_of.get(&pid).cloned() {
            for name in names {
                self.unbind(name);
            }
        }
        if self
            .read_side
            .inbox(pid.index())
            .is_some_and(|i| i.pid == pid)
        {
            self.set_inbox(pid.index(), None, None);
        }
    }
}

/// Hand what a writer unpublished to core's deferred drop (read side (F1)).
fn retire(value: super::names::Retired) {
    smarm_core::runtime::defer_drop(value);
}
