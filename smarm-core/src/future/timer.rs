//! `sleep_until`: a deadline as a future for any executor, for the
//! timeouts of smarm's async operations (`call_async`). Inside a tokio
//! context (feature `tokio`) it is tokio's own timer; elsewhere one
//! process-wide timer thread, started on first use, wakes the wakers.
//!
//! # Invariants
//!
//! - (T1) A registered deadline is removed when its future is dropped or
//!   has fired, so the thread holds no waker past its future's life.
//! - (T2) The thread sleeps until the earliest registered deadline, and
//!   a registration earlier than that wakes it to sleep again.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Condvar, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// The deadline future (see the module docs).
pub struct SleepUntil {
    deadline: Instant,
    inner: Inner,
}

enum Inner {
    /// Not polled yet: which timer serves it is decided at the first poll,
    /// in the executor's context.
    Unpolled,
    #[cfg(feature = "tokio")]
    Tokio(Pin<Box<tokio::time::Sleep>>),
    /// Registered with the timer thread under this key (T1).
    Thread(Option<(Instant, u64)>),
}

/// A deadline as a future.
pub fn sleep_until(deadline: Instant) -> SleepUntil {
    SleepUntil {
        deadline,
        inner: Inner::Unpolled,
    }
}

impl Future for SleepUntil {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if crate::clock::instant() >= this.deadline {
            this.unregister();
            return Poll::Ready(());
        }
        if let Inner::Unpolled = this.inner {
            this.inner = pick(this.deadline);
        }
        match &mut this.inner {
            #[cfg(feature = "tokio")]
            Inner::Tokio(sleep) => sleep.as_mut().poll(cx),
            Inner::Thread(key) => {
                let timers = timers();
                let mut state = crate::lock::lock_std(&timers.state);
                let key = *key.get_or_insert_with(|| {
                    state.next += 1;
                    (this.deadline, state.next)
                });
                let earliest = state.wakers.keys().next().map(|k| k.0);
                state.wakers.insert(key, cx.waker().clone());
                if earliest.is_none_or(|at| this.deadline < at) {
                    timers.changed.notify_one(); // (T2)
                }
                drop(state);
                start_thread_once();
                Poll::Pending
            }
            Inner::Unpolled => Poll::Pending,
        }
    }
}

impl SleepUntil {
    fn unregister(&mut self) {
        if let Inner::Thread(Some(key)) = self.inner {
            crate::lock::lock_std(&timers().state).wakers.remove(&key);
            self.inner = Inner::Thread(None);
        }
    }
}

impl Drop for SleepUntil {
    fn drop(&mut self) {
        self.unregister(); // (T1)
    }
}

/// Which timer serves a deadline polled here.
fn pick(deadline: Instant) -> Inner {
    #[cfg(feature = "tokio")]
    if tokio::runtime::Handle::try_current().is_ok() {
        return Inner::Tokio(Box::pin(tokio::time::sleep_until(deadline.into())));
    }
    let _ = deadline;
    Inner::Thread(None)
}

struct Timers {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Wakers by (deadline, registration number).
    wakers: BTreeMap<(Instant, u64), Waker>,
    next: u64,
}

fn timers() -> &'static Timers {
    static TIMERS: OnceLock<Timers> = OnceLock::new();
    TIMERS.get_or_init(|| Timers {
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
    })
}

fn start_thread_once() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let started = std::thread::Builder::new()
            .name("smarm-async-timer".into())
            .spawn(run_thread);
        if let Err(e) = started {
            panic!("smarm: could not start the timer thread of async timeouts: {e}");
        }
    });
}

/// The timer thread: wake every due waker, sleep until the next (T2).
fn run_thread() {
    let timers = timers();
    let mut state = timers.state.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let now = crate::clock::instant();
        let mut due = Vec::new();
        while let Some(entry) = state.wakers.first_entry() {
            if entry.key().0 > now {
                break;
            }
            due.push(entry.remove());
        }
        if !due.is_empty() {
            drop(state);
            due.into_iter().for_each(Waker::wake);
            state = timers.state.lock().unwrap_or_else(|e| e.into_inner());
            continue;
        }
        state = match state.wakers.keys().next().map(|k| k.0) {
            Some(at) => {
                let wait = at.saturating_duration_since(now);
                match timers.changed.wait_timeout(state, wait) {
                    Ok((s, _)) => s,
                    Err(e) => e.into_inner().0,
                }
            }
            None => timers
                .changed
                .wait(state)
                .unwrap_or_else(|e| e.into_inner()),
        };
    }
}
