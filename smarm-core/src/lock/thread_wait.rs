//! The wait of a plain thread (one that runs no actor) inside a blocking
//! call: register [`thread_waker`] (or the thread) with what it waits for,
//! then [`park_until`]. Every blocking primitive's non-actor path waits
//! this way, through [`wait_until`], which loops over the two as
//! crossbeam-channel's flavours loop in one `Context::wait_until`; the
//! actor path is the scheduler's `Wait`. The untimed receives (`recv`,
//! `recv_match` of both receivers) register and park in a loop of their
//! own instead, the one their actor path runs: through a `wait_until`
//! closure they cost that path 9 to 14 instructions per receive
//! (callgrind, pingpong1 +3%).
//!
//! # Invariants
//!
//! - (T1) No wake is lost: a call registers this thread (its
//!   [`thread_waker`], or `std::thread::current()`) under its own lock
//!   before the thread parks, and an unpark that lands between the
//!   registration and the park makes the park return at once (std's park
//!   token).
//! - (T2) A return from the park, spurious or not, only polls again; the
//!   deadline is read afresh each round, and once it has passed the call
//!   is told so and must finish.

use std::sync::Arc;
use std::task::Waker;
use std::time::Instant;

/// A waker that unparks the calling thread: how a plain thread registers
/// with what it waits for (made once per thread, so a wait allocates
/// nothing).
pub(crate) fn thread_waker() -> Waker {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    std::thread_local! {
        static WAKER: Waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    }
    WAKER.with(Waker::clone)
}

/// Block this thread in a call until it is done. `poll(expired)` tries
/// the call: `Some(result)` when it is done; `None` after registering this
/// thread to be unparked by what it waits for (T1). `expired` is `true`
/// once `deadline` has passed: `poll` must then return `Some`, having
/// withdrawn its registration.
pub(crate) fn wait_until<R>(
    deadline: Option<Instant>,
    mut poll: impl FnMut(bool) -> Option<R>,
) -> R {
    loop {
        let expired = deadline.is_some_and(|d| crate::clock::instant() >= d);
        if let Some(done) = poll(expired) {
            return done;
        }
        debug_assert!(!expired, "a plain-thread wait went on past its deadline");
        park_until(deadline);
    }
}

/// Park this thread until it is unparked or `deadline` passes (or
/// spuriously: the caller looks again, (T2)).
pub(crate) fn park_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => std::thread::park_timeout(d.saturating_duration_since(crate::clock::instant())),
        None => std::thread::park(),
    }
}
