//! Actor stacks: `mmap`ed in chunks, a guard page below each stack,
//! recycled through a pool, and overflow reported by actor.
//!
//! # Design
//!
//! A stack is `size` usable bytes (default 252 KiB, virtual: an
//! actor pays only for the pages it touches, plus its share of the
//! page-table pages that map them, one per 2 MiB of address space) above a
//! 4 KiB guard page. Stacks of
//! each size come from a pool of their own ([`pool_for`]). Stacks are
//! carved from chunks of 64 mapped with one `mmap`
//! (`MAP_NORESERVE`), so spawning normally costs a pop from the pool's free
//! list, not a syscall. The pool's lock covers list operations only: a
//! chunk is mapped and guarded outside it, so a scheduler that grows the
//! pool never makes another wait (or sleep on the lock) for its system
//! calls.
//!
//! The guard page must not cost a kernel mapping: `vm.max_map_count` (65,530
//! on a stock kernel) caps the mappings of a process, and an `mprotect`ed
//! guard splits a mapping in two, which would cap live actors near 32,000.
//! Where the kernel supports it (Linux 6.13+), guards are installed with
//! `madvise(MADV_GUARD_INSTALL)`, which marks page-table entries and leaves
//! the chunk one mapping. On older kernels the guard falls back to
//! `mprotect(PROT_NONE)`, and the pool counts the mappings it creates
//! against the budget read from `/proc/sys/vm/max_map_count`: running out is
//! a [`SpawnError`](crate::SpawnError) naming the limit, never a crash.
//!
//! A fault inside a guard page is reported by `life.rs` as a stack
//! overflow in the actor that was running. Where the scheduler layer
//! finds it sound (`scheduler/overflow.rs` argues when: in the actor's own
//! code, outside every runtime call, lock and `NoPreempt` section, not in
//! a shared library), only that actor ends, without unwinding, and its
//! stack is leaked; otherwise the process aborts, as Rust does for a
//! thread's stack overflow.
//!
//! # Invariants
//!
//! - (I1) Chunks are never unmapped, so a guard address recorded for the
//!   overflow handler stays valid for the life of the process.
//! - (I2) A stack is owned by at most one actor, from the pool's `take` to
//!   its `give_back` after the actor's last switch away from it. The stack
//!   of an actor ended by an overflow is never given back: values on it may
//!   still be pointed to (pinned futures, scoped borrows), so it is never
//!   reused, discarded or unmapped.
//! - (I3) A pool keeps at most `WARM_STACKS` (256) free stacks resident
//!   for long: once more have been free for 250 ms, the scavenger (run on
//!   each tick of a runtime's system monitor) returns the pages of the
//!   oldest to the kernel with `MADV_DONTNEED`, a few thousand per tick,
//!   and a finished run returns all of them beyond the warm set at once.
//!   Not `MADV_FREE`: its pages count in RSS until the kernel needs them.
//!   Not unmapping: (I1). The guards survive (`MADV_DONTNEED` keeps guard
//!   markers), and so do the page-table pages (the markers live in them).
//!   So what an idle runtime keeps resident for stacks is bounded by the
//!   warm sets: 256 stacks per pool and 64 cached per scheduler, each as
//!   deep as its actor once used it.
//! - (I4) A chunk whose 64 stacks are all clean and free is made dormant
//!   when an episode of returning ends (the scavenger's last pass, a
//!   finished run): it is replaced in place by a fresh mapping
//!   (`MAP_FIXED`, the range never unmapped, so (I1) holds), which frees
//!   its page-table pages, guards included; `grow` revives a dormant chunk,
//!   reinstalling its guards before any of its stacks is handed out,
//!   before it maps a new one. Only with guard markers (with `mprotect`
//!   guards a replacement would split mappings).
//!
//! # Safety
//!
//! `madvise`, `mprotect` and the signal handler live here (the mappings
//! come from [`crate::mapping`]). A
//! [`Stack`] is a plain address range; handing one to the context switch is
//! sound because of (I1) and (I2).

mod overflow;
mod pool;

pub(crate) use overflow::{ensure_altstack, install_overflow_handler, set_running_pid};
pub(crate) use pool::StackPool;

use std::sync::{Arc, Mutex};

/// The stack pools of the process, one per stack size: runtimes with the
/// same `Config::stack_size`, and spawns that ask for a size of their own,
/// share them (chunks are never unmapped, (I1), so pools live as long as
/// the process).
static POOLS: Mutex<Vec<Arc<StackPool>>> = Mutex::new(Vec::new());

/// The pool of stacks of `size` usable bytes (rounded up to pages).
pub(crate) fn pool_for(size: usize) -> Arc<StackPool> {
    let size = round_to_pages(size);
    let mut pools = crate::lock::lock_std(&POOLS);
    if let Some(p) = pools.iter().find(|p| p.stack_size() == size) {
        return p.clone();
    }
    let pool = Arc::new(StackPool::new(size));
    pools.push(pool.clone());
    pool
}

/// Every pool, for a pass over all of them.
fn all_pools() -> Vec<Arc<StackPool>> {
    crate::lock::lock_std(&POOLS).clone()
}

/// One scavenger pass over every pool (I3): called on each tick of a
/// runtime's system monitor.
pub(crate) fn scavenge() {
    let now = crate::clock::instant();
    for pool in all_pools() {
        pool.scavenge(now);
    }
}

/// Return the pages of every pool's free stacks beyond its warm set (I3):
/// called when a run ends.
pub(crate) fn trim_pools() {
    for pool in all_pools() {
        pool.trim();
    }
}

/// `bytes` rounded up to whole pages.
pub(crate) fn round_to_pages(bytes: usize) -> usize {
    bytes.div_ceil(PAGE_SIZE) * PAGE_SIZE
}

/// Size of the guard page below every stack.
pub(crate) const GUARD_SIZE: usize = 4096;
/// Page size assumed for rounding stack sizes.
pub(crate) const PAGE_SIZE: usize = 4096;

/// One actor stack: `size` usable bytes starting at `base` (the guard page
/// sits just below `base`).
#[derive(Debug)]
pub(crate) struct Stack {
    base: *mut u8,
    size: usize,
}

// SAFETY: a Stack is an address range owned by one actor at a time (I2);
// moving that ownership between threads is what the scheduler does.
unsafe impl Send for Stack {}

impl Stack {
    /// The highest address (exclusive): where the stack starts growing down.
    pub(crate) fn top(&self) -> *mut u8 {
        self.base.wrapping_add(self.size)
    }

    /// The guard page below the stack, as an address range.
    pub(crate) fn guard(&self) -> std::ops::Range<usize> {
        let base = self.base as usize;
        base - GUARD_SIZE..base
    }

    /// Usable bytes: which pool the stack goes back to.
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// Give the stack's pages back to the kernel, keeping the stack (a
    /// hibernated actor's of another size than its runtime's). Its guard
    /// is below `base`, untouched.
    pub(crate) fn discard_pages(&self) {
        // SAFETY: `base..base + size` is this stack's usable range, owned
        // by its one actor (I2), which has left it for good (it
        // hibernates): no frame on it is live, so discarding its contents
        // is unobservable; the next use starts from a fresh entry frame.
        unsafe {
            libc::madvise(self.base.cast(), self.size, libc::MADV_DONTNEED);
        }
    }
}

/// Why no stack could be had; the actor layer reports it as a
/// [`SpawnError`](crate::SpawnError).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StackError {
    /// Another stack mapping would pass `vm.max_map_count`.
    MapLimit { max_map_count: usize },
    /// The kernel refused memory for a stack chunk.
    OutOfMemory { stack_size: usize },
}
