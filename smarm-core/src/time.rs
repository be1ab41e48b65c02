//! Time: the timing calls actors make, `sleep`, message timers and their
//! cancellation, on the timer machinery of `timer` (the sharded heaps,
//! bounded waits; its module doc has the design and invariants).
//!
//! Every call has a wall-clock form (`sleep_wall`, `send_after_to_wall`,
//! `call_after_wall`). Without the feature `smarm-causal` the two forms
//! are the same. With it, a causal profile slows the program down by
//! the delay it inserts, and a plain timer waits that delay out too (it
//! paces the workload, which the delay slows like everything else),
//! while a wall-clock one keeps real time: for the profiler's own
//! windows, and for deadlines the outside world sets (a protocol timeout,
//! a schedule by the clock on the wall).
//!
//! [`now`] and [`system_now`] read the clocks every timer here keeps: the
//! OS's, except inside a simulation (`smarm::sim`), where they read its
//! simulated clock. Code that should run the same in a simulation reads
//! time through them rather than `crate::clock::instant()`.
//!
//! # Invariants
//!
//! - (I2 of `timer`) `sleep(d)` returns no earlier than `d` after it was
//!   called: a wake before the deadline (a stop, a stale notification)
//!   re-arms.

use crate::park::Coordinator;
use crate::scheduler::WaitingOn;
use crate::scheduler::{self, BoundedWaiter, Deadline, Registered};
pub use crate::timer::TimerId;
use crate::timer::heap::Clock;
use std::time::{Duration, Instant};

/// Suspend the calling actor for at least `duration`. Only the actor
/// sleeps: its scheduler thread runs other actors meanwhile.
///
/// ```
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let t0 = smarm::time::now();
///     smarm::sleep(Duration::from_millis(5));
///     assert!(t0.elapsed() >= Duration::from_millis(5));
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn sleep(duration: Duration) {
    sleep_on("sleep", duration, Clock::Virtual);
}

/// [`sleep`] on the wall clock: under causal profiling (feature
/// `smarm-causal`) it keeps real time instead of waiting out the delay a
/// profile inserts (see the [module docs](self)); without the feature it
/// is [`sleep`].
///
/// ```
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let t0 = smarm::time::now();
///     smarm::time::sleep_wall(Duration::from_millis(5));
///     assert!(t0.elapsed() >= Duration::from_millis(5));
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn sleep_wall(duration: Duration) {
    sleep_on("sleep_wall", duration, Clock::Wall);
}

/// [`sleep`] on `clock`, naming the public call `what` for the
/// outside-an-actor panic.
fn sleep_on(what: &str, duration: Duration, clock: Clock) {
    if duration.is_zero() {
        crate::yield_now();
        return;
    }
    let coord =
        scheduler::with_current_actor(what, |_, shared| &shared.coord as *const Coordinator);
    // SAFETY: a runtime, its coordinator with it, outlives every actor it
    // runs, and this is one of them.
    let coord = unsafe { &*coord };
    // On the coordinator's clock, the deadline goes to the timer heap as
    // it is: no `Instant` arithmetic on the way in or on the wake's check.
    let at = coord.deadline_after_saturating(duration);
    let deadline = match clock {
        Clock::Virtual => Deadline::Nanos { at, coord },
        Clock::Wall => Deadline::Wall { at, coord },
    };
    scheduler::bounded_wait(what, &mut Sleep, Some(deadline), false);
}

/// A sleep waits for nothing but its deadline; a wake before it (a stop, an
/// earlier cached timer) waits again (I2).
struct Sleep;

impl BoundedWaiter for Sleep {
    const WAITS_ON: WaitingOn = WaitingOn::Timer;
    type Output = ();
    fn ready(&mut self) -> Option<()> {
        None
    }
    fn timed_out(&mut self) -> Option<()> {
        Some(())
    }
    fn register(&mut self, _wait: &scheduler::Wait) -> Registered<()> {
        Registered::Yes
    }
}

/// Deliver `msg` on `to` after `after` (Erlang's `erlang:send_after`, for a
/// channel). Returns a [`TimerId`] for [`cancel_timer`]. The send happens
/// when the timer fires: if the receiver is gone by then, the message is
/// dropped, as a send to a dead process is; a full [`bounded`] channel
/// takes it past its capacity ([`Sender::send_past_capacity`]), since a
/// timer cannot wait.
///
/// [`bounded`]: crate::channel::bounded
/// [`Sender::send_past_capacity`]: crate::Sender::send_past_capacity
///
/// ```
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let (tx, rx) = smarm::channel::<&str>();
///     let t0 = smarm::time::now();
///     smarm::time::send_after_to(Duration::from_millis(10), &tx, "tick");
///     assert_eq!(rx.recv().unwrap(), "tick");
///     assert!(t0.elapsed() >= Duration::from_millis(10));
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn send_after_to<T: Send + 'static>(after: Duration, to: &crate::Sender<T>, msg: T) -> TimerId {
    send_after_on("send_after_to", after, to, msg, Clock::Virtual)
}

