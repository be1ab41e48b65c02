//! A scheduler's LIFO next slot: the actor its running actor most recently
//! woke or spawned, run next while its data is warm. Its own thread puts
//! and takes at every wake and pop; the system monitor takes the occupant
//! of a scheduler stuck inside one actor's run (a blocking system call, a
//! std lock), so the actor it woke last does not wait for the call.
//!
//! # Design
//!
//! An asymmetric Dekker pair keeps the owner's path to plain loads and
//! stores: the owner marks itself `busy`, fences lightly and checks
//! `frozen`; the monitor sets `frozen`, issues the process-wide barrier
//! ([`membarrier`](crate::lock::membarrier)) and checks `busy`. Either the
//! monitor sees the owner busy (and leaves the slot alone), or the owner
//! sees the slot frozen (and waits the few instructions the take lasts).
//! Without the kernel's barrier, the monitor never takes.
//!
//! # Invariants
//!
//! - (N1) The occupant is read and written only inside an owner operation
//!   (`busy` set, `frozen` seen clear) or inside a monitor take (`frozen`
//!   set, `busy` seen clear after the barrier): never by both at once. An
//!   owner operation may read the occupant's saved context (direct
//!   handoff, prefetch) for the same reason.
//! - (N2) An actor is in at most one place: what the monitor takes it
//!   moves to the injector, and the owner then finds the slot empty.

use crate::lock::membarrier;
use crate::loom::{AtomicBool, AtomicU64, Ordering};
use crate::slot::Pid;

/// See the module docs. Kept in a `CachePadded`, on lines of its own.
pub(crate) struct NextSlot {
    /// The occupant's pid bits; 0 is empty (no pid is 0).
    pid: AtomicU64,
    /// The owner is inside an operation (N1).
    busy: AtomicBool,
    /// The monitor is inside a take (N1).
    frozen: AtomicBool,
}

impl NextSlot {
    pub(crate) fn new() -> Self {
        NextSlot {
            pid: AtomicU64::new(0),
            busy: AtomicBool::new(false),
            frozen: AtomicBool::new(false),
        }
    }

    /// Run `f` on the occupant's bits as the owner (N1).
    #[inline(always)]
    fn owned<R>(&self, f: impl FnOnce(&AtomicU64) -> R) -> R {
        self.busy.store(true, Ordering::Relaxed);
        membarrier::light();
        if self.frozen.load(Ordering::Acquire) {
            self.wait_unfrozen();
        }
        let r = f(&self.pid);
        self.busy.store(false, Ordering::Release);
        r
    }

    /// The monitor is taking: step aside until it is done, then mark the
    /// owner busy again (N1).
    #[cold]
    #[inline(never)]
    fn wait_unfrozen(&self) {
        loop {
            self.busy.store(false, Ordering::Relaxed);
            while self.frozen.load(Ordering::Acquire) {
                #[cfg(loom)]
                loom::thread::yield_now();
                #[cfg(not(loom))]
                std::hint::spin_loop();
            }
            self.busy.store(true, Ordering::Relaxed);
            membarrier::light();
            if !self.frozen.load(Ordering::Acquire) {
                return;
            }
        }
    }

    /// Owner: take the occupant.
    #[inline(always)]
    pub(crate) fn take(&self) -> Option<Pid> {
        let bits = self.owned(|slot| {
            let bits = slot.load(Ordering::Relaxed);
            if bits != 0 {
                slot.store(0, Ordering::Relaxed);
            }
            bits
        });
        (bits != 0).then(|| Pid::from_bits(bits))
    }

    /// Owner: take the occupant if `accept` agrees (it runs inside the
    /// operation, so it may read the occupant's saved context, N1).
    #[inline(always)]
    pub(crate) fn take_if<R>(&self, accept: impl FnOnce(Pid) -> Option<R>) -> Option<(Pid, R)> {
        self.owned(|slot| {
            let bits = slot.load(Ordering::Relaxed);
            if bits == 0 {
                return None;
            }
            let pid = Pid::from_bits(bits);
            let r = accept(pid)?;
            slot.store(0, Ordering::Relaxed);
            Some((pid, r))
        })
    }

    /// Owner: make `pid` the occupant and return the previous one. `then`
    /// runs inside the operation when the slot was empty (a prefetch of
    /// the new occupant's context, N1).
    #[inline(always)]
    pub(crate) fn replace(&self, pid: Pid, then: impl FnOnce()) -> Option<Pid> {
        let prev = self.owned(|slot| {
            let prev = slot.load(Ordering::Relaxed);
            slot.store(pid.to_bits(), Ordering::Relaxed);
            if prev == 0 {
                then();
            }
            prev
        });
        (prev != 0).then(|| Pid::from_bits(prev))
    }

    /// Whether the slot holds an actor: read by a simulation's driver and
    /// termination check only, while no scheduler runs (simulated (S1)).
    #[cfg(feature = "sim")]
    pub(crate) fn is_occupied(&self) -> bool {
        self.pid.load(Ordering::Relaxed) != 0
    }

    /// Monitor: take the occupant of a scheduler that is not inside an
    /// operation; `None` if the slot is empty, the owner is busy, or the
    /// kernel offers no process-wide barrier.
    pub(crate) fn steal(&self) -> Option<Pid> {
        if !membarrier::available() {
            return None;
        }
        self.frozen.store(true, Ordering::Relaxed);
        let taken = if membarrier::heavy() && !self.busy.load(Ordering::Acquire) {
            let bits = self.pid.load(Ordering::Relaxed);
            if bits != 0 {
                self.pid.store(0, Ordering::Relaxed);
            }
            (bits != 0).then(|| Pid::from_bits(bits))
        } else {
            None
        };
        self.frozen.store(false, Ordering::Release);
        taken
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// The owner puts, then takes, while the monitor steals: every actor
    /// put is taken exactly once, by one side (N2).
    #[test]
    fn owner_and_monitor_never_both_take() {
        loom::model(|| {
            let slot = Arc::new(NextSlot::new());
            let a = Pid::from_parts(1, 1);
            let b = Pid::from_parts(2, 1);
            assert_eq!(slot.replace(a, || ()), None);
            let monitor = {
                let slot = slot.clone();
                thread::spawn(move || slot.steal())
            };
            let displaced = slot.replace(b, || ());
            let owner_took = slot.take();
            let stolen = monitor.join().unwrap();
            let mut seen: Vec<Pid> = [displaced, owner_took, stolen]
                .into_iter()
                .flatten()
                .collect();
            seen.sort_by_key(|p| p.to_bits());
            assert_eq!(seen, vec![a, b], "each actor exactly once");
        });
    }
}
