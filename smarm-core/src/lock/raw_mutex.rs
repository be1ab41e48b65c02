//! `RawMutex<T>`: the internal futex mutex (spin lock under loom).

use super::lock_class::{self, LockClass};
use super::no_preempt::NoPreempt;
use crate::loom::{AtomicU32, Ordering};
use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
const CONTENDED: u32 = 2;

/// How long a contended lock spins before it sleeps, in `spin_loop`
/// hints (~25 ns each on the EPYC this was measured on: ~5 µs, two
/// orders of magnitude above a critical section).
#[cfg(all(target_os = "linux", not(loom)))]
const SPIN_PAUSES: u32 = 200;
/// The longest pause between two looks at a contended lock. Backing off
/// (1, 2, 4, … hints) keeps the waiters' reads from pulling the lock's
/// cache line away from the holder, whose release then stays a local
/// write: with a single hint between looks, fan-in's senders on two
/// cores spent most of each send moving that line (the `fanin`
/// workload: 57 ns/msg, against 36 with backoff).
#[cfg(all(target_os = "linux", not(loom)))]
const MAX_PAUSE: u32 = 32;

/// A short internal lock of a given [`LockClass`].
pub(crate) struct RawMutex<T> {
    state: AtomicU32,
    class: LockClass,
    data: UnsafeCell<T>,
}

// SAFETY: the lock serialises all access to `data` (only a guard derefs it),
// so sharing the mutex across threads only ever moves `T` between them.
unsafe impl<T: Send> Sync for RawMutex<T> {}
// SAFETY: owning the mutex owns the `T`.
unsafe impl<T: Send> Send for RawMutex<T> {}

impl<T> RawMutex<T> {
    pub(crate) fn new(class: LockClass, value: T) -> Self {
        RawMutex {
            state: AtomicU32::new(UNLOCKED),
            class,
            data: UnsafeCell::new(value),
        }
    }

    /// Take the lock (preemption is disabled until the guard drops, I3).
    #[inline]
    pub(crate) fn lock(&self) -> RawMutexGuard<'_, T> {
        let no_preempt = NoPreempt::new();
        lock_class::acquire(self.class);
        if self
            .state
            .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        RawMutexGuard {
            mutex: self,
            _no_preempt: no_preempt,
        }
    }

    /// Take the lock if it is free.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<RawMutexGuard<'_, T>> {
        let no_preempt = NoPreempt::new();
        if self
            .state
            .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        lock_class::acquire(self.class);
        Some(RawMutexGuard {
            mutex: self,
            _no_preempt: no_preempt,
        })
    }

    #[cold]
    fn lock_contended(&self) {
        #[cfg(all(target_os = "linux", not(loom)))]
        {
            // Spin briefly (critical sections are a few dozen
            // instructions), backing off between looks.
            let mut pause = 1u32;
            let mut spun = 0u32;
            while spun < SPIN_PAUSES {
                if self.state.load(Ordering::Relaxed) == UNLOCKED
                    && self
                        .state
                        .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                {
                    return;
                }
                for _ in 0..pause {
                    std::hint::spin_loop();
                }
                spun += pause;
                pause = (pause * 2).min(MAX_PAUSE);
            }
            // Drepper's mutex 3: mark contended, sleep while it stays so.
            while self.state.swap(CONTENDED, Ordering::Acquire) != UNLOCKED {
                super::futex::wait(&self.state, CONTENDED, None);
            }
        }
        #[cfg(any(loom, not(target_os = "linux")))]
        {
            let _ = CONTENDED;
            while self
                .state
                .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                #[cfg(loom)]
                loom::thread::yield_now();
                #[cfg(not(loom))]
                std::thread::yield_now();
            }
        }
    }

    #[inline]
    fn unlock(&self) {
        if self.state.swap(UNLOCKED, Ordering::Release) == CONTENDED {
            #[cfg(all(target_os = "linux", not(loom)))]
            super::futex::wake(&self.state, 1);
        }
        lock_class::release(self.class);
    }
}

/// Proof that a [`RawMutex`] is held; derefs to the data.
pub(crate) struct RawMutexGuard<'a, T> {
    mutex: &'a RawMutex<T>,
    _no_preempt: NoPreempt,
}

impl<T> Deref for RawMutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while the lock is held, so no other
        // reference to `data` is live.
        unsafe { &*self.mutex.data.get() }
    }
}

impl<T> DerefMut for RawMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only borrow.
        unsafe { &mut *self.mutex.data.get() }
    }
}

impl<T> Drop for RawMutexGuard<'_, T> {
    fn drop(&mut self) {
        self.mutex.unlock();
    }
}
