//! Supervisors: strategies, restart types, intensity and escalation,
//! ordered start and reverse shutdown, dynamic children, named servers.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply, ServerName, StartError};
use smarm::supervisor::{self, ChildSpec, Restart, Shutdown, Strategy, SupFlags};
use smarm::{DownReason, Pid, Receiver, Sender, channel};
use std::collections::HashMap;
use std::time::Duration;
use support::{THREADS, run_with};

/// What test workers report.
#[derive(Debug)]
enum Event {
    Started(&'static str, Pid, Sender<Cmd>),
    Stopped(&'static str),
}

enum Cmd {
    /// Exit abnormally (without the panic hook's message).
    Crash,
    /// Return normally.
    Exit,
}

/// Logs its stop when dropped (a stop request unwinds through it).
struct OnStop(&'static str, Sender<Event>);
impl Drop for OnStop {
    fn drop(&mut self) {
        let _ = self.1.send(Event::Stopped(self.0));
    }
}

/// A worker that reports its start and stop and obeys commands.
fn worker(id: &'static str, log: &Sender<Event>) -> ChildSpec {
    let log = log.clone();
    ChildSpec::actor(id, move || {
        let (ctl_tx, ctl_rx) = channel::<Cmd>();
        let _on_stop = OnStop(id, log.clone());
        log.send(Event::Started(id, smarm::self_pid(), ctl_tx))
            .unwrap();
        match ctl_rx.recv() {
            Ok(Cmd::Crash) => std::panic::resume_unwind(Box::new("crash")),
            Ok(Cmd::Exit) | Err(_) => {}
        }
    })
}

/// Collects `Started` events into the current control channels.
struct Log {
    rx: Receiver<Event>,
    ctl: HashMap<&'static str, (Pid, Sender<Cmd>)>,
}

impl Log {
    fn new(rx: Receiver<Event>) -> Self {
        Log {
            rx,
            ctl: HashMap::new(),
        }
    }

    /// The next `n` events, as "start X" / "stop X".
    fn next(&mut self, n: usize) -> Vec<String> {
        (0..n)
            .map(
                |_| match self.rx.recv_timeout(Duration::from_secs(5)).unwrap() {
                    Event::Started(id, pid, ctl) => {
                        self.ctl.insert(id, (pid, ctl));
                        format!("start {id}")
                    }
                    Event::Stopped(id) => format!("stop {id}"),
                },
            )
            .collect()
    }

    fn pid(&self, id: &str) -> Pid {
        self.ctl[id].0
    }

    fn send(&self, id: &str, cmd: Cmd) {
        let _ = self.ctl[id].1.send(cmd);
    }

    fn quiet(&self) -> bool {
        smarm::sleep(Duration::from_millis(20));
        matches!(self.rx.try_recv(), Ok(None))
    }
}

fn three(strategy: Strategy) -> (supervisor::SupervisorRef, Log) {
    let (tx, rx) = channel::<Event>();
    let flags = SupFlags::new(strategy).intensity(10, Duration::from_secs(5));
    let sup = supervisor::start(
        flags,
        vec![worker("a", &tx), worker("b", &tx), worker("c", &tx)],
    )
    .unwrap();
    let mut log = Log::new(rx);
    assert_eq!(
        log.next(3),
        ["start a", "start b", "start c"],
        "ordered start"
    );
    (sup, log)
}

#[test]
fn introspection_counts_a_supervisors_restarts() {
    run_with(2, || {
        let (sup, mut log) = three(Strategy::OneForOne);
        let restarts = || smarm::actor_info(sup.pid()).unwrap().restarts;
        assert_eq!(restarts(), 0);
        for n in 1..=2 {
            log.send("b", Cmd::Crash);
            assert_eq!(log.next(2), ["stop b", "start b"]);
            // A call is served after the exit's handling (restart, then
            // count) is done.
            sup.which_children().unwrap();
            assert_eq!(restarts(), n);
        }
        // A worker is not a supervisor: it restarted nobody.
        assert_eq!(smarm::actor_info(log.pid("a")).unwrap().restarts, 0);
        let snapshot = smarm::snapshot();
        let row = snapshot.actors.iter().find(|a| a.pid == sup.pid()).unwrap();
        assert_eq!(row.restarts, 2);
        sup.shutdown().unwrap();
        let _ = log.next(3);
    });
}

#[test]
fn one_for_one_restarts_only_the_failed_child() {
    run_with(2, || {
        let (sup, mut log) = three(Strategy::OneForOne);
        let (a, c) = (log.pid("a"), log.pid("c"));
        log.send("b", Cmd::Crash);
        assert_eq!(log.next(2), ["stop b", "start b"]);
        assert!(log.quiet(), "nobody else moved");
        assert_eq!((log.pid("a"), log.pid("c")), (a, c));
        let kids = sup.which_children().unwrap();
        let pids: Vec<_> = kids.iter().map(|k| k.pid.unwrap()).collect();
        assert_eq!(pids, [a, log.pid("b"), c]);
        sup.shutdown().unwrap();
        assert_eq!(
            log.next(3),
            ["stop c", "stop b", "stop a"],
            "reverse shutdown"
        );
    });
}

#[test]
fn one_for_all_restarts_every_child_in_order() {
    run_with(2, || {
        let (sup, mut log) = three(Strategy::OneForAll);
        log.send("b", Cmd::Crash);
        assert_eq!(
            log.next(6),
            [
                "stop b", "stop c", "stop a", "start a", "start b", "start c"
            ],
            "the others stop in reverse order, then all start in order"
        );
        assert!(log.quiet());
        sup.shutdown().unwrap();
        assert_eq!(log.next(3), ["stop c", "stop b", "stop a"]);
    });
}

#[test]
fn rest_for_one_restarts_the_child_and_those_after_it() {
    run_with(2, || {
        let (sup, mut log) = three(Strategy::RestForOne);
        let a = log.pid("a");
        log.send("b", Cmd::Crash);
        assert_eq!(log.next(4), ["stop b", "stop c", "start b", "start c"]);
        assert!(log.quiet());
        assert_eq!(log.pid("a"), a, "children before it keep running");
        sup.shutdown().unwrap();
        assert_eq!(log.next(3), ["stop c", "stop b", "stop a"]);
    });
}

#[test]
fn transient_and_temporary_children_follow_their_restart_type() {
    run_with(2, || {
        let (tx, rx) = channel::<Event>();
        let flags = SupFlags::new(Strategy::OneForOne).intensity(10, Duration::from_secs(5));
        let sup = supervisor::start(
            flags,
            vec![
                worker("t1", &tx).restart(Restart::Transient),
                worker("t2", &tx).restart(Restart::Transient),
                worker("tmp", &tx).restart(Restart::Temporary),
                worker("perm", &tx),
            ],
        )
        .unwrap();
        let mut log = Log::new(rx);
        log.next(4);
        log.send("t1", Cmd::Exit); // normal exit: not restarted
        assert_eq!(log.next(1), ["stop t1"]);
        log.send("t2", Cmd::Crash); // failure: restarted
        assert_eq!(log.next(2), ["stop t2", "start t2"]);
        log.send("tmp", Cmd::Crash); // temporary: never, and forgotten
        assert_eq!(log.next(1), ["stop tmp"]);
        log.send("perm", Cmd::Exit); // permanent: even after a normal exit
        assert_eq!(log.next(2), ["stop perm", "start perm"]);
        assert!(log.quiet());
        let kids: Vec<_> = sup
            .which_children()
            .unwrap()
            .into_iter()
            .map(|k| (k.id, k.pid.is_some()))
            .collect();
        assert_eq!(
            kids,
            [
                ("t1".into(), false),
                ("t2".into(), true),
                ("perm".into(), true)
            ]
        );
        sup.shutdown().unwrap();
    });
}

/// The children of a middle supervisor: one that fails at every start,
/// sending its pid to `starts` first.
fn crashing_children(starts: Sender<Pid>) -> impl Fn() -> Vec<ChildSpec> + Send + 'static {
    move || {
        let starts = starts.clone();
        vec![ChildSpec::actor("crasher", move || {
            starts.send(smarm::self_pid()).unwrap();
            std::panic::resume_unwind(Box::new("always fails"));
        })]
    }
}

#[test]
fn exceeding_the_intensity_escalates_to_the_parent_supervisor() {
    run_with(2, || {
        let (starts_tx, starts_rx) = channel::<Pid>();
        let middle = crashing_children(starts_tx);
        // Linked, with exits trapped: the top's exit reaches us however
        // fast the escalation runs.
        let exits = smarm::trap_exit(true).unwrap();
        let top = supervisor::start_link(
            SupFlags::new(Strategy::OneForOne).intensity(2, Duration::from_secs(10)),
            vec![ChildSpec::supervisor(
                "middle",
                SupFlags::new(Strategy::OneForOne).intensity(1, Duration::from_secs(10)),
                middle,
            )],
        )
        .unwrap();
        let exit = exits.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(exit.from, top.pid());
        assert_eq!(
            exit.reason,
            DownReason::Shutdown,
            "the top supervisor gave up too, with shutdown as OTP's does"
        );
        // 3 middles (the first and two restarts), each starting its crasher
        // twice (the start and one restart) before giving up.
        let starts: Vec<Pid> = std::iter::from_fn(|| starts_rx.try_recv().ok().flatten()).collect();
        assert_eq!(starts.len(), 6, "crasher starts: {starts:?}");
    });
}

#[test]
fn a_three_level_tree_shuts_down_in_reverse_start_order() {
    run_with(2, || {
        let (tx, rx) = channel::<Event>();
        let t = tx.clone();
        let leaf = move || vec![worker("c", &t), worker("d", &t)];
        let t = tx.clone();
        let mid = move || {
            let leaf = leaf.clone();
            vec![
                worker("b", &t),
                ChildSpec::supervisor("leaf", SupFlags::new(Strategy::OneForOne), leaf),
                worker("e", &t),
            ]
        };
        let top = supervisor::start(
            SupFlags::new(Strategy::OneForOne),
            vec![
                worker("a", &tx),
                ChildSpec::supervisor("mid", SupFlags::new(Strategy::OneForOne), mid),
                worker("f", &tx),
            ],
        )
        .unwrap();
        let mut log = Log::new(rx);
        assert_eq!(
            log.next(6),
            [
                "start a", "start b", "start c", "start d", "start e", "start f"
            ]
        );
        top.shutdown().unwrap();
        assert_eq!(
            log.next(6),
            ["stop f", "stop e", "stop d", "stop c", "stop b", "stop a"]
        );
    });
}

#[test]
fn a_child_that_fails_to_start_fails_the_supervisor_start() {
    run_with(2, || {
        let (tx, rx) = channel::<Event>();
        let r = supervisor::start(
            SupFlags::new(Strategy::OneForOne),
            vec![
                worker("a", &tx),
                ChildSpec::new("broken", || Err(StartError::Init("no config".into()))),
                worker("c", &tx),
            ],
        );
        match r {
            Err(StartError::Child { id, error }) => {
                assert_eq!(id, "broken");
                assert!(error.to_string().contains("no config"));
            }
            other => panic!("expected a child start error, got {other:?}"),
        }
        let mut log = Log::new(rx);
        assert_eq!(
            log.next(2),
            ["start a", "stop a"],
            "a is stopped again; c never starts"
        );
    });
}

#[test]
fn a_dynamic_supervisor_restarts_crashing_children_and_forgets_temporary_ones() {
    const N: usize = 10_000;
    run_with(2, || {
        let sup = supervisor::start(
            SupFlags::new(Strategy::OneForOne).intensity(100_000, Duration::from_secs(60)),
            Vec::new(),
        )
        .unwrap();
        let (first_tx, first_rx) = channel::<usize>();
        for i in 0..N {
            let first = first_tx.clone();
            let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let spec = ChildSpec::actor(format!("w{i}"), move || {
                let run = runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if run == 0 {
                    first.send(i).unwrap();
                    // Every child fails once; permanent ones come back.
                    std::panic::resume_unwind(Box::new("first run fails"));
                }
                let (_keep, never) = channel::<()>();
                let _ = never.recv();
            });
            let spec = if i % 2 == 0 {
                spec
            } else {
                spec.restart(Restart::Temporary)
            };
            sup.start_child(spec).unwrap();
        }
        for _ in 0..N {
            first_rx.recv().unwrap();
        }
        // Let the restarts settle: every permanent child running, every
        // temporary one gone.
        let mut kids = Vec::new();
        for _ in 0..500 {
            kids = sup.which_children().unwrap();
            if kids.len() == N / 2 && kids.iter().all(|k| k.pid.is_some()) {
                break;
            }
            smarm::sleep(Duration::from_millis(10));
        }
        assert_eq!(kids.len(), N / 2, "temporary children are forgotten");
        assert!(
            kids.iter()
                .all(|k| k.pid.is_some() && k.restart == Restart::Permanent)
        );
        assert!(sup.terminate_child(kids[0].pid.unwrap()).unwrap());
        assert_eq!(sup.which_children().unwrap().len(), N / 2 - 1);
        sup.shutdown().unwrap();
    });
}

/// A counter server for the named-restart test.
struct Named;
impl GenServer for Named {
    type Args = ();
    type Call = bool; // true: panic
    type Reply = Pid;
    type Cast = ();
    type Info = ();
    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Named)
    }
    fn handle_call(&mut self, crash: bool, reply: Reply<Pid>, _: &mut Ctx<Self>) -> Flow {
        if crash {
            std::panic::resume_unwind(Box::new("crash"));
        }
        reply.reply(smarm::self_pid());
        Flow::Continue
    }
}

