//! The registry's lock-free read side: the name table (`names.rs`), and one
//! immutable inbox per slot index, published through an atomic pointer.
//!
//! Writers hold the tables lock, build a replacement, swap it in and hand
//! the old value to core's [`defer_drop`](smarm_core::runtime::defer_drop).
//! Readers (a name- or pid-addressed send) load the pointers inside a
//! `with_runtime_local` closure, which cannot switch the actor out, so core
//! keeps what they read alive until they are done.
//!
//! # Invariants
//!
//! - (F1) Only a writer holding the tables lock stores these pointers; each
//!   store is AcqRel and the value it replaces goes to `defer_drop`, never
//!   straight to `drop`.
//! - (F2) Readers load with Acquire and use what they read only inside the
//!   `with_runtime_local` closure that loaded it.
//! - (F3) An inbox is never changed in place: publishing a channel builds a
//!   new inbox with the others' senders cloned.
//! - (F4) Chunks of the inbox table are allocated by writers and freed only
//!   when the registry is dropped with its runtime.
//! - (F5) A name's value points at its holder's inbox: a writer that
//!   replaces or clears an inbox refreshes the values of every name bound
//!   to its owner in the same hold of the lock, and only then hands the
//!   replaced inbox to `defer_drop` (names (N2)). Retired first, the inbox
//!   could be freed while a still-published value points at it: a reader
//!   that passed a quiescent point after the retire, then read that value,
//!   would follow it into freed memory.

use super::names::{NameTable, NameValue};
use crossbeam_utils::CachePadded;
use smarm_core::{Pid, Sender};
use std::any::{Any, TypeId};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Inbox slots per chunk.
const CHUNK: usize = 4096;
/// Chunks: enough for every slot index a runtime can have.
const TOP: usize = smarm_core::config::MAX_ACTORS_LIMIT.div_ceil(CHUNK);

/// One actor's published channels, by message type.
pub(super) struct Inbox {
    pub(super) pid: Pid,
    /// Each on cache lines of its own: a small heap block next to data
    /// another thread writes (a channel's queue) would otherwise miss in
    /// cache on every read (measured: a fifth of a name-addressed send).
    pub(super) channels: Vec<CachePadded<Published>>,
}

/// A published `Sender<M>`, type-erased, with what the registry needs to do
/// with it without knowing `M`.
pub(super) struct Published {
    type_id: TypeId,
    /// A `CachePadded<Sender<M>>`.
    sender: Box<dyn Any + Send + Sync>,
    /// (queued, received) counts, for introspection.
    counts: fn(&(dyn Any + Send + Sync)) -> (usize, u64),
    /// A clone of the sender, for the next inbox (F3).
    clone: fn(&(dyn Any + Send + Sync)) -> Box<dyn Any + Send + Sync>,
}

impl Published {
    pub(super) fn new<M: Send + 'static>(tx: Sender<M>) -> Self {
        Published {
            type_id: TypeId::of::<M>(),
            sender: Box::new(CachePadded::new(tx)),
            counts: |s| {
                s.downcast_ref::<CachePadded<Sender<M>>>()
                    .map_or((0, 0), |tx| (tx.queued_len(), tx.received_count()))
            },
            clone: |s| match s.downcast_ref::<CachePadded<Sender<M>>>() {
                Some(tx) => Box::new(CachePadded::new((**tx).clone())),
                None => unreachable!("a Published holds the Sender its TypeId names"),
            },
        }
    }

    /// The (queued, received) counts of this channel.
    pub(super) fn counts(&self) -> (usize, u64) {
        (self.counts)(self.sender.as_ref())
    }
}

impl Clone for Published {
    fn clone(&self) -> Self {
        Published {
            type_id: self.type_id,
            sender: (self.clone)(self.sender.as_ref()),
            counts: self.counts,
            clone: self.clone,
        }
    }
}

impl Inbox {
    /// The sender for `M`, if `pid` published one.
    pub(super) fn sender<M: Send + 'static>(&self) -> Option<&Sender<M>> {
        let published = self
            .channels
            .iter()
            .find(|p| p.type_id == TypeId::of::<M>())?;
        let tx: *const (dyn Any + Send + Sync) = &*published.sender;
        // SAFETY: `Published::new` stores every `CachePadded<Sender<M>>` beside
        // `TypeId::of::<M>()`, so the box found by that id holds one (the
        // cast skips `downcast_ref`'s virtual call).
        Some(unsafe { &**tx.cast::<CachePadded<Sender<M>>>() })
    }

    /// The address of the boxed `CachePadded<Sender<M>>` published for the
    /// message type `msg`, if any.
    pub(super) fn sender_ptr(&self, msg: TypeId) -> Option<*const ()> {
        let published = self.channels.iter().find(|p| p.type_id == msg)?;
        let p: *const (dyn Any + Send + Sync) = &*published.sender;
        Some(p.cast())
    }

    /// This inbox with `tx` published for `M` (replacing an older one).
    pub(super) fn with<M: Send + 'static>(&self, tx: Sender<M>) -> Inbox {
        let mut channels: Vec<CachePadded<Published>> = self
            .channels
            .iter()
            .filter(|p| p.type_id != TypeId::of::<M>())
            .map(|p| CachePadded::new((**p).clone()))
            .collect();
        channels.push(CachePadded::new(Published::new(tx)));
        Inbox {
            pid: self.pid,
            channels,
        }
    }
}

