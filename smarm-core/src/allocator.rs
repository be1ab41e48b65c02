//! `PreemptingAlloc`: a global-allocator wrapper that makes every
//! allocation a timeslice safepoint, so a busy actor that allocates is
//! switched out when its slice is spent, without `check!()` in its loop.
//!
//! The wrapped allocator does the work; after an allocation (or a
//! reallocation) returns, the safepoint runs. It never unwinds and never
//! observes a stop (a global allocator must not unwind), and it switches out
//! only an actor of a runtime, with preemption enabled, no wait open and no
//! panic in flight (see the scheduler's `preempt`). Deallocation is not a
//! safepoint. The switched-out actor is pinned: it resumes on the same OS
//! thread, so a thread-local borrow held across the allocation stays valid.
//!
//! With [`with_heap_accounting`](PreemptingAlloc::with_heap_accounting),
//! each block also carries the tag of the actor it is charged to, in a
//! header below it (the `heap` module's design and invariants).

use crate::scheduler::{Section, alloc_safepoint};
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
    /// Tag every block with its owning actor (heap module docs).
    accounting: bool,
}

impl PreemptingAlloc<System> {
    /// Preempting allocations from the system allocator.
    pub const fn system() -> Self {
        PreemptingAlloc {
            inner: System,
            accounting: false,
        }
    }
}

impl<A> PreemptingAlloc<A> {
    /// Preempting allocations from `inner`.
    pub const fn new(inner: A) -> Self {
        PreemptingAlloc {
            inner,
            accounting: false,
        }
    }

    /// Also account the heap per actor: each allocation is charged to the
    /// actor running, each free credited to the actor that allocated the
    /// block (whoever frees it), so [`actor_info`](crate::actor_info)
    /// shows every actor's live heap bytes and
    /// [`Builder::max_heap_size`](crate::Builder::max_heap_size) can stop
    /// an actor that holds too much.
    ///
    /// ```
    /// #[global_allocator]
    /// static ALLOC: smarm::PreemptingAlloc =
    ///     smarm::PreemptingAlloc::system().with_heap_accounting();
    /// # fn main() {}
    /// ```
    ///
    /// The cost: 8 bytes more per block (a block aligned above 8 bytes
    /// pays its alignment), and an atomic update of the owner's account per
    /// allocation and per free. See the guide's chapter on memory for the
    /// measured figures and for what is charged to whom.
    pub const fn with_heap_accounting(mut self) -> Self {
        self.accounting = true;
        self
    }
}

impl<A: GlobalAlloc> PreemptingAlloc<A> {
    /// `inner` allocates `layout` with room for the account tag below the
    /// block; returns the address for the program.
    ///
    /// # Safety
    ///
    /// As `GlobalAlloc::alloc`; `zeroed` picks `alloc_zeroed`.
    #[inline]
    unsafe fn alloc_tagged(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        crate::heap::mark_installed();
        let Some(outer) = tagged_layout(layout) else {
            return std::ptr::null_mut();
        };
        let base = {
            let _inner = Section::enter();
            // SAFETY: forwarded with the caller's guarantees, the size
            // grown by the header (non-zero, checked above).
            unsafe {
                if zeroed {
                    self.inner.alloc_zeroed(outer)
                } else {
                    self.inner.alloc(outer)
                }
            }
        };
        if base.is_null() {
            return base;
        }
        // SAFETY: `base` has `outer.size()` bytes, the header first.
        let user = unsafe { base.add(crate::heap::header_for(layout.align())) };
        // SAFETY: the header's last 8 bytes, 8-aligned (`tagged_layout`).
        unsafe { crate::heap::write_tag(user, crate::heap::charge(layout.size())) };
        user
    }

