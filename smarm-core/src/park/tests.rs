//! Unit tests of the coordination layer on the real (futex) parker.

#![allow(clippy::disallowed_methods)] // real time: the tests measure the OS clock

use super::coordinator::NO_DEADLINE;
use super::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering as O};
use std::time::{Duration, Instant};

fn wait_for(mut cond: impl FnMut() -> bool, what: &str) {
    let t0 = Instant::now();
    while !cond() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "timed out waiting: {what}"
        );
        std::thread::yield_now();
    }
}

#[test]
fn permit_before_park_returns_immediately() {
    let c = Coordinator::new(1);
    c.wake_all();
    let t0 = Instant::now();
    assert_eq!(c.park(0, None, || false), ParkResult::Woken);
    assert!(
        t0.elapsed() < Duration::from_secs(1),
        "park blocked despite a permit"
    );
}

#[test]
fn submillisecond_deadline_is_honored() {
    let c = Coordinator::new(1);
    let t0 = Instant::now();
    let r = c.park(0, Some(t0 + Duration::from_micros(500)), || false);
    let dt = t0.elapsed();
    assert_eq!(r, ParkResult::TimedOut);
    assert!(dt >= Duration::from_micros(500), "woke early: {dt:?}");
    assert!(dt < Duration::from_millis(50), "overslept: {dt:?}");
}

#[test]
fn recheck_true_aborts_park_and_clears_bit() {
    let c = Coordinator::new(2);
    assert_eq!(c.park(1, None, || true), ParkResult::WorkFound);
    assert_eq!(c.idle_mask(), 0, "bit not cleared after WorkFound");
}

#[test]
fn recheck_observes_own_bit_published() {
    let c = Coordinator::new(2);
    let seen = std::cell::Cell::new(0u64);
    let r = c.park(1, None, || {
        seen.set(c.idle_mask());
        true
    });
    assert_eq!(r, ParkResult::WorkFound);
    assert_eq!(
        seen.get() & 0b10,
        0b10,
        "bit not published before the re-check"
    );
}

#[test]
fn wake_one_wakes_exactly_one_of_n() {
    const N: usize = 4;
    let c = Arc::new(Coordinator::new(N));
    let woken = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..N)
        .map(|id| {
            let (c, woken) = (c.clone(), woken.clone());
            std::thread::spawn(move || {
                assert_eq!(c.park(id, None, || false), ParkResult::Woken);
                woken.fetch_add(1, O::SeqCst);
            })
        })
        .collect();
    wait_for(|| c.idle_mask().count_ones() == N as u32, "all four parked");
    assert!(c.wake_one());
    wait_for(|| woken.load(O::SeqCst) > 0, "wake_one woke somebody");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(woken.load(O::SeqCst), 1, "wake_one woke more than one");
    assert_eq!(c.idle_mask().count_ones(), (N - 1) as u32);
    c.wake_all();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(woken.load(O::SeqCst), N);
    assert_eq!(c.idle_mask(), 0);
}