/// [`send_after_to`] on the wall clock: under causal profiling (feature
/// `smarm-causal`) it keeps real time (see the [module docs](self));
/// without the feature it is [`send_after_to`].
///
/// ```
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let (tx, rx) = smarm::channel::<&str>();
///     smarm::time::send_after_to_wall(Duration::from_millis(5), &tx, "timeout");
///     assert_eq!(rx.recv().unwrap(), "timeout");
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn send_after_to_wall<T: Send + 'static>(
    after: Duration,
    to: &crate::Sender<T>,
    msg: T,
) -> TimerId {
    send_after_on("send_after_to_wall", after, to, msg, Clock::Wall)
}

fn send_after_on<T: Send + 'static>(
    what: &str,
    after: Duration,
    to: &crate::Sender<T>,
    msg: T,
    clock: Clock,
) -> TimerId {
    let to = to.clone();
    call_after_as(
        what,
        after,
        move || {
            // Never waits (a scheduler runs this), never dropped for a full
            // bounded channel; dropped only if the receiver is gone.
            let _ = to.send_past_capacity(msg);
        },
        clock,
    )
}

/// Run `f` on a scheduler of the current runtime once `after` has passed
/// (how the OTP layer's name- and pid-addressed timers resolve their target
/// at fire time). Returns a [`TimerId`] for [`cancel_timer`].
/// `f` runs outside every runtime lock but not in an actor: it must not
/// block.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let fired = Arc::new(AtomicBool::new(false));
///     let f = fired.clone();
///     smarm_core::time::call_after(Duration::from_millis(5), move || f.store(true, Ordering::SeqCst));
///     smarm::sleep(Duration::from_millis(50));
///     assert!(fired.load(Ordering::SeqCst));
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn call_after(after: Duration, f: impl FnOnce() + Send + 'static) -> TimerId {
    call_after_as("call_after", after, f, Clock::Virtual)
}

/// [`call_after`] on the wall clock: under causal profiling (feature
/// `smarm-causal`) it keeps real time (see the [module docs](self));
/// without the feature it is [`call_after`].
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let fired = Arc::new(AtomicBool::new(false));
///     let f = fired.clone();
///     smarm_core::time::call_after_wall(Duration::from_millis(5), move || f.store(true, Ordering::SeqCst));
///     smarm::sleep(Duration::from_millis(50));
///     assert!(fired.load(Ordering::SeqCst));
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn call_after_wall(after: Duration, f: impl FnOnce() + Send + 'static) -> TimerId {
    call_after_as("call_after_wall", after, f, Clock::Wall)
}

/// [`call_after`] on `clock`, naming the public call for the
/// outside-an-actor panic.
fn call_after_as(
    what: &str,
    after: Duration,
    f: impl FnOnce() + Send + 'static,
    clock: Clock,
) -> TimerId {
    let deadline = deadline_after(after);
    scheduler::with_current_actor(what, |me, shared| {
        shared.insert_timer(deadline, me, Box::new(f), clock)
    })
}

/// Call off a timer armed by [`send_after_to`]. `true` if it was still
/// pending (the message will not be sent); `false` if it already fired,
/// was already cancelled, or belongs to another runtime.
///
/// ```
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let (tx, rx) = smarm::channel::<u32>();
///     let id = smarm::time::send_after_to(Duration::from_millis(5), &tx, 1);
///     assert!(smarm::time::cancel_timer(id));
///     assert!(!smarm::time::cancel_timer(id));
///     smarm::sleep(Duration::from_millis(20));
///     assert_eq!(rx.try_recv(), Ok(None));
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn cancel_timer(id: TimerId) -> bool {
    scheduler::with_current_actor("cancel_timer", |_, shared| shared.cancel_timer(id))
}

/// The monotonic clock now, as `std::time::Instant::now()` reads it,
/// except inside a simulation (`smarm::sim`), where it reads simulated
/// time: the clock every `sleep`, timeout and timer here keeps.
///
/// ```
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let t0 = smarm::time::now();
///     smarm::sleep(Duration::from_millis(5));
///     assert!(smarm::time::now() - t0 >= Duration::from_millis(5));
/// });
/// ```
pub fn now() -> Instant {
    crate::clock::instant()
}

/// The time of day now, as `std::time::SystemTime::now()` reads it,
/// except inside a simulation (`smarm::sim`), where it starts at
/// 2026-01-01T00:00:00Z and follows simulated time, so a run's timestamps
/// repeat.
///
/// ```
/// let since_epoch = smarm::time::system_now()
///     .duration_since(std::time::UNIX_EPOCH)
///     .unwrap();
/// assert!(since_epoch.as_secs() > 1_700_000_000);
/// ```
pub fn system_now() -> std::time::SystemTime {
    crate::clock::system_time()
}

/// `now + d`, saturating a deadline too far to represent to a century
/// away: for a sleep or a timer that is "never", and it keeps the heap
/// free of an `Option`.
fn deadline_after(d: Duration) -> Instant {
    let now = crate::clock::instant();
    now.checked_add(d)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}
