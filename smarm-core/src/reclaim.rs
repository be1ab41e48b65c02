//! `Reclaimer`: deferred drops for lock-free readers (quiescent-state-based
//! reclamation).
//!
//! An upper layer that publishes a value through an atomic pointer and
//! reads it without a lock (the registry's name table) cannot drop an
//! unpublished value at once: a reader on another scheduler may still hold
//! it. Readers here need no marking of their own: every read runs in one
//! actor run or callback on a scheduler thread, without a switch (inside
//! `with_worker`, where `switch_out` refuses to switch), so a scheduler
//! that is back in its loop between two actors holds nothing from before.
//! Each scheduler records the global epoch it saw at each such **quiescent
//! point**; [`Reclaimer::retire`] tags a value with a fresh epoch, and it is
//! dropped once every scheduler has recorded that epoch or is offline
//! (parked idle, or stopped).
//!
//! # Invariants
//!
//! - (I1) A retired value is dropped only after every scheduler that was
//!   online when it was retired has passed a quiescent point that observed
//!   its epoch: the quiescent store is Release (its earlier reads happen
//!   before it), read with Acquire by the reclaimer, and the epoch load at
//!   that point is Acquire on the retire's AcqRel increment (later reads
//!   see the unpublish, which precedes the increment).
//! - (I2) Going online after a park is a store of the epoch followed by a
//!   SeqCst fence, paired with the SeqCst fence the reclaimer issues before
//!   reading the records: either the reclaimer sees the scheduler online
//!   (and waits for its next quiescent point), or the scheduler's reads
//!   after its fence see every unpublish made before the reclaimer's fence.
//!   The loom model below checks this handshake.
//! - (I3) Values are dropped outside the retired-list lock, on a scheduler
//!   thread between actors (or when the runtime is dropped).

use crate::lock::{LockClass, RawMutex};
use crate::loom::{AtomicU64, AtomicUsize, Ordering, fence};
use crossbeam_utils::CachePadded;
use std::any::Any;

/// The record of a scheduler that is parked or stopped.
const OFFLINE: u64 = u64::MAX;

/// A scheduler's record, on lines of its own: its scheduler writes it
/// at every quiescent point.
struct Seen(CachePadded<AtomicU64>);

/// A retired value: dropped once every scheduler has passed `epoch`.
type Retired = (u64, Box<dyn Any + Send>);

pub(crate) struct Reclaimer {
    epoch: AtomicU64,
    seen: Box<[Seen]>,
    retired: RawMutex<Vec<Retired>>,
    /// `retired.len()`, readable without the lock.
    pending: AtomicUsize,
}

impl Reclaimer {
    /// A reclaimer for `schedulers` scheduler threads, all offline.
    pub(crate) fn new(schedulers: usize) -> Self {
        Reclaimer {
            epoch: AtomicU64::new(1),
            seen: (0..schedulers)
                .map(|_| Seen(CachePadded::new(AtomicU64::new(OFFLINE))))
                .collect(),
            retired: RawMutex::new(LockClass::Leaf, Vec::new()),
            pending: AtomicUsize::new(0),
        }
    }

    /// Scheduler `id` is between two actors: it holds nothing it read
    /// before this point (I1). A load and a store.
    #[inline]
    pub(crate) fn quiescent(&self, id: usize) {
        let e = self.epoch.load(Ordering::Acquire);
        self.seen[id].0.store(e, Ordering::Release);
    }

    /// Scheduler `id` parks or stops: it reads nothing until `online`.
    pub(crate) fn offline(&self, id: usize) {
        self.seen[id].0.store(OFFLINE, Ordering::Release);
    }

    /// Scheduler `id` is about to run actors again (I2).
    pub(crate) fn online(&self, id: usize) {
        let e = self.epoch.load(Ordering::Acquire);
        self.seen[id].0.store(e, Ordering::Release);
        fence(Ordering::SeqCst);
    }

    /// Drop `value` once no scheduler can still be reading it. The caller
    /// has already unpublished it.
    pub(crate) fn retire(&self, value: Box<dyn Any + Send>) {
        let e = self.epoch.fetch_add(1, Ordering::AcqRel) + 1;
        let mut retired = self.retired.lock();
        retired.push((e, value));
        self.pending.store(retired.len(), Ordering::Relaxed);
    }

    /// Whether values wait to be dropped (a hint: one Relaxed load).
    #[inline]
    pub(crate) fn has_pending(&self) -> bool {
        self.pending.load(Ordering::Relaxed) > 0
    }

    /// Drop every retired value that no scheduler can still be reading.
    pub(crate) fn reclaim(&self) {
        fence(Ordering::SeqCst); // (I2)
        let safe = self
            .seen
            .iter()
            .map(|s| s.0.load(Ordering::Acquire))
            .min()
            .unwrap_or(OFFLINE);
        let ready: Vec<Retired> = {
            let mut retired = self.retired.lock();
            let (ready, keep): (Vec<_>, Vec<_>) = retired.drain(..).partition(|(e, _)| *e <= safe);
            *retired = keep;
            self.pending.store(retired.len(), Ordering::Relaxed);
            ready
        };
        drop(ready); // (I3)
    }

    /// Drop everything retired: no scheduler runs any more.
    pub(crate) fn drain(&self) {
        let all = std::mem::take(&mut *self.retired.lock());
        self.pending.store(0, Ordering::Relaxed);
        drop(all);
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicPtr;
    use loom::thread;

    /// A published value; "dropping" it writes to the cell, so loom
    /// reports a race if a reader could still be reading it.
    struct Value(UnsafeCell<u64>);

    /// Scheduler 0 comes back online from a park and reads the published
    /// value, then passes a quiescent point; meanwhile a writer unpublishes
    /// the value, retires it, and reclaims. The old value is never
    /// "dropped" while the reader may read it.
    #[test]
    fn a_retired_value_is_not_dropped_under_a_reader() {
        loom::model(|| {
            let r = Arc::new(Reclaimer::new(1));
            let old = Box::into_raw(Box::new(Value(UnsafeCell::new(1))));
            let new = Box::into_raw(Box::new(Value(UnsafeCell::new(2))));
            let published = Arc::new(AtomicPtr::new(old));

            let reader = {
                let (r, published) = (r.clone(), published.clone());
                thread::spawn(move || {
                    r.online(0);
                    let p = published.load(Ordering::Acquire);
                    // SAFETY: both values outlive the model's threads;
                    // loom checks the read against the "drop" below.
                    let v = unsafe { (*p).0.with(|v| *v) };
                    assert!(v == 1 || v == 2);
                    r.quiescent(0);
                    r.offline(0);
                })
            };

            published.store(new, Ordering::Release);
            struct Dropper(*mut Value);
            // SAFETY: the model's raw pointer is only used on the thread
            // that reclaims it.
            unsafe impl Send for Dropper {}
            impl Drop for Dropper {
                fn drop(&mut self) {
                    // SAFETY: the value is alive; the write stands for its
                    // destruction.
                    unsafe { (*self.0).0.with_mut(|v| *v = 0) };
                }
            }
            r.retire(Box::new(Dropper(old)));
            r.reclaim();
            reader.join().unwrap();
            r.drain();
            // SAFETY: every thread is done with both values.
            unsafe {
                drop(Box::from_raw(old));
                drop(Box::from_raw(new));
            }
        });
    }
}
