//! `PreemptingAlloc`: a global-allocator wrapper that makes every
//! allocation a timeslice safepoint, so a busy actor that allocates is
//! switched out when its slice is spent, without `check!()` in its loop.
//!
//! The wrapped allocator does the work; after an allocation (or a
//! reallocation) returns, the safepoint runs. It never unwinds and never
//! observes a stop (a global allocator must not unwind), and it switches out
//! only an actor of a runtime, with preemption enabled, no wait open and no
//! panic in flight (see [`preempt`](super::preempt)). Deallocation is not a
//! safepoint. The switched-out actor is pinned: it resumes on the same OS
//! thread, so a thread-local borrow held across the allocation stays valid.

use std::alloc::{GlobalAlloc, Layout, System};

/// A global allocator that preempts actors at allocations.
///
/// Install it once, in the binary:
///
/// ```
/// #[global_allocator]
/// static ALLOC: smarm::PreemptingAlloc = smarm::PreemptingAlloc::system();
/// # fn main() {}
/// ```
///
/// or wrap another allocator with [`PreemptingAlloc::new`]. The cost is a
/// thread-local countdown per allocation and a cycle-counter read every
/// 16th; see the guide's "Fairness, preemption and introspection" chapter
/// for the measured figures and for exactly where an actor can be switched
/// out.
#[derive(Debug, Default, Clone, Copy)]
pub struct PreemptingAlloc<A = System> {
    inner: A,
}

impl PreemptingAlloc<System> {
    /// Preempting allocations from the system allocator.
    pub const fn system() -> Self {
        PreemptingAlloc { inner: System }
    }
}

impl<A> PreemptingAlloc<A> {
    /// Preempting allocations from `inner`.
    pub const fn new(inner: A) -> Self {
        PreemptingAlloc { inner }
    }
}

// SAFETY: every method forwards to `inner` with the caller's arguments and
// returns its result unchanged, so `inner`'s contract is this one's; the
// safepoint after it neither unwinds nor touches the returned block.
unsafe impl<A: GlobalAlloc> GlobalAlloc for PreemptingAlloc<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = {
            // The inner allocator may hold its own lock: a section.
            let _inner = super::Section::enter();
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { self.inner.alloc(layout) }
        };
        super::preempt::alloc_safepoint();
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _inner = super::Section::enter();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = {
            // The inner allocator may hold its own lock: a section.
            let _inner = super::Section::enter();
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { self.inner.alloc_zeroed(layout) }
        };
        super::preempt::alloc_safepoint();
        p
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = {
            // The inner allocator may hold its own lock: a section.
            let _inner = super::Section::enter();
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { self.inner.realloc(ptr, layout, new_size) }
        };
        super::preempt::alloc_safepoint();
        p
    }
}
