//! The registry's write side: the authoritative name table behind the
//! registry lock, and [`Locked`], the view every locked operation works
//! through, which keeps the lock-free snapshots of [`Fast`] in step.

use super::fast::{Fast, Inbox, NameTable, Padded, Published};
use smarm_core::ext;
use smarm_core::{Pid, Sender};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};


/// A multiply-rotate hash over 8-byte words (FxHash's step), computable
/// in a `const fn`, so a `Name` constant carries its hash and a send by
/// name does not hash at all. Names are a program's own short constants:
/// SipHash's DoS resistance buys nothing here.
pub(super) const fn name_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h: u64 = 0;
    let mut i = 0;
    while i < bytes.len() {
        let mut word: u64 = 0;
        let mut j = 0;
        while j < 8 && i + j < bytes.len() {
            word |= (bytes[i + j] as u64) << (8 * j);
            j += 1;
        }
        h = (h.rotate_left(5) ^ word).wrapping_mul(K);
        i += 8;
    }
    (h.rotate_left(5) ^ bytes.len() as u64).wrapping_mul(K)
}

/// [`name_hash`] as a `Hasher`, for the authoritative `HashMap`.
#[derive(Default)]
pub(super) struct NameHasher(u64);

impl Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = name_hash(bytes) ^ self.0.rotate_left(17);
    }
}

/// The authoritative name table (inboxes live only in [`Fast`]).
#[derive(Default)]
pub(super) struct Tables {
    pub(super) by_name: HashMap<&'static str, Pid, BuildHasherDefault<NameHasher>>,
    /// `by_name` changed since the snapshot was published.
    names_dirty: bool,
}

/// The registry, locked: every change goes through here, and
/// [`Locked::finish`] republishes the name snapshot if it changed.
pub(super) struct Locked<'a> {
    pub(super) tables: &'a mut Tables,
    pub(super) fast: &'a Fast,
}

impl Locked<'_> {
    /// The live holder of `name`, pruning a dead binding (I2).
    pub(super) fn holder(&mut self, name: &str) -> Option<Pid> {
        let pid = *self.tables.by_name.get(name)?;
        if ext::is_alive(pid) {
            Some(pid)
        } else {
            self.unbind(name);
            None
        }
    }

    pub(super) fn bind(&mut self, name: &'static str, pid: Pid) {
        self.tables.by_name.insert(name, pid);
        self.tables.names_dirty = true;
    }

    pub(super) fn unbind(&mut self, name: &str) {
        if self.tables.by_name.remove(name).is_some() {
            self.tables.names_dirty = true;
        }
    }

    /// The live inbox of `pid`, pruning the slot's inbox if its owner is
    /// dead (I2).
    pub(super) fn live_inbox(&mut self, pid: Pid) -> Option<&Inbox> {
        let stale = self
            .fast
            .inbox(pid.index())
            .is_some_and(|i| !ext::is_alive(i.pid));
        if stale {
            self.fast.set_inbox(pid.index(), None);
        }
        self.fast.inbox(pid.index()).filter(|i| i.pid == pid)
    }

    /// Publish `tx` as `pid`'s channel for `M`, replacing an inbox a
    /// previous tenant of the slot left.
    pub(super) fn publish<M: Send + 'static>(&mut self, pid: Pid, tx: Sender<M>) {
        let inbox = match self.fast.inbox(pid.index()).filter(|i| i.pid == pid) {
            Some(current) => current.with(tx),
            None => Inbox {
                pid,
                channels: vec![Padded(Published::new(tx))],
            },
        };
        self.fast.set_inbox(pid.index(), Some(inbox));
    }

    /// Republish the name snapshot if a binding changed.
    pub(super) fn finish(self) {
        if self.tables.names_dirty {
            self.tables.names_dirty = false;
            self.fast
                .set_names(NameTable::new(&self.tables.by_name));
        }
    }
}
