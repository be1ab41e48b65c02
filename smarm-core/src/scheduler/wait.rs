//! The wait protocol: how every blocking call parks the running actor.
//!
//! # Design
//!
//! A blocking primitive opens a [`Wait`]: a new epoch on the actor's slot
//! word (slot (I3)), marked on its scheduler so no safepoint preempts the
//! actor while the wait is open. It registers the wait's [`WaitId`] with
//! whoever will wake it (a channel, a mutex queue, an IO poll, a
//! joiner record, a pool job), optionally gives it a deadline (the actor's
//! cached wait timer, time bounded (B1)), then parks or retires it. A waker
//! holds a [`WakeToken`] (or a `WaitId` beside a runtime it already keeps)
//! and wakes the wait only if it is still the actor's current one: a wake
//! for a wait that ended changes nothing, so nothing is ever cancelled.
//!
//! Each wait says what it is on ([`WaitingOn`]), stored in the slot when it
//! opens, so introspection can tell a parked actor waiting for a message
//! from one waiting for a lock or a socket.
//!
//! A wait with a deadline re-checks what it waits for on every wake, since
//! a cached timer may fire early (bounded (B1)); [`bounded_wait`] is that
//! loop, written once for every timed wait.
//!
//! # Invariants
//!
//! - (W1) Waits are opened, retired and parked on only here: the slot
//!   word's `begin_wait` / `retire_wait` are called by this module alone
//!   (`tests/layers.rs` checks it), and the raw park is private to the
//!   scheduler.
//! - (W2) While a wait is open (opened and neither parked on nor retired),
//!   its scheduler's `wait_open` is set, so no safepoint preempts the actor
//!   (preempt (I2)); the park clears it when the actor next runs
//!   (`begin_run`), or at once when a pending stop ends the park before
//!   it switches; a retire clears it at once.
//! - (W3) A wait's deadline lasts no longer than the wait: the park ends
//!   the actor's bounded wait when it returns or unwinds (in the same
//!   runtime lookup as its stop check), and a `Wait` dropped with a
//!   deadline set and no park ends it in its drop.
//! - (W4) A `Wait` dropped while open (an early return, an unwind out of a
//!   registration) retires itself: no waker registered for it can reach a
//!   later wait.
//! - (W5) A wait whose registration took what it waited for (a lock, a
//!   message: `Registered::Done`) returns it; it is retired without
//!   observing a stop, since an unwind there would leak or lose what was
//!   taken. Every other way out of a wait may unwind with a stop.

use super::{Worker, park, with_worker};
use crate::park::Coordinator;
use crate::scheduler::Shared;
use crate::slot::{Pid, WaitId};
use crate::timer::bounded;
use crate::timer::heap::Clock;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Instant;

