//! A stack overflow inside an actor ends that actor alone where that is
//! sound: its monitors, links and joiner see `DownReason::StackOverflow`,
//! its supervisor restarts it, and the rest of the runtime keeps serving.
//! A `smarm::Mutex` it held goes to the next waiter, poisoned. Where
//! ending it alone is not sound (inside a runtime call, a `NoPreempt`
//! section), or with containment turned off, the process aborts
//! with a message naming the actor. Each case runs in a child process (the
//! test binary re-executes itself), so an abort fails only that check.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::DownReason;
use smarm::runtime::{self, Config};
use smarm::supervisor::{self, ChildSpec, Strategy, SupFlags};
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

const CHILD_ENV: &str = "SMARM_TEST_OVERFLOW_CHILD";

#[inline(never)]
#[allow(unconditional_recursion)] // the point: recurse until the guard page
fn recurse(depth: u64, sink: &mut [u8; 512]) -> u64 {
    let mut local = [0u8; 512];
    local[(depth % 512) as usize] = depth as u8;
    sink[0] = sink[0].wrapping_add(local[3]);
    // Not a tail call: the frame must stay live.
    recurse(depth + 1, &mut local) + u64::from(std::hint::black_box(local[7]))
}

fn overflow() {
    let mut sink = [0u8; 512];
    let _ = recurse(0, &mut sink);
}

