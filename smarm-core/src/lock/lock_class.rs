//! Lock classes and their order, checked per thread in debug builds (I1).

/// The class of a [`RawMutex`](super::RawMutex); acquire in increasing rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum LockClass {
    /// Per-slot cold data, the slot free list.
    Leaf = 0,
    /// A channel's queue. A waker may enqueue (Queue) while holding it.
    Channel = 1,
    /// The timer heap.
    Timers = 2,
    /// The stack pool.
    Pool = 3,
    /// A run queue (local or injector).
    Queue = 4,
    /// The fd waiters of the IO driver (nothing is taken inside it).
    Io = 5,
}

#[cfg(debug_assertions)]
std::thread_local! {
    static HELD: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// This thread's held set, through a call that is never inlined, so the
/// thread-local's address is recomputed after any switch (scheduler (I2)).
#[cfg(debug_assertions)]
#[inline(never)]
fn held<R>(f: &dyn Fn(&std::cell::Cell<u8>) -> R) -> R {
    HELD.with(f)
}

/// Record that `class` is being acquired; panics on an order violation.
#[inline]
pub(crate) fn acquire(class: LockClass) {
    #[cfg(debug_assertions)]
    held(&|h| {
        let held = h.get();
        let bit = 1u8 << class as u8;
        assert!(
            held & !(bit - 1) == 0,
            "smarm: lock order violation: acquiring {class:?} while holding classes {held:#07b} \
             (acquire in increasing rank, one of each)"
        );
        h.set(held | bit);
    });
    #[cfg(not(debug_assertions))]
    let _ = class;
}

/// Record that `class` was released.
#[inline]
pub(crate) fn release(class: LockClass) {
    #[cfg(debug_assertions)]
    held(&|h| h.set(h.get() & !(1u8 << class as u8)));
    #[cfg(not(debug_assertions))]
    let _ = class;
}

/// Debug check for (I2): no internal lock is held at a context switch.
#[inline]
pub(crate) fn assert_no_locks_held() {
    #[cfg(debug_assertions)]
    held(&|h| {
        assert_eq!(
            h.get(),
            0,
            "smarm: an internal lock is held across a context switch"
        );
    });
}
