//! `JoinHandle`: waiting for an actor and collecting its outcome.

use super::{JoinError, Outcome, Pid};
use crate::scheduler::Shared;
use crate::scheduler::WaitingOn;
use crate::scheduler::{self, BoundedWaiter, Deadline, Registered, Wait};
use crate::slot::WaitId;
use crate::slot::{Joiner, Slot};
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

/// A handle to a spawned actor: [`join`](Self::join) waits for it and
/// gives back what its closure returned (a `T`), or how it failed;
/// [`pid`](Self::pid) is its identity.
///
/// Dropping the handle detaches the actor: it keeps running and its slot
/// is reclaimed when it finishes (a value it returns is then dropped on
/// the scheduler). While the handle exists, a finished actor's slot is
/// kept (as a Unix zombie is) so that `join` can still read its outcome;
/// it counts against `Config::max_actors`.
pub struct JoinHandle<T = ()> {
    pid: Pid,
    shared: Arc<Shared>,
    released: bool,
    /// `fn() -> T`: the handle gives a `T` out, it holds none (so it is
    /// `Send` and `Sync` whatever `T` is).
    _value: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle")
            .field("pid", &self.pid)
            .finish()
    }
}

impl JoinHandle {
    pub(crate) fn new(pid: Pid, shared: &Shared) -> Self {
        JoinHandle {
            pid,
            shared: shared.to_arc(),
            released: false,
            _value: PhantomData,
        }
    }

    /// The same handle, typed for the value the actor's closure returns
    /// (the spawn functions box a `T` into its entry).
    pub(crate) fn retype<U>(self) -> JoinHandle<U> {
        let this = std::mem::ManuallyDrop::new(self);
        JoinHandle {
            pid: this.pid,
            // SAFETY: `this` is never dropped, so the Arc moves out of it
            // exactly once.
            shared: unsafe { std::ptr::read(&this.shared) },
            released: this.released,
            _value: PhantomData,
        }
    }
}

impl<T> JoinHandle<T> {
    /// The actor's pid.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Whether the actor has finished (so `join` will not block).
    pub fn is_finished(&self) -> bool {
        self.slot().cold.lock().outcome.is_some()
    }

    /// Wait for the actor to finish. `Ok(value)` with what its closure
    /// returned; `Err(JoinError)` with the payload if it panicked, or with
    /// the reason it ended otherwise ([`JoinError::reason`]). An actor
    /// stopped with [`request_stop`](crate::request_stop) has no value to
    /// give: a `JoinHandle<()>` joins it as `Ok(())`, any other as
    /// `Err` with [`DownReason::Stopped`](crate::DownReason::Stopped). That
    /// includes an actor whose closure never returns: a `loop` without a
    /// `break` has the type `!` (edition 2024), so its handle joins only
    /// with an `Err` saying how it ended, a stop or a failure.
    ///
    /// ```
    /// smarm::run(|| {
    ///     assert_eq!(smarm::spawn(|| 6 * 7).join().unwrap(), 42);
    ///     assert!(smarm::spawn(|| {}).join().is_ok());
    ///     assert!(smarm::spawn(|| panic!("no")).join().is_err());
    /// });
    /// ```
    ///
    /// # Panics
    ///
    /// If the actor is still running and the caller is not an actor of the
    /// runtime that spawned it (only such an actor can park to wait).
    pub fn join(mut self) -> Result<T, JoinError>
    where
        T: 'static,
    {
        loop {
            if let Some(outcome) = self.take_if_finished() {
                return to_result(outcome);
            }
            self.require_own_runtime("join");
            // Open the wait before registering, so a finish in between
            // lands as a notification (slot (I3)).
            let wait = Wait::open("JoinHandle::join", WaitingOn::Join);
            let registered = {
                let mut cold = self.slot().cold.lock();
                let register = cold.outcome.is_none();
                if register {
                    cold.joiner = Some(Joiner::Wait(wait.id()));
                }
                register
            };
            if registered {
                wait.park();
            } else {
                wait.retire(); // it finished meanwhile: take it above
            }
        }
    }

