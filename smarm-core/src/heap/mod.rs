//! Per-actor heap accounting: which actor owns each live heap block, how
//! many bytes each actor holds, and the heap limit that stops an actor
//! (Erlang's `max_heap_size`).
//!
//! # Design
//!
//! Accounting is a mode of the global allocator
//! ([`PreemptingAlloc::with_heap_accounting`](crate::PreemptingAlloc::with_heap_accounting)),
//! fixed for the life of the process: every block it hands out carries an
//! 8-byte tag just below the address returned (in a header of
//! `max(8, align)` bytes, so the block keeps its alignment) naming the
//! account it is charged to and that account's generation. An allocation
//! is charged to the actor running on the thread; a free is credited to
//! the account in the block's tag, whoever frees it, so a producer whose
//! messages are dropped by a consumer gets its bytes back. A block
//! allocated outside any actor (a scheduler, a plain thread) is tagged with
//! no account.
//!
//! An account is a cell in a process-wide table ([`table`]): a word
//! `generation:24 | bytes:40`, the actor's limit, and a pointer to its slot's
//! stop flag. A runtime reserves a contiguous range of cells, one per slot,
//! when it is built, and gives it back when dropped; a spawn starts the
//! slot's cell afresh with the next generation. The scheduler names the
//! running actor's cell in a thread-local while the actor runs
//! ([`enter`], [`leave`]).
//!
//! A heap limit is checked at each allocation: the allocation that takes
//! an actor past it still succeeds (a global allocator cannot fail softly:
//! a null return aborts the process), then the actor's stop flag is set and
//! its cell marked, so the actor unwinds at its next safepoint (any
//! blocking call, `check!()`) and ends with
//! [`DownReason::HeapLimit`](crate::DownReason::HeapLimit). An actor that
//! allocates on past its limit for a whole timeslice without reaching such
//! a safepoint is ended at the allocation safepoint where it would be
//! preempted, without unwinding (the scheduler's `life.rs` argues why
//! that is sound there), so what it can hold is bounded by the limit plus
//! one timeslice of allocation. A single allocation larger than the limit
//! is granted, if the system allocator can, and the actor stops right
//! after.
//!
//! # Invariants
//!
//! - (A1) A table segment is never unmapped, so a tag read from any block,
//!   however old, names memory that is still a cell.
//! - (A2) A cell's bytes are changed only under its generation: a charge
//!   comes from the cell's running owner (whose generation it is), and a
//!   credit is a compare-and-swap that checks the tag's generation. A free
//!   of a block whose owner has since been replaced is not credited to
//!   the new tenant (short of 2^24 reuses of one cell in between).
//! - (A3) A cell is restarted (next generation, zero bytes, new limit)
//!   only by the spawn of its slot's next tenant, before that actor runs.
//! - (A4) The thread-local names a cell only while the actor owning it runs
//!   on the thread: set just before the switch to the actor, cleared just
//!   after the switch back.

#[cfg(all(test, loom))]
mod loom_models;
pub(crate) mod table;

use std::cell::Cell;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;

pub(crate) use table::{Account, Accounts};

/// Whether the accounting allocator is the global allocator: set at its
/// first allocation, which happens before `main`.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Bytes a tag takes: the last 8 of a header.
const TAG: usize = 8;

/// A tag naming no account.
const NO_ACCOUNT: u64 = u64::MAX;

std::thread_local! {
    /// The cell of the actor running on this thread, or null (A4).
    static RUNNING: Cell<*const Account> = const { Cell::new(std::ptr::null()) };
}

/// Whether blocks carry account tags (the accounting allocator is
/// installed).
#[inline]
pub(crate) fn installed() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// Note that the accounting allocator is installed.
#[inline]
pub(crate) fn mark_installed() {
    if !INSTALLED.load(Ordering::Relaxed) {
        INSTALLED.store(true, Ordering::Relaxed);
    }
}

/// Charge this thread's allocations to `account` until [`leave`] (A4).
#[inline]
pub(crate) fn enter(account: &Account) {
    RUNNING.with(|r| r.set(account));
}

/// Stop charging this thread's allocations to an actor (A4).
#[inline]
pub(crate) fn leave() {
    RUNNING.with(|r| r.set(std::ptr::null()));
}

/// Whether the actor running on this thread has crossed its heap limit.
#[inline]
pub(crate) fn running_tripped() -> bool {
    let account = RUNNING.with(Cell::get);
    // SAFETY: as in `charge`: a non-null RUNNING is the running actor's
    // cell (A4), never unmapped (A1).
    !account.is_null() && unsafe { &*account }.tripped()
}

/// Bytes of header placed before a block of alignment `align`: room for
/// the tag, keeping the block aligned.
#[inline]
pub(crate) const fn header_for(align: usize) -> usize {
    if align > TAG { align } else { TAG }
}

/// Charge `size` bytes to the running actor and return the tag to write
/// into the block. Out of line so the thread-local is read afresh on
/// every allocation: an actor moves between threads at its switches, and
/// an address computed before one would name another thread's cell.
#[inline(never)]
pub(crate) fn charge(size: usize) -> u64 {
    let account = RUNNING.with(Cell::get);
    if account.is_null() {
        return NO_ACCOUNT;
    }
    // SAFETY: a non-null RUNNING is the running actor's cell (A4), in a
    // segment that is never unmapped (A1).
    let account = unsafe { &*account };
    account.charge(size)
}

/// Credit `size` bytes to the account named by `tag` (A2).
#[inline]
pub(crate) fn credit(tag: u64, size: usize) {
    if tag != NO_ACCOUNT {
        table::credit(tag, size);
    }
}

/// Write `tag` into the header of the block at `user` (the address handed
/// to the program).
///
/// # Safety
///
/// `user` must be a block from the accounting allocator: its header's
/// last `TAG` bytes, just below `user`, are ours and 8-aligned.
#[inline]
pub(crate) unsafe fn write_tag(user: *mut u8, tag: u64) {
    // SAFETY: per the contract, the 8 bytes below `user` are the header's
    // tag, aligned (the header is a multiple of 8 bytes above an 8-aligned
    // base).
    unsafe { user.sub(TAG).cast::<u64>().write(tag) }
}

/// Read the tag of the block at `user`.
///
/// # Safety
///
/// As [`write_tag`], and the tag must have been written.
#[inline]
pub(crate) unsafe fn read_tag(user: *mut u8) -> u64 {
    // SAFETY: per the contract.
    unsafe { user.sub(TAG).cast::<u64>().read() }
}
