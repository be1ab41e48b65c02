//! `tracing` spans follow their actor (feature `tracing`): the spans an
//! actor is in are entered on the scheduler thread each time it resumes
//! and exited each time it switches out, so a subscriber's notion of the
//! current span is the running actor's, whatever thread runs it.
//!
//! # Invariants
//!
//! - (S1) Every enter has its exit on the same thread: a resume enters the
//!   actor's spans on the thread about to run it; the switch back to that
//!   thread's scheduler (or a park's direct handoff, still on it) exits
//!   them there, innermost first.
//! - (S2) Only the actor's owner touches its span stack (slot (I2)): the
//!   scheduler around a switch, the actor itself (`in_span`) while it runs.

use crate::slot::Slot;

/// Enter `slot`'s spans, outermost first. The caller owns the actor
/// (S2).
#[inline]
pub(super) fn enter(slot: &Slot) {
    // SAFETY: the caller owns the actor (S2); nothing else borrows the
    // span stack while this runs.
    for span in unsafe { slot.spans() }.iter() {
        span.with_subscriber(|(id, dispatch)| dispatch.enter(id));
    }
}

/// Exit `slot`'s spans, innermost first (S1).
#[inline]
pub(super) fn exit(slot: &Slot) {
    // SAFETY: as in `enter`.
    for span in unsafe { slot.spans() }.iter().rev() {
        span.with_subscriber(|(id, dispatch)| dispatch.exit(id));
    }
}

/// Drop a finished actor's spans (closing its own).
pub(super) fn clear(slot: &Slot) {
    // SAFETY: the actor has finished and the finalising scheduler owns
    // the slot (S2).
    drop(std::mem::take(unsafe { slot.spans() }));
}
