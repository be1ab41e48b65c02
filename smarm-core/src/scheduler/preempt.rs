//! Preemption: the safepoints at which the runtime, not the actor, decides
//! to switch an actor out, and the gate that forbids it.
//!
//! Two safepoints preempt: [`check_timeslice`] (the `check!()` macro) and
//! [`alloc_safepoint`] (every allocation, once the
//! [`PreemptingAlloc`](super::alloc::PreemptingAlloc) wrapper is the global
//! allocator). Both are counted down per thread and do real work only every
//! [`SAFEPOINT_EVERY`]th call: read the timeslice clock and, if the running
//! actor has used its slice, count an overrun and switch it out with
//! `Intent::Preempt`, which pins it to this OS thread until it next parks by
//! itself. `check!()` also observes a stop request (it unwinds); an
//! allocation cannot (a global allocator must not unwind), so a stop that
//! arrives while an actor only allocates is raised at its next blocking call
//! or `check!()`.
//!
//! # Invariants
//!
//! - (I1) Nothing switches an actor out while the gate is closed: runtime
//!   code holding an internal lock (`RawMutex`, the std mutexes of the IO
//!   layer) holds a [`NoPreempt`], and a thread-local borrow
//!   ([`with_worker`](super::with_worker)) marks its worker busy;
//!   `switch_out` asserts the gate is open.
//! - (I2) No preemption while a wait is open (between `begin_wait` and the
//!   park or `retire_wait`): a requeue there would drop a wake that landed
//!   meanwhile.
//! - (I3) No preemption while the thread is unwinding: the panic machinery
//!   (hook, payload, unwinder) allocates and holds locks of its own.

use super::{clock, switch_out, with_worker, Intent};
use std::cell::Cell;

/// Safepoint calls between two real checks (clock read, stop check).
pub(crate) const SAFEPOINT_EVERY: u32 = 16;

struct Gate {
    /// Open `NoPreempt` guards on this thread.
    disabled: Cell<u32>,
    /// Safepoint calls left before the next real check.
    countdown: Cell<u32>,
}

std::thread_local! {
    static GATE: Gate = const {
        Gate { disabled: Cell::new(0), countdown: Cell::new(SAFEPOINT_EVERY) }
    };
}

/// This thread's gate. Never inlined, and opaque to the optimiser (a
/// function that only computed an address could be judged pure and its
/// result reused), so the address is recomputed at every call: reusing one
/// computed before a switch that moved the actor would touch another
/// thread's gate (scheduler (I2)).
#[inline(never)]
fn gate() -> *const Gate {
    GATE.with(|g| std::hint::black_box(g as *const Gate))
}

/// Run `f` on this thread's gate; `f` must not switch.
#[inline]
fn with_gate<R>(f: impl FnOnce(&Gate) -> R) -> R {
    // SAFETY: the pointer is this thread's GATE (const-initialised, no
    // destructor, so valid for the thread's life), used before any switch.
    f(unsafe { &*gate() })
}

/// Keeps the running actor from being preempted on this thread until
/// dropped: `check!()` and allocation safepoints do not switch it out (a
/// blocking call still switches, and panics if a guard is open).
///
/// For code that must not be interleaved with other actors on this OS
/// thread: a `std::sync::Mutex` held across allocations (another actor on
/// the same thread that blocked on it would block the thread its holder is
/// pinned to), or a thread-local borrow other actors also take. Guards nest;
/// a guard cannot leave its thread.
///
/// ```
/// use smarm::NoPreempt;
/// use std::sync::Mutex;
///
/// static NAMES: Mutex<Vec<String>> = Mutex::new(Vec::new());
///
/// smarm::run(|| {
///     let _np = NoPreempt::new(); // declared first: dropped after the lock
///     NAMES.lock().unwrap().push("ada".to_string()); // allocates, never preempted
/// });
/// ```
#[must_use = "preemption is enabled again as soon as the guard is dropped"]
pub struct NoPreempt {
    /// The gate it closed: this thread's. A guard never crosses a switch
    /// (a blocking call with one open panics before switching) nor a
    /// thread (`!Send`), so the address stays right until the drop.
    gate: *const Gate,
}

impl NoPreempt {
    /// Disable preemption on this thread until the guard is dropped.
    #[inline]
    pub fn new() -> Self {
        let gate = gate();
        // SAFETY: this thread's gate, as in `with_gate`.
        let g = unsafe { &*gate };
        g.disabled.set(g.disabled.get() + 1);
        NoPreempt { gate }
    }
}

impl Default for NoPreempt {
    fn default() -> Self {
        NoPreempt::new()
    }
}

impl Drop for NoPreempt {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the gate `new` closed, still this thread's (see the
        // field): thread-locals outlive every guard on their thread.
        let g = unsafe { &*self.gate };
        g.disabled.set(g.disabled.get() - 1);
    }
}

impl std::fmt::Debug for NoPreempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NoPreempt")
    }
}

/// Whether a safepoint may switch the current actor out on its own (I1):
/// no `NoPreempt` guard open and no `with_worker` span running.
#[inline]
pub(crate) fn preemption_enabled() -> bool {
    with_gate(|g| g.disabled.get() == 0) && !super::worker_busy()
}

/// Count one safepoint call; `true` every `SAFEPOINT_EVERY`th.
#[inline]
fn countdown_expired() -> bool {
    with_gate(|g| {
        let left = g.countdown.get();
        if left > 1 {
            g.countdown.set(left - 1);
            false
        } else {
            g.countdown.set(SAFEPOINT_EVERY);
            true
        }
    })
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
        switch_out(Intent::Preempt);
    }
}

/// Whether the running actor has used up its timeslice; if so its overrun
/// is counted. `false` outside an actor or with a wait open (I2). The slice
/// starts at the first real check after a resume, so an actor that never
/// reaches a safepoint pays no clock read.
fn slice_spent() -> bool {
    with_worker(|w, shared| {
        let Some(pid) = w.current.get() else {
            return false;
        };
        if w.wait_open.get() {
            return false;
        }
        let now = clock::now();
        if w.slice_resume.get() != w.resumes.get() {
            w.slice_resume.set(w.resumes.get());
            w.slice_start.set(now);
            return false;
        }
        if now.wrapping_sub(w.slice_start.get()) < shared.slice_ticks {
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
