//! Preemption: the safepoints at which the runtime, not the actor, decides
//! to switch an actor out, and the gate that forbids it.
//!
//! Two safepoints preempt: [`check_timeslice`] (the `check!()` macro) and
//! [`alloc_safepoint`] (every allocation, once the
//! [`PreemptingAlloc`](super::alloc::PreemptingAlloc) wrapper is the global
//! allocator). Both are counted down per thread and do real work only every
//! `SAFEPOINT_EVERY`th call: read the timeslice clock and, if the running
//! actor has used its slice, count an overrun and switch it out with
//! `Intent::Preempt`, which pins it to this OS thread until it next parks by
//! itself. `check!()` also observes a stop request (it unwinds); an
//! allocation cannot (a global allocator must not unwind), so a stop that
//! arrives while an actor only allocates is raised at its next blocking call
//! or `check!()`. An actor past its heap limit that reaches an allocation
//! safepoint with its slice spent is not preempted but ended there
//! (`Intent::HeapLimit`, see `life.rs`).
//!
//! # Invariants
//!
//! - (I1) Nothing switches an actor out while the gate is closed: runtime
//!   code holding an internal lock (`RawMutex`, the std mutexes of the IO
//!   layer) holds a [`NoPreempt`](crate::NoPreempt), and a thread-local borrow
//!   ([`with_worker`](super::with_worker)) marks its worker busy;
//!   `switch_out` asserts the gate is open.
//! - (I2) No preemption while a wait is open (a `Wait` opened and not yet
//!   parked on or retired, wait (W2)): a requeue there would drop a wake
//!   that landed meanwhile.
//! - (I3) No preemption while the thread is unwinding: the panic machinery
//!   (hook, payload, unwinder) allocates and holds locks of its own.

use super::{Intent, switch_out, with_worker};
use crate::clock;
use crate::lock::no_preempt::{countdown_expired, gate_open};

/// Whether a safepoint may switch the current actor out on its own (I1):
/// no `NoPreempt` guard open and no `with_worker` span running.
#[inline]
pub(crate) fn preemption_enabled() -> bool {
    gate_open() && !super::worker_busy()
}

/// The `check!()` safepoint: observe a stop request (unwinding), and if
/// the running actor has used up its timeslice, count an overrun and switch
/// it out (it resumes on this same OS thread). A no-op outside an actor.
#[inline]
pub fn check_timeslice() {
    if countdown_expired() {
        check_timeslice_now();
    }
}

#[cold]
#[inline(never)]
fn check_timeslice_now() {
    super::check_stop();
    if preemption_enabled() && slice_spent() {
        switch_out(Intent::Preempt);
        super::check_stop();
    }
}

/// The allocation safepoint, called by `PreemptingAlloc` after each
/// allocation: preempt an actor whose slice is spent. Never unwinds.
#[inline]
pub(crate) fn alloc_safepoint() {
    if countdown_expired() {
        alloc_safepoint_now();
    }
}

#[cold]
#[inline(never)]
fn alloc_safepoint_now() {
    if preemption_enabled() && !std::thread::panicking() && slice_spent() {
        if crate::heap::running_tripped() && abandonable() {
            // Never resumed: the scheduler ends the actor (`life.rs`).
            switch_out(Intent::HeapLimit);
            return;
        }
        switch_out(Intent::Preempt);
    }
}

/// Whether the running actor may be ended where it stands (`life.rs`):
/// inside no runtime call and with no direct handoff left to settle. The
/// caller checked the gate, the panic state and, through `slice_spent`,
/// that no wait is open.
fn abandonable() -> bool {
    with_worker(|w, _| w.actor.sections.get() == 0 && w.actor.handed_off.get().is_none())
        .unwrap_or(false)
}

/// Whether the running actor has used up its timeslice; if so its overrun
/// is counted. `false` outside an actor or with a wait open (I2). The slice
/// starts at the first real check after a resume, so an actor that never
/// reaches a safepoint pays no clock read.
fn slice_spent() -> bool {
    with_worker(|w, shared| {
        let Some(pid) = w.actor.current.get() else {
            return false;
        };
        if w.actor.wait_open.get() {
            return false;
        }
        #[cfg(feature = "sim")]
        if shared.simulated {
            return super::simulated::preempt();
        }
        let now = clock::now();
        if w.slice.slice_resume.get() != w.slice.resumes.get() {
            w.slice.slice_resume.set(w.slice.resumes.get());
            w.slice.slice_start.set(now);
            return false;
        }
        if now.wrapping_sub(w.slice.slice_start.get()) < shared.sched.slice_ticks {
            return false;
        }
        if let Some(slot) = shared.slots.get(pid.index()) {
            use crate::loom::Ordering::Relaxed;
            slot.overruns
                .store(slot.overruns.load(Relaxed) + 1, Relaxed);
        }
        true
    })
    .unwrap_or(false)
}
