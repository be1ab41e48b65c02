//! gen_server: calls, casts, infos, deferred replies, timers, failure and
//! shutdown semantics.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::DownReason;
use smarm::gen_server::{
    self, Builder, CallError, Ctx, Flow, GenServer, InitError, Reply, ServerName, StartError,
    StopReason,
};
use smarm::time::TimerId;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::run_with;

/// A test server: a log of what it saw, deferred replies, timers.
#[derive(Clone, Default)]
struct Probe {
    seen: Vec<u64>,
    #[allow(clippy::type_complexity)]
    terminated: Option<Arc<Mutex<Option<StopReason>>>>,
    waiting: Vec<Arc<Mutex<Option<Reply<u64>>>>>,
    timer: Option<TimerId>,
}

enum Req {
    Echo(u64),
    Panic,
    SleepThenEcho(Duration, u64),
    /// Keep the reply; answer when `Release` arrives.
    Defer,
    Release(u64),
    Seen,
    Drop,
    Stop(StopReason),
    Arm(Duration, u64),
    Disarm,
}

impl GenServer for Probe {
    type Args = Option<Arc<Mutex<Option<StopReason>>>>;
    type Call = Req;
    type Reply = u64;
    type Cast = u64;
    type Info = u64;

    fn init(terminated: Self::Args, _ctx: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Probe {
            terminated,
            ..Probe::default()
        })
    }

    fn handle_call(&mut self, req: Req, reply: Reply<u64>, ctx: &mut Ctx<Self>) -> Flow {
        match req {
            Req::Echo(n) => {
                reply.reply(n);
            }
            Req::Panic => panic!("server failed mid-call"),
            Req::SleepThenEcho(d, n) => {
                smarm::sleep(d);
                reply.reply(n);
            }
            Req::Defer => self.waiting.push(Arc::new(Mutex::new(Some(reply)))),
            Req::Release(n) => {
                for w in self.waiting.drain(..) {
                    w.lock().unwrap().take().unwrap().reply(n);
                }
                reply.reply(0);
            }
            Req::Seen => {
                reply.reply(self.seen.len() as u64);
            }
            Req::Drop => drop(reply),
            Req::Stop(reason) => {
                reply.reply(1);
                return Flow::Stop(reason);
            }
            Req::Arm(d, n) => {
                self.timer = Some(ctx.send_after(d, n));
                reply.reply(0);
            }
            Req::Disarm => {
                let cancelled = self.timer.take().is_some_and(|t| ctx.cancel_timer(t));
                reply.reply(u64::from(cancelled));
            }
        }
        Flow::Continue
    }

    fn handle_cast(&mut self, n: u64, _ctx: &mut Ctx<Self>) -> Flow {
        self.seen.push(n);
        Flow::Continue
    }

    fn handle_info(&mut self, n: u64, _ctx: &mut Ctx<Self>) -> Flow {
        self.seen.push(n);
        Flow::Continue
    }

    fn terminate(&mut self, reason: &StopReason, _ctx: &mut Ctx<Self>) {
        if let Some(t) = &self.terminated {
            *t.lock().unwrap() = Some(reason.clone());
        }
    }
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Probe({:?})", self.seen)
    }
}

#[test]
fn calls_reply_and_casts_keep_their_order() {
    run_with(2, || {
        let s = gen_server::start::<Probe>(None).unwrap();
        assert_eq!(s.call(Req::Echo(7)), Ok(7));
        for n in 0..1_000 {
            s.cast(n).unwrap();
        }
        assert_eq!(
            s.call(Req::Seen),
            Ok(1_000),
            "a call after casts sees them all"
        );
        let seen = s.inspect(|p| p.seen.clone()).unwrap();
        assert_eq!(
            seen,
            (0..1_000).collect::<Vec<_>>(),
            "casts arrive in order"
        );
        assert_eq!(s.get_state().unwrap().seen.len(), 1_000);
        s.shutdown().unwrap();
    });
}

