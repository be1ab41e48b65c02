//! The stack pool: chunked `mmap`, guard installation, the mapping budget.

use super::StackError;
use super::{GUARD_SIZE, Stack, overflow};
use crate::lock::{LockClass, RawMutex};
use crate::mapping::Commit;

/// Stacks carved from one `mmap`.
const STACKS_PER_CHUNK: usize = 64;
/// Free stacks kept resident (their pages not returned) for reuse: the
/// high-water mark of (I3). Beyond it the scavenger returns the pages of
/// the oldest free stacks, and a finished run returns them at once.
pub(crate) const WARM_STACKS: usize = 256;
/// How long the free stacks must have stayed above the high-water mark
/// before the scavenger returns pages: a burst that frees stacks and takes
/// them again soon keeps them warm.
const SCAVENGE_AFTER: std::time::Duration = std::time::Duration::from_millis(250);
/// Least time between two scavenger passes that look for dormant chunks.
const DORMANT_PASS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);
/// Most stacks one scavenger pass returns (a pass is a few milliseconds of
/// `madvise` at most, off the schedulers' path).
const SCAVENGE_BATCH: usize = 4096;
/// `madvise` advice that installs guard markers (Linux 6.13+).
const MADV_GUARD_INSTALL: libc::c_int = 102;
/// Mappings left to the rest of the process when budgeting ours.
const MAP_RESERVE: usize = 4096;

#[derive(Clone, Copy, PartialEq, Eq)]
enum GuardKind {
    /// Page-table guard markers: one mapping per chunk.
    Marker,
    /// `mprotect(PROT_NONE)`: two mappings per stack.
    Protect,
}

impl GuardKind {
    /// The mappings a chunk guarded this way costs in the
    /// `vm.max_map_count` budget.
    fn maps_per_chunk(self) -> usize {
        match self {
            GuardKind::Marker => 1,
            GuardKind::Protect => 2 * STACKS_PER_CHUNK,
        }
    }
}

struct PoolState {
    /// Free stacks whose pages may be resident, oldest first (`take` pops
    /// the newest: the warmest cache).
    free: std::collections::VecDeque<*mut u8>,
    /// Free stacks whose pages were returned to the kernel (I3).
    clean: Vec<*mut u8>,
    /// Since when `free` has held more than `WARM_STACKS` stacks.
    above_since: Option<std::time::Instant>,
    /// `free.len()` at the scavenger's last pass: fewer now means spawns
    /// are drawing the free stacks down, and their pages are about to be
    /// used again.
    last_free: usize,
    guard: Option<GuardKind>,
    /// Mappings this pool created (an upper bound of what it costs).
    maps_used: usize,
    /// The base of every chunk of this pool.
    chunks: std::collections::BTreeSet<usize>,
    /// Chunks whose 64 stacks were all clean, replaced by a fresh mapping
    /// to give their page tables back (I4): no guards until revived.
    dormant: Vec<usize>,
    /// When the scavenger last looked for chunks to make dormant (it sorts
    /// the clean list: at most once a second).
    dormant_pass: Option<std::time::Instant>,
}

/// A pool of equally sized stacks, shared by the runtimes that use that
/// size.
pub(crate) struct StackPool {
    size: usize,
    state: RawMutex<PoolState>,
    max_map_count: usize,
}

// SAFETY: the raw pointers in `free` are addresses of stacks the pool owns
// (I2); they are only handed out under the pool lock.
unsafe impl Send for StackPool {}
// SAFETY: as above; all access goes through the RawMutex.
unsafe impl Sync for StackPool {}

impl StackPool {
    /// A pool of stacks of `size` usable bytes (rounded up to pages).
    pub(crate) fn new(size: usize) -> Self {
        let size = super::round_to_pages(size);
        StackPool {
            size,
            state: RawMutex::new(
                LockClass::Pool,
                PoolState {
                    free: std::collections::VecDeque::new(),
                    clean: Vec::new(),
                    above_since: None,
                    last_free: 0,
                    guard: None,
                    maps_used: 0,
                    chunks: std::collections::BTreeSet::new(),
                    dormant: Vec::new(),
                    dormant_pass: None,
                },
            ),
            max_map_count: read_max_map_count(),
        }
    }

