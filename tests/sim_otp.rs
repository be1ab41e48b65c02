//! OTP under deterministic simulation: a supervision tree of gen_servers
//! with calls, timers, crashes and loopback sockets replays exactly from
//! its seed, seeds
//! explore different runs, and supervisors keep OTP's restart rules across
//! a thousand seeds of restart storms.
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, ServerName};
use smarm::gen_statem::{self, Ctx as StatemCtx, Enter, Event, GenStatem, Init, Transition};
use smarm::net::{TcpListener, TcpStream};
use smarm::sim::{self, Sim, Strategy};
use smarm::supervisor::{self, Backoff, ChildSpec, Strategy as Restarts, SupFlags};
use smarm::{DownReason, Pid, Reply, channel};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A counter that ticks on a timer of its own and crashes when poisoned.
struct Counter {
    n: u64,
}

enum Req {
    Add(u64),
    Poison,
}

impl GenServer for Counter {
    type Args = ();
    type Call = Req;
    type Reply = u64;
    type Cast = ();
    type Info = ();

    fn init(_: (), ctx: &mut Ctx<Self>) -> Result<Self, InitError> {
        ctx.send_after(Duration::from_millis(5), ());
        Ok(Counter { n: 0 })
    }

    fn handle_call(&mut self, req: Req, reply: Reply<u64>, _: &mut Ctx<Self>) -> Flow {
        match req {
            Req::Add(k) => {
                self.n += k;
                reply.reply(self.n);
            }
            // Without the panic hook's message: crashes are expected here.
            Req::Poison => std::panic::resume_unwind(Box::new("poisoned")),
        }
        Flow::Continue
    }

    fn handle_info(&mut self, (): (), ctx: &mut Ctx<Self>) -> Flow {
        self.n += 1;
        ctx.send_after(Duration::from_millis(5), ());
        Flow::Continue
    }
}

const COUNTERS: [ServerName<Counter>; 3] = [
    ServerName::new("counter-a"),
    ServerName::new("counter-b"),
    ServerName::new("counter-c"),
];

