//! The process-wide table of heap accounts: a directory of lazily mapped
//! segments of cells, never unmapped (heap (A1)), and the ranges of it
//! that runtimes reserve.

use crate::loom::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use crate::mapping::{self, Commit};
use std::ptr::NonNull;
use std::sync::Mutex;

/// Cells per segment (a slot-table segment's worth).
const SEGMENT_CELLS: u32 = 4096;
/// Segments the directory can hold: 2^30 cells in all.
const DIRECTORY: usize = 1 << 18;
/// Bits of an account word holding the live bytes (1 TiB).
const BYTES_BITS: u32 = 40;
const BYTES_MASK: u64 = (1 << BYTES_BITS) - 1;
/// The generation, above the bytes: 24 bits.
pub(crate) const GENERATION_MASK: u64 = (1 << (64 - BYTES_BITS)) - 1;

/// One actor's heap account (heap module docs).
pub(crate) struct Account {
    /// `generation:24 | bytes:40`.
    word: AtomicU64,
    /// The heap limit in bytes; 0 for none.
    limit: AtomicU64,
    /// The owner's slot's stop flag while it has a limit; else null.
    stop: AtomicPtr<AtomicBool>,
    /// The owner's stack: `top >> 12` above 28 bits of its size in pages
    /// (0: none known).
    stack: AtomicU64,
    /// This cell's index in the table (written at each restart).
    index: AtomicU32,
    /// The owner crossed its limit.
    tripped: AtomicBool,
}

/// The directory of segments (heap (A1)): a null entry has no segment yet.
static SEGMENTS: [std::sync::atomic::AtomicPtr<Account>; DIRECTORY] =
    [const { std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()) }; DIRECTORY];

/// The directory's unreserved segment numbers.
struct Free {
    /// Segments from here on have never been reserved.
    next: usize,
    /// Released ranges: (first segment, segments).
    released: Vec<(usize, usize)>,
}

static FREE: Mutex<Free> = Mutex::new(Free {
    next: 0,
    released: Vec::new(),
});

fn segment_bytes() -> usize {
    SEGMENT_CELLS as usize * std::mem::size_of::<Account>()
}

