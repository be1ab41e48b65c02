//! The extension surface the OTP layer (`smarm-otp`) builds on: what it
//! needs from the runtime, named, instead of `pub` leaks of internals.
//!
//! - [`is_alive`]: whether a pid still names a live actor of the current
//!   runtime (generation-checked: a recycled slot's new tenant does not
//!   count).
//! - [`with_runtime_local`]: one value of a type per runtime, created on
//!   first use, so a layer above keeps per-runtime tables (separate
//!   runtimes do not share a registry).
//! - [`call_after`]: run a closure on a scheduler when a timer fires (how
//!   name- and pid-addressed message timers resolve their target at fire
//!   time).
//! - [`on_exit`]: run a closure on a scheduler when an actor exits (how a
//!   process group drops a dead member at once and tells its watchers).
//! - [`is_stop`], [`clear_stop`]: whether an unwind caught with
//!   `catch_unwind` is a cooperative stop, and setting the stop aside while
//!   cleanup blocks (so a server can run `terminate`, a supervisor can stop
//!   its children, and then re-raise it).
//! - [`defer_drop`]: drop a value once no scheduler can still be reading it
//!   (how the registry's name table is read without a lock).
//! - [`set_introspection_hook`]: what introspection reports about an actor
//!   that only an upper layer knows (registered names, mailbox depth).

use crate::scheduler;
use crate::slot::word::State;
use crate::slot::Pid;
use crate::time::{TimerAction, TimerId};
use std::any::Any;
use std::time::Duration;

/// Whether `pid` is a live actor (spawned, not finished) of the runtime the
/// caller runs on. `false` outside any runtime.
pub fn is_alive<A>(pid: Pid<A>) -> bool {
    let pid = pid.erase();
    scheduler::with_worker(|_, shared| alive_in(shared, pid)).unwrap_or(false)
}

/// Run `f` on the current runtime's instance of `T`, created with
/// `T::default()` on first use. The lookup is lock-free after that (a few
/// atomic loads), whatever the number of types. `f` also gets
/// the runtime itself ([`RuntimeRef`]), to ask it things without another
/// lookup. `f` must not block (keep it to table updates and sends): it
/// cannot be switched out, which is also what makes a value it reads from
/// an atomic pointer safe until it returns (see [`defer_drop`]).
///
/// # Panics
///
/// Outside a runtime (an actor, or a timer callback on a scheduler).
pub fn with_runtime_local<T: Any + Send + Sync + Default, R>(
    f: impl FnOnce(&T, RuntimeRef<'_>) -> R,
) -> R {
    let found = scheduler::with_worker(|_, shared| {
        // The reference lives as long as `shared`, which outlives `f`.
        f(shared.locals.get_or_default::<T>(), RuntimeRef(shared))
    });
    match found {
        Some(r) => r,
        None => scheduler::outside_actor("with_runtime_local"),
    }
}

/// The runtime a [`with_runtime_local`] closure runs on: what it can ask
/// without looking the runtime up again.
#[derive(Clone, Copy)]
pub struct RuntimeRef<'a>(&'a crate::scheduler::Shared);

impl RuntimeRef<'_> {
    /// [`is_alive`], on this runtime.
    #[inline]
    pub fn is_alive<A>(self, pid: Pid<A>) -> bool {
        alive_in(self.0, pid.erase())
    }
}

impl std::fmt::Debug for RuntimeRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RuntimeRef")
    }
}

#[inline]
fn alive_in(shared: &crate::scheduler::Shared, pid: Pid) -> bool {
    shared.slots.get(pid.index()).is_some_and(|slot| {
        let s = slot.word.load();
        s.generation() == pid.generation() && !matches!(s.state(), State::Vacant | State::Done)
    })
}

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
///             let what = if smarm::ext::is_stop(&*payload) { "stopped" } else { "panicked" };
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

/// Drop `value` once no actor or callback of the current runtime that
/// could have read it is still running: every scheduler has since gone
/// back to its loop between two actors, or parked.
///
/// This is what makes lock-free reads safe for a layer above: publish a
/// value through an atomic pointer, read it inside a
/// [`with_runtime_local`] closure (which cannot switch the actor out), and
/// after swapping in a replacement hand the old one to `defer_drop` instead
/// of dropping it. The drop runs on a scheduler thread, outside every
/// runtime lock; it must not block.
///
/// # Panics
///
/// Outside a runtime (an actor, or a timer callback on a scheduler).
pub fn defer_drop<T: Send + 'static>(value: T) {
    let value: Box<dyn Any + Send> = Box::new(value);
    match scheduler::with_worker(|_, shared| shared.reclaim.retire(value)) {
        Some(()) => {}
        None => scheduler::outside_actor("defer_drop"),
    }
}

/// Run `f` on a scheduler of the current runtime once `after` has passed.
/// Returns a [`TimerId`] for [`cancel_timer`](crate::time::cancel_timer).
/// `f` runs outside every runtime lock but not in an actor: it must not
/// block.
///
/// # Panics
///
/// Outside an actor.
pub fn call_after(after: Duration, f: impl FnOnce() + Send + 'static) -> TimerId {
    call_after_as("call_after", after, f)
}

/// [`call_after`], naming the public call for the outside-an-actor panic.
pub(crate) fn call_after_as(
    what: &str,
    after: Duration,
    f: impl FnOnce() + Send + 'static,
) -> TimerId {
    let deadline = crate::time::deadline_after(after);
    scheduler::with_current_actor(what, |me, shared| {
        shared
            .timers
            .lock()
            .insert(&shared.coord, deadline, me, TimerAction::Send(Box::new(f)))
    })
}

/// Run `f(pid, reason)` on a scheduler when `pid` exits, however it exits.
/// `false` (and `f` is dropped) if `pid` is not a live actor of the current
/// runtime. `f` runs during the actor's finalisation, outside every runtime
/// lock and not in an actor: it must not block, and it may send.
pub fn on_exit<A>(pid: Pid<A>, f: impl FnOnce(Pid, crate::DownReason) + Send + 'static) -> bool {
    let pid = pid.erase();
    scheduler::with_worker(|_, shared| {
        crate::signal::with_live_signals(shared, pid, |sig, _| sig.exit_hooks.push(Box::new(f)))
            .is_some()
    })
    .unwrap_or(false)
}

/// What an upper layer knows about an actor, for introspection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActorExtras {
    /// Names the actor is registered under.
    pub names: Vec<&'static str>,
    /// Messages queued on the channels it published.
    pub mailbox_depth: u32,
    /// Messages taken from the channels it published.
    pub messages_received: u64,
}

static INTROSPECTION_HOOK: std::sync::OnceLock<fn(Pid) -> ActorExtras> = std::sync::OnceLock::new();

/// Install the function introspection calls for each actor's
/// [`ActorExtras`] (once per process; later calls are ignored). It runs in
/// the actor that asked for the snapshot, with no runtime lock held.
pub fn set_introspection_hook(hook: fn(Pid) -> ActorExtras) {
    let _ = INTROSPECTION_HOOK.set(hook);
}

pub(crate) fn introspection_hook() -> Option<fn(Pid) -> ActorExtras> {
    INTROSPECTION_HOOK.get().copied()
}
