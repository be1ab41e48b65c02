//! `lock_std`: a `std::sync::Mutex` lock for the few runtime tables that
//! are not on a hot path (the IO driver, the blocking pool, the stack pools),
//! with preemption disabled while it is held (sync (I3)) and poisoning
//! ignored (no user code runs under these locks).

use super::no_preempt::NoPreempt;
use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard};

/// A held std mutex; preemption is enabled again after it is released.
pub(crate) struct StdGuard<'a, T> {
    // Declared first: dropped (unlocked) before the preemption gate opens.
    guard: MutexGuard<'a, T>,
    _no_preempt: NoPreempt,
}

/// Lock `m` with preemption disabled.
pub(crate) fn lock_std<T>(m: &Mutex<T>) -> StdGuard<'_, T> {
    let no_preempt = NoPreempt::new();
    StdGuard {
        guard: m.lock().unwrap_or_else(|e| e.into_inner()),
        _no_preempt: no_preempt,
    }
}

impl<T> Deref for StdGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for StdGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}
