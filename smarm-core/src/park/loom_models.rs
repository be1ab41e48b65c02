//! Loom models of the coordination layer:
//! `RUSTFLAGS="--cfg loom" cargo test -p smarm-core --release --lib park`.
//!
//! Loom's deadlock detector is the main assertion: a consumer parked with
//! nobody left to wake it fails the model.

use super::*;
use loom::sync::atomic::{AtomicU64, Ordering as O};
use loom::sync::{Arc, Mutex};
use loom::thread;
use std::time::{Duration, Instant};

/// No lost wake: producer {publish; wake tail} ∥ consumer {bit; re-check;
/// park}. The consumer always sees the item or a permit.
#[test]
fn no_lost_wake() {
    loom::model(|| {
        let c = Arc::new(Coordinator::new(1));
        let item = Arc::new(AtomicU64::new(0));
        let producer = {
            let (c, item) = (c.clone(), item.clone());
            thread::spawn(move || {
                item.store(1, O::SeqCst);
                c.wake_one_if_idle();
            })
        };
        loop {
            // Guarded CAS, not a blind swap: a swap of an empty cell could
            // land after the producer's store and destroy the item.
            if item.load(O::SeqCst) == 1
                && item.compare_exchange(1, 0, O::SeqCst, O::SeqCst).is_ok()
            {
                break;
            }
            let _ = c.park(0, None, || item.load(O::SeqCst) == 1);
        }
        producer.join().unwrap();
    });
}

/// Chain propagation: two items, two sleepers, one producer wake. The
/// chain rule (a consumer that pops with surplus wakes a sibling) gets
/// both consumed with no further producer action.
#[test]
fn chain_propagation() {
    loom::model(|| {
        let c = Arc::new(Coordinator::new(2));
        let items = Arc::new(AtomicU64::new(0));
        let consumed = Arc::new(AtomicU64::new(0));
        let consumers: Vec<_> = (0..2usize)
            .map(|id| {
                let (c, items, consumed) = (c.clone(), items.clone(), consumed.clone());
                thread::spawn(move || {
                    loop {
                        if consumed.load(O::SeqCst) == 2 {
                            c.wake_all(); // release a sibling still parked
                            break;
                        }
                        let cur = items.load(O::SeqCst);
                        if cur > 0
                            && items
                                .compare_exchange(cur, cur - 1, O::SeqCst, O::SeqCst)
                                .is_ok()
                        {
                            consumed.fetch_add(1, O::SeqCst);
                            // The chain rule, as the scheduler loop expresses it.
                            if items.load(O::SeqCst) > 0 {
                                c.wake_one_if_idle();
                            }
                            continue;
                        }
                        let _ = c.park(id, None, || {
                            items.load(O::SeqCst) > 0 || consumed.load(O::SeqCst) == 2
                        });
                    }
                })
            })
            .collect();
        items.store(2, O::SeqCst);
        c.wake_one_if_idle();
        for h in consumers {
            h.join().unwrap();
        }
        assert_eq!(consumed.load(O::SeqCst), 2);
        assert_eq!(items.load(O::SeqCst), 0);
    });
}

/// Timekeeper handoff: an earlier-deadline insert racing the parking
/// timekeeper is always honoured: armed directly, or the insert wakes the
/// holder to re-peek. Sleeping toward the stale deadline deadlocks the
/// model (loom has no time).
#[test]
fn timekeeper_handoff() {
    loom::model(|| {
        let origin = Instant::now();
        let far = origin + Duration::from_secs(60);
        let near = origin + Duration::from_secs(1);
        let c = Arc::new(Coordinator::new(1));
        let heap_min = Arc::new(Mutex::new(far)); // the timers mutex stand-in
        let keeper = {
            let (c, heap_min) = (c.clone(), heap_min.clone());
            thread::spawn(move || {
                let armed = {
                    let g = heap_min.lock().unwrap();
                    assert!(c.try_arm_timer(0, *g));
                    *g
                };
                if armed == far {
                    let r = c.park(0, Some(armed), || false);
                    assert_eq!(r, ParkResult::Woken, "re-arm wake lost");
                }
                c.disarm_timer(0);
                assert_eq!(
                    *heap_min.lock().unwrap(),
                    near,
                    "earlier deadline not visible"
                );
            })
        };
        {
            let mut g = heap_min.lock().unwrap();
            *g = near;
            c.timer_inserted(near);
        }
        keeper.join().unwrap();
    });
}

/// An unkept timer is taken up (I5): a timer inserted while no scheduler
/// keeps time either wakes the scheduler that is parking, or that
/// scheduler's re-check sees it and claims the role. A lost wake parks it
/// forever, which loom reports as a deadlock.
#[test]
fn unkept_timer_is_taken_up() {
    loom::model(|| {
        let due = Instant::now() + Duration::from_secs(1);
        let c = Arc::new(Coordinator::new(1));
        let heap_min = Arc::new(Mutex::new(None::<Instant>)); // the timers mutex stand-in
        let idle = {
            let (c, heap_min) = (c.clone(), heap_min.clone());
            thread::spawn(move || {
                loop {
                    // The idle step: claim the role for the earliest timer under
                    // the timers lock, else park with the re-check.
                    let claimed = {
                        let g = heap_min.lock().unwrap();
                        g.is_some_and(|d| c.try_arm_timer(0, d))
                    };
                    if claimed {
                        return; // it keeps time now
                    }
                    let _ = c.park(0, None, || c.timer_unkept());
                }
            })
        };
        {
            let mut g = heap_min.lock().unwrap();
            *g = Some(due);
            c.note_deadline(due);
        }
        idle.join().unwrap();
    });
}

