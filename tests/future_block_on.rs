//! `smarm::future::block_on`: futures awaited on an actor's stack, woken
//! from any thread, with the wake races, cancellation and panics pinned.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::WaitingOn;
use smarm::future::{Elapsed, block_on, block_on_timeout};
use smarm::runtime::{self, Config};
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use support::{CountDrop, HangGuard, THREADS, parked_on, run_with};

/// What a test future shares with its wakers: each poll leaves a waker
/// in `waker` and counts itself; a firing takes the waker and wakes it.
struct Shared {
    waker: Mutex<Option<Waker>>,
    fired: AtomicUsize,
    polls: AtomicUsize,
}

impl Shared {
    fn new() -> Arc<Shared> {
        Arc::new(Shared {
            waker: Mutex::new(None),
            fired: AtomicUsize::new(0),
            polls: AtomicUsize::new(0),
        })
    }

    /// Fire once, if the future has left a waker since the last firing:
    /// count it and wake that waker.
    fn fire(&self) -> bool {
        let Some(w) = self.waker.lock().unwrap().take() else {
            return false;
        };
        self.fired.fetch_add(1, Ordering::SeqCst);
        w.wake();
        true
    }
}

/// A future ready once `needed` firings have landed.
fn needing(
    shared: &Arc<Shared>,
    needed: usize,
) -> impl Future<Output = usize> + Send + 'static + use<> {
    let shared = shared.clone();
    poll_fn(move |cx| {
        shared.polls.fetch_add(1, Ordering::SeqCst);
        *shared.waker.lock().unwrap() = Some(cx.waker().clone());
        let fired = shared.fired.load(Ordering::SeqCst);
        if fired >= needed {
            Poll::Ready(fired)
        } else {
            Poll::Pending
        }
    })
}

#[test]
fn a_future_woken_from_a_foreign_thread_completes() {
    for threads in THREADS {
        run_with(threads, || {
            let shared = Shared::new();
            let awaiter = {
                let shared = shared.clone();
                smarm::spawn(move || block_on(needing(&shared, 1)))
            };
            assert_eq!(parked_on(awaiter.pid()), Some(WaitingOn::Future));
            let s = shared.clone();
            std::thread::spawn(move || assert!(s.fire(), "the future left its waker"))
                .join()
                .unwrap();
            assert_eq!(awaiter.join().unwrap(), 1);
        });
    }
}

#[test]
fn a_wake_before_poll_returns_pending_is_not_lost() {
    for threads in THREADS {
        run_with(threads, || {
            // Wakes itself inside poll, then says Pending: the wake lands
            // before the actor arms, and must make it poll again.
            let mut polls = 0;
            let out = block_on(poll_fn(move |cx| {
                polls += 1;
                if polls == 3 {
                    return Poll::Ready(polls);
                }
                cx.waker().wake_by_ref();
                Poll::Pending
            }));
            assert_eq!(out, 3);
            // The same from another thread racing the return of Pending,
            // many times over, at random distances.
            let mut rng = support::Rng::new(7);
            for _ in 0..2_000 {
                let spin = rng.below(2_000);
                let mut started = false;
                let done = Arc::new(AtomicBool::new(false));
                let d = done.clone();
                block_on(poll_fn(move |cx| {
                    if d.load(Ordering::Acquire) {
                        return Poll::Ready(());
                    }
                    if !started {
                        started = true;
                        let (w, d) = (cx.waker().clone(), d.clone());
                        std::thread::spawn(move || {
                            for _ in 0..spin {
                                std::hint::spin_loop();
                            }
                            d.store(true, Ordering::Release);
                            w.wake();
                        });
                    }
                    Poll::Pending
                }));
                assert!(done.load(Ordering::Acquire));
            }
        });
    }
}

#[test]
fn a_future_woken_a_thousand_times_completes_and_repeated_wakes_are_harmless() {
    for threads in THREADS {
        let _hang = HangGuard::new(Duration::from_secs(120), "a future needing 1,000 wakes");
        run_with(threads, || {
            // 1,000 wakes in sequence, each from a plain thread once the
            // future has left a fresh waker.
            let shared = Shared::new();
            let awaiter = {
                let shared = shared.clone();
                smarm::spawn(move || block_on(needing(&shared, 1_000)))
            };
            let s = shared.clone();
            std::thread::spawn(move || {
                let mut delivered = 0;
                while delivered < 1_000 {
                    // A future that has not polled again has no waker out.
                    if s.fire() {
                        delivered += 1;
                    } else {
                        std::thread::yield_now();
                    }
                }
            })
            .join()
            .unwrap();
            assert_eq!(awaiter.join().unwrap(), 1_000);
            let polls = shared.polls.load(Ordering::SeqCst);
            assert!(
                polls >= 1_001,
                "polled once per wake and once to start: {polls}"
            );

            // 1,000 wakes of one waker at once, from four threads: the
            // actor is enqueued, polls and finishes, at most a few spare
            // polls, and nothing is left runnable behind it.
            let polls = Arc::new(AtomicUsize::new(0));
            let p = polls.clone();
            let go = Arc::new(AtomicBool::new(false));
            let g = go.clone();
            let mut wakers = Vec::new();
            block_on(poll_fn(move |cx| {
                p.fetch_add(1, Ordering::SeqCst);
                if g.load(Ordering::Acquire) {
                    return Poll::Ready(());
                }
                if wakers.is_empty() {
                    for _ in 0..4 {
                        let (w, g) = (cx.waker().clone(), g.clone());
                        wakers.push(std::thread::spawn(move || {
                            for i in 0..250 {
                                if i == 125 {
                                    g.store(true, Ordering::Release);
                                }
                                w.wake_by_ref();
                            }
                        }));
                    }
                }
                Poll::Pending
            }));
            let polls = polls.load(Ordering::SeqCst);
            assert!(
                (2..=1_001).contains(&polls),
                "{polls} polls for 1,000 wakes"
            );
            assert!(go.load(Ordering::Acquire));
        });
    }
}

