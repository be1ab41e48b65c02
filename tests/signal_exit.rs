//! Exit signals (`smarm::exit`, `RuntimeHandle::exit`) by Erlang's rules,
//! and what `run` says of a root ended by a linked actor.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::{DownReason, Ended, Exit, ExitSignal, channel, monitor, spawn_link, trap_exit};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::{CountDrop, THREADS, run_with};

const LONG: Duration = Duration::from_secs(60);

/// Spawn an actor that traps exits and forwards each `Exit` it gets to
/// the returned channel, until it is told to stop by a `Normal` exit from
/// itself.
fn trapper() -> (smarm::JoinHandle, smarm::Receiver<Exit>) {
    let (seen_tx, seen) = channel::<Exit>();
    let (ready_tx, ready) = channel::<()>();
    let handle = smarm::spawn(move || {
        let exits = trap_exit(true).unwrap();
        ready_tx.send(()).unwrap();
        while let Ok(exit) = exits.recv() {
            seen_tx.send(exit).unwrap();
        }
    });
    ready.recv().unwrap();
    (handle, seen)
}

#[test]
fn a_reason_ends_a_non_trapping_actor_with_it_running_its_destructors() {
    for threads in THREADS {
        run_with(threads, || {
            let drops = Arc::new(AtomicUsize::new(0));
            let counted = CountDrop(drops.clone());
            let target = smarm::spawn(move || {
                let _held = counted;
                smarm::sleep(LONG);
            });
            let m = monitor(target.pid());
            smarm::exit(target.pid(), ExitSignal::from("lease lost"));
            let down = m.rx.recv().unwrap();
            assert_eq!(down.reason, DownReason::Custom("lease lost".into()));
            assert_eq!(drops.load(Ordering::SeqCst), 1, "it unwound");
            let err = target.join().unwrap_err();
            assert_eq!(err.reason(), DownReason::Custom("lease lost".into()));
            assert_eq!(
                err.payload.downcast_ref::<Ended>().unwrap().reason,
                down.reason
            );
        });
    }
}

#[test]
fn a_trapping_actor_gets_the_signal_as_an_exit_message_and_goes_on() {
    for threads in THREADS {
        run_with(threads, || {
            let (target, seen) = trapper();
            let me = smarm::self_pid();
            for (signal, reason) in [
                (ExitSignal::from("boom"), DownReason::Custom("boom".into())),
                (ExitSignal::Shutdown, DownReason::Shutdown),
                (ExitSignal::Normal, DownReason::Exit),
            ] {
                smarm::exit(target.pid(), signal);
                let exit = seen.recv_timeout(Duration::from_secs(10)).unwrap();
                assert_eq!((exit.from, exit.reason), (me, reason));
            }
            assert!(smarm::is_alive(target.pid()), "trapped: still running");
            smarm::exit(target.pid(), ExitSignal::Kill);
            assert_eq!(target.join().unwrap_err().reason(), DownReason::Killed);
        });
    }
}

#[test]
fn normal_is_ignored_by_a_non_trapping_actor_but_ends_the_caller_sent_to_itself() {
    run_with(2, || {
        let (go_tx, go) = channel::<()>();
        let target = smarm::spawn(move || go.recv().unwrap());
        smarm::exit(target.pid(), ExitSignal::Normal);
        smarm::sleep(Duration::from_millis(20));
        assert!(smarm::is_alive(target.pid()), "normal does not end it");
        go_tx.send(()).unwrap();
        target.join().unwrap();

        let (done_tx, done) = channel::<&str>();
        let selfish = smarm::spawn(move || {
            smarm::exit(smarm::self_pid(), ExitSignal::Normal);
            done_tx.send("went on").unwrap();
        });
        let m = monitor(selfish.pid());
        assert_eq!(m.rx.recv().unwrap().reason, DownReason::Exit);
        assert!(done.recv().is_err(), "it ended at its own exit call");
    });
}

#[test]
fn kill_cannot_be_trapped_and_links_see_killed_not_kill() {
    for threads in THREADS {
        run_with(threads, || {
            let exits = trap_exit(true).unwrap();
            let drops = Arc::new(AtomicUsize::new(0));
            let counted = CountDrop(drops.clone());
            let target = spawn_link(move || {
                let _held = counted;
                let _own = trap_exit(true).unwrap();
                smarm::sleep(LONG);
            });
            smarm::sleep(Duration::from_millis(5)); // let it trap
            smarm::exit(target.pid(), ExitSignal::Kill);
            let exit = exits.recv().unwrap();
            assert_eq!((exit.from, exit.reason), (target.pid(), DownReason::Killed));
            assert_eq!(drops.load(Ordering::SeqCst), 1, "it unwound");
            // A non-trapping actor linked to a killed one is stopped by
            // the link, naming the kill, and is not killed in turn.
            let (linked_tx, linked) = channel::<smarm::Pid>();
            let middle = smarm::spawn(move || {
                let inner = spawn_link(|| smarm::sleep(LONG));
                linked_tx.send(inner.pid()).unwrap();
                smarm::sleep(LONG);
            });
            let inner = linked.recv().unwrap();
            smarm::exit(inner, ExitSignal::Kill);
            assert_eq!(
                middle.join().unwrap_err().reason(),
                DownReason::linked(inner, DownReason::Killed)
            );
            trap_exit(false);
        });
    }
}

