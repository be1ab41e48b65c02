//! The slab of slots: segments allocated on demand, a free list, and the
//! runner-owned cells of each slot.

use super::Cold;
use super::SlotError;
use super::word::SlotWord;
use crate::lock::{LockClass, RawMutex};
use crate::loom::{AtomicBool, AtomicU8, AtomicU32, AtomicU64};
use crate::stack::Stack;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicPtr, Ordering};

const SEGMENT_BITS: u32 = 12;
const SEGMENT_LEN: usize = 1 << SEGMENT_BITS;

/// What an actor's closure returned, type-erased until its `JoinHandle<T>`
/// takes it back as `T` (a `()` is a zero-sized box: no allocation).
pub(crate) type Value = Box<dyn std::any::Any + Send>;

/// The entry closure of an actor that has not started yet.
pub(crate) type Entry = Box<dyn FnOnce() -> Value + Send + 'static>;

/// `f` as an actor's entry: its return value boxed for the joiner.
pub(crate) fn entry<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Entry {
    Box::new(move || Box::new(f()) as Value)
}

/// Data owned by whoever holds the actor Queued or Running (slot (I1),
/// (I2)), or by the spawner before the first enqueue.
#[repr(C)]
pub(crate) struct Runner {
    /// Saved stack pointer while the actor is switched out.
    pub(crate) sp: *mut u8,
    /// The actor's stack, from spawn to finalisation.
    pub(crate) stack: Option<Stack>,
    /// The closure to run, taken by the entry function.
    pub(crate) entry: Option<Entry>,
}

/// The bit of `Slot::pinned` that says the actor switched out while
/// unwinding (its panic count is on its scheduler's thread).
pub(crate) const PINNED_UNWINDING: u32 = 1 << 31;

/// The scheduler id + 1 a `Slot::pinned` value names (0: none), without
/// its [`PINNED_UNWINDING`] mark.
#[inline]
pub(crate) fn pinned_scheduler(pin: u32) -> u32 {
    pin & !PINNED_UNWINDING
}

/// One actor's slot. Laid out so that everything a wake and a resume touch
/// (the word, the stop flag, the saved stack pointer) shares the first
/// cache line; the cold data takes the second.
#[repr(C, align(64))]
pub(crate) struct Slot {
    pub(crate) word: SlotWord,
    /// Set by `request_stop`; observed by the actor at its safepoints.
    pub(crate) stop: AtomicBool,
    /// What the actor's latest wait is on (the scheduler's `WaitingOn`, as
    /// a byte; 0 before its first wait). Written by the actor as it opens
    /// a wait; read by introspection while the actor is parked.
    pub(crate) waiting_on: AtomicU8,
    /// Scheduler id + 1 this actor must resume on, or 0 (scheduler docs:
    /// pinned while unwinding), with [`PINNED_UNWINDING`] set if it
    /// switched out mid-unwind. Written by the actor before it switches
    /// out.
    pub(crate) pinned: AtomicU32,
    /// The parent's pid bits (who spawned it, or the pid given to
    /// `spawn_under`), 0 for the root. Written by the spawner before the
    /// first enqueue.
    pub(crate) parent: AtomicU64,
    runner: UnsafeCell<Runner>,
    /// Times the actor was switched out at a safepoint for overrunning its
    /// timeslice. Written only by the actor itself.
    pub(crate) overruns: AtomicU64,
    /// Timeslice-clock ticks the actor has run (feature
    /// `budget-accounting`). Written only by the scheduler running it.
    pub(crate) budget: AtomicU64,
    /// The bounded wait the actor is in: its epoch + 1, or 0 (time
    /// bounded (B1)). Written by the actor.
    pub(crate) bounded_epoch: AtomicU32,
    /// Bytes of its stack in use when it last switched out (feature
    /// `budget-accounting`, like `budget`; 0 without it). Written only by
    /// the scheduler running it.
    pub(crate) stack_depth: AtomicU32,
    /// The actor's cached wait timer: its seq + 1 (0 = none) and deadline
    /// (coordinator nanos). Armed by the actor, cleared when it fires.
    pub(crate) wait_timer_seq: AtomicU64,
    pub(crate) wait_timer_at: AtomicU64,
    /// The slot's call reply cell (the channel layer's `ReplyCell`, held
    /// type-erased, boxed to keep the pointer thin and the slot at three
    /// lines), made on its first call and kept for every later tenant
    /// (tags keep growing across them, channel reply (R4)).
    pub(crate) reply: std::sync::OnceLock<Box<std::sync::Arc<dyn std::any::Any + Send + Sync>>>,
    pub(crate) cold: RawMutex<Cold>,
    /// The `tracing` spans the actor is in (feature `tracing`): its own,
    /// then any it entered through `in_span`; entered on each resume, left
    /// on each switch out. Runner-owned, like `runner`. The one field
    /// past the three lines: the feature costs a line per actor.
    #[cfg(feature = "tracing")]
    spans: UnsafeCell<Vec<tracing::Span>>,
    /// The actor's causal profiling state (feature `smarm-causal`): a line
    /// of its own, which a profiling build pays per actor.
    #[cfg(feature = "smarm-causal")]
    pub(crate) causal: CausalCell,
}

