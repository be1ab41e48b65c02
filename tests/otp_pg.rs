//! Process groups: dispatch, broadcast, dead members.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::channel;
use smarm::pg::{self, Group};
use smarm::registry::SendError;
use std::time::Duration;
use support::{THREADS, run_with};

const POOL: Group<u32> = Group::new("pool");

/// Start `n` members that report `(member index, message)` on `out`, and
/// exit on message 0.
fn members(n: u32, out: &smarm::Sender<(u32, u32)>) -> Vec<smarm::JoinHandle> {
    let (ready_tx, ready_rx) = channel::<()>();
    let hs = (0..n)
        .map(|k| {
            let (out, ready_tx) = (out.clone(), ready_tx.clone());
            smarm::spawn(move || {
                let (tx, rx) = channel::<u32>();
                pg::join(POOL, tx);
                ready_tx.send(()).unwrap();
                while let Ok(m) = rx.recv() {
                    if m == 0 {
                        return;
                    }
                    out.send((k, m)).unwrap();
                }
            })
        })
        .collect();
    for _ in 0..n {
        ready_rx.recv().unwrap();
    }
    hs
}

#[test]
fn dispatch_spreads_load_and_skips_dead_members() {
    for threads in THREADS {
        run_with(threads, || {
            let (out, got) = channel();
            let hs = members(4, &out);
            for m in 1..=40 {
                pg::dispatch(POOL, m).unwrap();
            }
            let mut per = [0u32; 4];
            for _ in 0..40 {
                per[got.recv().unwrap().0 as usize] += 1;
            }
            assert_eq!(per, [10, 10, 10, 10], "round robin over the members");
            // Two members die; dispatch reaches only the live two.
            let mut hs = hs.into_iter();
            for _ in 0..2 {
                let h = hs.next().unwrap();
                let pid = h.pid();
                // Tell exactly this member to stop: broadcast would reach all.
                smarm::request_stop(pid);
                h.join().unwrap();
            }
            assert_eq!(pg::members(POOL).len(), 2, "dead members left the group");
            for m in 1..=10 {
                pg::dispatch(POOL, m).unwrap();
            }
            let mut seen = std::collections::HashSet::new();
            for _ in 0..10 {
                seen.insert(got.recv().unwrap().0);
            }
            assert_eq!(
                seen,
                [2, 3].into_iter().collect(),
                "only live members got work"
            );
            assert_eq!(pg::broadcast(POOL, 0), 2);
            for h in hs {
                h.join().unwrap();
            }
            assert!(matches!(pg::dispatch(POOL, 9), Err(SendError::NoMember(9))));
        });
    }
}

#[test]
fn broadcast_reaches_every_live_member_exactly_once() {
    run_with(2, || {
        let (out, got) = channel();
        let hs = members(25, &out);
        assert_eq!(pg::broadcast(POOL, 7), 25);
        let mut seen: Vec<u32> = (0..25).map(|_| got.recv().unwrap().0).collect();
        seen.sort();
        assert_eq!(seen, (0..25).collect::<Vec<_>>());
        assert_eq!(
            got.recv_timeout(Duration::from_millis(20)),
            Err(smarm::RecvTimeoutError::Timeout)
        );
        assert_eq!(pg::broadcast(POOL, 0), 25);
        for h in hs {
            h.join().unwrap();
        }
    });
}

#[test]
fn ten_thousand_actors_joining_and_dying_leave_the_group_empty() {
    run_with(2, || {
        const CHURN: Group<()> = Group::new("churn");
        let hs: Vec<_> = (0..10_000)
            .map(|_| {
                smarm::spawn(|| {
                    let (tx, _rx) = channel::<()>();
                    pg::join(CHURN, tx);
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert!(pg::members(CHURN).is_empty());
        assert_eq!(pg::broadcast(CHURN, ()), 0);
    });
}

#[test]
fn a_group_named_at_run_time_is_the_constant_with_that_name() {
    run_with(1, || {
        let (tx, rx) = channel::<u32>();
        pg::join(POOL, tx);
        let built: Group<u32> = Group::intern(&format!("po{}", "ol"));
        assert_eq!(built.as_str(), POOL.as_str());
        assert_eq!(pg::members(built), vec![smarm::self_pid()]);
        pg::dispatch(built, 9).unwrap();
        assert_eq!(rx.recv().unwrap(), 9);
        let other: Group<u32> = Group::intern("pool-2");
        assert!(pg::members(other).is_empty(), "another text, another group");
    });
}

#[test]
fn leave_removes_the_caller() {
    run_with(1, || {
        let (tx, _rx) = channel::<u32>();
        pg::join(POOL, tx);
        assert_eq!(pg::members(POOL), vec![smarm::self_pid()]);
        assert!(pg::leave(POOL));
        assert!(!pg::leave(POOL));
        assert!(pg::members(POOL).is_empty());
    });
}

#[test]
fn watchers_hear_joins_leaves_and_exits_as_they_happen() {
    run_with(2, || {
        const WATCHED: Group<u32> = Group::new("watched");
        let (initial, events) = pg::monitor(WATCHED);
        assert!(initial.is_empty());
        let (go_tx, go_rx) = channel::<()>();
        let leaver = smarm::spawn(move || {
            let (tx, _rx) = channel::<u32>();
            pg::join(WATCHED, tx);
            go_rx.recv().unwrap();
            assert!(pg::leave(WATCHED));
        });
        let crasher = smarm::spawn(|| {
            let (tx, _rx) = channel::<u32>();
            pg::join(WATCHED, tx);
            smarm::sleep(Duration::from_millis(5));
            panic!("member fails");
        });
        let mut joined = vec![events.recv().unwrap(), events.recv().unwrap()];
        joined.sort_by_key(|e| format!("{e:?}"));
        let mut expected = vec![
            pg::GroupEvent::Joined(leaver.pid()),
            pg::GroupEvent::Joined(crasher.pid()),
        ];
        expected.sort_by_key(|e| format!("{e:?}"));
        assert_eq!(joined, expected);
        assert_eq!(
            events.recv().unwrap(),
            pg::GroupEvent::Left(crasher.pid()),
            "an exit is reported at once"
        );
        assert_eq!(pg::members(WATCHED), vec![leaver.pid()]);
        go_tx.send(()).unwrap();
        assert_eq!(events.recv().unwrap(), pg::GroupEvent::Left(leaver.pid()));
        leaver.join().unwrap();
        assert!(crasher.join().is_err());
        assert_eq!(
            events.try_recv(),
            Ok(None),
            "the leaver's later exit is not a second Left"
        );
    });
}

#[test]
fn an_exit_hook_runs_once_with_the_reason() {
    run_with(2, || {
        let (tx, rx) = channel::<(smarm::Pid, smarm::DownReason)>();
        let h = smarm::spawn(|| smarm::sleep(Duration::from_millis(5)));
        let pid = h.pid();
        assert!(smarm_core::signal::on_exit(pid, move |p, reason| tx
            .send((p, reason))
            .unwrap()));
        h.join().unwrap();
        assert_eq!(rx.recv().unwrap(), (pid, smarm::DownReason::Exit));
        assert!(rx.recv().is_err(), "run once, then dropped");
        assert!(
            !smarm_core::signal::on_exit(pid, |_, _| {}),
            "a finished pid takes no hook"
        );
    });
}
