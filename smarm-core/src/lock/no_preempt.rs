//! The preemption gate: a per-thread count of open [`NoPreempt`] guards,
//! and the countdown that spaces out the safepoints' real checks.
//!
//! It sits with the internal locks because they close it (sync (I3)): the
//! scheduler layer's safepoints read it before switching an actor out
//! (scheduler preempt (I1)).

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

/// Whether no [`NoPreempt`] guard is open on this thread.
#[inline]
pub(crate) fn gate_open() -> bool {
    with_gate(|g| g.disabled.get() == 0)
}

/// Count one safepoint call; `true` every `SAFEPOINT_EVERY`th.
#[inline]
pub(crate) fn countdown_expired() -> bool {
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
