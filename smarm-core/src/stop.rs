//! Catching a cooperative stop: cleanup that must run, or block, when an
//! actor is asked to stop ([`request_stop`](crate::request_stop), an exit
//! signal from a link), before the stop carries on.
//!
//! A stop unwinds the actor from its next safepoint, running destructors
//! on the way. Code that catches the unwind with `std::panic::catch_unwind`
//! (a server running its `terminate` callback, a supervisor stopping its
//! children) tells a stop from a panic with [`is_stop`], sets the stop
//! aside with [`clear_stop`] so its cleanup can block, and re-raises the
//! payload with `std::panic::resume_unwind` when done, so the actor still
//! ends as stopped.

use crate::scheduler;
use std::any::Any;

/// Whether `payload`, caught with `std::panic::catch_unwind`, is the
/// unwind of a cooperative stop ([`request_stop`](crate::request_stop))
/// rather than a panic. Re-raise it with `std::panic::resume_unwind` after
/// cleaning up, so the actor still ends as stopped.
///
/// ```
/// use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
///
/// smarm::run(|| {
///     let (tx, rx) = smarm::channel::<&str>();
///     let server = smarm::spawn(move || {
///         let caught = catch_unwind(AssertUnwindSafe(|| smarm::sleep(std::time::Duration::from_secs(60))));
///         if let Err(payload) = caught {
///             let what = if smarm::stop::is_stop(&*payload) { "stopped" } else { "panicked" };
///             tx.send(what).unwrap(); // cleanup runs outside the unwind
///             resume_unwind(payload);
///         }
///     });
///     smarm::sleep(std::time::Duration::from_millis(5));
///     smarm::request_stop(server.pid());
///     assert_eq!(rx.recv().unwrap(), "stopped");
///     assert!(server.join().is_ok(), "still a stop, not a panic");
/// });
/// ```
pub fn is_stop(payload: &(dyn Any + Send)) -> bool {
    payload.is::<crate::scheduler::StopSignal>()
}

/// Set aside the running actor's pending stop, so the cleanup it runs
/// after catching the stop unwind ([`is_stop`]) can block (`recv`,
/// `sleep`, `join`) instead of being unwound again at its first blocking
/// call. Re-raise the stop with `std::panic::resume_unwind` when done. A
/// stop requested after this call is pending again.
///
/// # Panics
///
/// Outside an actor.
pub fn clear_stop() {
    scheduler::with_current_actor("clear_stop", |me, shared| {
        if let Some(slot) = shared.slots.get(me.index()) {
            slot.stop.store(false, crate::loom::Ordering::Release);
        }
    });
}