/// A future that never completes, counting its drops and planting its
/// waker where the test can wake it later.
struct Planted {
    waker: Arc<Mutex<Option<Waker>>>,
    _drops: CountDrop,
}

impl Future for Planted {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        *self.waker.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[test]
fn a_stopped_awaiter_drops_its_future_once_and_its_waker_then_reaches_nobody() {
    for threads in THREADS {
        // A failed step leaves an awaiter that keeps the run alive (F6).
        let _hang = HangGuard::new(Duration::from_secs(60), "a stale waker's test");
        // Room for the root and one more actor: the second awaiter takes
        // the slot of the first.
        runtime::init(Config::exact(threads).max_actors(2)).run(|| {
            let planted = Arc::new(Mutex::new(None));
            let drops = Arc::new(AtomicUsize::new(0));
            let returned = Arc::new(AtomicBool::new(false));
            let first = {
                let (planted, drops, returned) = (planted.clone(), drops.clone(), returned.clone());
                smarm::spawn(move || {
                    block_on(Planted {
                        waker: planted,
                        _drops: CountDrop(drops),
                    });
                    returned.store(true, Ordering::SeqCst);
                })
            };
            assert_eq!(parked_on(first.pid()), Some(WaitingOn::Future));
            let first_pid = first.pid();
            smarm::request_stop(first_pid);
            first.join().unwrap(); // a stopped actor that returns () joins Ok
            assert!(!returned.load(Ordering::SeqCst), "stopped, not returned");
            assert_eq!(
                drops.load(Ordering::SeqCst),
                1,
                "the future was dropped once"
            );
            let stale = planted
                .lock()
                .unwrap()
                .take()
                .expect("the waker was planted");

            // A later tenant of the same slot, awaiting a future of its own.
            let shared = Shared::new();
            let second = {
                let shared = shared.clone();
                smarm::spawn(move || block_on(needing(&shared, 1)))
            };
            assert_eq!(
                second.pid().index(),
                first_pid.index(),
                "the slot was reused"
            );
            assert_eq!(parked_on(second.pid()), Some(WaitingOn::Future));
            let polls = shared.polls.load(Ordering::SeqCst);
            std::thread::spawn(move || stale.wake()).join().unwrap();
            smarm::sleep(Duration::from_millis(20));
            assert_eq!(
                shared.polls.load(Ordering::SeqCst),
                polls,
                "the stale waker reached the slot's next tenant"
            );
            assert_eq!(parked_on(second.pid()), Some(WaitingOn::Future));
            assert!(shared.fire());
            assert_eq!(second.join().unwrap(), 1);
        });
    }
}

#[test]
fn a_waker_kept_past_a_timed_out_await_does_not_reach_the_next_one() {
    run_with(2, || {
        let planted = Arc::new(Mutex::new(None));
        let drops = Arc::new(AtomicUsize::new(0));
        let r = block_on_timeout(
            Duration::from_millis(10),
            Planted {
                waker: planted.clone(),
                _drops: CountDrop(drops.clone()),
            },
        );
        assert_eq!(
            r,
            Err(Elapsed {
                timeout: Duration::from_millis(10)
            })
        );
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        let stale = planted.lock().unwrap().take().unwrap();
        let waking = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            stale.wake();
        });
        // The next await of the same actor: only its own wake may end it.
        let shared = Shared::new();
        let s = shared.clone();
        let firing = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(40));
            s.fire();
        });
        let t0 = Instant::now();
        assert_eq!(block_on(needing(&shared, 1)), 1);
        assert!(
            t0.elapsed() >= Duration::from_millis(35),
            "ended by the stale wake"
        );
        assert_eq!(
            shared.polls.load(Ordering::SeqCst),
            2,
            "polled at start and on its own wake"
        );
        waking.join().unwrap();
        firing.join().unwrap();
    });
}

#[test]
fn a_panic_in_poll_is_the_actors_panic() {
    run_with(2, || {
        let child = smarm::spawn(|| {
            block_on(poll_fn(|_| -> Poll<()> { panic!("poll failed") }));
        });
        let err = child.join().unwrap_err();
        assert!(err.to_string().contains("poll failed"), "{err}");
        // The runtime goes on: awaits still work.
        assert_eq!(block_on(async { 5 }), 5);
    });
}

