//! `block_on` and `block_on_timeout`: await a future from blocking-style
//! code, parking only the actor (or blocking a plain thread).

use super::cell::Armed;
use super::waker::Held;
use crate::lock::no_preempt::NoPreempt;
use crate::scheduler::{self, Deadline, Wait, WaitingOn};
use std::future::{Future, IntoFuture};
use std::pin::pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// A future awaited with [`block_on_timeout`] did not complete in time; it
/// was dropped, with whatever it had started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("smarm: the future did not complete within {timeout:?} (block_on_timeout); it was dropped")]
pub struct Elapsed {
    /// The timeout that passed.
    pub timeout: Duration,
}

/// Run `future` (anything [`IntoFuture`], a [`JoinHandle`](crate::JoinHandle)
/// too) to completion and return its output, parking only the
/// calling actor while it is pending: the actor's stack holds the future,
/// its waker (callable from any thread: a tokio thread, another actor, a
/// plain thread) makes the actor runnable again, and the other actors on
/// its scheduler run meanwhile. Outside an actor it blocks the calling
/// thread.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::{mpsc, Arc};
/// use std::task::{Poll, Waker};
///
/// smarm::run(|| {
///     let ready = Arc::new(AtomicBool::new(false));
///     let (waker_tx, waker_rx) = mpsc::channel::<Waker>();
///     let r = ready.clone();
///     let other = std::thread::spawn(move || {
///         let waker = waker_rx.recv().unwrap();
///         r.store(true, Ordering::Release);
///         waker.wake(); // from a plain thread
///     });
///     let value = smarm::future::block_on(std::future::poll_fn(|cx| {
///         if ready.load(Ordering::Acquire) {
///             return Poll::Ready(42);
///         }
///         let _ = waker_tx.send(cx.waker().clone());
///         Poll::Pending
///     }));
///     assert_eq!(value, 42);
///     other.join().unwrap();
/// });
/// ```
///
/// With the `tokio` feature every scheduler thread runs inside the
/// runtime's tokio context, so `tokio::net`, `tokio::time` and the crates
/// built on them work in actors (the module docs say which thread runs
/// what).
///
/// # Cancellation
///
/// A stop request ([`request_stop`](crate::request_stop), a supervisor's
/// shutdown, an exit signal through a link) ends the wait at once: the
/// actor unwinds from `block_on`, dropping the future where it stands.
/// That is safe for a future whose drop leaves nothing half-done that
/// matters (a timer, a read, an HTTP request whose answer is no longer
/// wanted), as for any `.await` point cancelled in async Rust; a future in
/// the middle of a multi-step write (half a frame sent, a transaction
/// opened) leaves that state as its drop leaves it. Wakes of its waker
/// after that reach nobody.
///
/// # Panics
///
/// A panic in the future's `poll` is the actor's panic (it unwinds from
/// here). On a scheduler thread outside an actor (a timer callback), and
/// when the future calls a blocking smarm operation inside its `poll`
/// (which would park the actor in the middle of a poll: await an async
/// operation instead). While the future is polled, the actor is not
/// preempted, so a `poll` may use thread-locals; see the module docs for
/// what must not be held across a `block_on`.
pub fn block_on<F>(future: F) -> F::Output
where
    F: IntoFuture,
    F::IntoFuture: Send,
{
    match run(future.into_future(), None) {
        Some(output) => output,
        None => unreachable!("a wait with no deadline does not time out"),
    }
}