    /// Usable size of each stack.
    pub(crate) fn stack_size(&self) -> usize {
        self.size
    }

    /// Take a stack, mapping a new chunk if the free list is empty.
    pub(crate) fn take(&self) -> Result<Stack, StackError> {
        loop {
            {
                let mut state = self.state.lock();
                if let Some(base) = state.free.pop_back().or_else(|| state.clean.pop()) {
                    return Ok(Stack {
                        base,
                        size: self.size,
                    });
                }
            }
            // Another taker may empty the new chunk first: then grow again.
            self.grow()?;
        }
    }

    /// Return a stack no actor runs on any more (I2).
    pub(crate) fn give_back(&self, stack: Stack) {
        debug_assert_eq!(stack.size, self.size);
        self.state.lock().free.push_back(stack.base);
    }

    /// Move up to `n` stacks into `out` under one lock hold (a scheduler's
    /// cache refill), mapping a chunk if the pool is empty.
    pub(crate) fn take_batch(&self, n: usize, out: &mut Vec<Stack>) -> Result<(), StackError> {
        loop {
            let mut state = self.state.lock();
            if state.free.is_empty() && state.clean.is_empty() {
                drop(state);
                self.grow()?;
                continue;
            }
            // Clean stacks first: the cache hands out its last entries
            // first, and those should be the warm ones.
            let from_free = n.min(state.free.len());
            let keep = state.clean.len().saturating_sub(n - from_free);
            out.extend(state.clean.drain(keep..).map(|base| Stack {
                base,
                size: self.size,
            }));
            let keep = state.free.len() - from_free;
            out.extend(state.free.drain(keep..).map(|base| Stack {
                base,
                size: self.size,
            }));
            return Ok(());
        }
    }

    /// Return many stacks under one lock hold (a scheduler's cache spill).
    pub(crate) fn give_back_batch(&self, stacks: impl Iterator<Item = Stack>) {
        let mut state = self.state.lock();
        state.free.extend(stacks.map(|s| s.base));
    }

    /// The scavenger's pass (the system monitor's tick): once the free
    /// stacks have stayed above the high-water mark for `SCAVENGE_AFTER`
    /// without being drawn down, return the pages of up to
    /// `SCAVENGE_BATCH` of the oldest (I3). Returns how many it returned.
    pub(crate) fn scavenge(&self, now: std::time::Instant) -> usize {
        let mut state = self.state.lock();
        let len = state.free.len();
        let drawn_down = len < state.last_free;
        state.last_free = len;
        if len <= WARM_STACKS || drawn_down {
            state.above_since = None;
            return 0;
        }
        let since = *state.above_since.get_or_insert(now);
        if now.duration_since(since) < SCAVENGE_AFTER {
            return 0;
        }
        let n = (len - WARM_STACKS).min(SCAVENGE_BATCH);
        drop(state);
        let returned = self.return_oldest(n);
        // Our own removal is not a drawing down.
        let episode_over = {
            let mut state = self.state.lock();
            state.last_free = state.free.len();
            let due = state
                .dormant_pass
                .is_none_or(|at| now.duration_since(at) >= DORMANT_PASS_EVERY);
            if due && state.last_free <= WARM_STACKS {
                state.dormant_pass = Some(now);
                true
            } else {
                false
            }
        };
        if episode_over {
            self.make_dormant();
        }
        returned
    }

    /// Return the pages of free stacks beyond the warm set to the kernel
    /// at once (I3). Called when a runtime finishes.
    pub(crate) fn trim(&self) {
        let excess = self.state.lock().free.len().saturating_sub(WARM_STACKS);
        self.return_oldest(excess);
        self.make_dormant();
    }