impl Account {
    /// A cell of generation 0, as a fresh segment's (for the models: a
    /// segment is zeroed memory, which loom's atomics are not).
    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        Account {
            word: AtomicU64::new(0),
            limit: AtomicU64::new(0),
            stop: AtomicPtr::new(std::ptr::null_mut()),
            stack: AtomicU64::new(0),
            index: AtomicU32::new(0),
            tripped: AtomicBool::new(false),
        }
    }

    /// Charge `size` bytes (the running owner's allocation, heap (A2));
    /// returns the tag for the block.
    #[inline]
    pub(crate) fn charge(&self, size: usize) -> u64 {
        let size = size as u64;
        let mut current = self.word.load(Ordering::Relaxed);
        loop {
            // Saturating: the bytes never spill into the generation.
            let bytes = ((current & BYTES_MASK) + size).min(BYTES_MASK);
            let next = (current & !BYTES_MASK) | bytes;
            match self.word.compare_exchange_weak(
                current,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    let limit = self.limit.load(Ordering::Relaxed);
                    if limit != 0 && bytes > limit {
                        self.over_limit();
                    }
                    let index = u64::from(self.index.load(Ordering::Relaxed));
                    return (index << 32) | (current >> BYTES_BITS);
                }
                Err(seen) => current = seen,
            }
        }
    }

    /// The owner is past its limit: mark it and ask it to stop.
    #[cold]
    #[inline(never)]
    fn over_limit(&self) {
        self.tripped.store(true, Ordering::Relaxed);
        let stop = self.stop.load(Ordering::Relaxed);
        if !stop.is_null() {
            // SAFETY: `stop` was set at the owner's spawn to its slot's
            // flag, and only the running owner charges (heap (A4)): its
            // slot outlives it.
            unsafe { &*stop }.store(true, Ordering::Release);
        }
    }

    /// Credit `size` bytes if the account is still in `generation`
    /// (heap (A2)).
    pub(crate) fn credit(&self, generation: u64, size: usize) {
        let mut current = self.word.load(Ordering::Relaxed);
        loop {
            if current >> BYTES_BITS != generation {
                return;
            }
            let bytes = current & BYTES_MASK;
            let next = current - bytes.min(size as u64);
            match self.word.compare_exchange_weak(
                current,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(seen) => current = seen,
            }
        }
    }

    /// Start the account afresh for a new owner (heap (A3)).
    pub(crate) fn restart(&self, index: u32, limit: u64, stop: *const AtomicBool) {
        // One read-modify-write: a credit of the old generation racing it
        // lands before it (and is zeroed) or finds the new generation.
        let mut current = self.word.load(Ordering::Relaxed);
        loop {
            let generation = ((current >> BYTES_BITS) + 1) & GENERATION_MASK;
            match self.word.compare_exchange_weak(
                current,
                generation << BYTES_BITS,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(seen) => current = seen,
            }
        }
        self.limit.store(limit, Ordering::Relaxed);
        let stop = if limit == 0 { std::ptr::null() } else { stop };
        self.stop.store(stop.cast_mut(), Ordering::Relaxed);
        self.stack.store(0, Ordering::Relaxed);
        self.index.store(index, Ordering::Relaxed);
        self.tripped.store(false, Ordering::Relaxed);
    }

    /// Live bytes charged to the owner.
    pub(crate) fn bytes(&self) -> u64 {
        self.word.load(Ordering::Relaxed) & BYTES_MASK
    }

    /// The owner's heap limit, if it has one.
    pub(crate) fn limit(&self) -> Option<u64> {
        Some(self.limit.load(Ordering::Relaxed)).filter(|&l| l != 0)
    }

    /// Whether the owner crossed its heap limit.
    pub(crate) fn tripped(&self) -> bool {
        self.tripped.load(Ordering::Relaxed)
    }

    /// Record the owner's stack (`top`, `size` bytes below it), for
    /// [`stack_pages`](Account::stack_pages).
    pub(crate) fn set_stack(&self, top: *mut u8, size: usize) {
        let pages = (size / crate::stack::PAGE_SIZE) as u64 & ((1 << 28) - 1);
        self.stack
            .store(((top as u64) >> 12) << 28 | pages, Ordering::Relaxed);
    }

    /// Pages of the owner's stack resident in memory; `None` if unknown
    /// (not started, or its stack already gone).
    pub(crate) fn stack_pages(&self) -> Option<u64> {
        let word = self.stack.load(Ordering::Relaxed);
        let pages = (word & ((1 << 28) - 1)) as usize;
        if pages == 0 {
            return None;
        }
        let top = ((word >> 28) << 12) as usize;
        let len = pages * crate::stack::PAGE_SIZE;
        mapping::resident_pages(top.checked_sub(len)?, len)
    }
}

/// Credit `size` bytes to the account a block's `tag` names (heap (A2)).
pub(crate) fn credit(tag: u64, size: usize) {
    let index = (tag >> 32) as usize;
    let generation = tag & GENERATION_MASK;
    if let Some(cell) = cell_at(index) {
        cell.credit(generation, size);
    }
}

/// The cell at table index `index`, if its segment exists.
fn cell_at(index: usize) -> Option<&'static Account> {
    let segment = SEGMENTS
        .get(index / SEGMENT_CELLS as usize)?
        .load(Ordering::Acquire);
    if segment.is_null() {
        return None;
    }
    // SAFETY: a published segment holds SEGMENT_CELLS cells and is never
    // unmapped (heap (A1)); the offset is within it.
    Some(unsafe { &*segment.add(index % SEGMENT_CELLS as usize) })
}

/// The segment `n`, mapped on first use; `None` if no memory is to be had.
fn segment(n: usize) -> Option<NonNull<Account>> {
    let entry = SEGMENTS.get(n)?;
    if let Some(s) = NonNull::new(entry.load(Ordering::Acquire)) {
        return Some(s);
    }
    if cfg!(loom) {
        return None; // zeroed memory is not a loom atomic
    }
    // Zeroed memory is a segment of fresh cells (generation 0, no bytes).
    let fresh = mapping::map(segment_bytes(), Commit::OnTouch)
        .ok()?
        .cast::<Account>();
    match entry.compare_exchange(
        std::ptr::null_mut(),
        fresh.as_ptr(),
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => Some(fresh),
        Err(theirs) => {
            // SAFETY: our mapping, never published.
            unsafe { mapping::unmap(fresh.cast(), segment_bytes()) };
            NonNull::new(theirs)
        }
    }
}

