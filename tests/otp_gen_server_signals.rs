//! gen_server and failure signals: trapped exits reach `handle_exit` and
//! monitors' `Down`s reach `handle_down`, in mailbox order; a trapping
//! server stops when its parent exits; an untrapped link still stops it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

mod support;

use smarm::gen_server::{self, Ctx, Flow, GenServer, GenServerRef, InitError, Reply, StopReason};
use smarm::{Down, DownReason, Exit, MonitorRef, Pid};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{THREADS, run_with};

/// What a [`Watcher`] saw, in the order it saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Cast(u64),
    Exit(Pid, DownReason),
    Down(Pid, DownReason),
    Terminate(StopReason),
}

type Log = Arc<Mutex<Vec<Event>>>;

struct Watcher {
    log: Log,
    monitors: HashMap<u64, MonitorRef>,
}

enum Req {
    Trap,
    Link(Pid),
    Monitor(u64, Pid),
    Demonitor(u64),
    /// A round trip: everything sent before it has been handled.
    Sync,
}

impl Watcher {
    fn note(&self, event: Event) {
        self.log.lock().unwrap().push(event);
    }
}

impl GenServer for Watcher {
    /// The log, and whether to trap exits from `init`.
    type Args = (Log, bool);
    type Call = Req;
    type Reply = bool;
    type Cast = u64;
    type Info = ();

    fn init((log, trap): Self::Args, ctx: &mut Ctx<Self>) -> Result<Self, InitError> {
        if trap {
            assert!(ctx.trap_exits());
        }
        Ok(Watcher {
            log,
            monitors: HashMap::new(),
        })
    }

    fn handle_call(&mut self, req: Req, reply: Reply<bool>, ctx: &mut Ctx<Self>) -> Flow {
        let answer = match req {
            Req::Trap => ctx.trap_exits(),
            Req::Link(pid) => {
                smarm::link(pid);
                true
            }
            Req::Monitor(key, pid) => {
                let m = ctx.monitor(pid);
                assert_eq!(m.target, pid);
                self.monitors.insert(key, m);
                true
            }
            Req::Demonitor(key) => ctx.demonitor(self.monitors[&key]),
            Req::Sync => true,
        };
        reply.reply(answer);
        Flow::Continue
    }

    fn handle_cast(&mut self, n: u64, _: &mut Ctx<Self>) -> Flow {
        self.note(Event::Cast(n));
        Flow::Continue
    }

    fn handle_exit(&mut self, exit: Exit, _: &mut Ctx<Self>) -> Flow {
        self.note(Event::Exit(exit.from, exit.reason));
        Flow::Continue
    }

    fn handle_down(&mut self, down: Down, _: &mut Ctx<Self>) -> Flow {
        self.note(Event::Down(down.pid, down.reason));
        Flow::Continue
    }

    fn terminate(&mut self, reason: &StopReason, _: &mut Ctx<Self>) {
        self.note(Event::Terminate(reason.clone()));
    }
}

/// Run `test` as the root actor at each scheduler thread count.
fn on_each_thread_count(test: fn()) {
    for threads in THREADS {
        run_with(threads, test);
    }
}

fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

fn events(log: &Log) -> Vec<Event> {
    log.lock().unwrap().clone()
}

/// An actor that exits (normally, or by panicking) when told to.
fn gated(panics: bool) -> (smarm::JoinHandle, smarm::Sender<()>) {
    let (go_tx, go) = smarm::channel::<()>();
    let handle = smarm::spawn(move || {
        let _ = go.recv();
        assert!(!panics, "gated actor failed on purpose");
    });
    (handle, go_tx)
}

/// Tell a gated actor to exit and wait until it has: its exit signals
/// are delivered before its joiner wakes.
fn release(actor: smarm::JoinHandle, go: smarm::Sender<()>) -> Pid {
    let pid = actor.pid();
    go.send(()).unwrap();
    let _ = actor.join();
    pid
}