/// [`block_on`], giving up once `timeout` has passed: the future is
/// polled at least once, and if it is still pending at the deadline it is
/// dropped and [`Elapsed`] returned.
///
/// ```
/// use std::time::Duration;
///
/// smarm::run(|| {
///     let never = std::future::pending::<()>();
///     let r = smarm::future::block_on_timeout(Duration::from_millis(20), never);
///     assert_eq!(r, Err(smarm::future::Elapsed { timeout: Duration::from_millis(20) }));
///     let ready = smarm::future::block_on_timeout(Duration::ZERO, async { 7 });
///     assert_eq!(ready, Ok(7), "polled once even with no time left");
/// });
/// ```
///
/// # Panics
///
/// As [`block_on`].
pub fn block_on_timeout<F>(timeout: Duration, future: F) -> Result<F::Output, Elapsed>
where
    F: IntoFuture,
    F::IntoFuture: Send,
{
    let deadline = crate::clock::instant().checked_add(timeout);
    run(future.into_future(), Some(deadline)).ok_or(Elapsed { timeout })
}

/// The await, in an actor or on a plain thread. `deadline`: `None` for no
/// timeout, `Some(None)` for one too far away to represent.
fn run<F: Future + Send>(future: F, deadline: Option<Option<Instant>>) -> Option<F::Output> {
    let in_actor = scheduler::with_worker(|w, _| w.actor.current.get().is_some());
    match in_actor {
        Some(true) => in_an_actor(future, deadline.flatten()),
        Some(false) => scheduler::outside_actor("smarm::future::block_on"),
        None => on_a_thread(future, deadline.flatten()),
    }
}

/// Ends an actor's await, however it ends: counted out of the root-exit
/// sweep's view (runtime (I3)), and, dropped after the future, its
/// record disarmed and released (F4, F5).
struct Await {
    record: Held,
}

impl Drop for Await {
    fn drop(&mut self) {
        let _ = scheduler::with_worker(|_, shared| shared.future_await_ended());
    }
}

fn in_an_actor<F: Future + Send>(future: F, deadline: Option<Instant>) -> Option<F::Output> {
    let awaiting = scheduler::with_current_actor("smarm::future::block_on", |pid, shared| {
        shared.future_await_began();
        Await {
            record: Held::take(pid, shared),
        }
    });
    // Declared after `awaiting`: dropped first, so its wakers are gone
    // before the record is released (F5) and the await counted out.
    let mut future = pin!(future);
    let cell = awaiting.record.cell();
    let waker = awaiting.record.waker();
    let mut cx = Context::from_waker(&waker);
    loop {
        cell.begin_poll();
        let polled = poll_once(future.as_mut(), &mut cx);
        if let Poll::Ready(output) = polled {
            return Some(output);
        }
        if deadline.is_some_and(|at| crate::clock::instant() >= at) {
            return None;
        }
        let mut wait = Wait::open("smarm::future::block_on", WaitingOn::Future);
        match cell.arm(wait.id().epoch) {
            Armed::Repoll => wait.retire(), // observes a stop request
            Armed::Park => {
                if let Some(at) = deadline {
                    // A cached wait timer may fire early (bounded (B1)):
                    // the loop polls again and looks at the clock.
                    wait.set_deadline(Deadline::At(at), 0);
                }
                wait.park(); // a stop request unwinds here
            }
        }
    }
}

/// One poll, with preemption off (a poll may hold thread-locals). Never
/// inlined: thread-local addresses the future's code computes (tokio's
/// context, say) are computed afresh at every poll, on the thread the
/// actor is on now, not reused from a poll before a park that moved it
/// (scheduler (I2)).
#[inline(never)]
pub(super) fn poll_once<F: Future>(
    future: std::pin::Pin<&mut F>,
    cx: &mut Context<'_>,
) -> Poll<F::Output> {
    let _no_preempt = NoPreempt::new();
    future.poll(cx)
}

fn on_a_thread<F: Future>(future: F, deadline: Option<Instant>) -> Option<F::Output> {
    // The thread's waker: a wake unparks this thread (lock::thread_wait).
    let waker = crate::lock::thread_wait::thread_waker();
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    crate::lock::thread_wait::wait_until(deadline, |expired| match future.as_mut().poll(&mut cx) {
        Poll::Ready(output) => Some(Some(output)),
        Poll::Pending => expired.then_some(None),
    })
}