const NAMED: ServerName<Named> = ServerName::new("named");

#[test]
fn a_supervised_named_server_is_back_under_its_name() {
    run_with(2, || {
        let sup = supervisor::start(
            SupFlags::new(Strategy::OneForOne).intensity(10, Duration::from_secs(5)),
            vec![
                ChildSpec::named_server::<Named>("named", NAMED, || ())
                    .shutdown(Shutdown::Timeout(Duration::from_secs(1))),
            ],
        )
        .unwrap();
        let first = gen_server::whereis_server(NAMED).unwrap();
        assert_eq!(first.call(false), Ok(first.pid()));
        for _ in 0..5 {
            let old = gen_server::whereis_server(NAMED).unwrap();
            assert!(old.call(true).is_err());
            // Back as soon as the supervisor has restarted it (the restart
            // itself is asynchronous: wait for it, generously).
            let t0 = std::time::Instant::now();
            let mut back = None;
            while back.is_none() && t0.elapsed() < Duration::from_secs(5) {
                back = gen_server::whereis_server(NAMED).filter(|s| s.pid() != old.pid());
                if back.is_none() {
                    smarm::sleep(Duration::from_micros(100));
                }
            }
            let back = back.expect("restarted under its name");
            assert_eq!(back.call(false), Ok(back.pid()));
        }
        sup.shutdown().unwrap();
        assert!(gen_server::whereis_server(NAMED).is_none());
    });
}