    /// Take up to `n` of the oldest free stacks out of the pool, return
    /// their pages outside the lock (a spawn meanwhile is not held up by
    /// the system calls), and file them as clean.
    fn return_oldest(&self, n: usize) -> usize {
        let mut batch: Vec<*mut u8> = {
            let mut state = self.state.lock();
            let n = n.min(state.free.len());
            state.free.drain(..n).collect()
        };
        // Stacks next to each other in a chunk go back in one call: the
        // range between them is their guard pages, which keep their
        // markers through MADV_DONTNEED (I3). A million stacks of a
        // finished run are then some 16,000 calls, not a million.
        batch.sort_unstable();
        let stride = self.size + GUARD_SIZE;
        let mut i = 0;
        while i < batch.len() {
            let start = batch[i];
            let mut end = start.wrapping_add(self.size);
            i += 1;
            while i < batch.len() && batch[i] == end.wrapping_add(GUARD_SIZE) {
                end = batch[i].wrapping_add(self.size);
                i += 1;
            }
            debug_assert!((end as usize - start as usize + GUARD_SIZE).is_multiple_of(stride));
            // SAFETY: `start..end` covers free stacks of ours that we took
            // out of the pool (I2), each a stride after the last (in one
            // chunk, or across two chunks the kernel placed back to back),
            // and the guard pages between them, which are ours too. No
            // actor runs on these stacks and no one else can take them, so
            // discarding their contents is unobservable; the guards are
            // kept (I3).
            unsafe {
                libc::madvise(
                    start.cast(),
                    end as usize - start as usize,
                    libc::MADV_DONTNEED,
                );
            }
        }
        let returned = batch.len();
        self.state.lock().clean.extend(batch);
        returned
    }

    /// Add a chunk of stacks to the pool: revive a dormant one, else map a
    /// new one. The system calls run outside the pool lock: installing a
    /// chunk's guards builds its page tables (tens of microseconds), and the
    /// other schedulers' takes and give-backs must not wait for that, nor
    /// sleep on the lock meanwhile. Two growers at once add two chunks.
    fn grow(&self) -> Result<(), StackError> {
        let stride = self.size + GUARD_SIZE;
        let len = stride * STACKS_PER_CHUNK;
        loop {
            let Some(chunk) = self.state.lock().dormant.pop() else {
                break;
            };
            // Guards first: no stack of a chunk is handed out without its
            // guard (I1, I4). A chunk whose guards cannot be had is left
            // out (it costs address space only).
            if install_markers(chunk as *mut u8, stride) {
                push_chunk_stacks(&mut self.state.lock(), chunk as *mut u8, stride);
                return Ok(());
            }
        }
        // Reserve the chunk's mappings in the budget before making them;
        // while the guard kind is unknown (the first chunk), reserve the
        // dearer kind's cost and refund the difference once it is known.
        let budget = self.max_map_count.saturating_sub(MAP_RESERVE);
        let (reserved, known, had_maps) = {
            let mut state = self.state.lock();
            let cost = state.guard.unwrap_or(GuardKind::Protect).maps_per_chunk();
            if state.maps_used + cost > budget {
                return Err(StackError::MapLimit {
                    max_map_count: self.max_map_count,
                });
            }
            let had_maps = state.maps_used > 0;
            state.maps_used += cost;
            (cost, state.guard, had_maps)
        };
        let refund = |n: usize| self.state.lock().maps_used -= n;
        let mapped = match crate::mapping::map(len, Commit::Lazily) {
            Ok(mapped) => mapped,
            Err(err) => {
                refund(reserved);
                return Err(if err.raw_os_error() == Some(libc::ENOMEM) && had_maps {
                    StackError::MapLimit {
                        max_map_count: self.max_map_count,
                    }
                } else {
                    StackError::OutOfMemory {
                        stack_size: self.size,
                    }
                });
            }
        };
        let chunk = mapped.as_ptr();
        let kind = known.unwrap_or_else(|| probe_guard_kind(chunk));
        let guarded = match kind {
            GuardKind::Marker => install_markers(chunk, stride),
            GuardKind::Protect => (0..STACKS_PER_CHUNK).all(|i| {
                // SAFETY: the guard page of stack `i` of the chunk we just
                // mapped; nothing uses it yet.
                unsafe {
                    libc::mprotect(
                        chunk.wrapping_add(i * stride).cast(),
                        GUARD_SIZE,
                        libc::PROT_NONE,
                    ) == 0
                }
            }),
        };
        if !guarded {
            // SAFETY: unmapping the chunk we just mapped; no stack of it
            // has been handed out.
            unsafe { crate::mapping::unmap(mapped, len) };
            refund(reserved);
            return Err(StackError::MapLimit {
                max_map_count: self.max_map_count,
            });
        }
        overflow::register_chunk(chunk as usize, len, stride);
        let mut state = self.state.lock();
        state.maps_used -= reserved - kind.maps_per_chunk();
        state.guard.get_or_insert(kind);
        state.chunks.insert(chunk as usize);
        push_chunk_stacks(&mut state, chunk, stride);
        Ok(())
    }

