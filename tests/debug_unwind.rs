//! Unwinding through the context switch: a backtrace taken inside an actor
//! walks from the actor's frames through its entry frame into the
//! scheduler that runs it (context's link and call frame information), on
//! a first run, after a park, after a direct handoff, on either of two
//! schedulers, and on the fresh stack of a hibernated actor that woke.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::channel;
use support::run_with;

/// The frames of a backtrace taken here, as the names `Backtrace` prints.
#[inline(never)]
fn frames_here() -> Vec<String> {
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    trace
        .lines()
        .filter_map(|line| line.trim_start().split_once(": ").map(|(_, name)| name))
        .map(str::to_string)
        .collect()
}

/// Assert that `frames` show this file's `frames_here`, then the actor's
/// entry frame, then the scheduler's loop: the unwinder got through the
/// switch.
fn assert_reaches_the_scheduler(frames: &[String], when: &str) {
    let position = |what: &str| frames.iter().position(|f| f.contains(what));
    let here = position("frames_here");
    let entry = position("actor_entry");
    let scheduler = frames
        .iter()
        .rposition(|f| f.contains("smarm_core::scheduler::worker::"));
    assert!(
        matches!((here, entry, scheduler), (Some(h), Some(e), Some(s)) if h < e && e < s),
        "{when}: the backtrace does not run from the actor through actor_entry into \
         the scheduler (frames_here {here:?}, actor_entry {entry:?}, scheduler {scheduler:?}):\n{}",
        frames.join("\n")
    );
}

#[test]
fn a_backtrace_in_an_actor_reaches_the_scheduler_that_runs_it() {
    run_with(2, || {
        assert_reaches_the_scheduler(&frames_here(), "the root's first run");
        let (tx, rx) = channel::<u32>();
        let (back_tx, back_rx) = channel::<u32>();
        let child = smarm::spawn(move || {
            assert_reaches_the_scheduler(&frames_here(), "a child's first run");
            // Ping-pong: each receive parks and is resumed by a direct
            // handoff or by the loop, on either scheduler.
            for i in 0..200 {
                assert_eq!(rx.recv().unwrap(), i);
                assert_reaches_the_scheduler(&frames_here(), "after a park");
                back_tx.send(i).unwrap();
            }
        });
        for i in 0..200 {
            tx.send(i).unwrap();
            assert_eq!(back_rx.recv().unwrap(), i);
            if i % 50 == 0 {
                smarm::yield_now();
                assert_reaches_the_scheduler(&frames_here(), "after a yield");
            }
        }
        child.join().unwrap();
    });
}

#[test]
fn a_hibernated_actor_that_woke_unwinds_into_the_scheduler() {
    run_with(1, || {
        let (tx, rx) = channel::<u32>();
        let (done_tx, done_rx) = channel::<Vec<String>>();
        let sleeper = smarm::spawn(move || {
            smarm::hibernate(rx, move |rx| {
                assert_eq!(rx.recv().unwrap(), 5);
                done_tx.send(frames_here()).unwrap();
            })
        });
        smarm::yield_now();
        tx.send(5).unwrap();
        assert_reaches_the_scheduler(&done_rx.recv().unwrap(), "after a hibernation");
        sleeper.join().unwrap();
    });
}