#[test]
fn a_call_to_a_server_that_panics_mid_call_fails_at_once() {
    run_with(2, || {
        let s = gen_server::start::<Probe>(None).unwrap();
        let m = smarm::monitor(s.pid());
        let t0 = Instant::now();
        assert_eq!(s.call(Req::Panic), Err(CallError::ServerDown));
        assert!(t0.elapsed() < Duration::from_secs(1), "not the 5 s timeout");
        assert_eq!(m.rx.recv().unwrap().reason, DownReason::Panic);
        // Calls to the dead server fail at once too.
        let t0 = Instant::now();
        assert_eq!(s.call(Req::Echo(1)), Err(CallError::ServerDown));
        assert!(t0.elapsed() < Duration::from_secs(1), "not the 5 s timeout");
        assert!(!s.is_alive());
        assert!(
            s.cast(5).is_err(),
            "a cast to a dead server hands the message back"
        );
    });
}

#[test]
fn queued_calls_fail_when_the_server_dies() {
    run_with(2, || {
        let s = gen_server::start::<Probe>(None).unwrap();
        let busy = s.clone();
        // Occupy the server, then queue calls behind a panic.
        let first = smarm::spawn(move || {
            let _ = busy.call(Req::SleepThenEcho(Duration::from_millis(20), 1));
        });
        smarm::sleep(Duration::from_millis(5));
        let panicker = s.clone();
        let p = smarm::spawn(move || {
            let _ = panicker.call(Req::Panic);
        });
        smarm::sleep(Duration::from_millis(2));
        let t0 = Instant::now();
        assert_eq!(s.call(Req::Echo(3)), Err(CallError::ServerDown));
        assert!(t0.elapsed() < Duration::from_secs(1));
        first.join().unwrap();
        p.join().unwrap();
    });
}

#[test]
fn timeouts_fire_and_a_late_reply_never_reaches_a_later_call() {
    run_with(2, || {
        let s = gen_server::start::<Probe>(None).unwrap();
        let t0 = Instant::now();
        let r = s.call_timeout(
            Req::SleepThenEcho(Duration::from_millis(50), 111),
            Duration::from_millis(10),
        );
        assert_eq!(r, Err(CallError::Timeout(Duration::from_millis(10))));
        assert!(
            t0.elapsed() < Duration::from_millis(45),
            "the timeout fired on time"
        );
        // The late 111 is discarded: the next call gets its own answer.
        assert_eq!(s.call(Req::Echo(222)), Ok(222));
        for i in 0..50 {
            assert_eq!(s.call(Req::Echo(i)), Ok(i));
        }
        s.shutdown().unwrap();
    });
}

#[test]
fn deferred_replies_are_answered_later() {
    run_with(2, || {
        let s = gen_server::start::<Probe>(None).unwrap();
        let (tx, rx) = smarm::channel::<Result<u64, CallError>>();
        for _ in 0..3 {
            let (s, tx) = (s.clone(), tx.clone());
            drop(smarm::spawn(move || tx.send(s.call(Req::Defer)).unwrap()));
        }
        smarm::sleep(Duration::from_millis(10));
        assert_eq!(rx.try_recv(), Ok(None), "nobody is answered yet");
        assert_eq!(s.call(Req::Release(9)), Ok(0));
        for _ in 0..3 {
            assert_eq!(rx.recv().unwrap(), Ok(9));
        }
        // A reply slot dropped unanswered fails its call at once.
        assert_eq!(s.call(Req::Drop), Err(CallError::ServerDown));
        assert!(s.is_alive(), "the server itself is fine");
        s.shutdown().unwrap();
    });
}

#[test]
fn server_timers_fire_into_handle_info_and_can_be_cancelled() {
    run_with(2, || {
        let s = gen_server::start::<Probe>(None).unwrap();
        s.call(Req::Arm(Duration::from_millis(5), 42)).unwrap();
        smarm::sleep(Duration::from_millis(30));
        assert_eq!(s.inspect(|p| p.seen.clone()).unwrap(), vec![42]);
        s.call(Req::Arm(Duration::from_millis(20), 43)).unwrap();
        assert_eq!(s.call(Req::Disarm), Ok(1), "cancelled before it fired");
        smarm::sleep(Duration::from_millis(40));
        assert_eq!(
            s.inspect(|p| p.seen.clone()).unwrap(),
            vec![42],
            "never fired"
        );
        s.info(44).unwrap();
        assert_eq!(s.call(Req::Seen), Ok(2));
        s.shutdown().unwrap();
    });
}

