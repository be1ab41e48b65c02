//! [`hibernate`]: wait for a message holding no stack, as Erlang's
//! `erlang:hibernate/3` does. The scheduler's side, and its invariants, are
//! in `scheduler/life.rs`.

use crate::channel::Selectable;
pub use crate::scheduler::Hibernation;
use crate::scheduler::{Arm, Hibernating};
use crate::slot::WaitId;
use crate::slot::table::{Entry, entry};
use std::marker::PhantomData;

/// Hibernate: give up this actor's stack until `waits_on` is ready, then
/// run `then(waits_on)` on a fresh stack. Never returns; its type is the
/// continuation's, so it can end the actor's closure (or a function the
/// continuation calls again) in place of the value.
///
/// The call unwinds the actor's stack first, so every value on it is
/// dropped (the state to keep goes into `then`, on the heap). While it
/// waits, the actor holds no stack at all: a hibernated actor costs its
/// slot and what `then` captured, no stack page. When a message arrives
/// on `waits_on` (a [`Receiver`](crate::Receiver), a
/// [`BoundedReceiver`](crate::channel::BoundedReceiver), or any other
/// [`select`](crate::select) arm), or it closes, the actor is scheduled
/// again as if new, on a fresh stack, and `then` runs: its first receive
/// returns at once. What `then` returns is the actor's result, as if its
/// closure had returned it (a [`JoinHandle<T>`](crate::JoinHandle) gets it
/// if it is a `T`; a `()` handle ignores it).
///
/// Waking costs a new stack and a first entry: use it for actors that
/// wait long (idle sessions, connections), not between messages of a busy
/// one. A stop request wakes a hibernated actor like any waiting one: it
/// stops at its next safepoint.
///
/// ```
/// use smarm::{channel, hibernate, spawn, Receiver};
///
/// /// A counter that sleeps without a stack between messages.
/// fn counter(total: u64, rx: Receiver<u64>) -> u64 {
///     match rx.recv() {
///         Ok(0) | Err(_) => total, // 0 or the channel closed: done
///         Ok(n) => hibernate(rx, move |rx| counter(total + n, rx)),
///     }
/// }
///
/// smarm::run(|| {
///     let (tx, rx) = channel::<u64>();
///     let actor = spawn(move || counter(0, rx));
///     for n in [5, 10, 20, 0] {
///         tx.send(n).unwrap();
///     }
///     assert_eq!(actor.join().unwrap(), 35);
/// });
/// ```
///
/// An unwind cannot pass through a frame that catches it: a
/// `catch_unwind` between this call and the actor's base must resume
/// unwinds it did not raise itself (as for a stop request).
///
/// # Panics
///
/// Outside an actor.
pub fn hibernate<R, F, T>(waits_on: R, then: F) -> T
where
    R: Selectable + Send + 'static,
    F: FnOnce(R) -> T + Send + 'static,
    T: Send + 'static,
{
    super::require_actor("smarm::hibernate");
    let arm = Box::new(Continuation {
        waits_on,
        then,
        _value: PhantomData,
    });
    std::panic::resume_unwind(Box::new(Hibernating(arm)))
}

impl Hibernation {
    /// Hibernate until `waits_on` is ready, then run `then(waits_on)`.
    pub fn until<R, F, T>(waits_on: R, then: F) -> Hibernation
    where
        R: Selectable + Send + 'static,
        F: FnOnce(R) -> T + Send + 'static,
        T: Send + 'static,
    {
        Hibernation(Some(Box::new(Continuation {
            waits_on,
            then,
            _value: PhantomData,
        })))
    }

    /// No hibernation: the actor ends (its value is `()`).
    pub fn none() -> Hibernation {
        Hibernation(None)
    }
}

/// What a hibernation waits on, and the continuation to run after.
struct Continuation<R, F, T> {
    waits_on: R,
    then: F,
    _value: PhantomData<fn() -> T>,
}

impl<R, F, T> Arm for Continuation<R, F, T>
where
    R: Selectable + Send + 'static,
    F: FnOnce(R) -> T + Send + 'static,
    T: Send + 'static,
{
    fn register(&self, wait: WaitId) -> bool {
        // A registration error (an fd arm) runs the continuation at once:
        // its own use of the arm reports it.
        self.waits_on
            .sel_register(wait.pid, wait.epoch)
            .unwrap_or(false)
    }

    fn into_entry(self: Box<Self>) -> Entry {
        let Continuation { waits_on, then, .. } = *self;
        entry(move || then(waits_on))
    }
}
