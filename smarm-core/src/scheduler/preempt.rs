//! The preemption gate: `NoPreempt` marks code that must not be switched
//! out (runtime bookkeeping holding a thread-local borrow or an internal
//! lock). Safepoints consult [`preemption_enabled`] before switching an
//! actor out on their own initiative.

use std::cell::Cell;

std::thread_local! {
    static DISABLED: Cell<u32> = const { Cell::new(0) };
}

/// Disables preemption on this thread until dropped (nests).
pub(crate) struct NoPreempt(());

impl NoPreempt {
    #[inline]
    pub(crate) fn new() -> Self {
        DISABLED.with(|d| d.set(d.get() + 1));
        NoPreempt(())
    }
}

impl Drop for NoPreempt {
    #[inline]
    fn drop(&mut self) {
        DISABLED.with(|d| d.set(d.get() - 1));
    }
}

/// Whether a safepoint may switch the current actor out on its own.
#[inline]
#[allow(dead_code)] // read by the timeslice safepoints
pub(crate) fn preemption_enabled() -> bool {
    DISABLED.with(|d| d.get() == 0)
}