#[test]
fn every_way_out_runs_terminate_with_its_reason() {
    run_with(2, || {
        type Case = (fn(&gen_server::GenServerRef<Probe>), StopReason, DownReason);
        let cases: Vec<Case> = vec![
            (
                |s| s.shutdown().unwrap(),
                StopReason::Shutdown,
                DownReason::Exit,
            ),
            (
                |s| assert_eq!(s.call(Req::Stop(StopReason::Normal)), Ok(1)),
                StopReason::Normal,
                DownReason::Exit,
            ),
            (
                |s| assert_eq!(s.call(Req::Stop(StopReason::Error("bad".into()))), Ok(1)),
                StopReason::Error("bad".into()),
                DownReason::Panic,
            ),
            (
                |s| smarm::request_stop(s.pid()),
                StopReason::Shutdown,
                DownReason::Stopped,
            ),
            (
                |s| assert_eq!(s.call(Req::Panic), Err(CallError::ServerDown)),
                StopReason::Error("server failed mid-call".into()),
                DownReason::Panic,
            ),
        ];
        for (stop, reason, down) in cases {
            let seen = Arc::new(Mutex::new(None));
            let s = gen_server::start::<Probe>(Some(seen.clone())).unwrap();
            let m = smarm::monitor(s.pid());
            stop(&s);
            assert_eq!(m.rx.recv().unwrap().reason, down, "{reason:?}");
            assert_eq!(seen.lock().unwrap().clone(), Some(reason));
        }
    });
}

struct Fails;
impl GenServer for Fails {
    type Args = bool; // true: panic, false: return an error
    type Call = ();
    type Reply = ();
    type Cast = ();
    type Info = ();
    fn init(panic: bool, _ctx: &mut Ctx<Self>) -> Result<Self, InitError> {
        if panic {
            panic!("init exploded");
        }
        Err("no database".into())
    }
    fn handle_call(&mut self, _: (), reply: Reply<()>, _: &mut Ctx<Self>) -> Flow {
        reply.reply(());
        Flow::Continue
    }
}

const FAILS: ServerName<Fails> = ServerName::new("fails");
const PROBE: ServerName<Probe> = ServerName::new("probe");

#[test]
fn start_reports_init_failures_and_taken_names() {
    run_with(2, || {
        match gen_server::start::<Fails>(false) {
            Err(StartError::Init(e)) => assert_eq!(e.to_string(), "no database"),
            other => panic!("expected Init, got {other:?}"),
        }
        assert!(matches!(
            gen_server::start::<Fails>(true),
            Err(StartError::InitPanicked)
        ));
        assert!(matches!(
            gen_server::start_named(FAILS, false),
            Err(StartError::Init(_))
        ));
        assert!(
            smarm::whereis("fails").is_none(),
            "a failed start leaves no name"
        );
        let first = gen_server::start_named(PROBE, None).unwrap();
        match gen_server::start_named(PROBE, None) {
            Err(StartError::NameTaken { name, holder }) => {
                assert_eq!((name, holder), ("probe", first.pid()));
            }
            other => panic!("expected NameTaken, got {other:?}"),
        }
        first.shutdown().unwrap();
    });
}

#[test]
fn a_restarted_named_server_is_reachable_by_name_at_once() {
    run_with(2, || {
        for round in 0..20u64 {
            let s = Builder::new().name(PROBE).start(None).unwrap();
            // Resolves the moment start returns.
            let found = gen_server::whereis_server(PROBE).unwrap();
            assert_eq!(found.pid(), s.pid());
            assert_eq!(found.call(Req::Echo(round)), Ok(round));
            if round % 2 == 0 {
                assert_eq!(s.call(Req::Panic), Err(CallError::ServerDown));
            } else {
                s.shutdown().unwrap();
            }
            assert!(
                gen_server::whereis_server(PROBE).is_none(),
                "the dead holder's name is gone"
            );
        }
    });
}

/// A request that keeps its server unwinding: its drop (during the
/// unwind of a panic in `handle_call`) says so, then waits for `gate`.
struct Lingering {
    parked: smarm::Sender<()>,
    gate: smarm::Receiver<()>,
}

impl Drop for Lingering {
    fn drop(&mut self) {
        let _ = self.parked.send(());
        let _ = self.gate.recv();
    }
}

/// Panics on a `Lingering` request (dropped after the `Reply`: parameters
/// drop in reverse order) and drops the `Reply` of any other unanswered.
struct Crasher {
    terminated: Arc<Mutex<bool>>,
}

impl GenServer for Crasher {
    type Args = Arc<Mutex<bool>>;
    type Call = Option<Lingering>;
    type Reply = ();
    type Cast = ();
    type Info = ();

