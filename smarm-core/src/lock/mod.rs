//! The runtime's internal locks and what they stand on: the futex syscall
//! wrappers, `RawMutex` (the short internal lock) and its debug-checked
//! lock classes, `lock_std` for the std mutexes the runtime keeps, the
//! no-preempt gate every held lock closes, the asymmetric fence
//! (`membarrier`), and the one wait of a plain thread in a blocking call
//! (`thread_wait`). The actor-aware `Mutex` users take is `sync` (layer 5).
//!
//! # Design
//!
//! Runtime bookkeeping holds locks for a few dozen instructions and never
//! across a context switch. `RawMutex` is a three-state futex mutex
//! (unlocked, locked, locked-with-waiters) after Drepper's "Futexes Are
//! Tricky"; it cannot poison (the data it guards is left consistent by
//! construction: no user code runs under it). Under loom it is a spin lock
//! over loom atomics, so models that touch it stay explorable.
//!
//! # Invariants
//!
//! - (I1) Lock classes are acquired in increasing rank, at most one lock of
//!   each class at a time (checked per thread in debug builds).
//! - (I2) No `RawMutex` is held across a context switch: the switch-out path
//!   asserts the per-thread held set is empty in debug builds.
//! - (I3) Preemption is disabled while any `RawMutex`, or a std mutex taken
//!   with `lock_std`, is held.
//!
//! # Safety
//!
//! `futex.rs` issues the raw syscall on a live `AtomicU32`; `raw_mutex.rs`
//! hands out `&mut T` only through a guard that proves the lock is held.

#[cfg(all(target_os = "linux", not(loom)))]
pub(crate) mod futex;
mod lock_class;
pub(crate) mod membarrier;
pub(crate) mod no_preempt;
mod raw_mutex;
mod std_lock;
pub(crate) mod thread_wait;

pub(crate) use lock_class::{LockClass, assert_no_locks_held};
pub(crate) use raw_mutex::{RawMutex, RawMutexGuard};
pub(crate) use std_lock::lock_std;
