//! Deterministic simulation's faults in the runtime itself: smarm's own
//! fault sites (`Sim::runtime_faults`) and kills (`Sim::kill_one_in`).
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

use smarm::channel::{TrySendError, bounded};
use smarm::gen_server::{self, CallError, Ctx, Flow, GenServer, InitError, Reply, ServerName};
use smarm::net::{TcpListener, TcpStream};
use smarm::sim::{Sim, SimError};
use smarm::supervisor::{self, ChildSpec, Strategy as Restarts, SupFlags};
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Counts the calls it answered since it (re)started.
struct Counter {
    n: u64,
}

impl GenServer for Counter {
    type Args = ();
    type Call = ();
    type Reply = u64;
    type Cast = ();
    type Info = ();

    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Counter { n: 0 })
    }

    fn handle_call(&mut self, (): (), reply: Reply<u64>, _: &mut Ctx<Self>) -> Flow {
        self.n += 1;
        reply.reply(self.n);
        Flow::Continue
    }
}

/// What each of smarm's fault sites did to one run of plain, correct use:
/// bounded sends found full, socket writes that wrote less than asked,
/// calls that timed out.
fn exercise() -> (usize, usize, usize) {
    let (tx, rx) = bounded::<u32>(1_000);
    let full = (0..200)
        .filter(|&n| matches!(tx.try_send(n), Err(TrySendError::Full(_))))
        .count();
    drop(rx);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let reader = smarm::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut all = Vec::new();
        conn.read_to_end(&mut all).unwrap();
    });
    let mut conn = TcpStream::connect(addr).unwrap();
    let short = (0..200)
        .filter(|_| conn.write(&[7u8; 64]).unwrap() < 64)
        .count();
    drop(conn);
    reader.join().unwrap();
    let counter = gen_server::start::<Counter>(()).unwrap();
    let timed_out = (0..200)
        .filter(|_| matches!(counter.call(()), Err(CallError::Timeout(_))))
        .count();
    (full, short, timed_out)
}

#[test]
fn smarms_own_fault_sites_fire_in_some_seeds_and_only_when_turned_on() {
    let (mut full, mut short, mut timed_out, mut runs_hit) = (0, 0, 0, 0);
    for seed in 0..100 {
        let run = Sim::new(seed).runtime_faults(true).run(exercise).unwrap();
        let (f, s, t) = run.value;
        // Every firing is one of the three, or the counter's end pausing
        // before its terminate (once at most).
        let three = (f + s + t) as u64;
        assert!(
            (three..=three + 1).contains(&run.faults_fired),
            "seed {seed}: {three} of the three, {} fired",
            run.faults_fired
        );
        (full, short, timed_out) = (full + f, short + s, timed_out + t);
        runs_hit += usize::from(f + s + t > 0);
    }
    assert!(full > 0, "a bounded mailbox reported full");
    assert!(short > 0, "a socket write came up short");
    assert!(timed_out > 0, "a call timed out at once");
    // Per run, each site is on with probability 1/4: not every run.
    assert!((1..100).contains(&runs_hit), "{runs_hit} of 100 runs hit");
    for seed in 0..20 {
        let run = Sim::new(seed).run(exercise).unwrap();
        assert_eq!((run.value, run.faults_fired), ((0, 0, 0), 0), "seed {seed}");
    }
}

/// A client of an echo service: 20 lines of 32 bytes, each read back;
/// `careless` sends each with one `write`, ignoring how much it wrote.
fn echo_client(careless: bool) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = smarm::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 256];
        while let Ok(n @ 1..) = conn.read(&mut buf) {
            conn.write_all(&buf[..n]).unwrap();
        }
    });
    let mut conn = TcpStream::connect(addr).unwrap();
    for i in 0..20u8 {
        let line = [i; 32];
        if careless {
            let _ = conn.write(&line).unwrap();
        } else {
            conn.write_all(&line).unwrap();
        }
        let mut back = [0u8; 32];
        conn.read_exact(&mut back).unwrap();
        assert_eq!(back, line);
    }
    drop(conn);
    server.join().unwrap();
}

