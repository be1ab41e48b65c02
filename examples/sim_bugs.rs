//! Deliberately broken programs of the kind whose bug shows up once in
//! thousands of ordinary runs, and how often a deterministic simulation
//! finds each.
//!
//! - `lost_wakeup`: a consumer checks for an item, then (after a call
//!   that parks it) says it is waiting and receives; a producer that adds
//!   its item in between sees nobody waiting and sends no wake-up: the
//!   consumer waits forever.
//! - `started_twice`: two actors each make sure a worker runs under a
//!   dynamic supervisor: look in a cache, start one if it is empty; both
//!   look before either has stored its worker, and two are started.
//! - `mutual_wait`: two peers each take a turn by reading and then setting
//!   a shared flag, with a call between: the first listens, the second
//!   speaks; when both read before either sets, both listen, each waiting
//!   to receive from the other (no call is involved, so no call-cycle
//!   check sees it).
//! - `lost_update`: two clients read a counter server and write back the
//!   value plus one, in two calls: one update is lost.
//! - `timeout_between_two_events`: a session gives a worker 10 ms for two
//!   messages sent 9 ms apart; a late timer puts the timeout between them.
//!
//! ```text
//! cargo run --release --example sim_bugs --features sim -- 10000
//! ```
//!
//! prints, per bug, how many of N seeds of the simulation and of N
//! ordinary runs (a default runtime; a run still going after a second is
//! a hang, counted and stopped) showed it, and the first seed that did
//! (replay it with `smarm::sim::Sim::new(seed)`). The tests
//! (`tests/sim_bugs.rs`) check that the simulation finds each one.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail the run
#![allow(dead_code)] // the test includes this file for its scenarios only
#![allow(clippy::disallowed_methods)] // real time: the ordinary runs' watchdog

use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError};
use smarm::supervisor::{DynamicSpec, DynamicSupervisor};
use smarm::{Pid, Reply, channel};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A counter read and written in separate calls.
struct Counter(i64);

enum Req {
    Get,
    Set(i64),
    Crash,
}

impl GenServer for Counter {
    type Args = ();
    type Call = Req;
    type Reply = i64;
    type Cast = Req;
    type Info = ();

    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Counter(0))
    }

    fn handle_call(&mut self, req: Req, reply: Reply<i64>, _: &mut Ctx<Self>) -> Flow {
        match req {
            Req::Get => {
                reply.reply(self.0);
            }
            Req::Set(v) => {
                self.0 = v;
                reply.reply(v);
            }
            Req::Crash => std::panic::resume_unwind(Box::new("crashed")),
        }
        Flow::Continue
    }

    fn handle_cast(&mut self, req: Req, _: &mut Ctx<Self>) -> Flow {
        if let Req::Crash = req {
            std::panic::resume_unwind(Box::new("crashed"));
        }
        Flow::Continue
    }
}

/// A consumer that checks for an item, then announces that it waits (a
/// call: it parks) and only then marks itself waiting: did its wake-up
/// get lost? (A lost one is a hang: the consumer waits forever.)
pub fn lost_wakeup() -> bool {
    let items = Arc::new(Mutex::new(VecDeque::new()));
    let waiting = Arc::new(AtomicBool::new(false));
    let (wake_tx, wake_rx) = channel::<()>();
    // A sender stays here, as one would in a registry: a lost wake-up
    // is a wait, not a closed channel.
    let _registered = wake_tx.clone();
    let log = gen_server::start::<Counter>(()).unwrap();
    let (i, w, l) = (items.clone(), waiting.clone(), log.clone());
    let consumer = smarm::spawn(move || {
        loop {
            if let Some(item) = i.lock().unwrap().pop_front() {
                return item;
            }
            l.call(Req::Get).unwrap(); // "waiting for an item"
            w.store(true, Ordering::SeqCst);
            wake_rx.recv().unwrap();
        }
    });
    let producer = smarm::spawn(move || {
        items.lock().unwrap().push_back(7);
        if waiting.load(Ordering::SeqCst) {
            wake_tx.send(()).unwrap();
        }
    });
    producer.join().unwrap();
    let item = consumer.join().unwrap();
    log.shutdown().unwrap();
    item != 7
}

/// Two actors make sure one worker runs: was it started twice?
pub fn started_twice() -> bool {
    let workers = DynamicSupervisor::start(DynamicSpec::actor(|(): ()| {
        let (_keep, rx) = channel::<()>();
        let _ = rx.recv(); // until stopped
    }))
    .unwrap();
    let cache: Arc<Mutex<Option<Pid>>> = Arc::new(Mutex::new(None));
    let ensurers: Vec<_> = (0..2)
        .map(|_| {
            let (workers, cache) = (workers.clone(), cache.clone());
            smarm::spawn(move || {
                let present = cache.lock().unwrap().is_some();
                if !present {
                    let pid = workers.start_child(()).unwrap();
                    *cache.lock().unwrap() = Some(pid);
                }
            })
        })
        .collect();
    for e in ensurers {
        e.join().unwrap();
    }
    let running = workers.count_children().unwrap();
    workers.shutdown().unwrap();
    running > 1
}

