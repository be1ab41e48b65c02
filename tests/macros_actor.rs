//! `#[derive(Actor)]`: the generated typed API, run as a plain actor and
//! as a server, by pid and by name.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

mod support;

use smarm::actor::{self, Handler};
use smarm::gen_server::{Flow, StopReason};
use smarm::supervisor::{self, ChildSpec, Strategy, SupFlags};
use smarm::{Actor, CallError, Reply};
use std::time::{Duration, Instant};
use support::run_with;

#[derive(Actor)]
#[actor(name = "counter")] // optional: also emits a Name constant
enum Counter {
    Add(u64), // fire-and-forget
    Reset,
    Get(Reply<u64>), // request/reply: the last field is the reply slot
    Swap(u64, Reply<u64>),
}

struct CounterState(u64);

impl Handler<Counter> for CounterState {
    fn handle(&mut self, msg: Counter) -> Flow {
        match msg {
            Counter::Add(n) => self.0 += n,
            Counter::Reset => self.0 = 0,
            Counter::Get(reply) => {
                reply.reply(self.0);
            }
            Counter::Swap(n, reply) => {
                reply.reply(std::mem::replace(&mut self.0, n));
            }
        }
        Flow::Continue
    }
}

#[test]
fn the_derived_api_casts_and_calls_by_pid_and_by_name() {
    run_with(2, || {
        let counter: smarm::Pid<Counter> = actor::start(CounterState(0)).unwrap();
        counter.add(5).unwrap();
        counter.add(2).unwrap();
        assert_eq!(
            counter.get(),
            Ok(7),
            "casts arrive in order, before the call"
        );
        assert_eq!(counter.swap(100), Ok(7));
        COUNTER.reset().unwrap(); // by name
        assert_eq!(COUNTER.get(), Ok(0));
        assert_eq!(COUNTER.get_timeout(Duration::from_secs(1)), Ok(0));
        for i in 0..100 {
            COUNTER.add(i).unwrap();
        }
        assert_eq!(counter.get(), Ok((0..100).sum()));
        smarm::request_stop(counter);
    });
}

#[test]
fn a_plain_actor_loop_serves_the_same_api() {
    run_with(2, || {
        let counter = actor::spawn(CounterState(1));
        assert_eq!(counter.swap(2), Ok(1));
        assert_eq!(counter.get(), Ok(2));
        smarm::request_stop(counter);
    });
}

/// Named fields, several payload fields, unit variants; a handler that
/// drops a reply, and one that stops.
#[derive(Actor)]
enum Store {
    Put {
        key: String,
        value: u32,
    },
    Get {
        key: String,
        reply: Reply<Option<u32>>,
    },
    Sum(u32, u32, Reply<u32>),
    Forget(Reply<u32>),
    Quit,
}

#[derive(Default)]
struct StoreState(std::collections::HashMap<String, u32>);

impl Handler<Store> for StoreState {
    fn handle(&mut self, msg: Store) -> Flow {
        match msg {
            Store::Put { key, value } => {
                self.0.insert(key, value);
            }
            Store::Get { key, reply } => {
                reply.reply(self.0.get(&key).copied());
            }
            Store::Sum(a, b, reply) => {
                reply.reply(a + b);
            }
            Store::Forget(reply) => drop(reply), // the call fails, at once
            Store::Quit => return Flow::Stop(StopReason::Normal),
        }
        Flow::Continue
    }
}

#[test]
fn named_fields_several_fields_unit_variants_and_failures() {
    run_with(2, || {
        let store = actor::start(StoreState::default()).unwrap();
        store.put("a".to_string(), 1).unwrap();
        assert_eq!(store.get("a".to_string()), Ok(Some(1)));
        assert_eq!(store.get("b".to_string()), Ok(None));
        assert_eq!(store.sum(2, 3), Ok(5));
        let t0 = Instant::now();
        assert_eq!(
            store.forget(),
            Err(CallError::ServerDown),
            "a dropped Reply fails the call"
        );
        assert!(t0.elapsed() < Duration::from_secs(1));
        store.quit().unwrap();
        let t0 = Instant::now();
        assert_eq!(
            store.sum(1, 1),
            Err(CallError::ServerDown),
            "a call to a dead actor"
        );
        assert!(t0.elapsed() < Duration::from_secs(1), "fails fast");
        assert!(
            store.put("x".to_string(), 0).is_err(),
            "a cast to a dead actor comes back"
        );
    });
}