    /// [`join`](Self::join), giving up after `timeout`: then the handle
    /// comes back in [`JoinTimeoutError::Timeout`], to join again later or
    /// drop.
    ///
    /// ```
    /// use smarm::JoinTimeoutError;
    /// use std::time::Duration;
    ///
    /// smarm::run(|| {
    ///     let (go, wait) = smarm::channel::<()>();
    ///     let slow = smarm::spawn(move || {
    ///         wait.recv().unwrap();
    ///         "done"
    ///     });
    ///     let slow = match slow.join_timeout(Duration::from_millis(5)) {
    ///         Err(JoinTimeoutError::Timeout(handle)) => handle,
    ///         other => panic!("it cannot have finished: {other:?}"),
    ///     };
    ///     go.send(()).unwrap();
    ///     assert_eq!(slow.join_timeout(Duration::from_secs(10)).unwrap(), "done");
    /// });
    /// ```
    ///
    /// # Errors
    ///
    /// [`JoinTimeoutError::Timeout`] with the handle if the actor is still
    /// running; [`JoinTimeoutError::Failed`] as [`join`](Self::join)'s
    /// error.
    ///
    /// # Panics
    ///
    /// As [`join`](Self::join).
    pub fn join_timeout(mut self, timeout: Duration) -> Result<T, JoinTimeoutError<T>>
    where
        T: 'static,
    {
        if let Some(outcome) = self.take_if_finished() {
            return to_result(outcome).map_err(JoinTimeoutError::Failed);
        }
        self.require_own_runtime("join_timeout");
        let deadline = crate::clock::instant()
            .checked_add(timeout)
            .map(Deadline::At);
        let outcome = scheduler::bounded_wait(
            "JoinHandle::join_timeout",
            &mut TimedJoin { handle: &mut self },
            deadline,
            timeout.is_zero(),
        );
        match outcome {
            Some(outcome) => to_result(outcome).map_err(JoinTimeoutError::Failed),
            None => Err(JoinTimeoutError::Timeout(self)),
        }
    }

    /// Panic unless the caller is an actor of this handle's runtime (only
    /// such an actor can park to wait for it).
    fn require_own_runtime(&self, what: &str) {
        let in_own_runtime = scheduler::with_worker(|w, shared| {
            w.actor.current.get().is_some() && std::ptr::eq(shared, Arc::as_ptr(&self.shared))
        }) == Some(true);
        if !in_own_runtime {
            panic!(
                "smarm: JoinHandle::{what} on a running actor from outside its runtime: only an \
                 actor of the runtime that spawned it can join it. From a plain thread or async \
                 code, await the handle instead (`handle.await`, or \
                 smarm::future::block_on(handle) on a plain thread), which works anywhere"
            );
        }
    }

    /// If the actor has finished, take its outcome and recycle the slot.
    fn take_if_finished(&mut self) -> Option<Outcome> {
        let outcome = self.slot().cold.lock().outcome.take()?;
        // `handle_alive` stays true: the cold data is ready for the next
        // tenant (slot (I4)).
        self.released = true;
        self.slot().word.recycle();
        self.shared.slots.release(self.pid.index());
        Some(outcome)
    }

    /// Give up the handle; if the actor has finished, take its outcome and
    /// recycle the slot (slot (I4)).
    fn release(&mut self) -> Option<Outcome> {
        if self.released {
            return None;
        }
        self.released = true;
        let slot = self.slot();
        let outcome = {
            let mut cold = slot.cold.lock();
            let outcome = cold.outcome.take();
            // Finished: the slot is recycled now, and its cold data is left
            // ready for the next tenant. Running: finalisation recycles it.
            cold.handle_alive = outcome.is_some();
            outcome
        };
        if outcome.is_some() {
            slot.word.recycle();
            self.shared.slots.release(self.pid.index());
        }
        outcome
    }

    /// The outcome, if the actor has finished; never parks.
    pub(crate) fn take_outcome_now(mut self) -> Option<Outcome> {
        self.release()
    }

    fn slot(&self) -> &Slot {
        match self.shared.slots.get(self.pid.index()) {
            Some(slot) => slot,
            None => unreachable!("a JoinHandle's slot exists for the life of its runtime"),
        }
    }
}

/// Awaiting a `JoinHandle` from async code: the same outcome as
/// [`join`](JoinHandle::join), on any executor and from any thread (a
/// tokio task, a plain thread's `block_on`); the future is `Send`.
///
/// ```
/// let handle = std::sync::Arc::new(std::sync::Mutex::new(None));
/// let h = handle.clone();
/// smarm::run(move || {
///     *h.lock().unwrap() = Some(smarm::spawn(|| 6 * 7));
/// });
/// let finished = handle.lock().unwrap().take().unwrap();
/// assert_eq!(smarm::future::block_on(finished).unwrap(), 42);
/// ```
impl<T: 'static> std::future::IntoFuture for JoinHandle<T> {
    type Output = Result<T, JoinError>;
    type IntoFuture = JoinFuture<T>;

    fn into_future(self) -> JoinFuture<T> {
        JoinFuture {
            handle: self,
            registered: false,
        }
    }
}

/// The future of an awaited [`JoinHandle`]. Dropped before the actor
/// finished, it leaves no waker behind and detaches the actor, as dropping
/// the handle does.
#[must_use = "a join future does nothing until awaited"]
pub struct JoinFuture<T> {
    handle: JoinHandle<T>,
    registered: bool,
}

