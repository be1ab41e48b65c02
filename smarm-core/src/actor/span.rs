//! Running code inside a `tracing` span across blocking calls (feature
//! `tracing`).
//!
//! A `Span::enter` guard is tied to the thread that entered it, and an
//! actor may resume on another thread after any blocking call: a guard
//! held across `recv`, `call` or `sleep` leaves the span entered on the
//! old thread (where other actors then run "inside" it) and exits it on
//! the new one. [`in_span`] instead hands the span to the runtime, which
//! exits it whenever the actor switches out and enters it again where the
//! actor resumes (scheduler spans (S1)).

use crate::scheduler;

/// Run `f` inside `span`, blocking calls included: the span stays the
/// actor's current one wherever it resumes. Outside an actor it is
/// `span.in_scope(f)`.
///
/// ```
/// use smarm::{channel, run, spawn};
///
/// run(|| {
///     let (tx, rx) = channel::<u32>();
///     spawn(move || tx.send(7).unwrap());
///     let span = tracing::info_span!("waiting for the answer");
///     // The recv may resume on another scheduler thread: still inside.
///     let n = smarm_core::actor::in_span(&span, || rx.recv().unwrap());
///     assert_eq!(n, 7);
/// });
/// ```
pub fn in_span<R>(span: &tracing::Span, f: impl FnOnce() -> R) -> R {
    if span.is_disabled() {
        return f();
    }
    let pushed = scheduler::with_worker(|w, shared| {
        let slot = shared.slots.get(w.actor.current.get()?.index())?;
        // SAFETY: the running actor owns its span stack (scheduler spans
        // (S2)); nothing else borrows it while this runs.
        unsafe { slot.spans() }.push(span.clone());
        Some(())
    })
    .flatten()
    .is_some();
    if !pushed {
        return span.in_scope(f);
    }
    span.with_subscriber(|(id, dispatch)| dispatch.enter(id));
    let _leave = Leave(span);
    f()
}

/// Leaves the span on whichever thread the actor is on now, and takes it
/// off the actor's span stack (also when `f` unwinds).
struct Leave<'a>(&'a tracing::Span);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.with_subscriber(|(id, dispatch)| dispatch.exit(id));
        scheduler::with_worker(|w, shared| {
            let slot = shared.slots.get(w.actor.current.get()?.index())?;
            // SAFETY: as in `in_span`.
            unsafe { slot.spans() }.pop()
        });
    }
}
