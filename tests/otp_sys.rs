//! sys: state, status, suspension, statistics, event logs, traces and
//! installed functions, on gen_servers, gen_statems, supervisors and typed
//! actors' own loops, by typed address and by pid.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::actor::{self, Handler};
use smarm::gen_server::{
    self, CallError, Ctx, Flow, GenServer, InitError, ReplaceStateError, Reply,
};
use smarm::gen_statem::{self, Event, GenStatem, Init, Transition};
use smarm::supervisor::{self, ChildSpec, Strategy, SupFlags};
use smarm::sys::{self, Log, Stats};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use support::{THREADS, rerun_in_child, run_with};

#[derive(Clone, Debug, PartialEq)]
struct Counter {
    count: u64,
    label: String,
}

impl GenServer for Counter {
    type Args = ();
    type Call = ();
    type Reply = u64;
    type Cast = u64;
    type Info = ();

    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Counter {
            count: 0,
            label: "counter".into(),
        })
    }

    fn handle_call(&mut self, _: (), reply: Reply<u64>, _: &mut Ctx<Self>) -> Flow {
        reply.reply(self.count);
        Flow::Continue
    }

    fn handle_cast(&mut self, n: u64, _: &mut Ctx<Self>) -> Flow {
        self.count += n;
        Flow::Continue
    }

    fn format_status(&self) -> String {
        format!("{} at {}", self.label, self.count)
    }
}

#[test]
fn a_suspended_servers_queued_call_completes_after_resume() {
    for threads in THREADS {
        run_with(threads, || {
            let server = gen_server::start::<Counter>(()).unwrap();
            server.cast(1).unwrap();
            sys::suspend(&server).unwrap();
            let (done_tx, done) = smarm::channel();
            let client = server.clone();
            smarm::spawn(move || {
                client.cast(10).unwrap();
                let _ = done_tx.send(client.call(()));
            });
            smarm::sleep(Duration::from_millis(50));
            assert!(
                matches!(done.try_recv(), Ok(None)),
                "answered while suspended"
            );
            // System requests are answered while suspended.
            let status = sys::get_status(&server).unwrap();
            assert!(status.suspended);
            assert_eq!(status.behaviour, "gen_server");
            assert_eq!(status.state, "counter at 1");
            assert_eq!(sys::get_state(&server).unwrap().count, 1);
            sys::replace_state(&server, |c| c.count = 100).unwrap();
            sys::resume(&server).unwrap();
            // The queued cast, then the call, in order, on the new state.
            assert_eq!(done.recv_timeout(Duration::from_secs(10)).unwrap(), Ok(110));
            assert!(!sys::get_status(&server).unwrap().suspended);
            server.shutdown().unwrap();
        });
    }
}

#[test]
fn a_suspended_server_still_shuts_down() {
    run_with(2, || {
        let server = gen_server::start::<Counter>(()).unwrap();
        sys::suspend(&server).unwrap();
        server.shutdown().unwrap();
        assert!(!server.is_alive());
    });
}

#[test]
fn replace_state_changes_what_the_next_call_sees_and_survives_a_panicking_function() {
    run_with(2, || {
        let server = gen_server::start::<Counter>(()).unwrap();
        server.cast(5).unwrap();
        let new = sys::replace_state(&server, |c| c.count *= 10).unwrap();
        assert_eq!(new.count, 50);
        assert_eq!(server.call(()), Ok(50));
        let r = sys::replace_state(&server, |c| {
            c.count = 0;
            panic!("bad replacement");
        });
        assert!(
            matches!(&r, Err(ReplaceStateError::Panicked(why)) if why == "bad replacement"),
            "{r:?}"
        );
        assert_eq!(server.call(()), Ok(50), "the state is as it was");
        server.shutdown().unwrap();
    });
}

#[test]
fn statistics_count_handled_messages() {
    run_with(2, || {
        let server = gen_server::start::<Counter>(()).unwrap();
        server.cast(1).unwrap(); // before counting
        assert_eq!(sys::statistics(&server, Stats::Get).unwrap(), None);
        sys::statistics(&server, Stats::On).unwrap();
        for _ in 0..3 {
            server.cast(1).unwrap();
        }
        server.call(()).unwrap();
        server.call(()).unwrap();
        let stats = sys::statistics(&server, Stats::Get).unwrap().unwrap();
        assert_eq!(stats.messages_in, 5);
        assert_eq!(stats.calls_in, 2);
        sys::statistics(&server, Stats::Off).unwrap();
        assert_eq!(sys::statistics(&server, Stats::Get).unwrap(), None);
    });
}