struct Chunk {
    slots: [AtomicPtr<CachePadded<Inbox>>; CHUNK],
}

/// The read side of one runtime's registry.
pub(super) struct ReadSide {
    pub(super) names: NameTable,
    inboxes: Box<[AtomicPtr<Chunk>]>,
}

impl Default for ReadSide {
    fn default() -> Self {
        ReadSide {
            names: NameTable::default(),
            inboxes: (0..TOP).map(|_| AtomicPtr::new(null_mut())).collect(),
        }
    }
}

impl ReadSide {
    // ----- readers (F2) -----

    /// The binding of `name` (with `hash`, its `name_hash`), alive or not.
    #[inline]
    pub(super) fn name(&self, name: &'static str, hash: u64) -> Option<&NameValue> {
        self.names.get(name, hash)
    }

    /// The inbox published for slot `index`, if any (of whichever
    /// incarnation published it: compare `pid`).
    #[inline]
    pub(super) fn inbox(&self, index: u32) -> Option<&Inbox> {
        let (hi, lo) = (index as usize / CHUNK, index as usize % CHUNK);
        let chunk = self.inboxes.get(hi)?.load(Ordering::Acquire);
        if chunk.is_null() {
            return None;
        }
        // SAFETY: chunks live as long as `self` (F4).
        let inbox = unsafe { &*chunk }.slots[lo].load(Ordering::Acquire);
        // SAFETY: as for `names`: live until after this closure (F1, F2).
        (!inbox.is_null()).then(|| unsafe { &**inbox })
    }

    // ----- writers: the tables lock is held (F1) -----

    /// Publish (or, with `None`, clear) the inbox of slot `index`; returns
    /// the inbox it replaced, unpublished but not yet retired: the caller
    /// refreshes its owner's names under the same hold of the lock, then
    /// retires it (F5).
    #[must_use = "the replaced inbox's owner's names must be refreshed, then the inbox retired (F5)"]
    pub(super) fn set_inbox(
        &self,
        index: u32,
        inbox: Option<Inbox>,
    ) -> Option<Box<CachePadded<Inbox>>> {
        let (hi, lo) = (index as usize / CHUNK, index as usize % CHUNK);
        let Some(top) = self.inboxes.get(hi) else {
            unreachable!("slot index {index} beyond MAX_ACTORS_LIMIT");
        };
        let mut chunk = top.load(Ordering::Acquire);
        if chunk.is_null() {
            inbox.as_ref()?;
            chunk = Box::into_raw(Box::new(Chunk {
                slots: std::array::from_fn(|_| AtomicPtr::new(null_mut())),
            }));
            top.store(chunk, Ordering::Release);
        }
        let new = inbox.map_or(null_mut(), |i| Box::into_raw(Box::new(CachePadded::new(i))));
        // SAFETY: chunks live as long as `self` (F4).
        let old = unsafe { &*chunk }.slots[lo].swap(new, Ordering::AcqRel);
        if old.is_null() {
            return None;
        }
        // SAFETY: `old` came from `Box::into_raw` and is no longer
        // reachable through the inbox table (name values may still point
        // at it: the caller retires it once they do not, F5).
        Some(unsafe { Box::from_raw(old) })
    }
}

impl Drop for ReadSide {
    /// The runtime is gone: no reader remains.
    fn drop(&mut self) {
        for top in self.inboxes.iter_mut() {
            let chunk = *top.get_mut();
            if chunk.is_null() {
                continue;
            }
            // SAFETY: from `Box::into_raw`; nothing reads it any more.
            let mut chunk = unsafe { Box::from_raw(chunk) };
            for slot in chunk.slots.iter_mut() {
                let inbox = *slot.get_mut();
                if !inbox.is_null() {
                    // SAFETY: as above.
                    drop(unsafe { Box::from_raw(inbox) });
                }
            }
        }
    }
}
