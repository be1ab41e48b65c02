//! OTP under deterministic simulation: a supervision tree of gen_servers
//! with calls, timers and crashes replays exactly from its seed, seeds
//! explore different runs, and supervisors keep OTP's restart rules across
//! a thousand seeds of restart storms.
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, ServerName};
use smarm::sim::{Sim, Strategy};
use smarm::supervisor::{self, ChildSpec, Strategy as Restarts, SupFlags};
use smarm::{DownReason, Pid, Reply, channel};
use std::collections::BTreeSet;
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

/// A supervision tree of three counters, and `clients` actors that each
/// make `calls` calls (every fifth one poisons its counter), sleeping now
/// and then: what the clients saw, in order.
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
    let kids: Vec<_> = (0..clients)
        .map(|i| {
            smarm::spawn(move || {
                (0..calls)
                    .map(|j| {
                        let name = COUNTERS[(i * 7 + j) % 3];
                        let poison = j % 5 == 4;
                        if j % 3 == 0 {
                            smarm::sleep(Duration::from_millis(j as u64));
                        }
                        client_call(name, poison)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let seen = kids.into_iter().map(|k| k.join().unwrap()).collect();
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
fn a_supervision_tree_with_calls_timers_and_crashes_replays_exactly_from_its_seed() {
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