/// OTP's `messages_out`: the replies a server sends, each counted once,
/// when it is sent (a deferred one too).
#[test]
fn statistics_count_replies_sent_as_messages_out() {
    run_with(2, || {
        let server = gen_server::start::<Deferring>(()).unwrap();
        sys::statistics(&server, Stats::On).unwrap();
        assert_eq!(server.call(Ask::Now), Ok(1));
        let client = server.clone();
        let later = smarm::spawn(move || client.call(Ask::Later));
        while sys::get_state(&server).unwrap().0.is_none() {
            smarm::sleep(Duration::from_millis(1));
        }
        let stats = sys::statistics(&server, Stats::Get).unwrap().unwrap();
        assert_eq!(
            (stats.messages_in, stats.messages_out),
            (2, 1),
            "one still owed"
        );
        server.cast(()).unwrap(); // sends the deferred reply
        assert_eq!(later.join().unwrap(), Ok(2));
        let stats = sys::statistics(&server, Stats::Get).unwrap().unwrap();
        assert_eq!((stats.messages_in, stats.calls_in), (3, 2));
        assert_eq!(stats.messages_out, 2);

        // A state machine's, replied from its callback.
        let door = gen_statem::start::<Door>(()).unwrap();
        sys::statistics(&door, Stats::On).unwrap();
        door.cast(()).unwrap();
        door.call(()).unwrap();
        door.call(()).unwrap();
        let stats = sys::statistics(&door, Stats::Get).unwrap().unwrap();
        assert_eq!((stats.messages_in, stats.calls_in), (3, 2));
        assert_eq!(stats.messages_out, 2);
        assert!(stats.elapsed < Duration::from_secs(60));
    });
}

/// A server that answers `Ask::Later` only at its next cast.
#[derive(Clone)]
struct Deferring(Option<Arc<std::sync::Mutex<Option<Reply<u32>>>>>);

#[derive(Debug)]
enum Ask {
    Now,
    Later,
}

impl GenServer for Deferring {
    type Args = ();
    type Call = Ask;
    type Reply = u32;
    type Cast = ();
    type Info = ();

    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Deferring(None))
    }

    fn handle_call(&mut self, ask: Ask, reply: Reply<u32>, _: &mut Ctx<Self>) -> Flow {
        match ask {
            Ask::Now => {
                reply.reply(1);
            }
            Ask::Later => self.0 = Some(Arc::new(std::sync::Mutex::new(Some(reply)))),
        }
        Flow::Continue
    }

    fn handle_cast(&mut self, _: (), _: &mut Ctx<Self>) -> Flow {
        if let Some(owed) = self.0.take()
            && let Some(reply) = owed.lock().unwrap().take()
        {
            reply.reply(2);
        }
        Flow::Continue
    }
}

/// Every sys function takes a registered name, as OTP's take a
/// `ServerRef`: the typed name, or its text; a name no one holds is a
/// server down.
#[test]
fn sys_reaches_a_process_by_its_registered_name() {
    run_with(2, || {
        const COUNTED: gen_server::ServerName<Counter> = gen_server::ServerName::new("sys-counted");
        let server = gen_server::start_named::<Counter>(COUNTED, ()).unwrap();
        server.cast(4).unwrap();
        let status = sys::get_status(&COUNTED).unwrap();
        assert_eq!(status.pid, server.pid());
        assert_eq!(status.state, "counter at 4");
        assert_eq!(sys::get_status(&"sys-counted").unwrap(), status);
        assert_eq!(sys::get_state(&COUNTED).unwrap().count, 4);
        sys::replace_state(&COUNTED, |c| c.count = 10).unwrap();
        assert_eq!(server.call(()), Ok(10));
        sys::suspend(&"sys-counted").unwrap();
        assert!(sys::get_status(&server).unwrap().suspended);
        sys::resume(&COUNTED).unwrap();

        const NOBODY: gen_server::ServerName<Counter> = gen_server::ServerName::new("sys-nobody");
        assert_eq!(sys::get_status(&NOBODY), Err(CallError::ServerDown));
        assert_eq!(sys::get_status(&"sys-nobody"), Err(CallError::ServerDown));
        assert_eq!(sys::get_state(&NOBODY), Err(CallError::ServerDown));
        server.shutdown().unwrap();
        assert_eq!(sys::get_status(&COUNTED), Err(CallError::ServerDown));
    });
}