    fn init(terminated: Self::Args, _ctx: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Crasher { terminated })
    }

    fn handle_call(&mut self, req: Option<Lingering>, reply: Reply<()>, _: &mut Ctx<Self>) -> Flow {
        match req {
            Some(_) => panic!("crashed holding a call"),
            None => drop(reply),
        }
        Flow::Continue
    }

    fn terminate(&mut self, _reason: &StopReason, _ctx: &mut Ctx<Self>) {
        *self.terminated.lock().unwrap() = true;
    }
}

const CRASHER: ServerName<Crasher> = ServerName::new("crasher");

#[test]
fn a_call_to_a_server_that_crashes_fails_once_the_server_is_gone() {
    // Erlang's caller hears of the crash from its monitor: after the
    // server's terminate, with its name released. The server here stays
    // unwinding (parked in a destructor) until the gate opens.
    run_with(2, || {
        let terminated = Arc::new(Mutex::new(false));
        let server = Builder::new()
            .name(CRASHER)
            .start(terminated.clone())
            .unwrap();
        let (parked_tx, parked_rx) = smarm::channel();
        let (gate_tx, gate_rx) = smarm::channel();
        let opener = smarm::spawn(move || {
            parked_rx.recv().unwrap();
            let alive = gen_server::whereis_server(CRASHER).is_some();
            smarm::sleep(Duration::from_millis(20));
            gate_tx.send(()).unwrap();
            alive
        });
        let lingering = Lingering {
            parked: parked_tx,
            gate: gate_rx,
        };
        assert_eq!(server.call(Some(lingering)), Err(CallError::ServerDown));
        assert!(
            gen_server::whereis_server(CRASHER).is_none(),
            "the crashed server's name is gone when its call fails"
        );
        assert!(!smarm::is_alive(server.pid()));
        assert!(
            *terminated.lock().unwrap(),
            "terminate ran before the call failed"
        );
        assert!(
            opener.join().unwrap(),
            "the server was named while unwinding"
        );
    });
}

#[test]
fn a_reply_dropped_beside_an_actor_parked_mid_unwind_fails_its_call_at_once() {
    // One scheduler: while the crashing server is parked mid-unwind, its
    // panic count is on the thread every other actor runs on; a server
    // there that drops a reply unanswered still fails the call at once.
    run_with(1, || {
        let crashing = Builder::<Crasher>::new().start(Arc::default()).unwrap();
        let dropping = Builder::<Crasher>::new().start(Arc::default()).unwrap();
        let (parked_tx, parked_rx) = smarm::channel();
        let (gate_tx, gate_rx) = smarm::channel();
        let lingering = Lingering {
            parked: parked_tx,
            gate: gate_rx,
        };
        let first = smarm::spawn(move || crashing.call(Some(lingering)));
        parked_rx.recv().unwrap();
        assert_eq!(
            dropping.call_timeout(None, Duration::from_secs(60)),
            Err(CallError::ServerDown),
            "not held back to the dropping server's own end"
        );
        assert!(smarm::is_alive(first.pid()), "the first call still waits");
        gate_tx.send(()).unwrap();
        assert_eq!(first.join().unwrap(), Err(CallError::ServerDown));
        dropping.shutdown().unwrap();
    });
}

#[test]
fn a_call_to_oneself_fails_at_once() {
    use smarm::gen_server::{self, CallError, Flow, GenServer, InitError, Reply};
    struct Me;
    impl GenServer for Me {
        type Args = ();
        type Call = ();
        type Reply = Option<CallError>;
        type Cast = ();
        type Info = ();
        fn init(_: (), _: &mut gen_server::Ctx<Self>) -> Result<Self, InitError> {
            Ok(Me)
        }
        fn handle_call(
            &mut self,
            _: (),
            reply: Reply<Option<CallError>>,
            ctx: &mut gen_server::Ctx<Self>,
        ) -> Flow {
            reply.reply(ctx.me().call(()).err());
            Flow::Continue
        }
    }
    for threads in support::THREADS {
        run_with(threads, || {
            let s = gen_server::start::<Me>(()).unwrap();
            let t0 = Instant::now();
            for _ in 0..100 {
                assert_eq!(s.call(()), Ok(Some(CallError::CallingSelf)));
            }
            assert!(t0.elapsed() < Duration::from_secs(4), "each failed at once");
            s.shutdown().unwrap();
        });
    }
}