#[test]
fn wake_one_prefers_highest_bit() {
    let c = Arc::new(Coordinator::new(3));
    let woken_id = Arc::new(AtomicUsize::new(usize::MAX));
    let threads: Vec<_> = (0..3)
        .map(|id| {
            let (c, woken_id) = (c.clone(), woken_id.clone());
            std::thread::spawn(move || {
                if c.park(id, None, || false) == ParkResult::Woken {
                    let _ = woken_id.compare_exchange(usize::MAX, id, O::SeqCst, O::SeqCst);
                }
            })
        })
        .collect();
    wait_for(|| c.idle_mask() == 0b111, "all three parked");
    assert!(c.wake_one());
    wait_for(|| woken_id.load(O::SeqCst) != usize::MAX, "one woke");
    assert_eq!(woken_id.load(O::SeqCst), 2, "the highest bit goes first");
    c.wake_all();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn wake_one_on_empty_mask_is_noop() {
    let c = Coordinator::new(2);
    assert!(!c.wake_one());
    assert_eq!(c.idle_mask(), 0);
}

#[test]
fn timekeeper_arm_is_exclusive_and_snapshot_readable() {
    let c = Coordinator::new(2);
    let d2 = Instant::now() + Duration::from_secs(10);
    let d1 = Instant::now() + Duration::from_secs(1);
    assert_eq!(c.armed_deadline_nanos(), NO_DEADLINE);
    assert!(c.try_arm_timer(0, d2));
    assert!(
        !c.try_arm_timer(1, d1),
        "a second arm must fail while the role is held"
    );
    assert_eq!(c.armed_deadline_nanos(), c.deadline_nanos(d2));
    c.disarm_timer(0);
    assert_eq!(c.armed_deadline_nanos(), NO_DEADLINE);
    assert!(
        c.try_arm_timer(1, d1),
        "the role must be re-takeable after disarm"
    );
    c.disarm_timer(1);
}

#[test]
fn earlier_insert_wakes_timekeeper() {
    let c = Coordinator::new(2);
    let far = Instant::now() + Duration::from_secs(60);
    let near = Instant::now() + Duration::from_millis(1);
    assert!(c.try_arm_timer(0, far));
    c.timer_inserted(near); // holder not parked yet: lands as a permit
    let t0 = Instant::now();
    assert_eq!(
        c.park(0, Some(far), || false),
        ParkResult::Woken,
        "re-arm wake lost"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "slept toward the stale deadline"
    );
    c.disarm_timer(0);
}

#[test]
fn later_insert_does_not_wake_timekeeper() {
    let c = Coordinator::new(2);
    let near = Instant::now() + Duration::from_millis(20);
    let far = Instant::now() + Duration::from_secs(60);
    assert!(c.try_arm_timer(0, near));
    c.timer_inserted(far);
    assert_eq!(
        c.park(0, Some(near), || false),
        ParkResult::TimedOut,
        "spurious wake"
    );
    c.disarm_timer(0);
}

#[test]
#[should_panic(expected = "1..=64")]
fn more_than_64_schedulers_asserts() {
    let _ = Coordinator::new(65);
}

#[test]
fn wake_one_if_idle_noop_on_empty_and_wakes_on_parked() {
    let c = Arc::new(Coordinator::new(1));
    assert!(!c.wake_one_if_idle(), "an empty mask must be a no-op");
    let c2 = c.clone();
    let t = std::thread::spawn(move || assert_eq!(c2.park(0, None, || false), ParkResult::Woken));
    wait_for(|| c.idle_mask() != 0, "parked");
    assert!(c.wake_one_if_idle());
    t.join().unwrap();
}

#[test]
fn deadline_snapshot_min_maintenance_and_due_check() {
    let c = Coordinator::new(1);
    assert!(!c.deadline_due(), "no deadline: never due");
    assert_eq!(c.next_deadline(), None);
    let far = Instant::now() + Duration::from_secs(60);
    let near = Instant::now() + Duration::from_millis(1);
    c.note_deadline(far);
    assert!(!c.deadline_due());
    c.note_deadline(near);
    assert!(c.next_deadline().is_some_and(|d| d <= near));
    c.note_deadline(far); // a later insert must not raise the snapshot
    assert!(c.next_deadline().is_some_and(|d| d <= near));
    std::thread::sleep(Duration::from_millis(2));
    assert!(c.deadline_due(), "a past deadline is due");
    c.refresh_deadline(Some(far));
    assert!(!c.deadline_due(), "refresh re-anchors the snapshot");
    c.refresh_deadline(None);
    assert_eq!(c.next_deadline(), None);
    c.note_deadline(Instant::now() - Duration::from_secs(1));
    assert!(
        c.deadline_due(),
        "a deadline before the origin is always due"
    );
}

#[test]
fn note_deadline_earlier_wakes_timekeeper() {
    let c = Coordinator::new(2);
    let far = Instant::now() + Duration::from_secs(60);
    let near = Instant::now() + Duration::from_millis(1);
    assert!(c.try_arm_timer(0, far));
    c.note_deadline(near);
    assert_eq!(
        c.park(0, Some(far), || false),
        ParkResult::Woken,
        "re-arm wake lost"
    );
    c.disarm_timer(0);
}
