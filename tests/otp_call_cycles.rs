//! Calls that could never be answered fail at once instead of waiting out
//! their timeouts: a call to oneself (gen_server, gen_statem, typed actors
//! by pid and by name), and a call that closes a cycle of callers (two and
//! three servers, a child's init calling its supervisor), each many times
//! at 1, 2 and 4 schedulers. And no false positive: slow answers, chains
//! that end, a reply kept and answered later by someone else, a reply
//! passed on with `send_request`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::gen_server::{self, CallError, Ctx, Flow, GenServer, GenServerRef, InitError, Reply};
use smarm::supervisor::{self, ChildSpec, Strategy, SupFlags, SupervisorRef};

use std::time::{Duration, Instant};
use support::{THREADS, run_with};

/// How long a cycle may take to be found here: the mechanism looks after
/// 2 ms; this is generous for a loaded machine, and far below the 5 s a
/// call would otherwise wait.
const FOUND_WITHIN: Duration = Duration::from_secs(1);

/// A server that passes a call along a route: the first hop calls the
/// next with the rest of the route; the last one answers. Errors come back
/// along the route.
struct Hop {
    /// Hold the call this long before answering (as the last hop).
    delay: Duration,
    /// A reply kept to answer later.
    kept: Option<Reply<Answer>>,
    /// What the last call made from a cast got.
    last: Option<Answer>,
}

type Answer = Result<(), CallError>;

enum HopCall {
    Route(Vec<GenServerRef<Hop>>),
    /// Call `to` with the inner call, and answer what it answers.
    Via(GenServerRef<Hop>, Box<HopCall>),
    /// Keep the reply, to answer it on `AnswerKept`.
    Keep,
    AnswerKept,
    /// What the last call made from a cast got.
    Last,
    /// Pass the caller's reply on to `to` with `send_request` (it answers
    /// it), then call `back`.
    PassOnThenCall(GenServerRef<Hop>, GenServerRef<Hop>),
}

impl GenServer for Hop {
    type Args = Duration;
    type Call = HopCall;
    type Reply = Answer;
    /// Call this server, from a cast.
    type Cast = GenServerRef<Hop>;
    type Info = ();

    fn init(delay: Duration, _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Hop {
            delay,
            kept: None,
            last: None,
        })
    }

    fn handle_call(&mut self, call: HopCall, reply: Reply<Answer>, _: &mut Ctx<Self>) -> Flow {
        match call {
            HopCall::Route(mut route) => {
                if route.is_empty() {
                    smarm::sleep(self.delay);
                    reply.reply(Ok(()));
                } else {
                    let next = route.remove(0);
                    reply.reply(next.call(HopCall::Route(route)).and_then(|inner| inner));
                }
            }
            HopCall::Via(to, inner) => {
                reply.reply(to.call(*inner).and_then(|inner| inner));
            }
            HopCall::Keep => self.kept = Some(reply),
            HopCall::AnswerKept => {
                if let Some(kept) = self.kept.take() {
                    kept.reply(Ok(()));
                }
                reply.reply(Ok(()));
            }
            HopCall::Last => {
                reply.reply(self.last.take().unwrap_or(Ok(())));
            }
            HopCall::PassOnThenCall(to, back) => {
                assert!(to.send_request(HopCall::Route(vec![]), reply).is_ok());
                // The caller's reply is owed by `to` now: calling the caller
                // back waits for it to be free; it is no cycle.
                back.call(HopCall::Route(vec![])).unwrap().unwrap();
            }
        }
        Flow::Continue
    }

    fn handle_cast(&mut self, to: GenServerRef<Hop>, _: &mut Ctx<Self>) -> Flow {
        self.last = Some(to.call(HopCall::Route(vec![])).and_then(|r| r));
        Flow::Continue
    }
}

fn hop(delay_ms: u64) -> GenServerRef<Hop> {
    gen_server::start::<Hop>(Duration::from_millis(delay_ms)).unwrap()
}

/// Call `first` with `route`, timing it.
fn timed(first: &GenServerRef<Hop>, route: Vec<GenServerRef<Hop>>) -> (Answer, Duration) {
    let t0 = Instant::now();
    let answer = first.call(HopCall::Route(route)).and_then(|inner| inner);
    (answer, t0.elapsed())
}

#[test]
fn a_two_server_cycle_fails_at_once_naming_it() {
    for threads in THREADS {
        run_with(threads, move || {
            let (a, b) = (hop(0), hop(0));
            let mut worst = Duration::ZERO;
            for _ in 0..100 {
                // a calls b, b calls a: b's call closes the cycle.
                let (answer, took) = timed(&a, vec![b.clone(), a.clone()]);
                worst = worst.max(took);
                assert_eq!(answer, Err(CallError::Cycle(vec![b.pid(), a.pid()])));
                assert!(took < FOUND_WITHIN, "took {took:?}");
            }
            eprintln!(
                "two-server cycle at {threads} schedulers: slowest of 100 found in {worst:?}"
            );
        });
    }
}

#[test]
fn a_three_server_cycle_fails_at_once_naming_it() {
    for threads in THREADS {
        run_with(threads, move || {
            let (a, b, c) = (hop(0), hop(0), hop(0));
            let mut worst = Duration::ZERO;
            for _ in 0..100 {
                let (answer, took) = timed(&a, vec![b.clone(), c.clone(), a.clone()]);
                worst = worst.max(took);
                assert_eq!(
                    answer,
                    Err(CallError::Cycle(vec![c.pid(), a.pid(), b.pid()]))
                );
                assert!(took < FOUND_WITHIN, "took {took:?}");
            }
            eprintln!(
                "three-server cycle at {threads} schedulers: slowest of 100 found in {worst:?}"
            );
        });
    }
}