/// An actor's part in causal profiling's delay accounting (the
/// `causal::delay` module has the protocol). `level` is raised by wakes
/// from any thread (`fetch_max`); the rest is written only by whoever runs
/// the actor.
#[cfg(feature = "smarm-causal")]
#[derive(Default)]
pub(crate) struct CausalCell {
    /// Delay paid or credited, in nanoseconds on the runtime's scale.
    pub(crate) level: AtomicU64,
    /// When the actor's time in a region was last counted (clock nanos).
    pub(crate) since: AtomicU64,
    /// The region of the outermost `causal::region` guard it has open,
    /// as id + 1 (0: none).
    pub(crate) region: AtomicU32,
    /// Its own region as an actor (by label), as id + 1 (0: none).
    pub(crate) actor_region: AtomicU32,
    /// When it last became runnable (coordinator nanos): a scheduler's
    /// pause delayed it only if that was before the pause ended.
    pub(crate) runnable_at: AtomicU64,
    /// The inserted delay when it last opened a wait: what a wake credits
    /// is what was inserted since (Coz's pre-block mark).
    pub(crate) waited_at: AtomicU64,
    /// The inserted delay its cached wait timer was armed at (`u64::MAX`
    /// for a wall-clock one): with `wait_timer_at`, when it will fire.
    pub(crate) timer_level: AtomicU64,
}

// SAFETY: `runner` is accessed only by the exclusive owner named in its
// doc (slot (I1), (I2)); everything else is atomic or behind the RawMutex.
unsafe impl Sync for Slot {}
// SAFETY: as above; the raw `sp` is an address in a stack the slot owns.
unsafe impl Send for Slot {}

impl Slot {
    /// Where a debugger finds the state word (`debugger.rs`).
    pub(crate) const WORD_OFFSET: usize = std::mem::offset_of!(Slot, word);
    /// Where a debugger finds the saved stack pointer (`UnsafeCell` is
    /// transparent).
    pub(crate) const SP_OFFSET: usize =
        std::mem::offset_of!(Slot, runner) + std::mem::offset_of!(Runner, sp);
    /// Where a debugger finds what a parked actor waits on.
    pub(crate) const WAITING_ON_OFFSET: usize = std::mem::offset_of!(Slot, waiting_on);
    /// Where a debugger finds the parent's pid bits.
    pub(crate) const PARENT_OFFSET: usize = std::mem::offset_of!(Slot, parent);

    pub(crate) fn new() -> Self {
        Slot {
            word: SlotWord::vacant(1),
            stop: AtomicBool::new(false),
            waiting_on: AtomicU8::new(0),
            pinned: AtomicU32::new(0),
            parent: AtomicU64::new(0),
            runner: UnsafeCell::new(Runner {
                sp: std::ptr::null_mut(),
                stack: None,
                entry: None,
            }),
            overruns: AtomicU64::new(0),
            budget: AtomicU64::new(0),
            bounded_epoch: AtomicU32::new(0),
            stack_depth: AtomicU32::new(0),
            wait_timer_seq: AtomicU64::new(0),
            wait_timer_at: AtomicU64::new(0),
            reply: std::sync::OnceLock::new(),
            cold: RawMutex::new(LockClass::Leaf, Cold::vacant()),
            #[cfg(feature = "tracing")]
            spans: UnsafeCell::new(Vec::new()),
            #[cfg(feature = "smarm-causal")]
            causal: CausalCell::default(),
        }
    }

