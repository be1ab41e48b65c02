//! Three concurrency bugs of the kind that show up once in thousands of
//! ordinary runs, and how often a deterministic simulation finds them.
//!
//! - `lost_update`: two clients read a counter server and write back the
//!   value plus one, in two calls: the update of one is lost when both
//!   read before either writes (a check and an act that are not one
//!   step).
//! - `restart_races_a_call`: a client looks a named server up, and calls
//!   it; a crash (and the supervisor's restart) between the two turns the
//!   call into an error the client did not expect.
//! - `timeout_between_two_events`: a session arms a timeout, then expects
//!   a worker's two messages; the timeout lands between them when the
//!   second is a little late.
//!
//! ```text
//! cargo run --release --example sim_bugs --features sim -- 10000
//! ```
//!
//! prints, per bug, how many of N seeds of the simulation and of N
//! ordinary runs (a default runtime) showed it, and the first seed that
//! did (replay it with `smarm::sim::Sim::new(seed)`). The tests
//! (`tests/sim_bugs.rs`) check that the simulation finds each one.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail the run
#![allow(dead_code)] // the test includes this file for its scenarios only

use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, ServerName};
use smarm::supervisor::{self, ChildSpec, Strategy, SupFlags};
use smarm::{Reply, channel};
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

const SERVICE: ServerName<Counter> = ServerName::new("service");

/// A client looks the service up and calls it while an operator crashes
/// it once: did the call fail?
pub fn restart_races_a_call() -> bool {
    let sup = supervisor::start(
        SupFlags::new(Strategy::OneForOne).intensity(10, Duration::from_secs(1)),
        vec![ChildSpec::named_server::<Counter>(
            "service",
            SERVICE,
            || (),
        )],
    )
    .unwrap();
    let operator = smarm::spawn(|| {
        if let Some(service) = gen_server::whereis_server(SERVICE) {
            let _ = service.cast(Req::Crash);
        }
    });
    let client = smarm::spawn(|| {
        // The service is up, or restarting.
        let service = loop {
            match gen_server::whereis_server(SERVICE) {
                Some(service) => break service,
                None => smarm::yield_now(),
            }
        };
        service.call(Req::Get).is_err()
    });
    operator.join().unwrap();
    let failed = client.join().unwrap();
    sup.shutdown().unwrap();
    failed
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
pub const BUGS: [(&str, Scenario); 3] = [
    ("lost_update", lost_update),
    ("restart_races_a_call", restart_races_a_call),
    ("timeout_between_two_events", timeout_between_two_events),
];

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map_or(10_000, |a| a.parse().expect("usage: sim_bugs [runs]"));
    smarm::report::set_handler(|_| {}); // the crashes are the point
    println!(
        "{:<28} {:>14} {:>14} {:>12}",
        "bug", "sim seeds hit", "ordinary hit", "first seed"
    );
    for (name, bug) in BUGS {
        let mut sim_hits = 0;
        let mut first = None;
        for seed in 0..n {
            let run = smarm::sim::Sim::new(seed).run(bug).unwrap();
            if run.value {
                sim_hits += 1;
                first.get_or_insert(seed);
            }
        }
        let rt = smarm::runtime::init(smarm::runtime::Config::default());
        let ordinary_hits = (0..n).filter(|_| rt.run(bug)).count();
        println!(
            "{name:<28} {:>14} {:>14} {:>12}",
            format!("{sim_hits}/{n}"),
            format!("{ordinary_hits}/{n}"),
            first.map_or("-".to_string(), |s| s.to_string())
        );
    }
}