#[test]
fn a_stopped_supervisor_refuses_requests_at_once() {
    run_with(2, || {
        let sup = supervisor::start(SupFlags::new(Strategy::OneForOne), Vec::new()).unwrap();
        sup.shutdown().unwrap();
        let (tx, _rx) = channel::<Event>();
        assert!(matches!(
            sup.start_child(worker("late", &tx)),
            Err(StartError::SupervisorDown)
        ));
        assert!(sup.which_children().is_err());
    });
}

#[test]
fn a_transient_supervisor_that_gives_up_is_not_restarted_and_nothing_crashes() {
    run_with(2, || {
        let (starts_tx, starts_rx) = channel::<Pid>();
        let middle = crashing_children(starts_tx);
        let top = supervisor::start(
            SupFlags::new(Strategy::OneForOne).intensity(5, Duration::from_secs(10)),
            vec![
                ChildSpec::supervisor(
                    "middle",
                    SupFlags::new(Strategy::OneForOne).intensity(1, Duration::from_secs(10)),
                    middle,
                )
                .restart(Restart::Transient),
            ],
        )
        .unwrap();
        // The middle gives up (with `shutdown`: its reason is pinned by
        // the dynamic supervisor's and the reports' tests) ...
        let began = std::time::Instant::now();
        while top.which_children().unwrap()[0].pid.is_some() {
            assert!(began.elapsed() < Duration::from_secs(10), "it gave up");
            smarm::sleep(Duration::from_millis(2));
        }
        // ... and `shutdown` is no failure: a transient child that ends so
        // stays down, and the top supervisor goes on.
        smarm::sleep(Duration::from_millis(50));
        let children = top.which_children().unwrap();
        assert_eq!(children.len(), 1);
        assert_eq!(children[0].pid, None, "not restarted");
        assert!(smarm::is_alive(top.pid()));
        let starts: Vec<Pid> = std::iter::from_fn(|| starts_rx.try_recv().ok().flatten()).collect();
        assert_eq!(starts.len(), 2, "one middle: its start and one restart");
        top.shutdown().unwrap();
    });
}