    /// Give back the page tables of chunks whose stacks are all clean
    /// (I4): each is replaced in place by a fresh mapping and set aside as
    /// dormant until `grow` needs a chunk. Run once the free stacks are
    /// back to the warm set (the scavenger's last pass of an episode, a
    /// finished run): it sorts the clean list, outside the lock.
    fn make_dormant(&self) {
        let mut clean = {
            let mut state = self.state.lock();
            if state.guard != Some(GuardKind::Marker) || state.clean.len() < STACKS_PER_CHUNK {
                return;
            }
            std::mem::take(&mut state.clean)
        };
        clean.sort_unstable();
        let stride = self.size + GUARD_SIZE;
        let chunks = self.state.lock().chunks.clone();
        let mut whole = Vec::new();
        let mut keep = Vec::with_capacity(clean.len());
        let mut i = 0;
        while i < clean.len() {
            let base = (clean[i] as usize).wrapping_sub(GUARD_SIZE);
            let last = i + STACKS_PER_CHUNK - 1;
            // Sorted and distinct: 64 entries from a chunk's first stack to
            // its last are all of that chunk's stacks.
            if chunks.contains(&base)
                && last < clean.len()
                && clean[last] as usize == base + (STACKS_PER_CHUNK - 1) * stride + GUARD_SIZE
            {
                whole.push(base);
                i += STACKS_PER_CHUNK;
            } else {
                keep.push(clean[i]);
                i += 1;
            }
        }
        let mut dormant = Vec::with_capacity(whole.len());
        for base in whole {
            // SAFETY: every stack of the chunk is a clean free stack we took
            // out of the pool (I2): nothing in the chunk is in use. The
            // range stays mapped throughout, so the overflow handler's
            // record of it stays valid (I1).
            if unsafe { crate::mapping::replace_lazily(base as *mut u8, stride * STACKS_PER_CHUNK) }
            {
                dormant.push(base);
            } else {
                // Kept as it was: back with the clean stacks.
                keep.extend(
                    (0..STACKS_PER_CHUNK).map(|k| (base + k * stride + GUARD_SIZE) as *mut u8),
                );
            }
        }
        let mut state = self.state.lock();
        state.clean.extend(keep);
        state.dormant.extend(dormant);
    }
}

/// Install the guard markers of a whole chunk with one
/// `process_madvise(2)` call (half the cost of one `madvise` per guard).
/// `false` if the kernel refuses it; the caller then installs them one by
/// one.
fn install_markers_batched(chunk: *mut u8, stride: usize) -> bool {
    static PIDFD: std::sync::OnceLock<libc::c_int> = std::sync::OnceLock::new();
    // SAFETY: pidfd_open on our own pid; the fd is kept for the process's
    // life (one per process, in the OnceLock).
    let pidfd = *PIDFD.get_or_init(|| unsafe {
        libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) as libc::c_int
    });
    if pidfd < 0 {
        return false;
    }
    let iov: [libc::iovec; STACKS_PER_CHUNK] = std::array::from_fn(|i| libc::iovec {
        iov_base: chunk.wrapping_add(i * stride).cast(),
        iov_len: GUARD_SIZE,
    });
    // SAFETY: every iovec names the guard page of a stack in the chunk we
    // just mapped, and nothing uses the chunk yet; the kernel only reads
    // `iov`, which outlives the call.
    let done = unsafe {
        libc::syscall(
            libc::SYS_process_madvise,
            pidfd,
            iov.as_ptr(),
            STACKS_PER_CHUNK,
            MADV_GUARD_INSTALL,
            0,
        )
    };
    done == (STACKS_PER_CHUNK * GUARD_SIZE) as libc::c_long
}

