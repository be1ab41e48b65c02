//! Loom models of the await handshake (future (F1)-(F3)) against the real
//! slot word (a wake of an ended await is stale there: slot's own
//! `stale_epoch_never_wakes`): `RUSTFLAGS="--cfg loom" cargo test -p smarm-core --release
//! --lib future`.

use super::cell::{Armed, WakeCell};
use crate::slot::word::{ParkCommit, SlotWord, State, Unpark};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;

fn running_word() -> SlotWord {
    let w = SlotWord::vacant(1);
    let _ = w.spawn_queued();
    w.start_running();
    w
}

/// A waker's side: make the future ready, then wake (the `wake_record`
/// path: notify, deliver to the epoch found).
fn wake(cell: &WakeCell, word: &SlotWord, ready: &AtomicBool) -> Option<Unpark> {
    ready.store(true, Ordering::Relaxed); // the future's state: no ordering of its own
    cell.notify().map(|epoch| word.unpark_at(1, Some(epoch)))
}

/// The actor's `block_on` loop over a future that is ready once `ready`
/// is set, against `wakers` threads that each set it and wake. Fails if
/// the actor parks with every waker done and nobody left to wake it (a
/// lost wake, F1/F2). Returns how often it parked and how often a waker
/// enqueued it.
fn await_ready(
    cell: &Arc<WakeCell>,
    word: &Arc<SlotWord>,
    ready: &Arc<AtomicBool>,
    wakers: usize,
) -> (usize, usize) {
    let mut handles: Vec<_> = (0..wakers)
        .map(|_| {
            let (cell, word, ready) = (cell.clone(), word.clone(), ready.clone());
            thread::spawn(move || wake(&cell, &word, &ready))
        })
        .collect();
    let (mut parked, mut enqueued) = (0, 0);
    let mut count = |u: Option<Unpark>| enqueued += usize::from(u == Some(Unpark::Enqueue));
    loop {
        cell.begin_poll();
        if ready.load(Ordering::Relaxed) {
            break;
        }
        let epoch = word.begin_wait();
        match cell.arm(epoch) {
            Armed::Repoll => word.retire_wait(),
            Armed::Park => match word.commit_park() {
                ParkCommit::Requeue => word.start_running(),
                ParkCommit::Parked => {
                    // Parked: only a waker can make it runnable again.
                    parked += 1;
                    for h in handles.drain(..) {
                        count(h.join().unwrap());
                    }
                    assert_eq!(
                        word.load().state(),
                        State::Queued,
                        "the actor parked and every waker is done: a wake was lost"
                    );
                    word.start_running();
                }
            },
        }
    }
    cell.disarm();
    for h in handles {
        count(h.join().unwrap());
    }
    (parked, enqueued)
}

/// One wake from another thread racing the poll, the arm and the park:
/// the actor always completes (F1, F2).
#[test]
fn a_wake_racing_the_poll_and_the_park_is_never_lost() {
    loom::model(|| {
        let (cell, word) = (Arc::new(WakeCell::new()), Arc::new(running_word()));
        let ready = Arc::new(AtomicBool::new(false));
        let (parked, enqueued) = await_ready(&cell, &word, &ready, 1);
        assert_eq!(parked, enqueued, "every park was ended by one enqueue");
    });
}

/// Two wakers of one future: still no lost wake, and at most one of them
/// enqueues the actor per park (F3).
#[test]
fn two_wakes_of_one_round_enqueue_once() {
    loom::model(|| {
        let (cell, word) = (Arc::new(WakeCell::new()), Arc::new(running_word()));
        let ready = Arc::new(AtomicBool::new(false));
        let (parked, enqueued) = await_ready(&cell, &word, &ready, 2);
        assert_eq!(parked, enqueued, "each park ended by exactly one enqueue");
    });
}