#[test]
fn shutdown_escalates_to_kill_past_the_timeout_for_a_child_that_ignores_it() {
    for threads in THREADS {
        run_with(threads, || {
            let (told_tx, told) = channel::<DownReason>();
            let (ready_tx, ready) = channel::<()>();
            let stubborn = ChildSpec::actor("stubborn", move || {
                let exits = smarm::trap_exit(true).unwrap();
                ready_tx.send(()).unwrap();
                // Told of the shutdown, and it ignores it.
                while let Ok(exit) = exits.recv() {
                    told_tx.send(exit.reason).unwrap();
                }
            })
            .shutdown(Shutdown::Timeout(Duration::from_millis(100)));
            let obliging = ChildSpec::actor("obliging", || smarm::sleep(Duration::from_secs(60)));
            let sup =
                supervisor::start(SupFlags::new(Strategy::OneForOne), vec![stubborn, obliging])
                    .unwrap();
            ready.recv().unwrap();
            let pids: Vec<Pid> = sup
                .which_children()
                .unwrap()
                .iter()
                .map(|c| c.pid.unwrap())
                .collect();
            let downs: Vec<_> = pids.iter().map(|&p| smarm::monitor(p)).collect();
            let began = std::time::Instant::now();
            sup.shutdown().unwrap();
            assert!(
                began.elapsed() >= Duration::from_millis(100),
                "the stubborn child had its timeout"
            );
            assert_eq!(told.recv().unwrap(), DownReason::Shutdown, "it was told");
            assert_eq!(downs[0].rx.recv().unwrap().reason, DownReason::Killed);
            assert_eq!(downs[1].rx.recv().unwrap().reason, DownReason::Shutdown);
        });
    }
}