    /// The actor's `tracing` spans (feature `tracing`), outermost first.
    ///
    /// # Safety
    ///
    /// As [`runner`](Slot::runner): only the actor's exclusive owner, and
    /// no other reference from this method live.
    #[cfg(feature = "tracing")]
    #[allow(clippy::mut_from_ref)] // exclusivity is the caller's contract
    pub(crate) unsafe fn spans(&self) -> &mut Vec<tracing::Span> {
        // SAFETY: exclusivity is the caller's contract (see above).
        unsafe { &mut *self.spans.get() }
    }

    /// The runner-owned cells.
    ///
    /// # Safety
    ///
    /// The caller must be the actor's exclusive owner: the spawner before
    /// the first enqueue, the scheduler that popped it (or the actor itself
    /// while it runs), per slot (I1)/(I2). No other reference from this
    /// method may be live.
    #[allow(clippy::mut_from_ref)] // exclusivity is the caller's contract
    pub(crate) unsafe fn runner(&self) -> &mut Runner {
        // SAFETY: exclusivity is the caller's contract (see above).
        unsafe { &mut *self.runner.get() }
    }

    /// The guard page below this actor's stack, as an address range, if it
    /// has a stack.
    ///
    /// # Safety
    ///
    /// Only on the thread running this actor (it owns the runner cells,
    /// slot (I2)), while no `&mut Runner` from [`runner`](Slot::runner) is
    /// live: the stack-overflow handler, interrupting the actor's own code.
    pub(crate) unsafe fn stack_guard(&self) -> Option<std::ops::Range<usize>> {
        // SAFETY: per the contract, nothing writes the runner cells now; a
        // shared read through the cell's pointer.
        let stack = unsafe { &(*self.runner.get()).stack };
        stack.as_ref().map(Stack::guard)
    }

    /// Hint the CPU to load the top of this actor's saved context (its
    /// register frame and the frames above it), ahead of a resume on this
    /// thread. Called by the waker that just made it Queued into its own
    /// scheduler's next slot.
    #[inline]
    pub(crate) fn prefetch_context(&self) {
        // SAFETY: the actor is Queued in the caller's next slot and the
        // caller is inside that slot's owner operation (the system monitor
        // cannot move it meanwhile), so nothing writes its runner cells
        // until this thread resumes it (slot (I1), (I2)); reading `sp` is a
        // plain read of a value written before its park was committed
        // (ordered by the word's AcqRel CAS).
        let sp = unsafe { (*self.runner.get()).sp };
        if sp.is_null() {
            return; // not started yet: no saved context
        }
        #[cfg(target_arch = "x86_64")]
        for line in 0..8 {
            // SAFETY: prefetch is a hint that never faults, whatever the
            // address; `sp` points into the actor's mapped stack anyway.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    sp.wrapping_add(line * 64).cast(),
                )
            };
        }
    }

    /// Raw pointer to the saved stack pointer, for the context switch.
    pub(crate) fn sp_ptr(&self) -> *mut *mut u8 {
        // SAFETY: only the address is taken; no reference is created.
        unsafe { &raw mut (*self.runner.get()).sp }
    }
}

const SEGMENT_BYTES: usize = SEGMENT_LEN * std::mem::size_of::<Slot>();

/// Map and initialise a segment of SEGMENT_LEN slots. `MAP_POPULATE`
/// commits its pages in one call instead of one page fault each (a fault
/// costs microseconds under virtualisation, and a segment is used densely).
/// Null if the kernel refuses the memory.
fn new_segment() -> *mut Slot {
    let Ok(mapped) = crate::mapping::map(SEGMENT_BYTES, crate::mapping::Commit::Now) else {
        return std::ptr::null_mut();
    };
    let base = mapped.as_ptr().cast::<Slot>();
    for i in 0..SEGMENT_LEN {
        // SAFETY: `base` is page-aligned (so Slot-aligned) and the mapping
        // holds SEGMENT_LEN slots; each is written once before publication.
        unsafe { base.add(i).write(Slot::new()) };
    }
    base
}

struct FreeList {
    recycled: Vec<u32>,
    next_fresh: usize,
}