/// Sharded timekeeping (I4): an earlier deadline inserted into one shard
/// while a scheduler claims the role for another shard's timer is armed by
/// the claim's re-read, or the insert sees the armed deadline and wakes the
/// holder. The claim takes no lock: the two sides are a Dekker pair
/// (publish the shard's deadline, then read the armed one; publish the
/// armed deadline, then re-read the shards). Sleeping toward the stale far
/// deadline deadlocks the model.
#[test]
fn sharded_insert_races_the_timekeeper_claim() {
    loom::model(|| {
        let c = Arc::new(Coordinator::with_timer_shards(1, 2));
        let far = c.deadline_nanos(Instant::now() + Duration::from_secs(60));
        let near = far - 1_000_000_000;
        c.note_deadline_at(1, far); // shard 1: a timer pending far away
        let keeper = {
            let c = c.clone();
            thread::spawn(move || {
                let armed = c
                    .keep_time(0)
                    .map(|d| c.deadline_nanos(d))
                    .expect("a timer is pending: the role must be taken");
                if armed != near {
                    let r = c.park(0, Some(c.instant_at(armed)), || false);
                    assert_eq!(r, ParkResult::Woken, "re-arm wake lost");
                }
                c.disarm_timer(0);
            })
        };
        // Shard 0's owner (its lock is uncontended here) inserts earlier.
        c.note_deadline_at(0, near);
        keeper.join().unwrap();
    });
}

/// An unkept timer in another shard is taken up (I5): a timer inserted
/// into shard 1 while the only scheduler goes idle either wakes it, or its
/// claim or park re-check sees the timer. A lost wake parks it forever.
#[test]
fn unkept_timer_in_another_shard_is_taken_up() {
    loom::model(|| {
        let c = Arc::new(Coordinator::with_timer_shards(1, 2));
        let due = c.deadline_nanos(Instant::now() + Duration::from_secs(1));
        let idle = {
            let c = c.clone();
            thread::spawn(move || {
                loop {
                    if c.keep_time(0).is_some() {
                        return; // it keeps time now
                    }
                    let _ = c.park(0, None, || c.timer_unkept());
                }
            })
        };
        c.note_deadline_at(1, due);
        idle.join().unwrap();
    });
}

/// A later insert into a shard with an earlier timer pending runs no
/// timekeeper check (`note_deadline_at`); the earlier timer's insert made
/// sure someone keeps time, so an idle scheduler still takes the role for
/// it and nothing is stranded (I5).
#[test]
fn a_later_insert_behind_a_pending_timer_strands_nothing() {
    loom::model(|| {
        let c = Arc::new(Coordinator::with_timer_shards(1, 1));
        let first = c.deadline_nanos(Instant::now() + Duration::from_secs(1));
        let idle = {
            let c = c.clone();
            thread::spawn(move || {
                loop {
                    if let Some(d) = c.keep_time(0) {
                        assert_eq!(c.deadline_nanos(d), first, "armed past the earliest timer");
                        return;
                    }
                    let _ = c.park(0, None, || c.timer_unkept());
                }
            })
        };
        c.note_deadline_at(0, first);
        c.note_deadline_at(0, first + 1_000);
        idle.join().unwrap();
    });
}

/// Termination: the verdict flips `done` and `wake_all`s; no consumer
/// parks forever past it.
#[test]
fn termination_no_park_past_done() {
    loom::model(|| {
        let c = Arc::new(Coordinator::new(2));
        let done = Arc::new(AtomicU64::new(0));
        let consumers: Vec<_> = (0..2usize)
            .map(|id| {
                let (c, done) = (c.clone(), done.clone());
                thread::spawn(move || {
                    loop {
                        if done.load(O::SeqCst) == 1 {
                            break;
                        }
                        let _ = c.park(id, None, || done.load(O::SeqCst) == 1);
                    }
                })
            })
            .collect();
        done.store(1, O::SeqCst);
        c.wake_all();
        for h in consumers {
            h.join().unwrap();
        }
    });
}

/// No lost wake for a polling park (I6): producer {publish; wake tail} ∥
/// a consumer parked in a poll that ends only when the wake eventfd is
/// written. A wake that reaches neither the re-check nor the eventfd
/// leaves the poll spinning until loom's branch limit fails the model.
#[test]
fn wake_reaches_a_polling_park() {
    loom::model(|| {
        // SAFETY: plain syscall; the fd is closed at the end of the model.
        let wake_fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK) };
        assert!(wake_fd >= 0);
        let c = Arc::new(Coordinator::new(1));
        let item = Arc::new(AtomicU64::new(0));
        let producer = {
            let (c, item) = (c.clone(), item.clone());
            thread::spawn(move || {
                item.store(1, O::SeqCst);
                c.wake_one_if_idle();
            })
        };
        // The poll: no IO ever comes; it returns (empty) once the eventfd
        // was written, as epoll does.
        let poll = |_: Option<Duration>| loop {
            let mut count = 0u64;
            // SAFETY: an 8-byte read into a live local from our eventfd.
            if unsafe { libc::read(wake_fd, (&raw mut count).cast(), 8) } == 8 {
                return false;
            }
            thread::yield_now();
        };
        loop {
            if item.load(O::SeqCst) == 1
                && item.compare_exchange(1, 0, O::SeqCst, O::SeqCst).is_ok()
            {
                break;
            }
            let _ = c.park_polling(0, None, || item.load(O::SeqCst) == 1, wake_fd, poll);
        }
        producer.join().unwrap();
        // SAFETY: our own eventfd, no longer used.
        unsafe { libc::close(wake_fd) };
    });
}
