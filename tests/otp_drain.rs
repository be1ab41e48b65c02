//! Draining shutdowns: a server, a state machine and a supervisor's
//! children handle what is already in their mailboxes before `terminate`
//! (which runs once), within the deadline; past it they are stopped.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply, StopReason};
use smarm::gen_statem::{self, Event, GenStatem, Init, Transition};
use smarm::supervisor::{self, ChildSpec, Shutdown, Strategy, SupFlags};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{THREADS, run_with};

/// What a counter saw: casts handled, and at each `terminate` the count
/// then, its name and reason.
#[derive(Default)]
struct Seen {
    handled: u64,
    terminated: Vec<(&'static str, u64, StopReason)>,
}

type Log = Arc<Mutex<Seen>>;

/// Counts its casts, each taking `per_cast`.
struct Counter {
    name: &'static str,
    per_cast: Duration,
    log: Log,
}

impl GenServer for Counter {
    type Args = (&'static str, Duration, Log);
    type Call = ();
    type Reply = ();
    type Cast = ();
    type Info = ();

    fn init((name, per_cast, log): Self::Args, _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Counter {
            name,
            per_cast,
            log,
        })
    }

    fn handle_call(&mut self, _: (), reply: Reply<()>, _: &mut Ctx<Self>) -> Flow {
        reply.reply(());
        Flow::Continue
    }

    fn handle_cast(&mut self, _: (), _: &mut Ctx<Self>) -> Flow {
        if !self.per_cast.is_zero() {
            smarm::sleep(self.per_cast);
        }
        self.log.lock().unwrap().handled += 1;
        Flow::Continue
    }

    fn terminate(&mut self, reason: &StopReason, _: &mut Ctx<Self>) {
        let mut log = self.log.lock().unwrap();
        let handled = log.handled;
        log.terminated.push((self.name, handled, reason.clone()));
    }
}

#[test]
fn a_drained_server_handles_every_queued_cast_then_terminates_once() {
    for threads in THREADS {
        run_with(threads, || {
            let log = Log::default();
            let server =
                gen_server::start::<Counter>(("counter", Duration::ZERO, log.clone())).unwrap();
            for _ in 0..1_000 {
                server.cast(()).unwrap();
            }
            server.drain(Duration::from_secs(10)).unwrap();
            assert!(!server.is_alive());
            let seen = log.lock().unwrap();
            assert_eq!(seen.handled, 1_000);
            assert_eq!(seen.terminated, [("counter", 1_000, StopReason::Shutdown)]);
        });
    }
}

#[test]
fn a_drain_past_its_deadline_is_cut_short_and_terminate_still_runs_once() {
    run_with(2, || {
        let log = Log::default();
        let server =
            gen_server::start::<Counter>(("slow", Duration::from_millis(20), log.clone())).unwrap();
        for _ in 0..100 {
            server.cast(()).unwrap();
        }
        let t0 = Instant::now();
        server.drain(Duration::from_millis(100)).unwrap();
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        let seen = log.lock().unwrap();
        assert!(seen.handled < 100, "cut short: {}", seen.handled);
        assert_eq!(seen.terminated.len(), 1);
        assert_eq!(seen.terminated[0].2, StopReason::Shutdown);
    });
}

/// A state machine counting casts.
struct Machine {
    log: Log,
}

impl GenStatem for Machine {
    type Args = Log;
    type State = ();
    type Call = ();
    type Reply = ();
    type Cast = ();
    type Info = ();
    type Internal = ();
    type Timeout = ();

    fn init(log: Log, _: &mut gen_statem::Ctx<Self>) -> Result<Init<Self>, InitError> {
        Ok(Init::new((), Machine { log }))
    }

    fn handle_event(
        &mut self,
        _: &(),
        event: Event<Self>,
        _: &mut gen_statem::Ctx<Self>,
    ) -> Transition<Self> {
        if let Event::Cast(()) = event {
            self.log.lock().unwrap().handled += 1;
        }
        Transition::keep_state()
    }

    fn terminate(&mut self, reason: &StopReason, _: &(), _: &mut gen_statem::Ctx<Self>) {
        let mut log = self.log.lock().unwrap();
        let handled = log.handled;
        log.terminated.push(("machine", handled, reason.clone()));
    }
}

#[test]
fn a_drained_state_machine_handles_every_queued_cast_then_terminates_once() {
    for threads in THREADS {
        run_with(threads, || {
            let log = Log::default();
            let machine = gen_statem::start::<Machine>(log.clone()).unwrap();
            for _ in 0..1_000 {
                machine.cast(()).unwrap();
            }
            machine.drain(Duration::from_secs(10)).unwrap();
            let seen = log.lock().unwrap();
            assert_eq!(seen.handled, 1_000);
            assert_eq!(seen.terminated, [("machine", 1_000, StopReason::Shutdown)]);
        });
    }
}

const FIRST: gen_server::ServerName<Counter> = gen_server::ServerName::new("drain-first");
const SECOND: gen_server::ServerName<Counter> = gen_server::ServerName::new("drain-second");

#[test]
fn a_drained_supervisor_drains_its_children_in_reverse_start_order() {
    for threads in THREADS {
        run_with(threads, || {
            // One log for both children: their terminations in order.
            let log = Log::default();
            let (l1, l2) = (log.clone(), log.clone());
            let per_cast = Duration::from_micros(200);
            let sup = supervisor::start(
                SupFlags::new(Strategy::OneForOne),
                vec![
                    ChildSpec::named_server::<Counter>("first", FIRST, move || {
                        ("first", per_cast, l1.clone())
                    })
                    .shutdown(Shutdown::Timeout(Duration::from_secs(10))),
                    ChildSpec::named_server::<Counter>("second", SECOND, move || {
                        ("second", per_cast, l2.clone())
                    })
                    .shutdown(Shutdown::Timeout(Duration::from_secs(10))),
                ],
            )
            .unwrap();
            let (first, second) = (
                gen_server::whereis_server(FIRST).unwrap(),
                gen_server::whereis_server(SECOND).unwrap(),
            );
            for _ in 0..200 {
                first.cast(()).unwrap();
                second.cast(()).unwrap();
            }
            sup.drain(Duration::from_secs(30)).unwrap();
            assert!(!sup.is_alive());
            let seen = log.lock().unwrap();
            assert_eq!(seen.handled, 400, "every queued cast of both");
            let order: Vec<_> = seen.terminated.iter().map(|t| t.0).collect();
            assert_eq!(order, ["second", "first"], "reverse start order");
            assert_eq!(
                seen.terminated[1].1, 400,
                "all handled before the last terminate"
            );
        });
    }
}

#[test]
fn a_plain_supervisor_shutdown_does_not_wait_for_the_mailboxes() {
    run_with(2, || {
        let log = Log::default();
        let l = log.clone();
        let sup = supervisor::start(
            SupFlags::new(Strategy::OneForOne),
            vec![ChildSpec::named_server::<Counter>(
                "slow",
                FIRST,
                move || ("slow", Duration::from_millis(10), l.clone()),
            )],
        )
        .unwrap();
        let slow = gen_server::whereis_server(FIRST).unwrap();
        for _ in 0..100 {
            slow.cast(()).unwrap();
        }
        sup.shutdown().unwrap();
        let seen = log.lock().unwrap();
        assert!(
            seen.handled < 100,
            "stopped without draining: {}",
            seen.handled
        );
        assert_eq!(seen.terminated.len(), 1);
    });
}