/// Install the guard markers of a whole chunk: batched, or one by one if
/// the kernel refuses the batch. `false` if a marker could not be had.
fn install_markers(chunk: *mut u8, stride: usize) -> bool {
    if install_markers_batched(chunk, stride) {
        return true;
    }
    (0..STACKS_PER_CHUNK).all(|i| {
        // SAFETY: the guard page of stack `i` of a chunk of ours whose
        // stacks are not handed out.
        unsafe {
            libc::madvise(
                chunk.wrapping_add(i * stride).cast(),
                GUARD_SIZE,
                MADV_GUARD_INSTALL,
            ) == 0
        }
    })
}

/// File the 64 stacks of `chunk` (guards in place, nothing touched) as
/// clean, in reverse so the lowest is handed out first.
fn push_chunk_stacks(state: &mut PoolState, chunk: *mut u8, stride: usize) {
    for i in (0..STACKS_PER_CHUNK).rev() {
        state
            .clean
            .push(chunk.wrapping_add(i * stride + GUARD_SIZE));
    }
}

/// Does this kernel support guard markers? Tried on the first guard page
/// of the first chunk.
fn probe_guard_kind(chunk: *mut u8) -> GuardKind {
    // SAFETY: the first page of a chunk we own and have not handed out;
    // the marker is what `grow` installs there next anyway.
    let rc = unsafe { libc::madvise(chunk.cast(), GUARD_SIZE, MADV_GUARD_INSTALL) };
    if rc == 0 {
        GuardKind::Marker
    } else {
        GuardKind::Protect
    }
}

/// `vm.max_map_count`, or the kernel default if it cannot be read.
fn read_max_map_count() -> usize {
    std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(65_530)
}

#[cfg(all(test, not(loom)))]
#[allow(clippy::unwrap_used)] // a failed step should fail loudly here
#[allow(clippy::disallowed_methods)] // real time: the tests measure the OS clock
mod tests {
    use super::{SCAVENGE_AFTER, StackPool, WARM_STACKS};
    use std::time::{Duration, Instant};

    /// Whether the page at `addr` is resident.
    fn resident(addr: *mut u8) -> bool {
        let mut vec = 0u8;
        let page = (addr as usize) & !4095;
        // SAFETY: mincore only reads the page tables of a range we mapped
        // and writes one byte into `vec`.
        let rc = unsafe { libc::mincore(page as *mut libc::c_void, 4096, &mut vec) };
        assert_eq!(rc, 0, "mincore");
        vec & 1 == 1
    }

    /// Take `n` stacks, write 7 near each top, give them all back (oldest
    /// first); returns the written addresses.
    fn use_and_free(pool: &StackPool, n: usize) -> Vec<*mut u8> {
        let stacks: Vec<_> = (0..n).map(|_| pool.take().unwrap()).collect();
        let tops: Vec<*mut u8> = stacks.iter().map(|s| s.top().wrapping_sub(64)).collect();
        for &t in &tops {
            // SAFETY: inside a stack we own.
            unsafe { t.write_volatile(7) };
        }
        for s in stacks {
            pool.give_back(s);
        }
        tops
    }

    /// Free stacks above the warm set keep their pages until they have
    /// stayed free for SCAVENGE_AFTER; then the scavenger returns the
    /// oldest ones' pages, keeps the warm set resident, and the returned
    /// stacks work again when taken.
    #[test]
    fn the_scavenger_returns_the_pages_of_the_oldest_free_stacks_after_a_delay() {
        let pool = StackPool::new(16 * 1024);
        let n = WARM_STACKS + 100;
        let tops = use_and_free(&pool, n);
        let t0 = Instant::now();
        assert_eq!(pool.scavenge(t0), 0, "starts the clock only");
        assert_eq!(pool.scavenge(t0 + SCAVENGE_AFTER / 2), 0, "too soon");
        assert!(tops.iter().all(|&t| resident(t)));
        assert_eq!(
            pool.scavenge(t0 + SCAVENGE_AFTER + Duration::from_millis(1)),
            100
        );
        // The first 100 given back are the oldest.
        assert!(tops[..100].iter().all(|&t| !resident(t)), "returned");
        assert!(
            tops[100..].iter().all(|&t| resident(t)),
            "the warm set stays"
        );
        assert_eq!(
            pool.scavenge(Instant::now() + SCAVENGE_AFTER * 2),
            0,
            "at the mark"
        );
        // Returned stacks are zero-filled and usable; the warm ones come first.
        let again: Vec<_> = (0..n).map(|_| pool.take().unwrap()).collect();
        for s in &again {
            let t = s.top().wrapping_sub(64);
            // SAFETY: inside a stack we own.
            let v = unsafe { t.read_volatile() };
            assert!(v == 7 || v == 0);
            // SAFETY: as above.
            unsafe { t.write_volatile(1) };
        }
        for s in again {
            pool.give_back(s);
        }
    }

