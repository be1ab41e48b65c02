//! Run queues: one per scheduler plus the global injector, each a deque
//! under a Queue-class lock, with a published length for lock-free
//! emptiness checks and half-stealing from the back.
//!
//! New work (a spawned child, a woken actor displaced from the LIFO slot)
//! goes to the front and is popped from the front, so a scheduler works
//! depth-first and keeps the live set small; yields go to the back. A thief
//! takes the back half: the oldest work, furthest from the victim's cache.

use crate::lock::{LockClass, RawMutex};
use crate::loom::{AtomicUsize, Ordering};
use crate::slot::Pid;
use std::collections::VecDeque;

/// Most actors one steal moves.
const STEAL_MAX: usize = 64;

pub(crate) struct RunQueue {
    deque: RawMutex<VecDeque<Pid>>,
    /// `deque.len()`, stored under the lock after every change.
    len: AtomicUsize,
    /// Actors taken out so far (stored under the lock): how an idle
    /// scheduler tells a backlog that is being served from a stuck one.
    taken: AtomicUsize,
}

impl RunQueue {
    pub(crate) fn new() -> Self {
        RunQueue {
            deque: RawMutex::new(LockClass::Queue, VecDeque::new()),
            len: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
        }
    }

    /// Actors taken out of this queue so far (a lock-free reading).
    #[inline]
    pub(crate) fn taken(&self) -> usize {
        self.taken.load(Ordering::Relaxed)
    }

    /// Lock-free length reading (exact when read under a fence that pairs
    /// with the producer's, see `park`).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    #[inline]
    pub(crate) fn push_front(&self, pid: Pid) {
        let mut d = self.deque.lock();
        d.push_front(pid);
        self.len.store(d.len(), Ordering::Release);
    }

    #[inline]
    pub(crate) fn push_back(&self, pid: Pid) {
        let mut d = self.deque.lock();
        d.push_back(pid);
        self.len.store(d.len(), Ordering::Release);
    }

    #[inline]
    pub(crate) fn pop_front(&self) -> Option<Pid> {
        if self.len() == 0 {
            return None;
        }
        let mut d = self.deque.lock();
        let pid = d.pop_front();
        self.note_taken(pid.is_some() as usize);
        self.len.store(d.len(), Ordering::Release);
        pid
    }

    pub(crate) fn pop_back(&self) -> Option<Pid> {
        if self.len() == 0 {
            return None;
        }
        let mut d = self.deque.lock();
        let pid = d.pop_back();
        self.note_taken(pid.is_some() as usize);
        self.len.store(d.len(), Ordering::Release);
        pid
    }

    /// Move up to half of this queue (from the back) into `out`.
    pub(crate) fn steal_into(&self, out: &mut Vec<Pid>) {
        if self.len() == 0 {
            return;
        }
        let mut d = self.deque.lock();
        let n = d.len().div_ceil(2).min(STEAL_MAX);
        for _ in 0..n {
            match d.pop_back() {
                Some(pid) => out.push(pid),
                None => break,
            }
        }
        self.note_taken(n);
        self.len.store(d.len(), Ordering::Release);
    }

    /// The queued actors, front to back (a simulation's pop, which
    /// chooses among them; simulated (S1): nothing changes meanwhile).
    #[cfg(feature = "sim")]
    pub(crate) fn snapshot(&self) -> Vec<Pid> {
        if self.len() == 0 {
            return Vec::new();
        }
        self.deque.lock().iter().copied().collect()
    }

    /// Take `pid` out, wherever it is queued (a simulation's pop).
    #[cfg(feature = "sim")]
    pub(crate) fn remove(&self, pid: Pid) {
        let mut d = self.deque.lock();
        if let Some(at) = d.iter().position(|&p| p == pid) {
            d.remove(at);
            self.note_taken(1);
        }
        self.len.store(d.len(), Ordering::Release);
    }

    /// Count `n` actors taken (under the lock: one writer at a time).
    #[inline]
    fn note_taken(&self, n: usize) {
        self.taken.store(
            self.taken.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }
}