/// Declare `WaitingOn` and its `from_u8` from one list of kinds and their
/// slot values, so the two cannot drift apart.
macro_rules! waiting_on {
    ($($(#[doc = $doc:literal])+ $kind:ident = $value:literal,)+) => {
        /// What a parked actor waits for, as introspection reports it. New
        /// kinds of wait may be added: match with a wildcard arm.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        #[non_exhaustive]
        pub enum WaitingOn {
            $($(#[doc = $doc])+ $kind = $value,)+
        }

        impl WaitingOn {
            /// The value a slot holds, if it names one (0 is "none yet").
            pub(crate) fn from_u8(v: u8) -> Option<WaitingOn> {
                match v {
                    $($value => Some(WaitingOn::$kind),)+
                    _ => None,
                }
            }
        }
    };
}

waiting_on! {
    /// A message on a channel (`recv`, `recv_timeout`).
    Message = 1,
    /// Any of several channels or fds (`select`).
    Select = 2,
    /// The reply to a call, or a oneshot's value.
    Reply = 3,
    /// An actor-aware `Mutex`.
    Lock = 4,
    /// An fd becoming readable or writable.
    Fd = 5,
    /// Another actor's exit (`JoinHandle::join`).
    Join = 6,
    /// A timer (`sleep`).
    Timer = 7,
    /// A job on the blocking pool (`block_on_io`).
    BlockingJob = 8,
    /// Room in a full bounded channel (`Sender::send`).
    Room = 9,
    /// Anything, holding no stack (`smarm::hibernate`).
    Hibernating = 10,
    /// A future's waker (`smarm::future::block_on`).
    Future = 11,
}

impl WaitingOn {
    /// The value stored in the slot (0 is "none yet").
    #[inline]
    pub(crate) fn to_u8(self) -> u8 {
        self as u8
    }
}

/// Who to wake, for which wait: the runtime the actor runs in, and the
/// wait's [`WaitId`]. Stored by wakers that outlive the waiter's runtime
/// borrow (a mutex queue, a pool job).
pub(crate) struct WakeToken {
    runtime: Arc<Shared>,
    wait: WaitId,
}

impl WakeToken {
    /// A token for `wait` of an actor of `runtime` (a model that holds an
    /// actor's slot itself).
    #[cfg(all(test, loom))]
    pub(crate) fn new(runtime: Arc<Shared>, wait: WaitId) -> WakeToken {
        WakeToken { runtime, wait }
    }

    /// The waiting actor's pid.
    pub(crate) fn pid(&self) -> Pid {
        self.wait.pid
    }

    /// The address of the waiting actor's runtime: with the pid, who waits
    /// across runtimes (pids are per runtime).
    pub(crate) fn runtime_addr(&self) -> usize {
        Arc::as_ptr(&self.runtime) as usize
    }

    /// Wake the wait, if it is still the actor's current one (slot (I3)).
    pub(crate) fn wake(&self) {
        self.runtime.wake(self.wait);
    }
}

/// When a bounded wait gives up: an `Instant` (the user's clock), or
/// nanos on the runtime's coordinator clock (no `Instant` arithmetic, for
/// the call path). Both are on the virtual clock: under causal profiling
/// (feature `smarm-causal`) they move later by the delay inserted while
/// the wait lasts (time (H3)), as every workload timer does. A `Wall`
/// deadline (coordinator nanos) never moves.
#[derive(Clone, Copy)]
pub(crate) enum Deadline<'a> {
    At(Instant),
    Nanos { at: u64, coord: &'a Coordinator },
    Wall { at: u64, coord: &'a Coordinator },
}

impl Deadline<'_> {
    /// Whether the deadline has passed, once moved `shift` nanos later
    /// (the delay inserted since the wait began; 0 without profiling).
    fn passed(&self, shift: u64) -> bool {
        match *self {
            #[cfg(feature = "smarm-causal")]
            Deadline::At(at) => at
                .checked_add(std::time::Duration::from_nanos(shift))
                .is_some_and(|at| crate::clock::instant() >= at),
            #[cfg(not(feature = "smarm-causal"))]
            Deadline::At(at) => crate::clock::instant() >= at,
            Deadline::Nanos { at, coord } => coord.now_nanos() >= moved(at, shift),
            Deadline::Wall { at, coord } => coord.now_nanos() >= at,
        }
    }

    /// The clock its timer keeps.
    fn clock(&self) -> Clock {
        match self {
            Deadline::Wall { .. } => Clock::Wall,
            Deadline::At(_) | Deadline::Nanos { .. } => Clock::Virtual,
        }
    }
}

/// `at` moved `shift` later (without the feature `smarm-causal` nothing
/// moves).
#[inline(always)]
fn moved(at: u64, shift: u64) -> u64 {
    #[cfg(feature = "smarm-causal")]
    {
        at.saturating_add(shift)
    }
    #[cfg(not(feature = "smarm-causal"))]
    {
        let _ = shift;
        at
    }
}

/// How far a wait's deadline has moved: the delay causal profiling has
/// inserted in the running actor's runtime since `began`, which the first
/// look during a session sets (0 without the feature `smarm-causal`, and
/// while no session runs).
#[inline(always)]
fn shift_since(began: &mut Option<u64>) -> u64 {
    #[cfg(feature = "smarm-causal")]
    {
        if !crate::causal::delay::any_session() {
            return 0;
        }
        let now = with_worker(|_, shared| shared.coord.inserted_delay()).unwrap_or(0);
        now.saturating_sub(*began.get_or_insert(now))
    }
    #[cfg(not(feature = "smarm-causal"))]
    {
        let _ = began;
        0
    }
}

/// An open wait of the running actor (see the module docs). Kept small:
/// it lives in the frame of every parked receive, and a parked actor's
/// frames are what its resume must bring back into cache.
#[must_use = "an open wait must be parked on or retired"]
pub(crate) struct Wait {
    id: WaitId,
    /// In a bounded wait: a deadline was set (W3).
    bounded: bool,
    /// Still open: not parked on, not retired (W2, W4).
    open: bool,
    /// It stays with its actor (`!Send`).
    _not_send: PhantomData<*const ()>,
}

impl Wait {
    /// Open a new wait of the running actor `on` something. `what` names
    /// the blocking call, for the panic outside an actor.
    #[inline]
    pub(crate) fn open(what: &str, on: WaitingOn) -> Wait {
        Wait::open_with(what, on, |_, _| ())
    }

    /// [`open`](Self::open), then run `register` with the wait's identity
    /// and the actor's runtime (one runtime lookup for both); `register`
    /// must not block.
    #[inline(always)]
    pub(crate) fn open_with(
        what: &str,
        on: WaitingOn,
        register: impl FnOnce(WaitId, &Shared),
    ) -> Wait {
        match Wait::open_on_scheduler(what, on, register) {
            Some(wait) => wait,
            None => super::outside_actor(what),
        }
    }

    /// [`open_with`](Self::open_with) from a thread that may not be a
    /// scheduler at all: `None` (and `register` not run) on a plain
    /// thread, for callers that block such a thread themselves; the same
    /// panic on a scheduler thread outside an actor.
    #[inline(always)]
    pub(crate) fn open_on_scheduler(
        what: &str,
        on: WaitingOn,
        register: impl FnOnce(WaitId, &Shared),
    ) -> Option<Wait> {
        let opened = with_worker(|w, shared| {
            let Some(pid) = w.actor.current.get() else {
                super::outside_actor(what)
            };
            let Some(slot) = shared.slots.get(pid.index()) else {
                super::outside_actor(what)
            };
            w.actor.wait_open.set(true); // (W2)
            slot.waiting_on
                .store(on.to_u8(), crate::loom::Ordering::Relaxed);
            #[cfg(feature = "smarm-causal")]
            super::causal::note_wait(shared, slot);
            let id = WaitId {
                pid,
                epoch: slot.word.begin_wait(),
            };
            register(id, shared);
            id
        })?;
        Some(Wait {
            id: opened,
            bounded: false,
            open: true,
            _not_send: PhantomData,
        })
    }

    /// The wait's identity, for a waker that keeps the runtime itself.
    #[inline]
    pub(crate) fn id(&self) -> WaitId {
        self.id
    }

    /// A token that wakes this wait from anywhere.
    pub(crate) fn token(&self) -> WakeToken {
        match with_worker(|_, shared| shared.to_arc()) {
            Some(runtime) => WakeToken {
                runtime,
                wait: self.id,
            },
            None => super::outside_actor("a wake token"),
        }
    }

    /// Give the wait a deadline, moved `shift` nanos later (the delay
    /// causal profiling inserted since the wait began; 0 without it): the
    /// actor's cached wait timer fires no later than it (bounded (B1)).
    pub(crate) fn set_deadline(&mut self, deadline: Deadline<'_>, shift: u64) {
        let id = self.id;
        let _ = with_worker(|w, shared| {
            let at = match deadline {
                Deadline::At(at) => moved(shared.coord.deadline_nanos(at), shift),
                Deadline::Nanos { at, .. } => moved(at, shift),
                Deadline::Wall { at, .. } => at,
            };
            if let Some(slot) = shared.slots.get(id.pid.index()) {
                shared.arm_wait_timer(w.id, slot, id, at, deadline.clock());
            }
        });
        self.bounded = true;
    }

    /// Park until a wake for this wait (or a stop request, which unwinds).
    /// The wait is over when this returns, and so is its deadline (W3):
    /// the park itself ends the bounded wait, on the stop path too, so
    /// nothing is left for a drop.
    #[inline(always)]
    pub(crate) fn park(self) {
        let bounded = self.bounded;
        std::mem::forget(self);
        park(bounded);
    }

    /// Park until a wake, and keep the wait open for another park on the
    /// same epoch (a waker that cannot be re-registered, such as a pool
    /// job that was handed the `WaitId` once).
    pub(crate) fn park_and_stay_open(&mut self) {
        self.open = false;
        park(std::mem::take(&mut self.bounded)); // (W3)
        let _ = with_worker(|w: &Worker, _| w.actor.wait_open.set(true)); // (W2)
        self.open = true;
    }

    /// [`park_and_stay_open`](Self::park_and_stay_open) that a stop request
    /// does not unwind (it only ends the park early): for a waker that
    /// uses the actor's stack until it wakes it (a scoped pool job). The
    /// caller observes the stop with [`retire`](Self::retire) once its
    /// waker is done. No deadline.
    pub(crate) fn park_staying_for_the_waker(&mut self) {
        debug_assert!(!self.bounded, "a scoped job's wait has no deadline");
        self.open = false;
        super::park_deaf_to_stop();
        let _ = with_worker(|w: &Worker, _| w.actor.wait_open.set(true)); // (W2)
        self.open = true;
    }

    /// Leave the wait to the scheduler, which commits its park after the
    /// actor's last switch from its stack (a hibernation: `life.rs`).
    /// No deadline: the wait stays open until its wake (W2).
    pub(crate) fn hand_to_scheduler(self) {
        debug_assert!(!self.bounded, "a hibernation has no deadline");
        std::mem::forget(self);
    }

    /// Close the wait without parking: every waker registered for it goes
    /// stale (slot (I3)). Observes a stop request (it unwinds).
    #[inline]
    pub(crate) fn retire(mut self) {
        self.open = false;
        if retire_running(self.id) {
            drop(self);
            super::unwind_stop();
        }
    }
}

impl Wait {
    /// End the bounded wait, if this is one (W3).
    #[inline]
    fn leave_bounded(&mut self) {
        if std::mem::take(&mut self.bounded) {
            let pid = self.id.pid;
            let _ = with_worker(|_, shared| {
                if let Some(slot) = shared.slots.get(pid.index()) {
                    bounded::leave(slot);
                }
            });
        }
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        self.leave_bounded(); // (W3): a deadline set, then an unwind before the park
        if self.open {
            retire_running(self.id); // (W4); no stop unwind from a drop
        }
    }
}

/// Retire the running actor's wait `id` and clear its `wait_open` (W2).
/// Returns whether a stop has been requested.
#[inline]
fn retire_running(id: WaitId) -> bool {
    with_worker(|w, shared| {
        w.actor.wait_open.set(false);
        shared.slots.get(id.pid.index()).is_some_and(|slot| {
            slot.word.retire_wait();
            slot.stop.load(crate::loom::Ordering::Acquire)
        })
    }) == Some(true)
        && !std::thread::panicking()
}

/// What a registration found.
pub(crate) enum Registered<T> {
    /// Registered: park until woken.
    Yes,
    /// Ready meanwhile: look again without parking.
    Ready,
    /// The wait is over with this outcome (an error, a ready arm).
    Done(T),
}

/// A primitive's side of [`bounded_wait`].
pub(crate) trait BoundedWaiter {
    type Output;
    /// What the wait is on, for introspection.
    const WAITS_ON: WaitingOn;
    /// The outcome, if the wait is over; checked before every park, with
    /// no wait open.
    fn ready(&mut self) -> Option<Self::Output>;
    /// The deadline has passed and nothing was ready: the timeout outcome,
    /// or `None` to look again (an outcome is landing).
    fn timed_out(&mut self) -> Option<Self::Output>;
    /// Register the open `wait` with the wakers.
    fn register(&mut self, wait: &Wait) -> Registered<Self::Output>;
    /// Whether `unregister` does anything (the loop skips its guard if not).
    const UNREGISTERS: bool = false;
    /// After a park (or an unwind out of it): drop a registration the
    /// waker did not take.
    fn unregister(&mut self, _wait: WaitId) {}
}

/// The bounded-wait loop: look, give up once `deadline` has passed (at
/// once only if `expire_at_once`, else after a first wait), register,
/// park with the deadline armed, and look again; a wait may be woken
/// early by its cached timer (bounded (B1)), never late.
#[inline(always)]
pub(crate) fn bounded_wait<W: BoundedWaiter>(
    what: &str,
    waiter: &mut W,
    deadline: Option<Deadline<'_>>,
    expire_at_once: bool,
) -> W::Output {
    let mut woken = false;
    // The delay inserted when the wait began: what is inserted since moves
    // its deadline (Deadline).
    let mut began = None;
    loop {
        if let Some(out) = waiter.ready() {
            return out;
        }
        if (woken || expire_at_once)
            && deadline
                .as_ref()
                .is_some_and(|d| d.passed(shift_since(&mut began)))
            && let Some(out) = waiter.timed_out()
        {
            return out;
        }
        woken = true;
        let mut wait = Wait::open(what, W::WAITS_ON);
        match waiter.register(&wait) {
            Registered::Yes => {}
            Registered::Ready => {
                wait.retire();
                continue;
            }
            Registered::Done(out) => {
                // (W5): the stop lands at the next safepoint.
                drop(wait);
                return out;
            }
        }
        if let Some(d) = deadline {
            wait.set_deadline(d, shift_since(&mut began));
        }
        if W::UNREGISTERS {
            let id = wait.id();
            let unregister = Unregister { waiter, id };
            wait.park();
            drop(unregister);
        } else {
            wait.park();
        }
    }
}

/// Runs the waiter's `unregister` after the park, on an unwind too.
struct Unregister<'a, W: BoundedWaiter> {
    waiter: &'a mut W,
    id: WaitId,
}

impl<W: BoundedWaiter> Drop for Unregister<'_, W> {
    fn drop(&mut self) {
        self.waiter.unregister(self.id);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{BoundedWaiter, Registered, Wait, WaitingOn, bounded_wait};

    /// A waiter whose registration completes the wait: it takes what it
    /// waited for, as a lock's (free by then) or a channel's does.
    struct TakesAtRegistration;

    impl BoundedWaiter for TakesAtRegistration {
        type Output = u32;
        const WAITS_ON: WaitingOn = WaitingOn::Lock;
        fn ready(&mut self) -> Option<u32> {
            None
        }
        fn timed_out(&mut self) -> Option<u32> {
            None
        }
        fn register(&mut self, _wait: &Wait) -> Registered<u32> {
            Registered::Done(7)
        }
    }

    /// What registration took comes back even with a stop requested:
    /// unwinding there would lose it (a lock taken with no guard to release
    /// it, which the unwind's own destructors then relock: a panic during
    /// the unwind). The stop lands at the next safepoint.
    #[test]
    fn a_wait_completed_at_registration_returns_its_outcome_despite_a_stop() {
        crate::runtime::init(crate::runtime::Config::exact(1)).run(|| {
            let (tx, rx) = std::sync::mpsc::channel();
            let waiter = crate::spawn(move || {
                crate::request_stop(crate::self_pid());
                let out = bounded_wait("test", &mut TakesAtRegistration, None, false);
                let _ = tx.send(out);
                crate::yield_now(); // the stop unwinds here
                let _ = tx.send(0);
            });
            assert!(
                waiter.join().is_ok(),
                "a stop ends an actor as cleanly as a return"
            );
            assert_eq!(rx.try_iter().collect::<Vec<_>>(), [7]);
        });
    }

    /// Every kind survives the slot's byte, and no other byte names one.
    #[test]
    fn a_kind_round_trips_through_its_slot_value() {
        let kinds: Vec<WaitingOn> = (0..=u8::MAX).filter_map(WaitingOn::from_u8).collect();
        assert_eq!(kinds.len(), 11);
        for kind in kinds {
            assert_eq!(WaitingOn::from_u8(kind.to_u8()), Some(kind));
        }
        assert_eq!(WaitingOn::from_u8(0), None);
        assert_eq!(WaitingOn::from_u8(1), Some(WaitingOn::Message));
        assert_eq!(WaitingOn::from_u8(11), Some(WaitingOn::Future));
    }
}