/// In the child: run `body`; in the parent: re-run this test in a child
/// process and return its output.
fn in_child(test: &str, body: impl FnOnce()) -> Option<(std::process::ExitStatus, String, String)> {
    if std::env::var_os(CHILD_ENV).is_some() {
        body();
        return None;
    }
    let out = support::rerun_in_child(test, CHILD_ENV);
    Some((
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// The value after `key=` on a line of `out`.
fn field<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in the child's output: {out}"))
}

#[test]
fn an_overflowing_actor_is_ended_alone_and_its_monitor_and_joiner_are_told() {
    let name = "an_overflowing_actor_is_ended_alone_and_its_monitor_and_joiner_are_told";
    let Some((status, stdout, stderr)) = in_child(name, || {
        for threads in [1, 2, 4] {
            runtime::init(Config::exact(threads)).run(|| {
                // A sibling that keeps beating throughout.
                let (stop_tx, stop_rx) = smarm::channel::<()>();
                let (beats_tx, beats_rx) = smarm::channel::<u32>();
                let beater = smarm::spawn(move || {
                    let mut beats = 0u32;
                    while stop_rx.try_recv().unwrap().is_none() {
                        smarm::sleep(Duration::from_millis(1));
                        beats += 1;
                    }
                    beats_tx.send(beats).unwrap();
                });
                for round in 0..10 {
                    let (h, m) = smarm::Builder::new()
                        .name("parser")
                        .spawn_monitor(overflow)
                        .unwrap();
                    if round == 0 {
                        println!("CHILD_PID={}", h.pid());
                    }
                    let down = m.rx.recv().unwrap();
                    assert_eq!(down.reason, DownReason::StackOverflow);
                    let err = h.join().unwrap_err();
                    assert_eq!(err.reason(), DownReason::StackOverflow);
                    assert_eq!(err.to_string(), "the actor overflowed its stack");
                }
                stop_tx.send(()).unwrap();
                beater.join().unwrap();
                assert!(beats_rx.recv().unwrap() > 0, "the sibling kept beating");
                // And the runtime still spawns, runs and ends normally.
                let ok = smarm::spawn(|| assert_eq!(2 + 2, 4));
                ok.join().unwrap();
            });
        }
        println!("SURVIVED=yes");
    }) else {
        return;
    };
    assert!(status.success(), "the process died: {status:?}\n{stderr}");
    assert_eq!(field(&stdout, "SURVIVED"), "yes");
    let pid = field(&stdout, "CHILD_PID");
    let expected = format!("smarm: stack overflow in actor {pid}; ending it");
    assert!(
        stderr.contains(&expected),
        "stderr lacks {expected:?}: {stderr}"
    );
}

#[test]
fn a_supervisor_restarts_an_overflowing_child_while_its_siblings_keep_serving() {
    let name = "a_supervisor_restarts_an_overflowing_child_while_its_siblings_keep_serving";
    let Some((status, stdout, stderr)) = in_child(name, || {
        runtime::init(Config::exact(2)).run(|| {
            let (starts_tx, starts_rx) = smarm::channel::<u32>();
            type Request = (u32, smarm::Sender<u32>);
            let (echo_tx, echo_rx) = smarm::channel::<smarm::Sender<Request>>();
            let attempts = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
            let parser = {
                let attempts = attempts.clone();
                ChildSpec::actor("parser", move || {
                    let n = attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    starts_tx.send(n).unwrap();
                    if n < 3 {
                        overflow(); // hostile input, three times
                    }
                    smarm::sleep(Duration::from_secs(3600));
                })
            };
            let echo = ChildSpec::actor("echo", move || {
                let (tx, rx) = smarm::channel::<Request>();
                echo_tx.send(tx).unwrap();
                // Serve: each request is answered with itself + 1.
                while let Ok((v, reply)) = rx.recv() {
                    let _ = reply.send(v + 1);
                }
            });
            let sup = supervisor::start(
                SupFlags::new(Strategy::OneForOne).intensity(5, Duration::from_secs(10)),
                vec![echo, parser],
            )
            .unwrap();
            let echo = echo_rx.recv().unwrap();
            let (reply_tx, replies) = smarm::channel::<u32>();
            let mut served = 0;
            let mut starts = Vec::new();
            // Requests interleaved with the parser's overflows and restarts.
            while starts.len() < 4 {
                echo.send((served, reply_tx.clone())).unwrap();
                assert_eq!(replies.recv().unwrap(), served + 1);
                served += 1;
                if let Some(n) = starts_rx.try_recv().unwrap() {
                    starts.push(n);
                }
            }
            assert_eq!(starts, [0, 1, 2, 3], "restarted after each overflow");
            assert!(
                sup.which_children()
                    .unwrap()
                    .iter()
                    .all(|k| k.pid.is_some()),
                "both children up"
            );
            assert!(
                echo_rx.try_recv().unwrap().is_none(),
                "the echo child was never restarted"
            );
            sup.shutdown().unwrap();
            println!("SERVED=yes");
        });
    }) else {
        return;
    };
    assert!(status.success(), "the process died: {status:?}\n{stderr}");
    assert_eq!(field(&stdout, "SERVED"), "yes");
    assert_eq!(
        stderr.matches("; ending it").count(),
        3,
        "three contained overflows: {stderr}"
    );
}

/// Where ending the actor alone is not sound, or containment is off, the
/// process aborts, with the message.
fn assert_aborted_naming_the_actor(status: std::process::ExitStatus, stdout: &str, stderr: &str) {
    assert_eq!(
        status.signal(),
        Some(libc::SIGABRT),
        "aborted, not a bare SIGSEGV or a survival: {status:?}\n{stderr}"
    );
    let pid = field(stdout, "CHILD_PID");
    let expected = format!("smarm: stack overflow in actor {pid}; raise");
    assert!(
        stderr.contains(&expected),
        "stderr lacks {expected:?}: {stderr}"
    );
    assert!(stderr.contains("aborting"), "{stderr}");
}

/// Run `body` in an actor of a runtime with `config`, in a child process,
/// and check that its overflow aborted the process naming the actor.
fn assert_overflow_aborts(test: &str, config: Config, body: fn()) {
    let Some((status, stdout, stderr)) = in_child(test, move || {
        runtime::init(config).run(move || {
            let h = smarm::spawn(body);
            println!("CHILD_PID={}", h.pid());
            let _ = h.join();
        });
        unreachable!("the overflow aborts the process");
    }) else {
        return;
    };
    assert_aborted_naming_the_actor(status, &stdout, &stderr);
}

#[test]
fn an_overflow_inside_a_no_preempt_section_aborts() {
    assert_overflow_aborts(
        "an_overflow_inside_a_no_preempt_section_aborts",
        Config::exact(2),
        || {
            let _np = smarm::NoPreempt::new();
            overflow();
        },
    );
}

#[test]
fn a_smarm_mutex_held_by_an_overflowing_actor_goes_to_the_next_waiter_poisoned() {
    let name = "a_smarm_mutex_held_by_an_overflowing_actor_goes_to_the_next_waiter_poisoned";
    let Some((status, stdout, stderr)) = in_child(name, || {
        for threads in [1, 2] {
            runtime::init(Config::exact(threads)).run(|| {
                let shared = smarm::Mutex::new((0u32, 0u32));
                let (locked_tx, locked) = smarm::channel::<()>();
                let holder = {
                    let shared = shared.clone();
                    smarm::spawn(move || {
                        let mut pair = shared.lock().unwrap();
                        pair.0 = 1; // half an update...
                        locked_tx.send(()).unwrap();
                        smarm::sleep(Duration::from_millis(20)); // the waiter queues
                        overflow();
                        pair.1 = 1; // ...never finished
                    })
                };
                locked.recv().unwrap();
                assert!(!shared.is_poisoned());
                let waiter = {
                    let shared = shared.clone();
                    smarm::spawn(move || {
                        let pair = shared.lock().unwrap(); // queued behind the holder
                        assert_eq!(*pair, (1, 0), "the half-updated value");
                    })
                };
                assert_eq!(
                    holder.join().unwrap_err().reason(),
                    DownReason::StackOverflow
                );
                waiter.join().unwrap();
                assert!(shared.is_poisoned());
                shared.clear_poison();
                assert!(!shared.is_poisoned());
                drop(shared.lock().unwrap()); // free again
            });
        }
        println!("SURVIVED=yes");
    }) else {
        return;
    };
    assert!(status.success(), "the process died: {status:?}\n{stderr}");
    assert_eq!(field(&stdout, "SURVIVED"), "yes");
}

#[test]
fn with_containment_off_an_overflow_aborts() {
    assert_overflow_aborts(
        "with_containment_off_an_overflow_aborts",
        Config::exact(2).contain_stack_overflow(false),
        overflow,
    );
}