/// All slots of one runtime.
pub(crate) struct SlotTable {
    segments: Box<[AtomicPtr<Slot>]>,
    free: RawMutex<FreeList>,
    capacity: usize,
    /// This table as a debugger finds it, unpublished first on drop
    /// (debugger (D1)).
    #[cfg(not(loom))]
    debug: Option<super::debugger::Published>,
}

impl SlotTable {
    pub(crate) fn new(capacity: usize) -> Self {
        let n = capacity.div_ceil(SEGMENT_LEN);
        let segments: Box<[AtomicPtr<Slot>]> = (0..n)
            .map(|_| AtomicPtr::new(std::ptr::null_mut()))
            .collect();
        SlotTable {
            // The boxed slice does not move with the table: the descriptor
            // may point at it.
            #[cfg(not(loom))]
            debug: Some(super::debugger::Published::new(
                super::debugger::DebugTable::new(&segments, SEGMENT_LEN),
            )),
            segments,
            free: RawMutex::new(
                LockClass::Leaf,
                FreeList {
                    recycled: Vec::new(),
                    next_fresh: 0,
                },
            ),
            capacity,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The slot at `index`, if its segment exists.
    #[inline]
    pub(crate) fn get(&self, index: u32) -> Option<&Slot> {
        let index = index as usize;
        let seg = self
            .segments
            .get(index >> SEGMENT_BITS)?
            .load(Ordering::Acquire);
        if seg.is_null() {
            return None;
        }
        // SAFETY: a non-null segment pointer was published (Release) after
        // its SEGMENT_LEN slots were initialised, and segments are freed
        // only when the table is dropped.
        Some(unsafe { &*seg.add(index & (SEGMENT_LEN - 1)) })
    }

    /// Take a vacant slot index, growing the table by a segment if needed.
    pub(crate) fn alloc(&self) -> Result<u32, SlotError> {
        let mut free = self.free.lock();
        if let Some(i) = free.recycled.pop() {
            return Ok(i);
        }
        let i = free.next_fresh;
        if i >= self.capacity {
            return Err(SlotError::AtCapacity {
                max_actors: self.capacity,
            });
        }
        let seg = &self.segments[i >> SEGMENT_BITS];
        if seg.load(Ordering::Acquire).is_null() {
            let new = new_segment();
            if new.is_null() {
                return Err(SlotError::TableOutOfMemory {
                    bytes: SEGMENT_BYTES,
                });
            }
            seg.store(new, Ordering::Release);
        }
        free.next_fresh = i + 1;
        Ok(i as u32)
    }

    /// Put a recycled (Vacant) slot back on the free list.
    pub(crate) fn release(&self, index: u32) {
        self.free.lock().recycled.push(index);
    }

    /// Indices that have ever held an actor (for sweeps).
    pub(crate) fn high_water(&self) -> usize {
        self.free.lock().next_fresh
    }
}

impl Drop for SlotTable {
    fn drop(&mut self) {
        #[cfg(not(loom))]
        drop(self.debug.take());
        for seg in self.segments.iter() {
            let Some(p) = std::ptr::NonNull::new(seg.load(Ordering::Acquire)) else {
                continue;
            };
            // SAFETY: `p` came from `new_segment` (SEGMENT_LEN initialised
            // slots in a mapping of SEGMENT_BYTES), and `&mut self` means no
            // slot reference is live; the mapping is ours to unmap after.
            unsafe {
                std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(
                    p.as_ptr(),
                    SEGMENT_LEN,
                ));
                crate::mapping::unmap(p.cast(), SEGMENT_BYTES);
            }
        }
    }
}
#[cfg(all(test, not(loom)))] // loom's atomics are larger
mod tests {
    use super::*;

    /// Every actor pays for its slot: a field that grows it past three
    /// cache lines costs a line per actor (the memory workload's bytes per
    /// process, and a miss more on a wake). Thin pointers keep the upper
    /// layers' parts in.
    #[test]
    fn a_slot_is_three_cache_lines() {
        // The `tracing` feature adds the actor's span stack, and
        // `smarm-causal` its profiling cell: a line each.
        let lines = 3
            + usize::from(cfg!(feature = "tracing"))
            + usize::from(cfg!(feature = "smarm-causal"));
        assert_eq!(std::mem::size_of::<Slot>(), lines * 64);
        assert!(std::mem::size_of::<super::super::Cold>() <= 56);
    }
}