#[test]
fn a_client_that_ignores_what_write_wrote_is_found_only_with_the_fault_sites_on() {
    let faulty = Sim::new(0).runtime_faults(true);
    let err = faulty
        .check(0..300, || echo_client(true))
        .expect_err("a short write leaves the careless client waiting");
    assert!(
        matches!(err, SimError::Deadlock { .. }),
        "it waits for an echo of bytes it never sent: {err}"
    );
    // Replays from its seed.
    let seed = err.seed().unwrap();
    let again = faulty.clone().seed(seed).run(|| echo_client(true));
    assert!(matches!(again, Err(SimError::Deadlock { .. })));
    // Correct use (write_all) holds under the same faults; the careless
    // client is never caught without them.
    faulty.check(0..300, || echo_client(false)).unwrap();
    Sim::new(0).check(0..300, || echo_client(true)).unwrap();
}

const COUNTERS: [ServerName<Counter>; 3] = [
    ServerName::new("counter-a"),
    ServerName::new("counter-b"),
    ServerName::new("counter-c"),
];

/// Three supervised counters (restarted up to `intensity` times a
/// minute) and three clients making 30 calls each, a millisecond apart,
/// retrying a call whose server is down; each answer counted in
/// `answered`. Its value: how many calls were answered.
fn supervised_calls(intensity: u32, answered: Arc<AtomicUsize>) -> usize {
    smarm::report::set_handler(|_| {});
    let flags = SupFlags::new(Restarts::OneForOne).intensity(intensity, Duration::from_secs(60));
    let children = ["a", "b", "c"]
        .iter()
        .zip(COUNTERS)
        .map(|(id, name)| ChildSpec::named_server::<Counter>(*id, name, || ()))
        .collect();
    let sup = supervisor::start(flags, children).unwrap();
    let clients: Vec<_> = (0..3)
        .map(|i| {
            let answered = answered.clone();
            smarm::spawn(move || {
                for j in 0..30 {
                    let name = COUNTERS[(i + j) % 3];
                    while gen_server::whereis_server(name)
                        .map(|s| s.call(()))
                        .is_none_or(|r| r.is_err())
                    {
                        smarm::sleep(Duration::from_millis(1));
                    }
                    answered.fetch_add(1, Ordering::Relaxed);
                    smarm::sleep(Duration::from_millis(1));
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    sup.shutdown().unwrap();
    answered.load(Ordering::Relaxed)
}

/// Only the counters may be killed.
fn a_counter(actor: &smarm::ActorInfo) -> bool {
    actor.names.iter().any(|n| n.starts_with("counter-"))
}

#[test]
fn supervised_servers_killed_at_random_keep_every_call_answered_and_replay() {
    let sim = Sim::new(0).kill_one_in(30).killable(a_counter);
    let calls = || supervised_calls(10_000, Arc::default());
    let mut kills = 0;
    for seed in 0..200 {
        let run = sim.clone().seed(seed).run(calls).unwrap();
        assert_eq!(run.value, 90, "seed {seed}: every call answered");
        kills += run.killed.len();
    }
    assert!(kills >= 200, "the plan killed servers ({kills} kills)");
    // The kills are part of the run: a seed replays them.
    let run = sim.clone().seed(7).check_determinism(calls).unwrap();
    assert!(!run.killed.is_empty());
    assert_eq!(sim.clone().seed(7).run(calls).unwrap().killed, run.killed);
}

#[test]
fn once_the_faults_stop_a_supervised_service_recovers_and_one_whose_supervisor_gave_up_does_not() {
    // Kills for the first 10 ms; then every call must be answered within
    // a second.
    let run = |intensity: u32, seed: u64| {
        let answered = Arc::new(AtomicUsize::new(0));
        let seen = answered.clone();
        Sim::new(seed)
            .kill_one_in(10)
            .killable(a_counter)
            .liveness(
                "every call answered",
                Duration::from_millis(10),
                Duration::from_secs(1),
                move || seen.load(Ordering::Relaxed) == 90,
            )
            .run(move || supervised_calls(intensity, answered))
    };
    for seed in 0..50 {
        run(10_000, seed).unwrap();
    }
    // Allowed one restart a minute, the supervisor gives up under the
    // kills, its counters are gone for good, and the clients wait forever.
    let stuck: Vec<u64> = (0..50)
        .filter(|&seed| match run(1, seed) {
            Ok(_) => false,
            Err(SimError::Liveness { name, .. }) => {
                assert_eq!(name, "every call answered");
                true
            }
            Err(other) => panic!("seed {seed}: {other}"),
        })
        .collect();
    assert!(
        stuck.len() >= 25,
        "the supervisor gave up in {} of 50 seeds",
        stuck.len()
    );
}