#[test]
fn kill_ends_an_actor_that_set_a_shutdown_aside_to_clean_up() {
    run_with(2, || {
        let (cleaning_tx, cleaning) = channel::<()>();
        let stubborn = smarm::spawn(move || {
            let caught = std::panic::catch_unwind(|| smarm::sleep(LONG));
            if let Err(payload) = caught {
                assert!(smarm::stop::is_stop(&*payload));
                smarm::stop::clear_stop();
                cleaning_tx.send(()).unwrap();
                smarm::sleep(LONG); // a cleanup that never ends
                std::panic::resume_unwind(payload);
            }
        });
        let m = monitor(stubborn.pid());
        smarm::exit(stubborn.pid(), ExitSignal::Shutdown);
        cleaning.recv().unwrap();
        assert!(
            m.rx.recv_timeout(Duration::from_millis(50)).is_err(),
            "still cleaning up"
        );
        smarm::exit(stubborn.pid(), ExitSignal::Kill);
        assert_eq!(m.rx.recv().unwrap().reason, DownReason::Killed);
    });
}

#[test]
fn an_exit_signal_leaves_links_as_they_are() {
    run_with(2, || {
        let exits = trap_exit(true).unwrap();
        let (target, seen) = trapper();
        smarm::link(target.pid());
        smarm::exit(target.pid(), ExitSignal::from("told"));
        assert_eq!(
            seen.recv().unwrap().reason,
            DownReason::Custom("told".into())
        );
        // Still linked: its end reaches this actor.
        smarm::exit(target.pid(), ExitSignal::Kill);
        let exit = exits.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!((exit.from, exit.reason), (target.pid(), DownReason::Killed));
        trap_exit(false);
    });
}

#[test]
fn signals_to_actors_that_are_ending_give_each_exactly_one_down() {
    for threads in THREADS {
        run_with(threads, || {
            for round in 0..300u32 {
                let target = smarm::spawn(move || {
                    for _ in 0..(round % 4) {
                        smarm::yield_now();
                    }
                });
                let m = monitor(target.pid());
                let signal = match round % 3 {
                    0 => ExitSignal::Kill,
                    1 => ExitSignal::Shutdown,
                    _ => ExitSignal::from("late"),
                };
                let expected = match round % 3 {
                    0 => DownReason::Killed,
                    1 => DownReason::Shutdown,
                    _ => DownReason::Custom("late".into()),
                };
                smarm::exit(target.pid(), signal);
                let down = m.rx.recv().unwrap();
                assert!(
                    down.reason == DownReason::Exit || down.reason == expected,
                    "round {round}: {:?}",
                    down.reason
                );
                assert!(m.rx.recv().is_err(), "one Down");
                let _ = target.join();
            }
        });
    }
}

#[test]
fn a_runtime_handle_sends_exit_signals_from_a_plain_thread() {
    let runtime = smarm::runtime::init(smarm::runtime::Config::exact(2));
    let handle = runtime.handle();
    runtime.run(move || {
        let (target, seen) = trapper();
        let pid = target.pid();
        let h = handle.clone();
        std::thread::spawn(move || h.exit(pid, ExitSignal::Shutdown))
            .join()
            .unwrap();
        let exit = seen.recv().unwrap();
        assert_eq!((exit.from, exit.reason), (pid, DownReason::Shutdown));
        let h = handle.clone();
        std::thread::spawn(move || h.exit(pid, ExitSignal::Kill))
            .join()
            .unwrap();
        assert_eq!(target.join().unwrap_err().reason(), DownReason::Killed);
    });
}

#[test]
fn run_names_the_linked_actor_that_ended_its_root_and_why() {
    let caught = std::panic::catch_unwind(|| {
        run_with(2, || {
            let _failing = spawn_link(|| smarm::exit_with("config file missing"));
            smarm::sleep(LONG);
        })
    });
    let payload = caught.unwrap_err();
    let message = payload
        .downcast_ref::<String>()
        .expect("a message, not an opaque payload");
    assert!(
        message
            .starts_with("smarm::run: the root actor was stopped by the exit of linked actor <0."),
        "{message}"
    );
    assert!(
        message.contains("which exited: config file missing"),
        "{message}"
    );
    assert!(message.contains("smarm::trap_exit"), "{message}");
}
