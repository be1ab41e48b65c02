//! Introspection: per-actor coherence, the spawn forest, registry extras.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::{ActorState, Addressable, Name, WaitingOn, actor_info, channel, snapshot, tree};
use std::time::Duration;
use support::{parked_on, run_with};

#[test]
fn a_parked_actor_reads_parked_and_a_joined_pid_is_gone() {
    run_with(2, || {
        let (gate_tx, gate_rx) = channel::<()>();
        let worker = smarm::spawn(move || gate_rx.recv().unwrap());
        smarm::sleep(Duration::from_millis(5));
        let info = actor_info(worker.pid()).unwrap();
        assert_eq!(info.state, ActorState::Parked);
        assert_eq!(info.supervisor, smarm::self_pid());
        let me = actor_info(smarm::self_pid()).unwrap();
        assert_eq!(me.state, ActorState::Running);
        gate_tx.send(()).unwrap();
        let pid = worker.pid();
        smarm::sleep(Duration::from_millis(5));
        assert_eq!(
            actor_info(pid).unwrap().state,
            ActorState::Done,
            "finished, handle still held"
        );
        worker.join().unwrap();
        assert!(actor_info(pid).is_none());
    });
}

#[test]
fn a_parked_actor_says_what_it_waits_on() {
    run_with(2, || {
        let (gate_tx, gate_rx) = channel::<()>();
        let receiver = smarm::spawn(move || gate_rx.recv().unwrap());
        assert_eq!(parked_on(receiver.pid()), Some(WaitingOn::Message));

        let lock = std::sync::Arc::new(smarm::Mutex::new(()));
        let held = lock.lock();
        let contender = {
            let lock = lock.clone();
            smarm::spawn(move || drop(lock.lock()))
        };
        assert_eq!(parked_on(contender.pid()), Some(WaitingOn::Lock));

        let sleeper = smarm::spawn(|| smarm::sleep(Duration::from_secs(60)));
        assert_eq!(parked_on(sleeper.pid()), Some(WaitingOn::Timer));
        let sleeper_pid = sleeper.pid();
        let joiner = smarm::spawn(move || drop(sleeper.join()));
        assert_eq!(parked_on(joiner.pid()), Some(WaitingOn::Join));

        let (_keep, never) = channel::<()>();
        let (_keep2, never2) = channel::<()>();
        let selector = smarm::spawn(move || {
            smarm::select(&[&never, &never2]);
        });
        assert_eq!(parked_on(selector.pid()), Some(WaitingOn::Select));

        let (shot_out, shot_in) = channel();
        let awaiting = smarm::spawn(move || {
            let (shot_tx, shot_rx) = smarm::channel::oneshot::<()>();
            assert!(shot_out.send(shot_tx).is_ok());
            shot_rx.recv_timeout(Duration::from_secs(60)).unwrap();
        });
        let shot_tx = shot_in.recv().unwrap();
        assert_eq!(parked_on(awaiting.pid()), Some(WaitingOn::Reply));

        let (mut ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let reader = smarm::spawn(move || {
            use std::os::fd::AsRawFd;
            smarm::io::wait_readable(theirs.as_raw_fd()).unwrap();
        });
        assert_eq!(parked_on(reader.pid()), Some(WaitingOn::Fd));

        let (pool_gate_tx, pool_gate) = std::sync::mpsc::channel::<()>();
        let pooled =
            smarm::spawn(move || smarm::io::block_on_io(move || pool_gate.recv()).unwrap());
        assert_eq!(parked_on(pooled.pid()), Some(WaitingOn::BlockingJob));

        let text = snapshot().to_string();
        assert!(text.contains("Parked on Join"), "{text}");

        // Let every one of them go.
        gate_tx.send(()).unwrap();
        drop(held);
        smarm::request_stop(sleeper_pid);
        smarm::request_stop(selector.pid());
        shot_tx.send(()).unwrap();
        std::io::Write::write_all(&mut ours, b"x").unwrap();
        pool_gate_tx.send(()).unwrap();
        reader.join().unwrap();
        pooled.join().unwrap();
        receiver.join().unwrap();
        contender.join().unwrap();
        joiner.join().unwrap();
        let _ = selector.join();
        awaiting.join().unwrap();
    });
}

#[test]
fn the_tree_re_roots_orphans() {
    run_with(2, || {
        let (gate_tx, gate_rx) = channel::<()>();
        let (child_tx, child_rx) = channel::<smarm::Pid>();
        let parent = smarm::spawn(move || {
            let child = smarm::spawn(move || gate_rx.recv().unwrap());
            child_tx.send(child.pid()).unwrap();
            // Returning drops the handle: the child runs on, detached.
        });
        let child = child_rx.recv().unwrap();
        parent.join().unwrap();
        let t = tree();
        let root = t
            .roots
            .iter()
            .find(|n| n.info.pid == smarm::self_pid())
            .unwrap();
        assert!(!root.orphaned);
        let orphan = t
            .roots
            .iter()
            .find(|n| n.info.pid == child)
            .expect("the child is re-rooted");
        assert!(orphan.orphaned, "its parent has finished");
        let text = t.to_string();
        assert!(
            text.contains("(orphan)") && text.contains(&child.to_string()),
            "{text}"
        );
        gate_tx.send(()).unwrap();
    });
}

#[test]
fn mailbox_depth_and_names_come_from_the_registry() {
    struct Slow;
    impl Addressable for Slow {
        type Msg = u32;
    }
    const SLOW: Name<u32> = Name::new("slow");
    run_with(2, || {
        let (gate_tx, gate_rx) = channel::<()>();
        let (done_tx, done_rx) = channel::<()>();
        let slow = smarm::spawn_addr::<Slow>(move |rx| {
            gate_rx.recv().unwrap(); // does not drain its inbox yet
            while rx.try_recv().unwrap().is_some() {}
            done_tx.send(()).unwrap();
            gate_rx.recv().unwrap(); // stays alive to be inspected
        });
        for i in 0..3 {
            smarm::send_to(slow, i).unwrap();
        }
        let info = actor_info(slow).unwrap();
        assert_eq!(info.mailbox_depth, 3);
        assert_eq!(info.messages_received, 0);
        let (tx, _rx) = channel::<u32>();
        smarm::register(SLOW, tx).unwrap();
        let me = actor_info(smarm::self_pid()).unwrap();
        assert_eq!(me.names, vec!["slow"]);
        let snap = snapshot();
        assert!(
            snap.actors
                .iter()
                .any(|a| a.pid == slow.erase() && a.mailbox_depth == 3)
        );
        assert!(snap.to_string().contains("[slow]"));
        gate_tx.send(()).unwrap();
        done_rx.recv().unwrap(); // it has drained its inbox
        let info = actor_info(slow).unwrap();
        assert_eq!((info.mailbox_depth, info.messages_received), (0, 3));
        gate_tx.send(()).unwrap();
    });
}

#[test]
fn links_monitors_and_trapping_are_counted() {
    run_with(2, || {
        let exits = smarm::trap_exit(true).unwrap();
        let (gate_tx, gate_rx) = channel::<()>();
        let child = smarm::spawn_link(move || gate_rx.recv().unwrap());
        let _m1 = smarm::monitor(child.pid());
        let _m2 = smarm::monitor(child.pid());
        let info = actor_info(child.pid()).unwrap();
        assert_eq!((info.links, info.monitors, info.trap_exit), (1, 2, false));
        let me = actor_info(smarm::self_pid()).unwrap();
        assert_eq!((me.links, me.trap_exit), (1, true));
        gate_tx.send(()).unwrap();
        exits.recv().unwrap();
        child.join().unwrap();
    });
}

#[test]
fn scheduler_stats_count_resumes_parks_and_steals() {
    run_with(2, || {
        let before = snapshot().schedulers;
        // Two schedulers, and the spares provided for, none running.
        assert_eq!(before.iter().filter(|s| !s.spare).count(), 2);
        assert!(before.iter().all(|s| s.active != s.spare));
        // Work for both schedulers, with idle gaps so they park.
        for _ in 0..20 {
            let hs: Vec<_> = (0..50).map(|_| smarm::spawn(smarm::yield_now)).collect();
            for h in hs {
                h.join().unwrap();
            }
            smarm::sleep(Duration::from_millis(1));
        }
        let after = snapshot();
        let run_before: u64 = before.iter().map(|s| s.actors_run).sum();
        let run_after: u64 = after.schedulers.iter().map(|s| s.actors_run).sum();
        assert!(
            run_after >= run_before + 2_000,
            "1,000 actors resumed twice each"
        );
        assert!(
            after.schedulers.iter().map(|s| s.parks).sum::<u64>() > 0,
            "someone parked"
        );
        for s in &after.schedulers {
            assert!(s.wakes <= s.parks);
        }
        assert!(after.to_string().contains("scheduler 0:"));
    });
}

/// `budget_cycles` is `Some` only with the `budget-accounting` feature
/// (`.ci/run` runs this file both ways), and then it follows run time: a
/// 20 ms spinner has run far longer than an actor that parked at once.
#[test]
fn budget_cycles_follow_run_time_with_the_feature() {
    run_with(2, || {
        let (gate_tx, gate_rx) = channel::<()>();
        let (gate2_tx, gate2_rx) = channel::<()>();
        let idle = smarm::spawn(move || gate_rx.recv().unwrap());
        let busy = smarm::spawn(move || {
            let t0 = std::time::Instant::now();
            while t0.elapsed() < Duration::from_millis(20) {
                std::hint::spin_loop();
            }
            gate2_rx.recv().unwrap();
        });
        smarm::sleep(Duration::from_millis(100)); // both parked by now
        let idle_budget = actor_info(idle.pid()).unwrap().budget_cycles;
        let busy_budget = actor_info(busy.pid()).unwrap().budget_cycles;
        if cfg!(feature = "budget-accounting") {
            let (i, b) = (idle_budget.unwrap(), busy_budget.unwrap());
            assert!(b > 100 * i.max(1), "busy {b} ticks vs idle {i}");
        } else {
            assert_eq!((idle_budget, busy_budget), (None, None));
        }
        gate_tx.send(()).unwrap();
        gate2_tx.send(()).unwrap();
        idle.join().unwrap();
        busy.join().unwrap();
    });
}

/// A new actor in a reused slot has used none of its stack until its
/// first switch-out: it does not report the previous tenant's depth.
#[test]
fn a_new_actor_in_a_reused_slot_reports_no_stack_in_use() {
    #[inline(never)]
    fn deep(levels: u32) -> u8 {
        let frame = std::hint::black_box([levels as u8; 4096]);
        if levels == 0 {
            smarm::sleep(Duration::from_millis(1)); // switch out this deep
            frame[17]
        } else {
            deep(levels - 1).wrapping_add(frame[levels as usize])
        }
    }
    // One scheduler: a spawned actor does not run until the root parks.
    run_with(1, || {
        let old = smarm::spawn(|| {
            deep(8);
        });
        let old_index = old.pid().index();
        old.join().unwrap();
        let fresh: Vec<_> = (0..64).map(|_| smarm::spawn(|| {})).collect();
        assert!(
            fresh.iter().any(|h| h.pid().index() == old_index),
            "no new actor took the finished actor's slot"
        );
        for h in &fresh {
            let bytes = actor_info(h.pid()).unwrap().stack_bytes;
            if cfg!(feature = "budget-accounting") {
                assert_eq!(bytes, Some(0), "{:?} has not run yet", h.pid());
            } else {
                assert_eq!(bytes, None);
            }
        }
        for h in fresh {
            h.join().unwrap();
        }
    });
}

/// `stack_bytes` is the stack in use at the last switch out, with the
/// `budget-accounting` feature (`None` without it): an actor parked deep
/// in a call chain shows its frames, a shallow one does not.
#[test]
fn stack_bytes_follow_stack_depth_with_the_feature() {
    /// Park `levels` frames of 4 KiB each deep.
    #[inline(never)]
    fn deep(levels: u32, gate: &smarm::Receiver<()>) -> u8 {
        let frame = std::hint::black_box([levels as u8; 4096]);
        if levels == 0 {
            gate.recv().unwrap();
            frame[17]
        } else {
            deep(levels - 1, gate).wrapping_add(frame[levels as usize])
        }
    }
    run_with(2, || {
        let (deep_tx, deep_rx) = channel::<()>();
        let (shallow_tx, shallow_rx) = channel::<()>();
        let deep_actor = smarm::spawn(move || {
            deep(8, &deep_rx);
        });
        let shallow = smarm::spawn(move || shallow_rx.recv().unwrap());
        smarm::sleep(Duration::from_millis(50)); // both parked by now
        let deep_bytes = actor_info(deep_actor.pid()).unwrap().stack_bytes;
        let shallow_bytes = actor_info(shallow.pid()).unwrap().stack_bytes;
        if cfg!(feature = "budget-accounting") {
            let (d, s) = (deep_bytes.unwrap(), shallow_bytes.unwrap());
            assert!(d >= 8 * 4096, "deep actor: {d} bytes");
            assert!(s < 16 * 1024 && s > 0, "shallow actor: {s} bytes");
        } else {
            assert_eq!((deep_bytes, shallow_bytes), (None, None));
        }
        deep_tx.send(()).unwrap();
        shallow_tx.send(()).unwrap();
        deep_actor.join().unwrap();
        shallow.join().unwrap();
    });
}