/// `log_to_file` writes each event as a `*DBG*` line, as it happens;
/// `Log::Print` hands back (and prints) what the log keeps; a file that
/// cannot be created is an error before the process is asked.
#[test]
fn log_to_file_writes_each_event_and_log_print_returns_the_kept_ones() {
    run_with(2, || {
        let path = std::env::temp_dir().join(format!(
            "smarm-sys-log-to-file-{}-{:?}.log",
            std::process::id(),
            std::thread::current().id()
        ));
        let door = gen_statem::start::<Door>(()).unwrap();
        sys::log_to_file(&door, Some(&path)).unwrap();
        assert_eq!(
            sys::get_status(&door).unwrap().log_file.as_deref(),
            Some(path.as_path())
        );
        door.cast(()).unwrap();
        door.call(()).unwrap();
        // Written as it happens: readable before logging stops.
        let written = std::fs::read_to_string(&path).unwrap();
        let pid = door.pid();
        assert_eq!(
            written.lines().collect::<Vec<_>>(),
            [
                format!("*DBG* {pid} receive cast () in state Closed"),
                format!("*DBG* {pid} consume cast () in state Closed => Open"),
                format!("*DBG* {pid} enter in state Open"),
                format!("*DBG* {pid} receive call () in state Open"),
                format!("*DBG* {pid} consume call () in state Open"),
            ]
        );
        sys::log_to_file(&door, None).unwrap();
        door.cast(()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), written, "stopped");
        assert_eq!(sys::get_status(&door).unwrap().log_file, None);
        std::fs::remove_file(&path).unwrap();

        let nowhere = std::path::Path::new("/nonexistent-smarm-dir/sys.log");
        match sys::log_to_file(&door, Some(nowhere)) {
            Err(e @ sys::LogToFileError::Open { .. }) => {
                assert!(
                    e.to_string().contains("/nonexistent-smarm-dir/sys.log"),
                    "{e}"
                );
            }
            other => panic!("expected an open error, got {other:?}"),
        }

        sys::log(&door, Log::On(2)).unwrap();
        door.cast(()).unwrap();
        let printed = sys::log(&door, Log::Print).unwrap();
        assert_eq!(printed, sys::log(&door, Log::Get).unwrap());
        assert_eq!(printed.len(), 2, "the last 2");
        assert_eq!(printed[1].action, "enter");
        door.shutdown().unwrap();
    });
}

#[test]
fn the_log_keeps_the_last_events_handled() {
    run_with(2, || {
        let server = gen_server::start::<Counter>(()).unwrap();
        sys::log(&server, Log::On(10)).unwrap();
        server.cast(1).unwrap();
        server.call(()).unwrap();
        let events = sys::log(&server, Log::Get).unwrap();
        let kinds: Vec<_> = events
            .iter()
            .map(|e| (e.kind, e.message.as_str()))
            .collect();
        assert_eq!(kinds, [("cast", "u64"), ("call", "()")]);
        assert!(events.iter().all(|e| e.pid == server.pid()));
        for _ in 0..15 {
            server.cast(1).unwrap();
        }
        server.call(()).unwrap();
        let events = sys::log(&server, Log::Off).unwrap();
        assert_eq!(events.len(), 10, "the last 10");
        assert_eq!(events.last().unwrap().kind, "call");
        assert!(sys::log(&server, Log::Get).unwrap().is_empty());
    });
}

#[test]
fn an_installed_function_sees_each_event_until_removed() {
    run_with(2, || {
        let server = gen_server::start::<Counter>(()).unwrap();
        let seen = Arc::new(AtomicU32::new(0));
        let s = seen.clone();
        sys::install(&server, "count", move |_| {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        assert_eq!(sys::get_status(&server).unwrap().installed, ["count"]);
        server.cast(1).unwrap();
        server.call(()).unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 2);
        assert!(sys::remove(&server, "count").unwrap());
        assert!(!sys::remove(&server, "count").unwrap());
        server.call(()).unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 2);
        // One that panics is removed; the server goes on.
        sys::install(&server, "bad", |_| panic!("broken hook")).unwrap();
        server.cast(1).unwrap();
        assert_eq!(server.call(()), Ok(2));
        assert!(sys::get_status(&server).unwrap().installed.is_empty());
        // no_debug turns everything off.
        sys::log(&server, Log::On(5)).unwrap();
        sys::trace(&server, true).unwrap();
        sys::no_debug(&server).unwrap();
        let status = sys::get_status(&server).unwrap();
        assert_eq!((status.log_size, status.trace), (None, false));
    });
}

const TRACE_CHILD: &str = "SMARM_SYS_TRACE_CHILD";