/// Two peers that each pick listen-first or speak-first by a flag read
/// and then set, with a call in between: did both listen? (Both listening
/// is a hang: each waits to receive from the other.)
pub fn mutual_wait() -> bool {
    let taken = Arc::new(AtomicBool::new(false));
    let log = gen_server::start::<Counter>(()).unwrap();
    let (a_tx, a_rx) = channel::<&str>();
    let (b_tx, b_rx) = channel::<&str>();
    let peer = |to: smarm::Sender<&'static str>, from: smarm::Receiver<&'static str>| {
        let (taken, log) = (taken.clone(), log.clone());
        smarm::spawn(move || {
            let first = !taken.load(Ordering::SeqCst);
            log.call(Req::Get).unwrap(); // "taking my turn"
            taken.store(true, Ordering::SeqCst);
            if first {
                let hello = from.recv().unwrap();
                to.send("welcome").unwrap();
                hello
            } else {
                to.send("hello").unwrap();
                from.recv().unwrap()
            }
        })
    };
    let a = peer(b_tx, a_rx);
    let b = peer(a_tx, b_rx);
    let heard = (a.join().unwrap(), b.join().unwrap());
    log.shutdown().unwrap();
    heard.0 == heard.1
}

/// Two read-then-write clients: did an update get lost?
pub fn lost_update() -> bool {
    let counter = gen_server::start::<Counter>(()).unwrap();
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let counter = counter.clone();
            smarm::spawn(move || {
                let v = counter.call(Req::Get).unwrap();
                counter.call(Req::Set(v + 1)).unwrap();
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let total = counter.call(Req::Get).unwrap();
    counter.shutdown().unwrap();
    total != 2
}

/// What a session hears.
#[derive(Debug)]
enum Heard {
    First,
    Second,
    Timeout,
}

/// A session gives a worker 10 ms for two messages, which the worker
/// sends 9 ms apart: did the timeout come between them?
pub fn timeout_between_two_events() -> bool {
    let (tx, rx) = channel::<Heard>();
    let timeout = tx.clone();
    let timer = smarm::spawn(move || {
        smarm::sleep(Duration::from_millis(10));
        let _ = timeout.send(Heard::Timeout);
    });
    let worker = smarm::spawn(move || {
        tx.send(Heard::First).unwrap();
        smarm::sleep(Duration::from_millis(9));
        let _ = tx.send(Heard::Second);
    });
    let first = rx.recv().unwrap();
    let second = rx.recv().unwrap();
    worker.join().unwrap();
    timer.join().unwrap();
    matches!(first, Heard::First) && matches!(second, Heard::Timeout)
}

/// A scenario: whether its bug showed.
pub type Scenario = fn() -> bool;

/// The bugs, by name.
pub const BUGS: [(&str, Scenario); 5] = [
    ("lost_wakeup", lost_wakeup),
    ("started_twice", started_twice),
    ("mutual_wait", mutual_wait),
    ("lost_update", lost_update),
    ("timeout_between_two_events", timeout_between_two_events),
];

/// Whether a simulated run of `bug` showed it: its value, or a deadlock.
pub fn sim_hit(sim: &smarm::sim::Sim, bug: Scenario) -> bool {
    match sim.run(bug) {
        Ok(run) => run.value,
        Err(smarm::sim::SimError::Deadlock { .. }) => true,
        Err(e) => panic!("{e}"),
    }
}

/// Whether an ordinary run of `bug` on `rt` showed it: its value, or a
/// run still going after a second (a hang: its root is killed, and the
/// end of the run stops the rest).
fn ordinary_hit(rt: &smarm::runtime::Runtime, bug: Scenario) -> bool {
    let running = rt.start(bug);
    let began = std::time::Instant::now();
    while !running.is_finished() {
        if began.elapsed() > Duration::from_secs(1) {
            if let Some(root) = rt.root() {
                running.handle().exit(root, smarm::ExitSignal::Kill);
            }
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| running.join()));
            return true;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    running.join()
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map_or(10_000, |a| a.parse().expect("usage: sim_bugs [runs]"));
    smarm::report::set_handler(|_| {}); // the crashes are the point
    println!(
        "{:<28} {:>14} {:>14} {:>12}",
        "bug", "sim seeds hit", "ordinary hit", "first seed"
    );
    let rt = smarm::runtime::init(smarm::runtime::Config::default());
    for (name, bug) in BUGS {
        let mut sim_hits = 0;
        let mut first = None;
        for seed in 0..n {
            if sim_hit(&smarm::sim::Sim::new(seed), bug) {
                sim_hits += 1;
                first.get_or_insert(seed);
            }
        }
        let ordinary_hits = (0..n).filter(|_| ordinary_hit(&rt, bug)).count();
        println!(
            "{name:<28} {:>14} {:>14} {:>12}",
            format!("{sim_hits}/{n}"),
            format!("{ordinary_hits}/{n}"),
            first.map_or("-".to_string(), |s| s.to_string())
        );
    }
}