/// A runtime's range of the table: a cell per slot (heap module docs).
pub(crate) struct Accounts {
    /// The first segment of the range.
    first: usize,
    /// Segments in the range.
    segments: usize,
}

impl Accounts {
    /// Reserve cells for `slots` slots; `None` if the table is full.
    pub(crate) fn reserve(slots: usize) -> Option<Accounts> {
        let segments = slots.div_ceil(SEGMENT_CELLS as usize).max(1);
        let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
        let reused = free.released.iter().position(|&(_, len)| len >= segments);
        let first = match reused {
            Some(i) => {
                let (first, len) = free.released[i];
                if len == segments {
                    free.released.swap_remove(i);
                } else {
                    free.released[i] = (first + segments, len - segments);
                }
                first
            }
            None if free.next + segments <= DIRECTORY => {
                free.next += segments;
                free.next - segments
            }
            None => return None,
        };
        Some(Accounts { first, segments })
    }

    /// Start the cell of slot `index` for its new tenant (heap (A3)), with
    /// heap limit `limit` bytes (0: none) enforced through `stop`; `None`
    /// if the cell's segment could not be mapped.
    pub(crate) fn start(&self, index: u32, limit: u64, stop: &AtomicBool) -> Option<&Account> {
        let global = self.global(index)?;
        let segment = segment(global / SEGMENT_CELLS as usize)?;
        // SAFETY: the segment holds SEGMENT_CELLS cells, never unmapped.
        let cell = unsafe { &*segment.as_ptr().add(global % SEGMENT_CELLS as usize) };
        cell.restart(u32::try_from(global).ok()?, limit, stop);
        Some(cell)
    }

    /// The cell of slot `index`, if it has been started.
    pub(crate) fn cell(&self, index: u32) -> Option<&Account> {
        cell_at(self.global(index)?)
    }

    fn global(&self, index: u32) -> Option<usize> {
        let index = index as usize;
        (index < self.segments * SEGMENT_CELLS as usize)
            .then(|| self.first * SEGMENT_CELLS as usize + index)
    }
}

impl Drop for Accounts {
    fn drop(&mut self) {
        // The cells keep their generations: a block charged to one of this
        // runtime's actors and freed later is not credited to the next
        // runtime's tenant of the cell (heap (A2)).
        let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
        free.released.push((self.first, self.segments));
    }
}

impl std::fmt::Debug for Accounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accounts")
            .field("first", &self.first)
            .field("segments", &self.segments)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_credit_reaches_only_the_generation_that_was_charged() {
        let accounts = Accounts::reserve(10).expect("table has room");
        let stop = AtomicBool::new(false);
        let cell = accounts.start(3, 0, &stop).expect("segment maps");
        let tag = cell.charge(100);
        assert_eq!(cell.bytes(), 100);
        credit(tag, 60);
        assert_eq!(cell.bytes(), 40);
        // A new tenant: the old block's free is not its business.
        let cell = accounts.start(3, 0, &stop).expect("segment maps");
        assert_eq!(cell.bytes(), 0);
        cell.charge(10);
        credit(tag, 40);
        assert_eq!(cell.bytes(), 10);
    }

    #[test]
    fn crossing_the_limit_sets_the_stop_flag_and_marks_the_cell() {
        let accounts = Accounts::reserve(1).expect("table has room");
        let stop = AtomicBool::new(false);
        let cell = accounts.start(0, 1000, &stop).expect("segment maps");
        cell.charge(1000);
        assert!(!stop.load(Ordering::Relaxed), "at the limit is within it");
        cell.charge(1);
        assert!(stop.load(Ordering::Relaxed));
        assert!(cell.tripped());
    }

    #[test]
    fn bytes_saturate_instead_of_spilling_into_the_generation() {
        let accounts = Accounts::reserve(1).expect("table has room");
        let stop = AtomicBool::new(false);
        let cell = accounts.start(0, 0, &stop).expect("segment maps");
        let tag = cell.charge(usize::MAX / 2);
        cell.charge(usize::MAX / 2);
        assert_eq!(cell.bytes(), BYTES_MASK);
        credit(tag, usize::MAX / 2);
        assert_eq!(cell.bytes(), 0, "same generation: credited");
    }
}