impl<T: 'static> std::future::Future for JoinFuture<T> {
    type Output = Result<T, JoinError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        if let Some(outcome) = self.handle.take_if_finished() {
            self.registered = false;
            return std::task::Poll::Ready(to_result(outcome));
        }
        {
            let mut cold = self.handle.slot().cold.lock();
            if cold.outcome.is_none() {
                cold.joiner = Some(Joiner::Task(Box::new(cx.waker().clone())));
                drop(cold);
                self.registered = true;
                return std::task::Poll::Pending;
            }
        }
        // Finished between the two looks: take it now.
        match self.handle.take_if_finished() {
            Some(outcome) => std::task::Poll::Ready(to_result(outcome)),
            None => unreachable!("an outcome is only taken by its one handle"),
        }
    }
}

impl<T> Drop for JoinFuture<T> {
    fn drop(&mut self) {
        if self.registered && !self.handle.released {
            let mut cold = self.handle.slot().cold.lock();
            if matches!(cold.joiner, Some(Joiner::Task(_))) {
                let waker = cold.joiner.take();
                drop(cold);
                drop(waker);
            }
        }
    }
}

impl<T> std::fmt::Debug for JoinFuture<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinFuture")
            .field("pid", &self.handle.pid)
            .finish()
    }
}

/// The bounded wait of [`JoinHandle::join_timeout`]: `Some(outcome)` once
/// the actor has finished, `None` at the deadline.
struct TimedJoin<'a, T> {
    handle: &'a mut JoinHandle<T>,
}

impl<T> BoundedWaiter for TimedJoin<'_, T> {
    type Output = Option<Outcome>;
    const WAITS_ON: WaitingOn = WaitingOn::Join;

    fn ready(&mut self) -> Option<Option<Outcome>> {
        self.handle.take_if_finished().map(Some)
    }

    fn timed_out(&mut self) -> Option<Option<Outcome>> {
        Some(None)
    }

    fn register(&mut self, wait: &Wait) -> Registered<Option<Outcome>> {
        let mut cold = self.handle.slot().cold.lock();
        if cold.outcome.is_some() {
            return Registered::Ready;
        }
        cold.joiner = Some(Joiner::Wait(wait.id()));
        Registered::Yes
    }

    const UNREGISTERS: bool = true;

    /// A timed-out join leaves no joiner behind for the exit to wake.
    fn unregister(&mut self, wait: WaitId) {
        let mut cold = self.handle.slot().cold.lock();
        if matches!(cold.joiner, Some(Joiner::Wait(w)) if w == wait) {
            cold.joiner = None;
        }
    }
}

/// Why [`JoinHandle::join_timeout`] has no value.
#[derive(thiserror::Error)]
pub enum JoinTimeoutError<T> {
    /// The actor is still running: here is its handle back.
    #[error("the actor is still running: the join timed out")]
    Timeout(JoinHandle<T>),
    /// It finished without a value, as [`JoinHandle::join`] reports.
    #[error(transparent)]
    Failed(JoinError),
}

impl<T> std::fmt::Debug for JoinTimeoutError<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JoinTimeoutError::Timeout(h) => f.debug_tuple("Timeout").field(h).finish(),
            JoinTimeoutError::Failed(e) => f.debug_tuple("Failed").field(e).finish(),
        }
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        drop(self.release());
    }
}

fn to_result<T: 'static>(outcome: Outcome) -> Result<T, JoinError> {
    let ended = |reason| JoinError {
        payload: Box::new(crate::signal::Ended { reason }),
    };
    match outcome {
        // A hibernated actor's value is its continuation's, whose type the
        // handle cannot check: a `()` handle takes nothing from it, any
        // other is told the type was not its own.
        Outcome::Exit(value) => match value.downcast::<T>() {
            Ok(value) => Ok(*value),
            Err(_) => match (Box::new(()) as Box<dyn std::any::Any>).downcast::<T>() {
                Ok(unit) => Ok(*unit),
                Err(_) => Err(JoinError {
                    payload: Box::new(
                        "smarm: the actor hibernated and its continuation returned a value of \
                         another type than its JoinHandle's",
                    ),
                }),
            },
        },
        // A stopped actor returned nothing: fine for `()`, an error for a
        // handle that expects a value.
        Outcome::Stopped => match (Box::new(()) as Box<dyn std::any::Any>).downcast::<T>() {
            Ok(unit) => Ok(*unit),
            Err(_) => Err(ended(crate::DownReason::Stopped)),
        },
        Outcome::Panic(payload) => Err(JoinError { payload }),
        Outcome::Ended(reason) => Err(ended(reason)),
    }
}