/// A counter that panics on `Add(0)`: supervised, it is back under its
/// name with fresh state.
struct Fragile(CounterState);

impl Handler<Counter> for Fragile {
    fn handle(&mut self, msg: Counter) -> Flow {
        if let Counter::Add(0) = msg {
            panic!("fragile counter: zero");
        }
        self.0.handle(msg)
    }
}

#[test]
fn a_supervised_typed_actor_restarts_under_its_name() {
    run_with(2, || {
        let sup = supervisor::start(
            SupFlags::new(Strategy::OneForOne).intensity(5, Duration::from_secs(5)),
            vec![ChildSpec::actor_server::<Counter, _>("counter", || {
                Fragile(CounterState(0))
            })],
        )
        .unwrap();
        COUNTER.add(3).unwrap();
        assert_eq!(COUNTER.get(), Ok(3));
        COUNTER.add(0).unwrap(); // crashes it
        let t0 = Instant::now();
        let back = loop {
            match COUNTER.get() {
                Ok(n) => break n,
                Err(_) => smarm::sleep(Duration::from_millis(1)),
            }
        };
        assert_eq!(back, 0, "restarted with fresh state");
        assert!(t0.elapsed() < Duration::from_secs(5));
        sup.shutdown().unwrap();
    });
}

/// The same enum and handler run as a gen_server: the derived methods work
/// on its `GenServerRef`, and a call to it after shutdown fails at once.
#[test]
fn a_derived_actor_runs_as_a_gen_server() {
    run_with(2, || {
        let server =
            smarm::gen_server::start::<actor::Served<Counter, CounterState>>(CounterState(10))
                .unwrap();
        server.add(5).unwrap();
        assert_eq!(server.get(), Ok(15));
        assert_eq!(server.swap(1), Ok(15));
        assert_eq!(server.get_timeout(Duration::from_secs(1)), Ok(1));
        server.shutdown().unwrap();
        let t0 = Instant::now();
        assert_eq!(server.get(), Err(CallError::ServerDown));
        assert!(t0.elapsed() < Duration::from_secs(1));
    });
}

#[test]
fn the_derived_calls_have_async_forms_for_code_outside_the_runtime() {
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = smarm::channel::<()>();
    let runtime = std::thread::spawn(move || {
        support::run_with(2, move || {
            let server =
                smarm::gen_server::start::<actor::Served<Counter, CounterState>>(CounterState(1))
                    .unwrap();
            let counter: smarm::Pid<Counter> = actor::start(CounterState(40)).unwrap();
            // Inside an actor, the async forms work by pid and by name too
            // (awaited with block_on).
            assert_eq!(smarm::future::block_on(counter.swap_async(41)), Ok(40));
            assert_eq!(smarm::future::block_on(COUNTER.get_async()), Ok(41));
            tx.send(server.clone()).unwrap();
            let _ = stop_rx.recv();
            smarm::request_stop(counter);
            server.shutdown().unwrap();
        })
    });
    let server = rx.recv().unwrap();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    tokio.block_on(async {
        server.add(2).unwrap();
        assert_eq!(server.get_async().await, Ok(3));
        let tasks: Vec<_> = (0..100)
            .map(|_| {
                let server = server.clone();
                tokio::spawn(
                    async move { server.swap_timeout_async(7, Duration::from_secs(5)).await },
                )
            })
            .collect();
        for t in tasks {
            assert!(t.await.unwrap().is_ok());
        }
        assert_eq!(server.get_async().await, Ok(7));
    });
    drop(stop_tx);
    runtime.join().unwrap();
}