    /// Spawns drawing the free stacks down stop the clock: their pages are
    /// about to be used.
    #[test]
    fn the_scavenger_waits_while_free_stacks_are_being_taken() {
        let pool = StackPool::new(16 * 1024);
        let tops = use_and_free(&pool, WARM_STACKS + 100);
        let t0 = Instant::now();
        assert_eq!(pool.scavenge(t0), 0, "starts the clock");
        let taken = pool.take().unwrap();
        let later = t0 + SCAVENGE_AFTER + Duration::from_millis(1);
        assert_eq!(pool.scavenge(later), 0, "drawn down: the clock restarts");
        assert_eq!(pool.scavenge(later + SCAVENGE_AFTER / 2), 0, "too soon");
        assert_eq!(pool.scavenge(later + SCAVENGE_AFTER * 2), 99);
        assert!(tops[..99].iter().all(|&t| !resident(t)), "returned");
        pool.give_back(taken);
    }

    /// Schedulers that find the pool empty at once each grow it (the
    /// system calls run outside the lock): every stack goes to one taker
    /// only, none is lost, and the mapping budget counts exactly the
    /// chunks made (the reservation for the first chunk, made before the
    /// guard kind is known, is refunded).
    #[test]
    fn takers_racing_on_an_empty_pool_grow_it_without_losing_or_sharing_a_stack() {
        use super::STACKS_PER_CHUNK;
        use std::sync::{Arc, Barrier};
        const TAKERS: usize = 4;
        const EACH: usize = 300;
        let pool = Arc::new(StackPool::new(16 * 1024));
        let start = Arc::new(Barrier::new(TAKERS));
        let takers: Vec<_> = (0..TAKERS)
            .map(|t| {
                let (pool, start) = (pool.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let mut mine = Vec::new();
                    while mine.len() < EACH {
                        if t % 2 == 0 {
                            mine.push(pool.take().unwrap());
                        } else {
                            pool.take_batch(32.min(EACH - mine.len()), &mut mine)
                                .unwrap();
                        }
                    }
                    mine
                })
            })
            .collect();
        let stacks: Vec<_> = takers.into_iter().flat_map(|t| t.join().unwrap()).collect();
        let distinct: std::collections::HashSet<usize> =
            stacks.iter().map(|s| s.top() as usize).collect();
        assert_eq!(distinct.len(), stacks.len(), "a stack was handed out twice");
        {
            let state = pool.state.lock();
            let chunks = state.chunks.len();
            let per_chunk = state
                .guard
                .expect("the pool grew without learning its guard kind")
                .maps_per_chunk();
            assert_eq!(state.maps_used, chunks * per_chunk, "budget drifted");
            assert_eq!(
                chunks * STACKS_PER_CHUNK,
                stacks.len() + state.free.len() + state.clean.len(),
                "a stack was lost"
            );
        }
        for s in stacks {
            pool.give_back(s);
        }
    }

    /// A finished run's trim returns everything beyond the warm set at
    /// once, coalescing neighbours into one call, and leaves no stack's
    /// data behind in the returned ones.
    #[test]
    fn trim_returns_every_free_stack_beyond_the_warm_set() {
        let pool = StackPool::new(16 * 1024);
        let tops = use_and_free(&pool, WARM_STACKS + 3 * 64);
        pool.trim();
        let returned = tops.iter().filter(|&&t| !resident(t)).count();
        assert_eq!(returned, 3 * 64);
    }
}