#[test]
fn trace_prints_each_handled_event() {
    if std::env::var_os(TRACE_CHILD).is_some() {
        run_with(1, || {
            let server = gen_server::start::<Counter>(()).unwrap();
            sys::trace(&server, true).unwrap();
            server.cast(7).unwrap();
            server.call(()).unwrap();
            eprintln!("pid {}", server.pid());
            // A typed actor's own loop: its events named by variant.
            let tally = actor::spawn(Total(0));
            sys::trace(&tally, true).unwrap();
            tally.add(1).unwrap();
            tally.get().unwrap();
            eprintln!("tally {}", tally.erase());
            smarm::request_stop(tally);
        });
        return;
    }
    let out = rerun_in_child("trace_prints_each_handled_event", TRACE_CHILD);
    let err = String::from_utf8_lossy(&out.stderr);
    let pid = err
        .lines()
        .find_map(|l| l.strip_prefix("pid "))
        .expect("the child printed its server's pid");
    assert!(err.contains(&format!("*DBG* {pid} got cast u64")), "{err}");
    assert!(err.contains(&format!("*DBG* {pid} got call ()")), "{err}");
    let tally = err
        .lines()
        .find_map(|l| l.strip_prefix("tally "))
        .expect("the child printed its typed actor's pid");
    assert!(
        err.contains(&format!("*DBG* {tally} got cast Add")),
        "{err}"
    );
    assert!(
        err.contains(&format!("*DBG* {tally} got call Get")),
        "{err}"
    );
}

/// A two-state machine for sys.
#[derive(Clone, Debug, PartialEq)]
struct Door {
    opened: u32,
}

#[derive(Clone, Debug, PartialEq)]
enum Side {
    Closed,
    Open,
}

impl GenStatem for Door {
    type Args = ();
    type State = Side;
    type Call = ();
    type Reply = u32;
    type Cast = ();
    type Info = ();
    type Internal = ();
    type Timeout = ();

    fn init(_: (), _: &mut gen_statem::Ctx<Self>) -> Result<Init<Self>, InitError> {
        Ok(Init::new(Side::Closed, Door { opened: 0 }))
    }

    fn handle_event(
        &mut self,
        state: &Side,
        event: Event<Self>,
        _: &mut gen_statem::Ctx<Self>,
    ) -> Transition<Self> {
        match (state, event) {
            (Side::Closed, Event::Cast(())) => {
                self.opened += 1;
                Transition::next_state(Side::Open)
            }
            (Side::Open, Event::Cast(())) => Transition::next_state(Side::Closed),
            (_, Event::Call((), reply)) => Transition::keep_state().reply(reply, self.opened),
            _ => Transition::keep_state(),
        }
    }
}

#[test]
fn sys_works_on_a_state_machine() {
    for threads in THREADS {
        run_with(threads, || {
            let door = gen_statem::start::<Door>(()).unwrap();
            sys::log(&door, Log::On(10)).unwrap();
            door.cast(()).unwrap();
            let events = sys::log(&door, Log::Get).unwrap();
            let lines: Vec<String> = events.iter().map(ToString::to_string).collect();
            let pid = door.pid();
            assert_eq!(
                lines,
                [
                    format!("*DBG* {pid} receive cast () in state Closed"),
                    format!("*DBG* {pid} consume cast () in state Closed => Open"),
                    format!("*DBG* {pid} enter in state Open"),
                ]
            );
            assert_eq!(events[0].state.as_deref(), Some("Closed"));
            assert_eq!(events[1].next_state.as_deref(), Some("Open"));
            let status = sys::get_status(&door).unwrap();
            assert_eq!(status.behaviour, "gen_statem");
            assert_eq!(sys::status_of(door.pid()).unwrap(), status, "by pid too");
            assert!(status.state.starts_with("Open"), "{}", status.state);
            // Suspended: a cast and a call wait; state replaced meanwhile.
            sys::suspend(&door).unwrap();
            door.cast(()).unwrap();
            let client = door.clone();
            let call = smarm::spawn(move || client.call(()));
            smarm::sleep(Duration::from_millis(30));
            assert_eq!(
                sys::get_state(&door).unwrap(),
                (Side::Open, Door { opened: 1 })
            );
            sys::replace_state(&door, |(_, data)| data.opened = 41).unwrap();
            sys::resume(&door).unwrap();
            assert_eq!(call.join().unwrap(), Ok(41));
            assert_eq!(sys::get_state(&door).unwrap().0, Side::Closed);
            door.shutdown().unwrap();
        });
    }
}

#[test]
fn a_supervisor_reports_its_children_and_any_behaviour_is_reached_by_pid() {
    run_with(2, || {
        let sup = supervisor::start(
            SupFlags::new(Strategy::OneForOne),
            vec![ChildSpec::server::<Counter>("counter", || ())],
        )
        .unwrap();
        let status = sys::get_status(&sup).unwrap();
        assert_eq!(status.behaviour, "supervisor");
        assert!(status.state.contains("counter <"), "{}", status.state);
        let child = sup.which_children().unwrap()[0].pid.unwrap();
        let by_pid = sys::status_of(child).unwrap();
        assert_eq!(by_pid.state, "counter at 0");
        // A pid that runs no behaviour: down at once.
        let plain = smarm::spawn(|| smarm::sleep(Duration::from_millis(100)));
        assert_eq!(sys::status_of(plain.pid()), Err(CallError::ServerDown));
        sup.shutdown().unwrap();
        assert_eq!(
            sys::status_of(child),
            Err(CallError::ServerDown),
            "forgotten when it ends"
        );
    });
}