#[test]
fn block_on_times_out_after_polling_and_not_before() {
    run_with(2, || {
        let t0 = Instant::now();
        let r = block_on_timeout(Duration::from_millis(30), std::future::pending::<()>());
        assert!(r.is_err());
        assert!(
            t0.elapsed() >= Duration::from_millis(30),
            "gave up early: {:?}",
            t0.elapsed()
        );
        assert_eq!(
            r.unwrap_err().to_string(),
            "smarm: the future did not complete within 30ms (block_on_timeout); it was dropped"
        );
        // Ready before the deadline: its value.
        let shared = Shared::new();
        let s = shared.clone();
        let waking = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            s.fire();
        });
        assert_eq!(
            block_on_timeout(Duration::from_secs(10), needing(&shared, 1)),
            Ok(1)
        );
        waking.join().unwrap();
    });
}

#[test]
fn an_awaiting_actor_parks_only_itself() {
    run_with(1, || {
        // One scheduler: while one actor awaits, another keeps running.
        let shared = Shared::new();
        let awaiter = {
            let shared = shared.clone();
            smarm::spawn(move || block_on(needing(&shared, 1)))
        };
        assert_eq!(parked_on(awaiter.pid()), Some(WaitingOn::Future));
        let ticks = smarm::spawn(|| {
            for _ in 0..20 {
                smarm::sleep(Duration::from_millis(1));
            }
            20
        });
        assert_eq!(ticks.join().unwrap(), 20);
        assert!(smarm::is_alive(awaiter.pid()));
        shared.fire();
        assert_eq!(awaiter.join().unwrap(), 1);
    });
}

#[test]
fn an_actor_awaiting_a_future_is_not_swept_when_the_root_exits() {
    let result = Arc::new(AtomicUsize::new(0));
    let r = result.clone();
    run_with(2, move || {
        let shared = Shared::new();
        let s = shared.clone();
        smarm::spawn(move || {
            let n = block_on(needing(&s, 1));
            r.store(n + 10, Ordering::SeqCst);
        });
        // Woken long after the root is gone, from a plain thread.
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            while !shared.fire() {
                std::thread::sleep(Duration::from_millis(1));
            }
        });
    });
    assert_eq!(
        result.load(Ordering::SeqCst),
        11,
        "the awaiter finished, not stopped"
    );
}

#[test]
fn a_blocking_call_inside_poll_panics_with_what_to_do() {
    run_with(2, || {
        let child = smarm::spawn(|| {
            block_on(async {
                smarm::sleep(Duration::from_millis(1));
            })
        });
        let err = child.join().unwrap_err().to_string();
        assert!(
            err.contains("inside a future polled by smarm::future::block_on"),
            "{err}"
        );
    });
}

#[test]
fn spawning_many_actors_inside_a_poll_does_not_switch() {
    run_with(1, || {
        let handles = block_on(async {
            (0..1_000u32)
                .map(|i| smarm::spawn(move || i))
                .collect::<Vec<_>>()
        });
        let sum: u32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(sum, (0..1_000).sum::<u32>());
    });
}

#[test]
fn block_on_on_a_plain_thread_blocks_that_thread() {
    let shared = Shared::new();
    let s = shared.clone();
    let waking = std::thread::spawn(move || {
        while !s.fire() {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    assert_eq!(block_on(needing(&shared, 1)), 1);
    waking.join().unwrap();
    let r = block_on_timeout(Duration::from_millis(10), std::future::pending::<()>());
    assert!(r.is_err());
}

#[test]
fn select_waits_on_a_future_beside_a_channel() {
    for threads in THREADS {
        run_with(threads, || {
            let (tx, rx) = smarm::channel::<u32>();
            let shared = Shared::new();
            let arm = smarm::future::FutureArm::new(needing(&shared, 1));
            // A message first: the channel arm wins, the future stays.
            tx.send(1).unwrap();
            assert_eq!(smarm::select(&[&rx, &arm]), 0);
            assert_eq!(rx.try_recv().unwrap(), Some(1));
            assert_eq!(arm.take(), None, "not completed yet");
            // Then the future, woken from a plain thread while the actor is
            // parked in select.
            let s = shared.clone();
            let waking = std::thread::spawn(move || {
                while !s.fire() {
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
            assert_eq!(smarm::select(&[&rx, &arm]), 1);
            assert_eq!(arm.take(), Some(1));
            waking.join().unwrap();
            // Many rounds of a wake racing the registration.
            for _ in 0..500 {
                let shared = Shared::new();
                let arm = smarm::future::FutureArm::new(needing(&shared, 1));
                let s = shared.clone();
                let w = std::thread::spawn(move || {
                    while !s.fire() {
                        std::hint::spin_loop();
                    }
                });
                assert_eq!(smarm::select(&[&rx, &arm]), 1);
                assert_eq!(arm.take(), Some(1));
                w.join().unwrap();
            }
            drop(tx);
        });
    }
}