#[test]
fn slow_answers_and_chains_that_end_are_no_cycle() {
    for threads in THREADS {
        run_with(threads, || {
            let (a, b, c) = (hop(0), hop(0), hop(15));
            // Each link waits past the 2 ms look: the records are there,
            // and lead nowhere back.
            for _ in 0..5 {
                assert_eq!(timed(&a, vec![b.clone(), c.clone()]).0, Ok(()));
            }
            // Two clients through the same servers at once.
            let (b2, c2) = (b.clone(), c.clone());
            let other = smarm::spawn(move || timed(&b2, vec![c2]).0);
            assert_eq!(timed(&a, vec![b.clone(), c.clone()]).0, Ok(()));
            assert_eq!(other.join().unwrap(), Ok(()));
        });
    }
}

#[test]
fn a_server_that_kept_a_callers_reply_and_calls_it_back_closes_a_cycle() {
    for threads in THREADS {
        run_with(threads, || {
            let (a, b) = (hop(0), hop(0));
            // a calls b, which keeps a's reply to answer later: a waits.
            let (a2, b2) = (a.clone(), b.clone());
            let client =
                smarm::spawn(move || a2.call(HopCall::Via(b2, Box::new(HopCall::Keep))).unwrap());
            smarm::sleep(Duration::from_millis(20));
            // b (from a cast) calls a, which waits on b: a cycle.
            let t0 = Instant::now();
            b.cast(a.clone()).unwrap();
            let last = b.call(HopCall::Last).unwrap();
            assert!(t0.elapsed() < FOUND_WITHIN, "took {:?}", t0.elapsed());
            assert_eq!(last, Err(CallError::Cycle(vec![b.pid(), a.pid()])));
            // b answers a's kept call: everyone goes on.
            assert_eq!(b.call(HopCall::AnswerKept), Ok(Ok(())));
            assert_eq!(client.join().unwrap(), Ok(()));
        });
    }
}

#[test]
fn a_reply_passed_on_with_send_request_moves_the_obligation() {
    for threads in THREADS {
        run_with(threads, || {
            let (a, b, c) = (hop(0), hop(0), hop(30));
            // a calls b; b passes a's reply on to c (which answers it after
            // 30 ms) and calls a back. a is busy until c answers, then
            // serves b: no cycle, and everyone's call succeeds.
            let answer = a.call(HopCall::Via(
                b.clone(),
                Box::new(HopCall::PassOnThenCall(c.clone(), a.clone())),
            ));
            assert_eq!(answer, Ok(Ok(())));
            // b's own call back to a succeeded (it unwraps), and b is free.
            assert_eq!(b.call(HopCall::Route(vec![])), Ok(Ok(())));
        });
    }
}

#[test]
fn a_call_to_oneself_by_pid_or_name_fails_at_once_in_a_typed_actor() {
    #[derive(smarm::Actor)]
    #[actor(name = "cycles-selfish")]
    enum Selfish {
        Ping(Reply<()>),
        ByName(Reply<Result<(), CallError>>),
        ByPid(Reply<Result<(), CallError>>),
    }
    struct State;
    impl smarm::actor::Handler<Selfish> for State {
        fn handle(&mut self, msg: Selfish) -> Flow {
            match msg {
                Selfish::Ping(r) => {
                    r.reply(());
                }
                Selfish::ByName(r) => {
                    r.reply(SELFISH.ping());
                }
                Selfish::ByPid(r) => {
                    let me: smarm::Pid<Selfish> = smarm::self_pid().cast();
                    r.reply(me.ping());
                }
            }
            Flow::Continue
        }
    }
    for threads in THREADS {
        run_with(threads, || {
            let server: smarm::Pid<Selfish> = smarm::actor::start(State).unwrap();
            for _ in 0..100 {
                let t0 = Instant::now();
                assert_eq!(server.by_name(), Ok(Err(CallError::CallingSelf)));
                assert_eq!(server.by_pid(), Ok(Err(CallError::CallingSelf)));
                assert!(t0.elapsed() < FOUND_WITHIN);
            }
        });
    }
}

/// A child whose init calls its own supervisor while the supervisor waits
/// for that start (the classic OTP deadlock).
struct CallsParent;

impl GenServer for CallsParent {
    type Args = SupervisorRef;
    type Call = ();
    type Reply = ();
    type Cast = ();
    type Info = ();

    fn init(sup: SupervisorRef, _: &mut Ctx<Self>) -> Result<Self, InitError> {
        sup.which_children()?;
        Ok(CallsParent)
    }

    fn handle_call(&mut self, _: (), reply: Reply<()>, _: &mut Ctx<Self>) -> Flow {
        reply.reply(());
        Flow::Continue
    }
}

#[test]
fn a_child_whose_init_calls_its_supervisor_fails_to_start_at_once() {
    for threads in THREADS {
        run_with(threads, || {
            for _ in 0..10 {
                let sup = supervisor::start(SupFlags::new(Strategy::OneForOne), vec![]).unwrap();
                let t0 = Instant::now();
                let to_child = sup.clone();
                let started = sup
                    .start_child(ChildSpec::server::<CallsParent>("child", move || {
                        to_child.clone()
                    }));
                let e = started.expect_err("the child's init fails");
                assert!(e.to_string().contains("call cycle"), "{e}");
                assert!(t0.elapsed() < FOUND_WITHIN, "took {:?}", t0.elapsed());
                sup.shutdown().unwrap();
            }
        });
    }
}
