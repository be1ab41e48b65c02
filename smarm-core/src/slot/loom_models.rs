//! Loom models of the slot word's park/unpark race (slot (I1), (I3)):
//! `RUSTFLAGS="--cfg loom" cargo test -p smarm-core --release --lib slot`.

use super::word::{ParkCommit, SlotWord, State, Unpark};
use loom::sync::Arc;
use loom::thread;

fn running_word() -> SlotWord {
    let w = SlotWord::vacant(1);
    let _ = w.spawn_queued();
    w.start_running();
    w
}

/// A wake racing the park commit is delivered exactly once: either it
/// finds Running (the commit re-queues) or Parked (the waker enqueues).
#[test]
fn wake_between_begin_wait_and_park_is_never_lost() {
    loom::model(|| {
        let w = Arc::new(running_word());
        let epoch = w.begin_wait();
        let waker = {
            let w = w.clone();
            thread::spawn(move || w.unpark_at(1, Some(epoch)))
        };
        let commit = w.commit_park();
        let woke = waker.join().unwrap();
        let deliveries =
            usize::from(commit == ParkCommit::Requeue) + usize::from(woke == Unpark::Enqueue);
        assert_eq!(deliveries, 1, "commit {commit:?}, waker {woke:?}");
        assert_eq!(w.load().state(), State::Queued);
    });
}

/// A waker for a wait that has ended never wakes the next wait.
#[test]
fn stale_epoch_never_wakes() {
    loom::model(|| {
        let w = Arc::new(running_word());
        let old = w.begin_wait();
        let waker = {
            let w = w.clone();
            thread::spawn(move || w.unpark_at(1, Some(old)))
        };
        w.retire_wait(); // the old wait ends without parking
        let _new = w.begin_wait();
        let commit = w.commit_park();
        let woke = waker.join().unwrap();
        assert_eq!(
            commit,
            ParkCommit::Parked,
            "an old wait's wake ended the new wait"
        );
        assert_ne!(woke, Unpark::Enqueue);
        assert_eq!(w.load().state(), State::Parked);
    });
}

/// Two wakers of one wait (a message and its timeout): the actor is
/// enqueued exactly once.
#[test]
fn two_wakers_enqueue_at_most_once() {
    loom::model(|| {
        let w = Arc::new(running_word());
        let epoch = w.begin_wait();
        let wakers: Vec<_> = (0..2)
            .map(|_| {
                let w = w.clone();
                thread::spawn(move || w.unpark_at(1, Some(epoch)))
            })
            .collect();
        let commit = w.commit_park();
        let enqueues = wakers
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|u| *u == Unpark::Enqueue)
            .count();
        assert_eq!(enqueues + usize::from(commit == ParkCommit::Requeue), 1);
    });
}

/// The wildcard wake of a stop request races the park like any other.
#[test]
fn stop_wake_racing_the_park_is_never_lost() {
    loom::model(|| {
        let w = Arc::new(running_word());
        let _ = w.begin_wait();
        let stopper = {
            let w = w.clone();
            thread::spawn(move || w.unpark_at(1, None))
        };
        let commit = w.commit_park();
        let woke = stopper.join().unwrap();
        assert_eq!(
            usize::from(commit == ParkCommit::Requeue) + usize::from(woke == Unpark::Enqueue),
            1
        );
    });
}