/// A typed actor for sys: its loops (`actor::spawn`, `actor::start`).
#[derive(smarm::Actor)]
enum Tally {
    Add(u64),
    Get(Reply<u64>),
}

#[derive(Clone, Debug, PartialEq)]
struct Total(u64);

impl Handler<Tally> for Total {
    fn handle(&mut self, msg: Tally) -> Flow {
        match msg {
            Tally::Add(n) => self.0 += n,
            Tally::Get(reply) => {
                reply.reply(self.0);
            }
        }
        Flow::Continue
    }

    fn format_status(&self) -> String {
        format!("total {}", self.0)
    }
}

/// Starts a tally one way.
type Run = fn() -> smarm::Pid<Tally>;

/// Both ways to run a typed actor's own loop.
fn tallies() -> [(&'static str, Run); 2] {
    [
        ("spawn", || actor::spawn(Total(0))),
        ("start", || actor::start(Total(0)).unwrap()),
    ]
}

#[test]
fn a_suspended_typed_actors_queued_call_completes_after_resume() {
    for threads in THREADS {
        run_with(threads, || {
            for (how, run) in tallies() {
                let tally = run();
                tally.add(1).unwrap();
                sys::suspend(&tally).unwrap();
                let (done_tx, done) = smarm::channel();
                smarm::spawn(move || {
                    tally.add(10).unwrap();
                    let _ = done_tx.send(tally.get());
                });
                smarm::sleep(Duration::from_millis(50));
                assert!(
                    matches!(done.try_recv(), Ok(None)),
                    "{how}: answered while suspended"
                );
                let status = sys::get_status(&tally).unwrap();
                assert!(status.suspended, "{how}");
                assert_eq!(status.behaviour, "actor");
                assert_eq!(status.state, "total 1");
                assert!(status.module.ends_with("Total"), "{}", status.module);
                assert_eq!(sys::get_state_of::<Total>(&tally), Ok(Total(1)));
                assert_eq!(
                    sys::replace_state_of::<Total>(&tally, |t| t.0 = 100),
                    Ok(Total(100))
                );
                sys::resume(&tally).unwrap();
                // The queued cast, then the call, in order, on the new state.
                assert_eq!(
                    done.recv_timeout(Duration::from_secs(10)).unwrap(),
                    Ok(110),
                    "{how}"
                );
                assert!(!sys::get_status(&tally).unwrap().suspended);
                smarm::request_stop(tally);
            }
        });
    }
}

#[test]
fn a_typed_actors_state_by_type_survives_a_panicking_function_and_names_a_wrong_type() {
    run_with(2, || {
        for (how, run) in tallies() {
            let tally = run();
            tally.add(5).unwrap();
            let r = sys::replace_state_of::<Total>(&tally, |t| {
                t.0 = 0;
                panic!("bad replacement");
            });
            assert_eq!(r, Err(sys::StateError::Panicked("bad replacement".into())));
            assert_eq!(tally.get(), Ok(5), "{how}: the state is as it was");
            let wrong = sys::get_state_of::<Counter>(&tally).unwrap_err();
            assert!(
                matches!(wrong, sys::StateError::NotItsType { asked, holds }
                    if asked.ends_with("Counter") && holds.ends_with("Total")),
                "{wrong:?}"
            );
            assert!(wrong.to_string().contains("not a"), "{wrong}");
            smarm::request_stop(tally);
        }
        // By type, by pid, on the other behaviours too.
        let server = gen_server::start::<Counter>(()).unwrap();
        server.cast(3).unwrap();
        let by_pid = server.pid();
        assert_eq!(sys::get_state_of::<Counter>(&by_pid).unwrap().count, 3);
        let new = sys::replace_state_of::<Counter>(&server, |c| c.count = 7).unwrap();
        assert_eq!(new.count, 7);
        assert_eq!(server.call(()), Ok(7));
        let door = gen_statem::start::<Door>(()).unwrap();
        assert_eq!(sys::get_state_of::<Door>(&door.pid()).unwrap().opened, 0);
    });
}

#[test]
fn a_typed_actors_statistics_log_and_installed_functions_see_each_message() {
    run_with(2, || {
        for (how, run) in tallies() {
            let tally = run();
            sys::statistics(&tally, Stats::On).unwrap();
            sys::log(&tally, Log::On(10)).unwrap();
            let seen = Arc::new(AtomicU32::new(0));
            let s = seen.clone();
            sys::install(&tally, "count", move |_| {
                s.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
            tally.add(1).unwrap();
            for _ in 0..3 {
                tally.add(1).unwrap();
            }
            assert_eq!(tally.get(), Ok(4));
            let stats = sys::statistics(&tally, Stats::Get).unwrap().unwrap();
            assert_eq!((stats.messages_in, stats.calls_in), (5, 1), "{how}");
            let events = sys::log(&tally, Log::Get).unwrap();
            let kinds: Vec<_> = events
                .iter()
                .map(|e| (e.kind, e.message.as_str()))
                .collect();
            assert_eq!(kinds[0], ("cast", "Add"));
            assert_eq!(kinds[4], ("call", "Get"));
            assert!(events.iter().all(|e| e.pid == tally.erase()));
            assert_eq!(seen.load(Ordering::SeqCst), 5);
            sys::no_debug(&tally).unwrap();
            tally.add(1).unwrap();
            assert_eq!(tally.get(), Ok(5));
            assert_eq!(seen.load(Ordering::SeqCst), 5, "removed by no_debug");
            smarm::request_stop(tally);
        }
    });
}

#[test]
fn sys_requests_racing_a_typed_actors_messages_are_all_answered_in_order() {
    use std::sync::atomic::AtomicBool;
    const ROUNDS: u64 = 5_000;
    let _guard = support::HangGuard::new(Duration::from_secs(120), "a lost sys request");
    for threads in THREADS {
        run_with(threads, || {
            for (how, run) in tallies() {
                let tally = run();
                // Two actors each add, then ask for the state, while a
                // third floods the mailbox (long batches: the window in
                // which a request could overtake a message): every request
                // is answered after the asker's own adds (its count, in its
                // own bits of the total, is exact), every message handled
                // once.
                let done = Arc::new(AtomicBool::new(false));
                let flooding = done.clone();
                let sender = smarm::spawn(move || {
                    let mut sent = 0u64;
                    while !flooding.load(Ordering::SeqCst) {
                        tally.add(1 << 40).unwrap();
                        sent += 1;
                        if sent.is_multiple_of(256) {
                            smarm::yield_now();
                        }
                    }
                    sent
                });
                let askers: Vec<_> = (0..2)
                    .map(|i| {
                        smarm::spawn(move || {
                            for round in 1..=ROUNDS {
                                tally.add(1 << (20 * i)).unwrap();
                                let Total(now) = sys::get_state_of::<Total>(&tally).unwrap();
                                let mine = (now >> (20 * i)) & ((1 << 20) - 1);
                                assert_eq!(mine, round, "a request overtook the asker's add");
                            }
                        })
                    })
                    .collect();
                for a in askers {
                    a.join().unwrap();
                }
                done.store(true, Ordering::SeqCst);
                let sent = sender.join().unwrap();
                assert_eq!(
                    tally.get(),
                    Ok((sent << 40) + (ROUNDS << 20) + ROUNDS),
                    "{how}"
                );
                smarm::request_stop(tally);
            }
        });
    }
}

#[test]
fn a_typed_actor_is_forgotten_by_sys_when_it_ends() {
    run_with(2, || {
        for (how, run) in tallies() {
            let tally = run();
            assert_eq!(sys::status_of(tally.erase()).unwrap().state, "total 0");
            smarm::request_stop(tally);
            while smarm::actor_info(tally.erase()).is_some() {
                smarm::sleep(Duration::from_millis(1));
            }
            assert_eq!(
                sys::get_status(&tally),
                Err(CallError::ServerDown),
                "{how}: forgotten when it ends"
            );
        }
    });
}

#[test]
fn a_typed_actor_run_as_a_gen_server_shows_its_handler_to_sys() {
    run_with(2, || {
        let served = gen_server::start::<actor::Served<Tally, Total>>(Total(0)).unwrap();
        sys::log(&served, Log::On(10)).unwrap();
        served.add(2).unwrap();
        assert_eq!(served.get(), Ok(2));
        // Its messages as the typed loop shows them, its handler's status
        // and state.
        let events = sys::log(&served, Log::Get).unwrap();
        let kinds: Vec<_> = events
            .iter()
            .map(|e| (e.kind, e.message.as_str()))
            .collect();
        assert_eq!(kinds, [("cast", "Add"), ("call", "Get")]);
        let status = sys::get_status(&served).unwrap();
        assert_eq!(
            (status.behaviour, status.state.as_str()),
            ("gen_server", "total 2")
        );
        assert_eq!(sys::get_state_of::<Total>(&served), Ok(Total(2)));
        sys::replace_state_of::<Total>(&served, |t| t.0 = 9).unwrap();
        assert_eq!(served.get(), Ok(9));
        served.shutdown().unwrap();
    });
}

#[test]
fn a_root_returning_while_behaviours_are_suspended_ends_the_run() {
    for threads in THREADS {
        let began = std::time::Instant::now();
        run_with(threads, || {
            let server = gen_server::start::<Counter>(()).unwrap();
            let door = gen_statem::start::<Door>(()).unwrap();
            let sup = supervisor::start(SupFlags::new(Strategy::OneForOne), vec![]).unwrap();
            let tally = actor::spawn(Total(0));
            sys::suspend(&server).unwrap();
            sys::suspend(&door).unwrap();
            sys::suspend(&sup).unwrap();
            sys::suspend(&tally).unwrap();
            // Each with a message it keeps for after.
            server.cast(1).unwrap();
            door.cast(()).unwrap();
            smarm::send_to(tally, Tally::Add(1)).unwrap();
        });
        // The root-exit sweep stops them as any parked actor (the run took
        // 3,600 s per suspended behaviour before).
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "{threads} schedulers: {:?}",
            began.elapsed()
        );
    }
}

#[test]
fn a_suspended_behaviour_counts_the_messages_it_keeps_in_its_mailbox_length() {
    for threads in THREADS {
        run_with(threads, || {
            let server = gen_server::start::<Counter>(()).unwrap();
            sys::suspend(&server).unwrap();
            for n in 1..=3 {
                server.cast(n).unwrap();
            }
            // The status request is answered after the three are kept.
            let status = sys::get_status(&server).unwrap();
            assert_eq!((status.suspended, status.mailbox_len), (true, 3));
            sys::resume(&server).unwrap();
            assert_eq!(server.call(()), Ok(6));
            assert_eq!(sys::get_status(&server).unwrap().mailbox_len, 0);

            let door = gen_statem::start::<Door>(()).unwrap();
            sys::suspend(&door).unwrap();
            for _ in 0..3 {
                door.cast(()).unwrap();
            }
            let status = sys::get_status(&door).unwrap();
            assert_eq!((status.suspended, status.mailbox_len), (true, 3));
            sys::resume(&door).unwrap();
            assert_eq!(door.call(()), Ok(2), "opened twice in three casts");
            assert_eq!(sys::get_status(&door).unwrap().mailbox_len, 0);

            for (how, run) in tallies() {
                let tally = run();
                sys::suspend(&tally).unwrap();
                for _ in 0..3 {
                    tally.add(2).unwrap();
                }
                let status = sys::get_status(&tally).unwrap();
                assert_eq!((status.suspended, status.mailbox_len), (true, 3), "{how}");
                sys::resume(&tally).unwrap();
                assert_eq!(tally.get(), Ok(6), "{how}");
                assert_eq!(sys::get_status(&tally).unwrap().mailbox_len, 0, "{how}");
                smarm::request_stop(tally);
            }
        });
    }
}

#[test]
fn a_typed_actor_suspended_and_resumed_by_racing_callers_loses_no_request_or_message() {
    const ROUNDS: u64 = 300;
    let _guard = support::HangGuard::new(
        Duration::from_secs(120),
        "a lost sys request to a suspended typed actor",
    );
    for threads in THREADS {
        run_with(threads, || {
            for (how, run) in tallies() {
                let tally = run();
                // Two callers suspend, ask and resume while a third adds:
                // requests reach the loop in batches, a resume with others
                // behind it (answered once it runs again), and every
                // message is kept while suspended and handled once.
                let togglers: Vec<_> = (0..2)
                    .map(|_| {
                        smarm::spawn(move || {
                            for _ in 0..ROUNDS {
                                sys::suspend(&tally).unwrap();
                                sys::get_status(&tally).unwrap();
                                sys::resume(&tally).unwrap();
                            }
                        })
                    })
                    .collect();
                let adder = smarm::spawn(move || {
                    for _ in 0..ROUNDS {
                        tally.add(1).unwrap();
                    }
                });
                for t in togglers {
                    t.join().unwrap();
                }
                adder.join().unwrap();
                // The last request answered was a resume.
                assert!(!sys::get_status(&tally).unwrap().suspended, "{how}");
                assert_eq!(tally.get(), Ok(ROUNDS), "{how}");
                smarm::request_stop(tally);
            }
        });
    }
}

/// A server whose `terminate` says why it ran.
struct Noting(smarm::Sender<String>);

impl GenServer for Noting {
    type Args = smarm::Sender<String>;
    type Call = ();
    type Reply = ();
    type Cast = ();
    type Info = ();
    fn init(said: smarm::Sender<String>, _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Noting(said))
    }
    fn handle_call(&mut self, _: (), reply: Reply<()>, _: &mut Ctx<Self>) -> Flow {
        reply.reply(());
        Flow::Continue
    }
    fn terminate(&mut self, reason: &gen_server::StopReason, _: &mut Ctx<Self>) {
        let _ = self.0.send(format!("terminate: {reason}"));
    }
}

#[test]
fn sys_terminate_stops_a_process_through_terminate_suspended_or_not() {
    use gen_server::StopReason;
    for threads in THREADS {
        run_with(threads, || {
            for suspend in [false, true] {
                let (said_tx, said) = smarm::channel();
                let server = gen_server::start::<Noting>(said_tx).unwrap();
                let m = smarm::monitor(server.pid());
                if suspend {
                    sys::suspend(&server).unwrap();
                }
                sys::terminate(&server, StopReason::Error("operator".into())).unwrap();
                // Acknowledged after `terminate` ran: said already.
                assert_eq!(
                    said.try_recv().unwrap().unwrap(),
                    "terminate: error: operator"
                );
                assert_eq!(m.rx.recv().unwrap().reason, smarm::DownReason::Panic);
            }
            let door = gen_statem::start::<Door>(()).unwrap();
            let m = smarm::monitor(door.pid());
            sys::suspend(&door).unwrap();
            sys::terminate(&door, StopReason::Shutdown).unwrap();
            assert_eq!(m.rx.recv().unwrap().reason, smarm::DownReason::Exit);
            for (how, run) in tallies() {
                let tally = run();
                let m = smarm::monitor(tally);
                sys::terminate(&tally, StopReason::Normal).unwrap();
                assert_eq!(
                    m.rx.recv().unwrap().reason,
                    smarm::DownReason::Exit,
                    "{how}"
                );
            }
        });
    }
}

#[test]
fn a_suspended_server_ends_at_a_stop_request_and_at_its_parents_exit() {
    run_with(2, || {
        let server = gen_server::start::<Counter>(()).unwrap();
        let m = smarm::monitor(server.pid());
        sys::suspend(&server).unwrap();
        smarm::request_stop(server.pid());
        assert_eq!(m.rx.recv().unwrap().reason, smarm::DownReason::Stopped);

        // A server that traps exits, suspended: its parent's exit (a
        // message it reads while suspended) ends it.
        let (pid_tx, pid_rx) = smarm::channel();
        let parent = smarm::spawn(move || {
            let server = gen_server::start_link::<Trapping>(()).unwrap();
            sys::suspend(&server).unwrap();
            pid_tx.send(server.pid()).unwrap();
            smarm::exit_with("parent failed");
        });
        let child = pid_rx.recv().unwrap();
        let m = smarm::monitor(child);
        let _ = parent.join();
        let reason = m.rx.recv_timeout(Duration::from_secs(10)).unwrap().reason;
        assert!(reason.is_abnormal(), "{reason:?}");
    });
}

/// A server that traps exits.
struct Trapping;

impl GenServer for Trapping {
    type Args = ();
    type Call = ();
    type Reply = ();
    type Cast = ();
    type Info = ();
    fn init(_: (), ctx: &mut Ctx<Self>) -> Result<Self, InitError> {
        ctx.trap_exits();
        Ok(Trapping)
    }
    fn handle_call(&mut self, _: (), reply: Reply<()>, _: &mut Ctx<Self>) -> Flow {
        reply.reply(());
        Flow::Continue
    }
}

/// A typed actor whose message enum implements `Debug`.
#[derive(smarm::Actor, Debug)]
enum Shown {
    Add(u64),
}

struct ShownTotal(u64);

impl Handler<Shown> for ShownTotal {
    fn handle(&mut self, Shown::Add(n): Shown) -> Flow {
        self.0 += n;
        Flow::Continue
    }
}

#[test]
fn events_show_a_debug_message_by_value_and_the_registered_name() {
    run_with(2, || {
        let shown = actor::spawn(ShownTotal(0));
        sys::log(&shown, Log::On(5)).unwrap();
        smarm::send_to(shown, Shown::Add(7)).unwrap();
        let events = sys::log(&shown, Log::Get).unwrap();
        assert_eq!(events[0].message, "Add(7)", "by its Debug");
        assert_eq!(
            events[0].to_string(),
            format!("*DBG* {} got cast Add(7)", shown.erase())
        );

        let server =
            gen_server::start_named::<Counter>(gen_server::ServerName::new("counted"), ()).unwrap();
        sys::log(&server, Log::On(5)).unwrap();
        server.cast(3).unwrap();
        let events = sys::log(&server, Log::Get).unwrap();
        assert_eq!(events[0].name, Some("counted"));
        assert_eq!(events[0].to_string(), "*DBG* counted got cast u64");
    });
}
