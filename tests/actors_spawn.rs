//! Spawning and joining: many actors, spawn trees, capacity, re-running.
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::SpawnError;
use smarm::runtime::{self, Config};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use support::{THREADS, run_with};

#[test]
fn hundred_thousand_actors_all_joined() {
    for threads in THREADS {
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        run_with(threads, move || {
            let handles: Vec<_> = (0..100_000)
                .map(|_| {
                    let r = r.clone();
                    smarm::spawn(move || {
                        r.fetch_add(1, Ordering::Relaxed);
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
            assert_eq!(
                r.load(Ordering::Relaxed),
                100_000,
                "join returned before the actor ran"
            );
        });
        assert_eq!(ran.load(Ordering::Relaxed), 100_000, "threads={threads}");
    }
}

/// Sum 0..leaves with a 10-ary spawn tree; each node joins its children.
fn tree(lo: u64, n: u64, sum: Arc<AtomicU64>) {
    if n == 1 {
        sum.fetch_add(lo, Ordering::Relaxed);
        return;
    }
    let step = n / 10;
    let children: Vec<_> = (0..10)
        .map(|i| {
            let sum = sum.clone();
            smarm::spawn(move || tree(lo + i * step, step, sum))
        })
        .collect();
    for c in children {
        c.join().unwrap();
    }
}

#[test]
fn hundred_thousand_leaf_spawn_tree_sums_correctly() {
    for threads in THREADS {
        let sum = Arc::new(AtomicU64::new(0));
        let s = sum.clone();
        run_with(threads, move || tree(0, 100_000, s));
        assert_eq!(
            sum.load(Ordering::Relaxed),
            99_999 * 100_000 / 2,
            "threads={threads}"
        );
    }
}

#[test]
fn try_spawn_past_max_actors_errors_and_runtime_keeps_working() {
    let rt = runtime::init(Config::exact(2).max_actors(64));
    rt.run(|| {
        // The root holds one slot; 63 sleepers fill the rest.
        let sleepers: Vec<_> = (0..63)
            .map(|_| smarm::spawn(|| smarm::sleep(Duration::from_millis(50))))
            .collect();
        let err = smarm::try_spawn(|| {}).unwrap_err();
        assert_eq!(err, SpawnError::AtCapacity { max_actors: 64 });
        assert!(
            err.to_string().contains("max_actors = 64"),
            "message names the limit: {err}"
        );
        for s in sleepers {
            s.join().unwrap();
        }
        // Joined handles free their slots: spawning works again.
        let again: Vec<_> = (0..63).map(|_| smarm::try_spawn(|| {}).unwrap()).collect();
        for h in again {
            h.join().unwrap();
        }
    });
}

#[test]
#[should_panic(expected = "max_actors = 1")]
fn spawn_past_capacity_panics_with_the_limit() {
    runtime::init(Config::exact(1).max_actors(1)).run(|| {
        let _ = smarm::spawn(|| {});
    });
}

#[test]
fn dropped_handle_detaches_and_the_actor_still_runs() {
    for threads in THREADS {
        let done = Arc::new(AtomicUsize::new(0));
        let d = done.clone();
        run_with(threads, move || {
            for _ in 0..100 {
                let d = d.clone();
                drop(smarm::spawn(move || {
                    smarm::sleep(Duration::from_millis(1));
                    d.fetch_add(1, Ordering::Relaxed);
                }));
            }
        });
        assert_eq!(
            done.load(Ordering::Relaxed),
            100,
            "run returned before detached actors finished"
        );
    }
}

#[test]
fn pids_are_distinct_and_match_handles() {
    run_with(2, || {
        let me = smarm::self_pid();
        let (tx, rx) = std::sync::mpsc::channel();
        let handles: Vec<_> = (0..50)
            .map(|_| {
                let tx = tx.clone();
                smarm::spawn(move || tx.send(smarm::self_pid()).unwrap())
            })
            .collect();
        let pids: Vec<_> = handles.iter().map(|h| h.pid()).collect();
        for h in handles {
            h.join().unwrap();
        }
        let mut seen: Vec<_> = (0..50).map(|_| rx.recv().unwrap()).collect();
        seen.sort();
        let mut expected = pids.clone();
        expected.sort();
        assert_eq!(
            seen, expected,
            "self_pid inside each actor equals its handle's pid"
        );
        assert!(!pids.contains(&me));
    });
}

#[test]
fn a_recycled_slot_gets_a_new_generation() {
    run_with(1, || {
        let first = smarm::spawn(|| {});
        let p1 = first.pid();
        first.join().unwrap();
        let second = smarm::spawn(|| {});
        let p2 = second.pid();
        second.join().unwrap();
        assert_eq!(p1.index(), p2.index(), "LIFO free list reuses the slot");
        assert_ne!(p1, p2, "but the pid differs by generation");
        // A stop request to the old pid must not touch the new tenant.
        let third = smarm::spawn(|| smarm::sleep(Duration::from_millis(20)));
        assert_eq!(third.pid().index(), p1.index());
        smarm::request_stop(p1);
        third.join().unwrap();
    });
}

#[test]
fn run_can_be_called_again_and_runtimes_on_threads_do_not_interfere() {
    let rt = runtime::init(Config::exact(2));
    for round in 0..3u64 {
        let total = Arc::new(AtomicU64::new(0));
        let t = total.clone();
        rt.run(move || tree(0, 1_000, t));
        assert_eq!(
            total.load(Ordering::Relaxed),
            999 * 1_000 / 2,
            "round {round}"
        );
    }
    let threads: Vec<_> = (0..4u64)
        .map(|k| {
            std::thread::spawn(move || {
                let total = Arc::new(AtomicU64::new(0));
                let t = total.clone();
                runtime::init(Config::exact(2)).run(move || {
                    tree(0, 10_000, t.clone());
                    smarm::sleep(Duration::from_millis(k));
                });
                total.load(Ordering::Relaxed)
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), 9_999 * 10_000 / 2);
    }
}

#[test]
fn spawn_under_runs_the_child_and_joins() {
    run_with(2, || {
        let me = smarm::self_pid();
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let h = smarm::spawn_under(me, move || {
            smarm::yield_now();
            r.fetch_add(1, Ordering::SeqCst);
        });
        h.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    });
}

#[test]
#[should_panic(expected = "must be called from inside an actor")]
fn spawn_outside_run_panics_with_guidance() {
    let _ = smarm::spawn(|| {});
}

#[test]
#[should_panic(expected = "called from inside an actor")]
fn nested_run_panics_with_guidance() {
    run_with(1, || runtime::init(Config::exact(1)).run(|| {}));
}

#[test]
fn invalid_config_is_an_error_naming_the_limit() {
    let err = runtime::Runtime::new(Config::default().threads(0)).unwrap_err();
    assert!(err.to_string().contains("1..=64"), "{err}");
    let err = runtime::Runtime::new(Config::default().threads(65)).unwrap_err();
    assert!(err.to_string().contains("got 65"), "{err}");
    assert!(runtime::Runtime::new(Config::default().stack_size(1024)).is_err());
    assert!(runtime::Runtime::new(Config::default().max_actors(0)).is_err());
    let err = runtime::Runtime::new(
        Config::default().blocked_after(Some(std::time::Duration::from_micros(10))),
    )
    .unwrap_err();
    assert!(err.to_string().contains("blocked_after"), "{err}");
    assert!(runtime::Runtime::new(Config::default().blocked_after(None)).is_ok());
}

/// Touch a `N`-byte local array, so the frame really is that large.
#[inline(never)]
fn big_frame<const N: usize>() -> usize {
    let mut buf = [0u8; N];
    for (i, b) in buf.iter_mut().enumerate().step_by(4096) {
        *b = i as u8 | 1;
    }
    std::hint::black_box(&mut buf);
    buf.iter().filter(|&&b| b != 0).count()
}

#[test]
fn an_actor_with_a_128_kib_frame_runs_with_the_default_config() {
    for threads in THREADS {
        run_with(threads, || {
            let n = smarm::spawn(|| assert_eq!(big_frame::<{ 128 << 10 }>(), 32));
            n.join().unwrap();
        });
    }
    // And with `smarm::run`'s own defaults.
    smarm::run(|| {
        smarm::spawn(|| assert_eq!(big_frame::<{ 128 << 10 }>(), 32))
            .join()
            .unwrap()
    });
}

#[test]
fn an_actor_with_a_one_mib_frame_runs_with_a_one_mib_builder_stack() {
    // The documented way to give one actor a thread's room.
    smarm::run(|| {
        let deep = smarm::Builder::new()
            .stack_size((1 << 20) + (64 << 10))
            .spawn(|| assert_eq!(big_frame::<{ 1 << 20 }>(), 256))
            .unwrap();
        deep.join().unwrap();
        // The default stack is too small for it: the actor ends alone,
        // reported as an overflow.
        let over = smarm::spawn(|| assert_eq!(big_frame::<{ 1 << 20 }>(), 256));
        assert_eq!(
            over.join().unwrap_err().reason(),
            smarm::DownReason::StackOverflow
        );
    });
}

#[test]
fn builder_stack_size_gives_one_actor_a_larger_stack_than_the_runtimes() {
    // The runtime's stacks are too small for a 1 MiB frame; one actor's is not.
    runtime::init(Config::exact(2).stack_size(64 * 1024)).run(|| {
        let big = smarm::Builder::new()
            .stack_size(4 << 20)
            .spawn(|| assert_eq!(big_frame::<{ 1 << 20 }>(), 256))
            .unwrap();
        big.join().unwrap();
        // Stacks of both sizes are recycled into their own pools.
        for _ in 0..3 {
            let handles: Vec<_> = (0..200)
                .map(|i| {
                    let b = smarm::Builder::new();
                    let b = if i % 2 == 0 { b.stack_size(4 << 20) } else { b };
                    b.spawn(|| {
                        smarm::yield_now();
                    })
                    .unwrap()
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
        }
    });
}

#[test]
#[should_panic(expected = "smarm::Builder::stack_size: 4096 bytes is outside")]
fn builder_stack_size_out_of_range_panics_naming_the_call() {
    let _ = smarm::Builder::new().stack_size(4096);
}

#[test]
fn builder_label_is_shown_by_introspection_and_is_not_a_name() {
    run_with(2, || {
        let (tx, rx) = smarm::channel::<()>();
        let worker = smarm::Builder::new()
            .name("parser")
            .spawn(move || rx.recv().unwrap())
            .unwrap();
        let info = smarm::actor_info(worker.pid()).unwrap();
        assert_eq!(info.label.as_deref(), Some("parser"));
        assert!(info.names.is_empty(), "a label does not register a name");
        let table = smarm::snapshot().to_string();
        assert!(
            table.contains(&format!("{} \"parser\"", worker.pid())),
            "{table}"
        );
        tx.send(()).unwrap();
        worker.join().unwrap();
        // An unlabelled actor in the same slot shows no label.
        let next = smarm::spawn(|| smarm::sleep(Duration::from_millis(5)));
        assert_eq!(smarm::actor_info(next.pid()).unwrap().label, None);
        next.join().unwrap();
    });
}

#[test]
fn builder_spawn_monitor_sees_the_real_reason_of_an_immediate_exit() {
    for threads in THREADS {
        run_with(threads, || {
            for _ in 0..100 {
                let (child, m) = smarm::Builder::new()
                    .spawn_monitor(|| panic!("at once"))
                    .unwrap();
                let down = m.rx.recv().unwrap();
                assert_eq!(
                    (down.pid, down.reason),
                    (child.pid(), smarm::DownReason::Panic)
                );
                assert!(m.rx.recv().is_err(), "exactly one Down");
                assert!(child.join().is_err());
            }
        });
    }
}

#[test]
fn builder_link_and_parent_are_in_place_before_the_actor_runs() {
    run_with(2, || {
        let exits = smarm::trap_exit(true).unwrap();
        let adopter = smarm::spawn(|| smarm::sleep(Duration::from_secs(60)));
        // Linked before it runs: even an actor that fails at once is seen.
        let quick = smarm::Builder::new()
            .link()
            .spawn(|| panic!("linked from the start"))
            .unwrap();
        let exit = exits.recv().unwrap();
        assert_eq!(
            (exit.from, exit.reason),
            (quick.pid(), smarm::DownReason::Panic)
        );
        assert!(quick.join().is_err());
        // The parent is the one given; the link is still to the caller.
        let (go_tx, go_rx) = smarm::channel::<()>();
        let child = smarm::Builder::new()
            .link()
            .parent(adopter.pid())
            .spawn(move || {
                go_rx.recv().unwrap();
                panic!("after the check");
            })
            .unwrap();
        let info = smarm::actor_info(child.pid()).unwrap();
        assert_eq!((info.supervisor, info.links), (adopter.pid(), 1));
        go_tx.send(()).unwrap();
        let exit = exits.recv().unwrap();
        assert_eq!(
            (exit.from, exit.reason),
            (child.pid(), smarm::DownReason::Panic)
        );
        smarm::trap_exit(false);
        smarm::request_stop(adopter.pid());
        adopter.join().unwrap();
        assert!(child.join().is_err());
    });
}

/// `JoinHandle<T>`: an actor's closure returns a value and `join` gives it
/// back, through every spawn function; a panic is still an error.
#[test]
fn join_gives_back_what_the_closure_returned() {
    for threads in THREADS {
        run_with(threads, || {
            // Values from many actors, collected through their handles.
            let handles: Vec<smarm::JoinHandle<u64>> =
                (0..1_000u64).map(|i| smarm::spawn(move || i * i)).collect();
            let sum: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
            assert_eq!(sum, (0..1_000u64).map(|i| i * i).sum::<u64>());
            // Owned, non-Copy values, after blocking calls.
            let h = smarm::spawn(|| {
                smarm::sleep(Duration::from_millis(1));
                vec![String::from("a"), String::from("b")]
            });
            assert_eq!(h.join().unwrap(), ["a", "b"]);
            assert_eq!(smarm::try_spawn(|| 'x').unwrap().join().unwrap(), 'x');
            let me = smarm::self_pid();
            assert_eq!(smarm::spawn_under(me, || 1.5f64).join().unwrap(), 1.5);
            assert_eq!(smarm::spawn_link(|| "linked").join().unwrap(), "linked");
            let built = smarm::Builder::new()
                .name("valued")
                .spawn(|| Some(7u8))
                .unwrap();
            assert_eq!(built.join().unwrap(), Some(7));
            let (monitored, m) = smarm::Builder::new().spawn_monitor(|| 9i32).unwrap();
            assert_eq!(monitored.join().unwrap(), 9);
            assert_eq!(m.rx.recv().unwrap().reason, smarm::DownReason::Exit);
            // A panic instead of a value.
            let err = smarm::spawn(|| -> u32 { panic!("no value") })
                .join()
                .unwrap_err();
            assert_eq!(err.reason(), smarm::DownReason::Panic);
        });
    }
}

/// A stopped actor has no value: `JoinHandle<()>` joins it as `Ok(())`
/// (as before values existed), any other as an error naming the stop.
#[test]
fn a_stopped_actor_joins_as_unit_or_as_an_error_without_a_value() {
    run_with(2, || {
        let unit = smarm::spawn(|| smarm::sleep(Duration::from_secs(60)));
        let valued = smarm::spawn(|| {
            smarm::sleep(Duration::from_secs(60));
            42u32
        });
        smarm::sleep(Duration::from_millis(5));
        smarm::request_stop(unit.pid());
        smarm::request_stop(valued.pid());
        unit.join().unwrap();
        let err = valued.join().unwrap_err();
        assert_eq!(err.reason(), smarm::DownReason::Stopped);
    });
}

/// A value nobody joins is dropped once, when the detached actor ends; a
/// joined value is moved out, not dropped.
#[test]
fn a_detached_actors_value_is_dropped_once_and_a_joined_one_not_at_all() {
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    run_with(2, move || {
        let (tx, rx) = smarm::channel::<()>();
        let detached = {
            let d = d.clone();
            smarm::spawn(move || {
                rx.recv().unwrap();
                Counted(d)
            })
        };
        drop(detached);
        tx.send(()).unwrap();
        let joined = smarm::spawn({
            let d = d.clone();
            move || Counted(d)
        })
        .join()
        .unwrap();
        // The detached one finishes on its own; give it a moment.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while d.load(Ordering::SeqCst) < 1 {
            assert!(
                std::time::Instant::now() < deadline,
                "detached value never dropped"
            );
            smarm::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            d.load(Ordering::SeqCst),
            1,
            "the joined value is still alive"
        );
        drop(joined);
    });
    assert_eq!(drops.load(Ordering::SeqCst), 2);
}

/// `join_timeout`: the handle back while the actor runs, the value once it
/// has finished, its failure as `Failed`; a timed-out join leaves nothing
/// behind (a later join still works, and the exit wakes no stale joiner).
#[test]
fn join_timeout_returns_the_handle_the_value_or_the_failure() {
    run_with(2, || {
        let (go, wait) = smarm::channel::<()>();
        let slow = smarm::spawn(move || {
            wait.recv().unwrap();
            String::from("late")
        });
        let t0 = std::time::Instant::now();
        let slow = match slow.join_timeout(Duration::from_millis(20)) {
            Err(smarm::JoinTimeoutError::Timeout(h)) => h,
            other => panic!("still running, yet: {other:?}"),
        };
        assert!(t0.elapsed() >= Duration::from_millis(20));
        // A zero timeout is a look, not a wait.
        let slow = match slow.join_timeout(Duration::ZERO) {
            Err(smarm::JoinTimeoutError::Timeout(h)) => h,
            other => panic!("still running, yet: {other:?}"),
        };
        go.send(()).unwrap();
        assert_eq!(slow.join_timeout(Duration::from_secs(10)).unwrap(), "late");
        let failed = smarm::spawn(|| -> u8 { panic!("no") })
            .join_timeout(Duration::from_secs(10))
            .unwrap_err();
        assert!(
            matches!(failed, smarm::JoinTimeoutError::Failed(ref e) if e.reason() == smarm::DownReason::Panic)
        );
        assert!(failed.to_string().contains("panicked"));
        // After a timed-out join, a plain join still gets the value.
        let (go, wait) = smarm::channel::<()>();
        let h = smarm::spawn(move || {
            wait.recv().unwrap();
            7u8
        });
        let h = match h.join_timeout(Duration::from_millis(1)) {
            Err(smarm::JoinTimeoutError::Timeout(h)) => h,
            other => panic!("still running, yet: {other:?}"),
        };
        go.send(()).unwrap();
        assert_eq!(h.join().unwrap(), 7);
    });
}

/// Without the accounting allocator a heap limit could never be enforced:
/// asking for one is refused at once, naming the call and the fix, and
/// introspection shows no heap figures.
#[test]
fn a_heap_limit_without_the_accounting_allocator_is_refused() {
    smarm::run(|| {
        let info = smarm::actor_info(smarm::self_pid()).unwrap();
        assert_eq!((info.heap_bytes, info.stack_pages), (None, None));
        assert!(!smarm::heap_accounting());
        let refused = std::panic::catch_unwind(|| smarm::Builder::new().max_heap_size(1 << 20));
        let message = refused.unwrap_err();
        let message = message.downcast_ref::<&str>().unwrap();
        assert!(message.contains("Builder::max_heap_size"), "{message}");
        assert!(message.contains("with_heap_accounting()"), "{message}");
        // No limit is always fine.
        smarm::Builder::new()
            .max_heap_size(0)
            .spawn(|| ())
            .unwrap()
            .join()
            .unwrap();
    });
}