/// A supervision tree of three counters, a TCP echo service on loopback,
/// and `clients` actors that each make `calls` calls (every fifth one
/// poisons its counter) and echo a line now and then, sleeping between:
/// what the clients saw, in order.
fn service(clients: usize, calls: usize) -> Vec<Vec<Option<u64>>> {
    smarm::report::set_handler(|_| {}); // the expected crash and restart reports
    let flags = SupFlags::new(Restarts::OneForOne).intensity(1_000, Duration::from_secs(60));
    let ids = ["a", "b", "c"];
    let children = ids
        .iter()
        .zip(COUNTERS)
        .map(|(id, name)| ChildSpec::named_server::<Counter>(*id, name, || ()))
        .collect();
    let sup = supervisor::start(flags, children).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let echo = smarm::spawn(move || {
        let conns: Vec<_> = (0..clients)
            .map(|_| {
                let (mut conn, _) = listener.accept().unwrap();
                smarm::spawn(move || {
                    let mut buf = [0u8; 64];
                    while let Ok(n @ 1..) = conn.read(&mut buf) {
                        conn.write_all(&buf[..n]).unwrap();
                    }
                })
            })
            .collect();
        for c in conns {
            c.join().unwrap();
        }
    });
    let kids: Vec<_> = (0..clients)
        .map(|i| {
            smarm::spawn(move || {
                let mut conn = TcpStream::connect(addr).unwrap();
                (0..calls)
                    .map(|j| {
                        let name = COUNTERS[(i * 7 + j) % 3];
                        let poison = j % 5 == 4;
                        if j % 3 == 0 {
                            smarm::sleep(Duration::from_millis(j as u64));
                        }
                        if j % 4 == 1 {
                            let line = [i as u8, j as u8, b'\n'];
                            conn.write_all(&line).unwrap();
                            let mut back = [0u8; 3];
                            conn.read_exact(&mut back).unwrap();
                            assert_eq!(back, line);
                        }
                        client_call(name, poison)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let seen = kids.into_iter().map(|k| k.join().unwrap()).collect();
    echo.join().unwrap();
    sup.shutdown().unwrap();
    seen
}

/// One call, retried while the counter is restarting; `None` for a
/// poisoning call (its counter crashed).
fn client_call(name: ServerName<Counter>, poison: bool) -> Option<u64> {
    loop {
        let Some(server) = gen_server::whereis_server(name) else {
            smarm::sleep(Duration::from_millis(1));
            continue;
        };
        match server.call(if poison { Req::Poison } else { Req::Add(1) }) {
            Ok(v) => return Some(v),
            Err(_) if poison => return None,
            Err(_) => smarm::sleep(Duration::from_millis(1)),
        }
    }
}

#[test]
fn a_supervision_tree_with_calls_timers_crashes_and_sockets_replays_exactly_from_its_seed() {
    for seed in 0..10 {
        let run = Sim::new(seed)
            .schedulers(3)
            .check_determinism(|| service(4, 12))
            .unwrap_or_else(|e| panic!("{e}"));
        // Every poisoning call saw its counter crash; every other got a count.
        for seen in &run.value {
            assert_eq!(seen.iter().filter(|v| v.is_none()).count(), 2);
        }
        assert!(run.elapsed > Duration::from_millis(9), "{:?}", run.elapsed);
    }
}

#[test]
fn different_seeds_take_different_runs() {
    let digests: BTreeSet<u64> = (0..100)
        .map(|seed| {
            Sim::new(seed)
                .schedulers(3)
                .run(|| service(3, 8))
                .unwrap_or_else(|e| panic!("{e}"))
                .digest
        })
        .collect();
    assert!(
        digests.len() >= 99,
        "{} distinct runs of 100",
        digests.len()
    );
}

#[test]
fn preemption_and_pct_replay_too() {
    let sim = Sim::new(77)
        .schedulers(2)
        .preempt_one_in(3)
        .strategy(Strategy::Pct {
            depth: 3,
            steps: 2_000,
        });
    sim.check_determinism(|| service(3, 10))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// A supervisor whose only child crashes at once: it restarts it
/// `intensity` times and then gives up with `shutdown` (OTP's rule), and
/// its parent, which traps exits, sees that exit.
fn restart_storm(intensity: u32) -> (usize, DownReason) {
    smarm::report::set_handler(|_| {});
    let (starts_tx, starts_rx) = channel::<Pid>();
    let exits = smarm::trap_exit(true).unwrap();
    let sup = supervisor::start_link(
        SupFlags::new(Restarts::OneForOne).intensity(intensity, Duration::from_secs(10)),
        vec![ChildSpec::actor("crasher", move || {
            starts_tx.send(smarm::self_pid()).unwrap();
            smarm::sleep(Duration::from_micros(100));
            std::panic::resume_unwind(Box::new("always fails"));
        })],
    )
    .unwrap();
    let exit = exits.recv().unwrap();
    assert_eq!(exit.from, sup.pid());
    let starts = std::iter::from_fn(|| starts_rx.try_recv().ok().flatten()).count();
    (starts, exit.reason)
}

#[test]
fn a_thousand_seeds_of_restart_storms_keep_otps_intensity_rule() {
    let digests = Sim::new(0)
        .schedulers(2)
        .check(0..1_000, || {
            let (starts, reason) = restart_storm(3);
            // The first start and three restarts; the fourth crash is one
            // too many in the period.
            assert_eq!(starts, 4);
            assert_eq!(reason, DownReason::Shutdown);
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(digests.len(), 1_000);
}

/// The guide's code lock: buttons while locked, the right code opens it
/// for 50 ms, buttons pressed while open wait (postponed) until it locks.
struct Lock {
    code: Vec<u8>,
    buttons: Vec<u8>,
    /// (opened, at) for each state entered, in simulated time.
    log: Vec<(Door, Duration)>,
}

#[derive(Debug, PartialEq, Clone, Copy)]
enum Door {
    Locked,
    Open,
}

impl GenStatem for Lock {
    type Args = Vec<u8>;
    type State = Door;
    type Call = ();
    type Reply = Vec<(Door, Duration)>;
    type Cast = u8;
    type Info = ();
    type Internal = ();
    type Timeout = ();

    fn init(code: Vec<u8>, _: &mut StatemCtx<Self>) -> Result<Init<Self>, InitError> {
        let lock = Lock {
            code,
            buttons: vec![],
            log: vec![],
        };
        Ok(Init::new(Door::Locked, lock))
    }

    fn handle_event(
        &mut self,
        state: &Door,
        event: Event<Self>,
        _: &mut StatemCtx<Self>,
    ) -> Transition<Self> {
        match (state, event) {
            (Door::Locked, Event::Cast(button)) => {
                self.buttons.push(button);
                if self.buttons.ends_with(&self.code) {
                    Transition::next_state(Door::Open)
                } else {
                    Transition::keep_state()
                }
            }
            (Door::Open, event @ Event::Cast(_)) => Transition::keep_state().postpone(event),
            (Door::Open, Event::StateTimeout(())) => Transition::next_state(Door::Locked),
            (_, Event::Call((), reply)) => Transition::keep_state().reply(reply, self.log.clone()),
            _ => Transition::keep_state(),
        }
    }

    fn state_enter(&mut self, _: &Door, state: &Door, _: &mut StatemCtx<Self>) -> Enter<Self> {
        self.log.push((*state, sim::elapsed()));
        match state {
            Door::Locked => {
                self.buttons.clear();
                Enter::keep_state()
            }
            Door::Open => Enter::keep_state().state_timeout(Duration::from_millis(50), ()),
        }
    }
}

#[test]
fn gen_statem_state_timeouts_and_postponed_events_hold_under_random_schedules() {
    Sim::new(0)
        .schedulers(3)
        .check(0..300, || {
            let lock = gen_statem::start::<Lock>(vec![1, 2, 3]).unwrap();
            // Two people at the door: one enters the code twice, 10 ms
            // apart (the second time while it is open: postponed); the
            // other presses a wrong button now and then.
            let l = lock.clone();
            let coder = smarm::spawn(move || {
                for _ in 0..2 {
                    for b in [1, 2, 3] {
                        l.cast(b).unwrap();
                    }
                    smarm::sleep(Duration::from_millis(10));
                }
            });
            let l = lock.clone();
            let other = smarm::spawn(move || {
                for _ in 0..3 {
                    l.cast(9).unwrap();
                    smarm::sleep(Duration::from_millis(7));
                }
            });
            coder.join().unwrap();
            other.join().unwrap();
            smarm::sleep(Duration::from_millis(500));
            let log = lock.call(()).unwrap();
            lock.shutdown().unwrap();
            let doors: Vec<Door> = log.iter().map(|(d, _)| *d).collect();
            // Locked, then opened and locked again once per complete code
            // (a 9 pressed between the code's buttons can spoil one).
            assert_eq!(doors[0], Door::Locked);
            assert!(doors.windows(2).all(|w| w[0] != w[1]), "{doors:?}");
            assert_eq!(doors.last(), Some(&Door::Locked), "{log:?}");
            assert!((3..=5).contains(&doors.len()), "{log:?}");
            // Each opening lasts its whole state timeout, never less.
            for w in log.windows(2) {
                if w[0].0 == Door::Open {
                    assert!(w[1].1 - w[0].1 >= Duration::from_millis(50), "{log:?}");
                }
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Periodic work: a tick a second.
struct Ticker(u64);

impl GenServer for Ticker {
    type Args = ();
    type Call = ();
    type Reply = u64;
    type Cast = ();
    type Info = ();

    fn init(_: (), ctx: &mut Ctx<Self>) -> Result<Self, InitError> {
        ctx.send_after(Duration::from_secs(1), ());
        Ok(Ticker(0))
    }

    fn handle_call(&mut self, (): (), reply: Reply<u64>, _: &mut Ctx<Self>) -> Flow {
        reply.reply(self.0);
        Flow::Continue
    }

    fn handle_info(&mut self, (): (), ctx: &mut Ctx<Self>) -> Flow {
        self.0 += 1;
        ctx.send_after(Duration::from_secs(1), ());
        Flow::Continue
    }
}

const TICKER: ServerName<Ticker> = ServerName::new("ticker");

#[test]
#[allow(clippy::disallowed_methods)] // real time: how long the simulated hour takes
fn an_hour_of_a_supervisor_with_backoff_and_periodic_work_runs_in_well_under_a_second() {
    smarm::report::set_handler(|_| {});
    let began = std::time::Instant::now();
    let run = Sim::new(11)
        .run(|| {
            // A child that fails until the database comes up, 20 simulated
            // minutes in, restarted with a backoff of 100 ms doubling to 30 s.
            let (starts_tx, starts_rx) = channel::<Duration>();
            let flaky = ChildSpec::actor("flaky", move || {
                starts_tx.send(sim::elapsed()).unwrap();
                if sim::elapsed() < Duration::from_secs(20 * 60) {
                    std::panic::resume_unwind(Box::new("no database yet"));
                }
                let (_keep, rx) = channel::<()>();
                let _ = rx.recv(); // until stopped
            })
            .backoff(Backoff::new(
                Duration::from_millis(100),
                Duration::from_secs(30),
            ));
            let ticker = ChildSpec::named_server::<Ticker>("ticker", TICKER, || ());
            let sup = supervisor::start(
                SupFlags::new(Restarts::OneForOne).intensity(5, Duration::from_secs(1)),
                vec![flaky, ticker],
            )
            .unwrap();
            smarm::sleep(Duration::from_secs(3600));
            let ticks = gen_server::whereis_server(TICKER)
                .unwrap()
                .call(())
                .unwrap();
            sup.shutdown().unwrap();
            let starts: Vec<Duration> =
                std::iter::from_fn(|| starts_rx.try_recv().ok().flatten()).collect();
            (ticks, starts)
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let wall = began.elapsed();
    let (ticks, starts) = run.value;
    eprintln!(
        "an hour simulated in {wall:?} ({} turns); {ticks} ticks, {} starts of the flaky child",
        run.steps,
        starts.len()
    );
    assert!(run.elapsed >= Duration::from_secs(3600));
    // A tick a second, each timer set from the last tick and late by up
    // to 1 ms: at most 3.6 s of drift in the hour.
    assert!((3596..=3600).contains(&ticks), "{ticks} ticks");
    // Backoff: the restarts come at most 30 s apart, and the last (the
    // one that stays up) 20 minutes in.
    assert!(
        starts
            .windows(2)
            .all(|w| w[1] - w[0] <= Duration::from_millis(30_001 + 1))
    );
    assert!(*starts.last().unwrap() >= Duration::from_secs(20 * 60));
    assert!(starts.len() < 60, "{} starts", starts.len());
    assert!(
        wall < Duration::from_secs(10),
        "{wall:?}: the simulated hour took too long"
    );
}

/// Whether kill times (sorted) put more than `max` restarts inside some
/// window of `period`, by a margin of `slack` either way: `Some(true)`
/// surely, `Some(false)` surely not, `None` too close to call.
fn beyond_intensity(
    kills: &[Duration],
    max: usize,
    period: Duration,
    slack: Duration,
) -> Option<bool> {
    let within = |p: Duration| kills.windows(max + 1).any(|w| w[max] - w[0] < p);
    match (within(period.saturating_sub(slack)), within(period + slack)) {
        (true, _) => Some(true),
        (false, false) => Some(false),
        (false, true) => None,
    }
}

#[test]
fn a_thousand_seeds_of_injected_kills_keep_otps_intensity_rule() {
    let gave_up = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = gave_up.clone();
    Sim::new(0)
        .schedulers(2)
        .check(0..1_000, move || {
            smarm::report::set_handler(|_| {});
            let exits = smarm::trap_exit(true).unwrap();
            let children = ["a", "b", "c"]
                .into_iter()
                .map(|id| {
                    ChildSpec::actor(id, || {
                        let (_keep, rx) = channel::<()>();
                        let _ = rx.recv(); // until killed
                    })
                })
                .collect();
            let period = Duration::from_secs(1);
            let sup = supervisor::start_link(
                SupFlags::new(Restarts::OneForOne).intensity(3, period),
                children,
            )
            .unwrap();
            // Chaos: kill a random child now and then, by the seed.
            let mut kills = Vec::new();
            for _ in 0..6 {
                smarm::sleep(Duration::from_millis(sim::random() % 1_200));
                let Ok(children) = sup.which_children() else {
                    break; // it gave up
                };
                let live: Vec<Pid> = children.iter().filter_map(|c| c.pid).collect();
                if live.is_empty() {
                    continue;
                }
                smarm::exit(
                    live[(sim::random() % live.len() as u64) as usize],
                    smarm::ExitSignal::Kill,
                );
                kills.push(sim::elapsed());
            }
            smarm::sleep(Duration::from_secs(2));
            let exit = exits.try_recv().ok().flatten();
            match beyond_intensity(&kills, 3, period, Duration::from_millis(5)) {
                // A fourth restart within the period: it gave up, with
                // `shutdown` (OTP's reason), and stopped its children.
                Some(true) => {
                    let exit = exit.expect("the supervisor gave up");
                    assert_eq!(exit.from, sup.pid());
                    assert_eq!(exit.reason, DownReason::Shutdown);
                    counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                // Never more than three: it restarted every child.
                Some(false) => {
                    assert!(exit.is_none(), "{exit:?} after kills at {kills:?}");
                    let children = sup.which_children().unwrap();
                    assert!(children.iter().all(|c| c.pid.is_some()), "{children:?}");
                    sup.shutdown().unwrap();
                }
                None => {
                    if exit.is_none() {
                        sup.shutdown().unwrap();
                    }
                }
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // Both outcomes were exercised.
    let gave_up = gave_up.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("the supervisor gave up in {gave_up} of 1,000 seeds");
    assert!(
        (50..950).contains(&gave_up),
        "gave up in {gave_up} of 1,000 seeds"
    );
}

#[test]
fn in_every_schedule_a_crashed_servers_name_is_gone_when_its_call_fails() {
    // Erlang's caller hears of a crash from its monitor, after the
    // server's name is released: a `whereis` straight after the failed
    // call never finds the dead server. smarm's fault sites switch a
    // behaviour out between its end and its terminate: the gap in which a
    // caller woken too early would look.
    let failed_calls = Arc::new(AtomicUsize::new(0));
    let counted = failed_calls.clone();
    Sim::new(0)
        .schedulers(2)
        .preempt_one_in(4)
        .runtime_faults(true)
        .check(0..1_000, move || {
            smarm::report::set_handler(|_| {});
            let server = gen_server::Builder::new()
                .name(COUNTERS[0])
                .start(())
                .unwrap();
            match server.call(Req::Poison) {
                Err(gen_server::CallError::ServerDown) => {
                    assert!(gen_server::whereis_server(COUNTERS[0]).is_none());
                    counted.fetch_add(1, Ordering::Relaxed);
                }
                // A fault site timed the call out at once.
                Err(gen_server::CallError::Timeout(_)) => {}
                other => panic!("{other:?}"),
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(failed_calls.load(Ordering::Relaxed) > 900);
}