#[test]
fn trapped_exits_reach_handle_exit_in_mailbox_order() {
    on_each_thread_count(|| {
        let log = log();
        let server = gen_server::start::<Watcher>((log.clone(), true)).unwrap();
        assert!(
            !server.call(Req::Trap).unwrap(),
            "already trapping from init"
        );
        let (failing, go_failing) = gated(true);
        let (finishing, go_finishing) = gated(false);
        server.call(Req::Link(failing.pid())).unwrap();
        server.call(Req::Link(finishing.pid())).unwrap();

        server.cast(1).unwrap();
        let failed = release(failing, go_failing);
        server.cast(2).unwrap();
        let finished = release(finishing, go_finishing);
        server.cast(3).unwrap();
        assert!(server.call(Req::Sync).unwrap());

        assert_eq!(
            events(&log),
            vec![
                Event::Cast(1),
                Event::Exit(failed, DownReason::Panic),
                Event::Cast(2),
                // A normal exit reaches a trapping server too.
                Event::Exit(finished, DownReason::Exit),
                Event::Cast(3),
            ]
        );
        assert!(
            server.is_alive(),
            "a trapped failure does not stop the server"
        );
        server.shutdown().unwrap();
        assert_eq!(
            events(&log).last(),
            Some(&Event::Terminate(StopReason::Shutdown))
        );
    });
}

#[test]
fn an_untrapped_linked_failure_stops_the_server_through_terminate() {
    on_each_thread_count(|| {
        let log = log();
        let server = gen_server::start::<Watcher>((log.clone(), false)).unwrap();
        let watch = smarm::monitor(server.pid());
        let (failing, go) = gated(true);
        server.call(Req::Link(failing.pid())).unwrap();
        let failed = release(failing, go);

        let down = watch
            .rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the server should have stopped");
        assert_eq!(down.reason, DownReason::linked(failed, DownReason::Panic));
        assert_eq!(events(&log), vec![Event::Terminate(StopReason::Shutdown)]);
    });
}

/// Start a trapping server linked to a parent actor, which then exits as
/// `parent_panics` says; return the server's log and its `Down`.
fn parent_exits(parent_panics: bool) -> (Vec<Event>, DownReason, Pid) {
    let log = log();
    let (server_tx, server_rx) = smarm::channel::<GenServerRef<Watcher>>();
    let (go_tx, go) = smarm::channel::<()>();
    let parent_log = log.clone();
    let parent = smarm::spawn(move || {
        let server = gen_server::start_link::<Watcher>((parent_log, true)).unwrap();
        server_tx.send(server).unwrap();
        let _ = go.recv();
        assert!(!parent_panics, "parent failed on purpose");
    });
    let parent_pid = parent.pid();
    let server = server_rx.recv().unwrap();
    let watch = smarm::monitor(server.pid());
    server.cast(7).unwrap();
    go_tx.send(()).unwrap();
    let _ = parent.join();
    let down = watch
        .rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the server should have stopped");
    (events(&log), down.reason, parent_pid)
}

#[test]
fn a_trapping_server_stops_when_its_parent_exits() {
    on_each_thread_count(|| {
        let (seen, down, _) = parent_exits(false);
        assert_eq!(
            seen,
            vec![Event::Cast(7), Event::Terminate(StopReason::Shutdown)],
            "the parent's exit is not handed to handle_exit"
        );
        assert_eq!(down, DownReason::Exit);

        let (seen, down, parent) = parent_exits(true);
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(seen[0], Event::Cast(7));
        let Event::Terminate(StopReason::Error(why)) = &seen[1] else {
            panic!("a failed parent should stop the server with an error: {seen:?}");
        };
        assert!(why.contains("parent exited"), "{why}");
        assert_eq!(
            down,
            DownReason::Panic,
            "a parent's failure is the server's"
        );
        let _ = parent;
    });
}

#[test]
fn monitors_deliver_down_to_handle_down() {
    on_each_thread_count(|| {
        let log = log();
        let server = gen_server::start::<Watcher>((log.clone(), false)).unwrap();

        let (watched, go) = gated(true);
        server.call(Req::Monitor(1, watched.pid())).unwrap();
        let (cancelled, go_cancelled) = gated(false);
        server.call(Req::Monitor(2, cancelled.pid())).unwrap();
        assert!(server.call(Req::Demonitor(2)).unwrap(), "still set");

        let watched = release(watched, go);
        let _ = release(cancelled, go_cancelled);
        // The Downs are in the mailbox before the joins return: a round
        // trip after them has seen every one that was sent.
        assert!(server.call(Req::Sync).unwrap());
        assert_eq!(events(&log), vec![Event::Down(watched, DownReason::Panic)]);
        assert!(
            !server.call(Req::Demonitor(1)).unwrap(),
            "a monitor that fired is no longer set"
        );

        // A monitor of an actor already gone fires at once, with NoProc.
        server.call(Req::Monitor(3, watched)).unwrap();
        assert!(server.call(Req::Sync).unwrap());
        assert_eq!(
            events(&log)[1..],
            [Event::Down(watched, DownReason::NoProc)]
        );
        assert!(server.is_alive(), "a Down never stops the server");
        server.shutdown().unwrap();
    });
}
