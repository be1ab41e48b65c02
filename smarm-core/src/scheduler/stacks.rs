//! The stacks of a runtime's actors: its pool, and each scheduler's cache
//! in front of it, so spawn and finalisation rarely take the pool lock.
//!
//! # Invariants
//!
//! - (K1) A scheduler's cache is touched only by its own thread
//!   (scheduler (I1)), inside `with_worker` spans while it runs actors and
//!   once more when its loop ends (the cache goes back to the pool); after
//!   each release it holds at most [`STACK_CACHE_MAX`] stacks, all of the
//!   runtime's size.
//! - (K2) A stack of another size than the runtime's goes back to the
//!   process's pool of its size, never into a cache.

use super::Shared;
use crate::stack::{Stack, StackError, StackPool};
use std::sync::Arc;

/// Stacks a scheduler fetches from the pool at once.
pub(crate) const STACK_BATCH: usize = 32;
/// A scheduler's cache spills `STACK_BATCH` stacks back beyond this.
pub(crate) const STACK_CACHE_MAX: usize = 2 * STACK_BATCH;

/// The runtime's stack pool (the per-scheduler caches are in each
/// `Worker`).
pub(crate) struct StackCache {
    pool: Arc<StackPool>,
}

impl StackCache {
    pub(super) fn new(pool: Arc<StackPool>) -> Self {
        StackCache { pool }
    }
}

impl Shared {
    /// A stack for a new actor: from this scheduler's cache (refilled from
    /// the pool in batches), or straight from the pool off-scheduler.
    pub(crate) fn take_stack(&self) -> Result<Stack, StackError> {
        let cached = self.local_worker(|w| {
            let mut cache = w.stack_cache.borrow_mut();
            if cache.is_empty() {
                self.stacks.pool.take_batch(STACK_BATCH, &mut cache)?;
            }
            cache.pop().ok_or(StackError::OutOfMemory {
                stack_size: self.stacks.pool.stack_size(),
            })
        });
        match cached {
            Some(r) => r,
            None => self.stacks.pool.take(),
        }
    }

    /// A stack of `size` usable bytes for an actor spawned with a size of
    /// its own: from the runtime's pool if that is the size, else from the
    /// process's pool of that size.
    #[cold]
    #[inline(never)]
    pub(crate) fn take_stack_sized(&self, size: usize) -> Result<Stack, StackError> {
        if crate::stack::round_to_pages(size) == self.stacks.pool.stack_size() {
            return self.stacks.pool.take(); // off the hot path: the pool directly
        }
        crate::stack::pool_for(size).take()
    }

    /// The usable size of this runtime's stacks.
    pub(crate) fn stack_size(&self) -> usize {
        self.stacks.pool.stack_size()
    }

    /// A stack for a hibernated actor that wakes (scheduler hibernate
    /// (H1)): this scheduler's cache, else the pool. Its own copy of
    /// `take_stack`'s first step, so the spawn path's stays inlined.
    #[cold]
    #[inline(never)]
    pub(crate) fn take_stack_for_wake(&self) -> Option<Stack> {
        let cached = self.local_worker(|w| w.stack_cache.borrow_mut().pop());
        match cached.flatten() {
            Some(stack) => Some(stack),
            None => self.stacks.pool.take().ok(),
        }
    }

    /// Return a finished actor's stack to this scheduler's cache (spilling
    /// a batch to the pool when it is full), or to the pool; a stack of
    /// another size than the runtime's goes back to its own pool.
    pub(crate) fn release_stack(&self, stack: Stack) {
        if stack.size() != self.stacks.pool.stack_size() {
            crate::stack::pool_for(stack.size()).give_back(stack);
            return;
        }
        let mut stack = Some(stack);
        self.local_worker(|w| {
            let mut cache = w.stack_cache.borrow_mut();
            cache.extend(stack.take());
            if cache.len() > STACK_CACHE_MAX {
                let keep = cache.len() - STACK_BATCH;
                self.stacks.pool.give_back_batch(cache.drain(keep..));
            }
        });
        if let Some(stack) = stack {
            self.stacks.pool.give_back(stack);
        }
    }

    /// Give a leaving scheduler's cached stacks back to the pool.
    pub(super) fn release_stack_cache(&self, w: &super::Worker) {
        self.stacks
            .pool
            .give_back_batch(w.stack_cache.borrow_mut().drain(..));
    }
}