    /// Free a block from [`alloc_tagged`](Self::alloc_tagged).
    ///
    /// # Safety
    ///
    /// As `GlobalAlloc::dealloc`.
    #[inline]
    unsafe fn dealloc_tagged(&self, user: *mut u8, layout: Layout) {
        // SAFETY: the block came from `alloc_tagged` with this layout (the
        // caller's guarantee), so its header is below it and tagged.
        let tag = unsafe { crate::heap::read_tag(user) };
        crate::heap::credit(tag, layout.size());
        let Some(outer) = tagged_layout(layout) else {
            return; // never allocated with this layout
        };
        let _inner = Section::enter();
        // SAFETY: the block `inner` allocated with `outer`, at its base.
        unsafe {
            self.inner
                .dealloc(user.sub(crate::heap::header_for(layout.align())), outer)
        }
    }

    /// Resize a block from [`alloc_tagged`](Self::alloc_tagged): the old
    /// size is credited to its owner, the new one charged to the running
    /// actor, as a free and an allocation would be.
    ///
    /// # Safety
    ///
    /// As `GlobalAlloc::realloc`.
    #[inline]
    unsafe fn realloc_tagged(&self, user: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let header = crate::heap::header_for(layout.align());
        let (Some(outer), Some(new_outer)) = (tagged_layout(layout), new_size.checked_add(header))
        else {
            return std::ptr::null_mut();
        };
        if Layout::from_size_align(new_outer, outer.align()).is_err() {
            return std::ptr::null_mut();
        }
        // SAFETY: as in `dealloc_tagged`.
        let tag = unsafe { crate::heap::read_tag(user) };
        let base = {
            let _inner = Section::enter();
            // SAFETY: the block `inner` allocated with `outer`, at its
            // base; the new size is non-zero and, rounded to the
            // alignment, does not overflow (checked above).
            unsafe { self.inner.realloc(user.sub(header), outer, new_outer) }
        };
        if base.is_null() {
            return base; // the old block stands, still charged as it was
        }
        crate::heap::credit(tag, layout.size());
        // SAFETY: the new block has the header first, as the old had.
        let user = unsafe { base.add(header) };
        // SAFETY: as in `alloc_tagged`.
        unsafe { crate::heap::write_tag(user, crate::heap::charge(new_size)) };
        user
    }
}

/// The layout `inner` is asked for: the block grown by its header, aligned
/// to at least 8 so the tag is aligned; `None` on overflow.
#[inline]
fn tagged_layout(layout: Layout) -> Option<Layout> {
    let size = layout
        .size()
        .checked_add(crate::heap::header_for(layout.align()))?;
    Layout::from_size_align(size, layout.align().max(8)).ok()
}

// SAFETY: every method forwards to `inner` with the caller's arguments and
// returns its result unchanged, so `inner`'s contract is this one's; the
// safepoint after it neither unwinds nor touches the returned block. With
// accounting, each block is `inner`'s grown by a header below the address
// returned, which keeps the caller's alignment (the header is a multiple
// of it) and is used only by these methods.
unsafe impl<A: GlobalAlloc> GlobalAlloc for PreemptingAlloc<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = if self.accounting {
            // SAFETY: the caller's guarantees.
            unsafe { self.alloc_tagged(layout, false) }
        } else {
            // The inner allocator may hold its own lock: a section.
            let _inner = Section::enter();
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { self.inner.alloc(layout) }
        };
        alloc_safepoint();
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if self.accounting {
            // SAFETY: the caller's guarantees.
            return unsafe { self.dealloc_tagged(ptr, layout) };
        }
        let _inner = Section::enter();
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = if self.accounting {
            // SAFETY: the caller's guarantees.
            unsafe { self.alloc_tagged(layout, true) }
        } else {
            // The inner allocator may hold its own lock: a section.
            let _inner = Section::enter();
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { self.inner.alloc_zeroed(layout) }
        };
        alloc_safepoint();
        p
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = if self.accounting {
            // SAFETY: the caller's guarantees.
            unsafe { self.realloc_tagged(ptr, layout, new_size) }
        } else {
            // The inner allocator may hold its own lock: a section.
            let _inner = Section::enter();
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { self.inner.realloc(ptr, layout, new_size) }
        };
        alloc_safepoint();
        p
    }
}
