//! The benchmark workloads of the project's benchmark specification, run
//! on smarm. Prints one `RESULT peer=smarm workload=<name> value=<v>
//! unit=<u>` line per workload (and `EXTRA` lines for peak RSS).
//!
//! ```sh
//! cargo bench --bench workloads                  # every workload, one process each
//! cargo bench --bench workloads -- spawn skynet  # some of them
//! ```
//!
//! Each workload runs in a fresh OS process (this binary re-executes
//! itself), so memory figures do not inherit another workload's pools, and
//! gives up with a non-zero exit after 120 s. Runtime: 2 scheduler threads
//! (1 for `pingpong1`, `yield` and `crash_heartbeat`, which measure one
//! scheduler's floor and stalls). Beside the specification's workloads:
//! `yield` (ns per switch of two actors yielding to each other),
//! `timers_warm` (`timers` a second time in one process) and
//! `crash_heartbeat` (a heartbeat's worst lateness beside crashing actors;
//! run it with `RUST_BACKTRACE=1` and `=0`).
//! With `--features trace`, `SMARM_BENCH_TRACE=1` runs each workload under a
//! started trace.
//! `SMARM_BENCH_STATS=1` prints the per-scheduler stats after the call workloads (on
//! stderr); `SMARM_BENCH_THREADS=N` overrides the number of schedulers.
//!
//! Mailboxes are smarm channels: each process owns a `Receiver`, and the
//! others hold `Sender` clones.
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed check must fail the run

use smarm::runtime::{self, Config};
use smarm::{Sender, channel};
use std::process::{Command, ExitCode};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WORKLOADS: [&str; 21] = [
    "spawn",
    "pingpong",
    "pingpong1",
    "ring",
    "skynet",
    "fanin",
    "fanin_bounded",
    "timers",
    "memory",
    "memory_hibernated",
    "send_channel",
    "send_name",
    "call",
    "call_derived",
    "call_served",
    "call_hibernated",
    "spawn_1m",
    "memory_return",
    "yield",
    "timers_warm",
    "crash_heartbeat",
];
const CHILD_ENV: &str = "SMARM_BENCH_WORKLOAD";

#[allow(dead_code)] // the entry point here; `workloads_preempt` uses `main_as`
fn main() -> ExitCode {
    main_as("smarm")
}

/// Run the selected workloads, labelling results `peer=<peer>`.
pub fn main_as(peer: &'static str) -> ExitCode {
    if let Ok(name) = std::env::var(CHILD_ENV) {
        return run_child(peer, &name);
    }
    // `cargo bench` passes `--bench`; everything else names workloads.
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let selected: Vec<&str> = WORKLOADS
        .iter()
        .copied()
        .filter(|w| wanted.is_empty() || wanted.iter().any(|x| x == w))
        .collect();
    let exe = std::env::current_exe().expect("own path");
    let mut ok = true;
    for w in selected {
        let status = Command::new(&exe)
            .env(CHILD_ENV, w)
            .status()
            .expect("spawn benchmark child");
        if !status.success() {
            eprintln!("FAIL peer={peer} workload={w} exit={status}");
            ok = false;
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The peer label of this run's results (`smarm`, `smarm-preempt`).
static PEER: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

fn run_child(peer: &'static str, name: &str) -> ExitCode {
    let _ = PEER.set(peer);
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(120));
        eprintln!("benchmark gave up after 120 s");
        std::process::exit(3);
    });
    let result = Arc::new(Mutex::new(None));
    let r = result.clone();
    let body: fn() -> (f64, &'static str) = match name {
        "spawn" => spawn_workload,
        "pingpong" | "pingpong1" => pingpong_workload,
        "ring" => ring_workload,
        "fanin" => || fanin_workload(None),
        "fanin_bounded" => || fanin_workload(Some(FANIN_BOUNDED_CAPACITY)),
        "skynet" => skynet_workload,
        "send_channel" => || send_workload(false),
        "send_name" => || send_workload(true),
        "call" => call_workload,
        "call_derived" => call_derived_workload,
        "call_served" => call_served_workload,
        "call_hibernated" => call_hibernated_workload,
        "timers" => timers_workload,
        "memory" => memory_workload,
        "memory_hibernated" => memory_hibernated_workload,
        "spawn_1m" => spawn_1m_workload,
        "memory_return" => memory_return_workload,
        "yield" => yield_workload,
        "timers_warm" => timers_warm_workload,
        "crash_heartbeat" => crash_heartbeat_workload,
        other => {
            eprintln!("unknown workload {other}; known: {WORKLOADS:?}");
            return ExitCode::FAILURE;
        }
    };
    let threads = match std::env::var("SMARM_BENCH_THREADS") {
        Ok(n) => n
            .parse()
            .expect("SMARM_BENCH_THREADS: a number of schedulers"),
        Err(_) if matches!(name, "pingpong1" | "yield" | "crash_heartbeat") => 1,
        Err(_) => 2,
    };
    let mut config = Config::exact(threads);
    if let Ok(bytes) = std::env::var("SMARM_BENCH_STACK") {
        config = config.stack_size(
            bytes
                .parse()
                .expect("SMARM_BENCH_STACK: a stack size in bytes"),
        );
    }
    runtime::init(config).run(move || {
        // With the `trace` feature, `SMARM_BENCH_TRACE=1` records the
        // whole workload (the cost of a running trace).
        #[cfg(feature = "trace")]
        let tracing = std::env::var_os("SMARM_BENCH_TRACE").is_some();
        #[cfg(feature = "trace")]
        if tracing {
            smarm::trace::start();
        }
        *r.lock().unwrap() = Some(body());
        #[cfg(feature = "trace")]
        if tracing {
            let trace = smarm::trace::stop().unwrap();
            eprintln!(
                "trace: {} events kept, {} lost",
                trace.events().len(),
                trace.lost()
            );
        }
    });
    let (value, unit) = result
        .lock()
        .unwrap()
        .take()
        .expect("workload produced no value");
    if let Some(root_done) = *ROOT_DONE.lock().unwrap() {
        extra("run_return", root_done.elapsed().as_secs_f64() * 1e3, "ms");
    }
    println!("RESULT peer={peer} workload={name} value={value:.1} unit={unit}");
    if let Some(kib) = proc_status_kib("VmHWM") {
        println!("EXTRA peer={peer} workload={name} metric=peak_rss value={kib} unit=KiB");
    }
    ExitCode::SUCCESS
}

/// When the root actor of a workload that times `run`'s return finished.
static ROOT_DONE: Mutex<Option<Instant>> = Mutex::new(None);

/// Print one `EXTRA` figure of the running workload.
fn extra(metric: &str, value: f64, unit: &str) {
    let workload = std::env::var(CHILD_ENV).unwrap_or_default();
    println!(
        "EXTRA peer={} workload={workload} metric={metric} value={value:.1} unit={unit}",
        PEER.get().unwrap_or(&"smarm")
    );
}

/// A field of /proc/self/status in KiB (VmRSS, VmHWM, VmPTE).
fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

const SPAWN_N: usize = 100_000;

fn spawn_workload() -> (f64, &'static str) {
    let t0 = Instant::now();
    let handles: Vec<_> = (0..SPAWN_N).map(|_| smarm::spawn(|| {})).collect();
    for h in handles {
        h.join().unwrap();
    }
    (t0.elapsed().as_nanos() as f64 / SPAWN_N as f64, "ns/proc")
}

fn skynet(num: u64, size: u64, parent: Sender<u64>) {
    if size == 1 {
        parent.send(num).unwrap();
        return;
    }
    let (tx, rx) = channel();
    let step = size / 10;
    for i in 0..10 {
        let tx = tx.clone();
        drop(smarm::spawn(move || skynet(num + i * step, step, tx)));
    }
    let sum: u64 = (0..10).map(|_| rx.recv().unwrap()).sum();
    parent.send(sum).unwrap();
}

fn skynet_workload() -> (f64, &'static str) {
    let t0 = Instant::now();
    let (tx, rx) = channel();
    drop(smarm::spawn(move || skynet(0, 1_000_000, tx)));
    let total = rx.recv().unwrap();
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    assert_eq!(total, 499_999_500_000, "skynet sum");
    (ms, "ms")
}

const ROUND_TRIPS: u64 = 1_000_000;

fn pingpong_workload() -> (f64, &'static str) {
    let t0 = Instant::now();
    let (ping_tx, ping_rx) = channel::<u64>();
    let (pong_tx, pong_rx) = channel::<u64>();
    let (done_tx, done_rx) = channel::<u64>();
    drop(smarm::spawn(move || {
        while let Ok(i) = ping_rx.recv() {
            if pong_tx.send(i).is_err() {
                break;
            }
        }
    }));
    drop(smarm::spawn(move || {
        let mut last = 0;
        for i in 0..ROUND_TRIPS {
            ping_tx.send(i).unwrap();
            last = pong_rx.recv().unwrap();
        }
        done_tx.send(last).unwrap();
    }));
    assert_eq!(done_rx.recv().unwrap(), ROUND_TRIPS - 1);
    (
        t0.elapsed().as_nanos() as f64 / ROUND_TRIPS as f64,
        "ns/roundtrip",
    )
}

const RING: usize = 10_000;
const HOPS: u64 = 1_000_000;

fn ring_workload() -> (f64, &'static str) {
    let (done_tx, done_rx) = channel::<()>();
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..RING).map(|_| channel::<u64>()).unzip();
    for (i, rx) in receivers.into_iter().enumerate() {
        let next = senders[(i + 1) % RING].clone();
        let done = done_tx.clone();
        drop(smarm::spawn(move || {
            while let Ok(k) = rx.recv() {
                if k == 0 {
                    done.send(()).unwrap();
                } else if next.send(k - 1).is_err() {
                    break;
                }
            }
        }));
    }
    smarm::yield_now(); // let every member reach its first recv
    let t0 = Instant::now();
    senders[0].send(HOPS).unwrap();
    done_rx.recv().unwrap();
    let ns = t0.elapsed().as_nanos() as f64 / HOPS as f64;
    drop(senders); // closes the ring: members exit
    (ns, "ns/hop")
}

const FANIN_PRODUCERS: u64 = 4;
const FANIN_EACH: u64 = 250_000;

/// `fanin_bounded`'s channel: producers park once it holds this many.
const FANIN_BOUNDED_CAPACITY: usize = 1024;

/// `fanin`, on an unbounded channel or (`fanin_bounded`) a bounded one.
fn fanin_workload(capacity: Option<usize>) -> (f64, &'static str) {
    let t0 = Instant::now();
    match capacity {
        Some(cap) => {
            let (tx, rx) = smarm::channel::bounded::<u64>(cap);
            fanin(tx, move || rx.recv().unwrap());
        }
        None => {
            let (tx, rx) = channel::<u64>();
            fanin(tx, move || rx.recv().unwrap());
        }
    }
    (
        t0.elapsed().as_nanos() as f64 / (FANIN_PRODUCERS * FANIN_EACH) as f64,
        "ns/msg",
    )
}

/// The producers send on `tx`; the consumer takes with `recv`.
fn fanin(tx: Sender<u64>, recv: impl Fn() -> u64 + Send + 'static) {
    let (done_tx, done_rx) = channel::<u64>();
    drop(smarm::spawn(move || {
        let mut n = 0u64;
        while n < FANIN_PRODUCERS * FANIN_EACH {
            recv();
            n += 1;
        }
        done_tx.send(n).unwrap();
    }));
    for _ in 0..FANIN_PRODUCERS {
        let tx = tx.clone();
        drop(smarm::spawn(move || {
            for i in 0..FANIN_EACH {
                tx.send(i).unwrap();
            }
        }));
    }
    assert_eq!(done_rx.recv().unwrap(), FANIN_PRODUCERS * FANIN_EACH);
}

const SENDS: u64 = 1_000_000;
const SINK: smarm::Name<u64> = smarm::Name::new("bench-sink");

/// One actor sends SENDS messages to a counting sink, through a plain
/// channel or by name through the registry (not part of the peer
/// specification: the registry's cost against a channel).
fn send_workload(by_name: bool) -> (f64, &'static str) {
    let (tx, rx) = channel::<u64>();
    let (ready_tx, ready_rx) = channel::<()>();
    let (done_tx, done_rx) = channel::<u64>();
    let sink_tx = tx.clone();
    drop(smarm::spawn(move || {
        smarm::register(SINK, sink_tx).unwrap();
        ready_tx.send(()).unwrap();
        let mut n = 0;
        while n < SENDS {
            rx.recv().unwrap();
            n += 1;
        }
        done_tx.send(n).unwrap();
    }));
    ready_rx.recv().unwrap();
    let t0 = Instant::now();
    if by_name {
        for i in 0..SENDS {
            assert!(smarm::send(SINK, i).is_ok());
        }
    } else {
        for i in 0..SENDS {
            tx.send(i).unwrap();
        }
    }
    assert_eq!(done_rx.recv().unwrap(), SENDS);
    (t0.elapsed().as_nanos() as f64 / SENDS as f64, "ns/send")
}

/// The benchmark specification's call server: a counter; each call adds
/// one and replies with the new value.
struct CallCounter(u64, bool);

impl smarm::GenServer for CallCounter {
    /// Whether to hibernate after every message (`call_hibernated`).
    type Args = bool;
    type Call = ();
    type Reply = u64;
    type Cast = ();
    type Info = ();
    fn init(
        hibernate: bool,
        _: &mut smarm::gen_server::Ctx<Self>,
    ) -> Result<Self, smarm::gen_server::InitError> {
        Ok(CallCounter(0, hibernate))
    }
    fn handle_call(
        &mut self,
        _: (),
        reply: smarm::Reply<u64>,
        _: &mut smarm::gen_server::Ctx<Self>,
    ) -> smarm::gen_server::Flow {
        self.0 += 1;
        reply.reply(self.0);
        self.flow()
    }
    fn handle_cast(
        &mut self,
        _: (),
        _: &mut smarm::gen_server::Ctx<Self>,
    ) -> smarm::gen_server::Flow {
        self.flow()
    }
}

impl CallCounter {
    fn flow(&self) -> smarm::gen_server::Flow {
        if self.1 {
            smarm::gen_server::Flow::Hibernate
        } else {
            smarm::gen_server::Flow::Continue
        }
    }
}

const CALL_CLIENTS: u64 = 4;
const CALLS_EACH: u64 = 250_000;

/// The call workload's clients: `CALL_CLIENTS` actors, each making
/// `CALLS_EACH` calls through `call` on its copy of `server`; checks that
/// every call was counted once. Nanoseconds per call since `t0`.
fn drive_calls<S: Clone + Send + 'static>(t0: Instant, server: &S, call: fn(&S) -> u64) -> f64 {
    let (done_tx, done_rx) = channel::<u64>();
    for _ in 0..CALL_CLIENTS {
        let (server, done) = (server.clone(), done_tx.clone());
        drop(smarm::spawn(move || {
            let max = (0..CALLS_EACH).map(|_| call(&server)).max().unwrap_or(0);
            done.send(max).unwrap();
        }));
    }
    let max = (0..CALL_CLIENTS).map(|_| done_rx.recv().unwrap()).max();
    let elapsed = t0.elapsed();
    if std::env::var_os("SMARM_BENCH_STATS").is_some() {
        for s in smarm::snapshot().schedulers {
            eprintln!("{s:?}");
        }
    }
    assert_eq!(max, Some(CALL_CLIENTS * CALLS_EACH));
    elapsed.as_nanos() as f64 / (CALL_CLIENTS * CALLS_EACH) as f64
}

fn call_workload() -> (f64, &'static str) {
    let t0 = Instant::now();
    let server = smarm::gen_server::start::<CallCounter>(false).unwrap();
    let ns = drive_calls(t0, &server, |s| s.call(()).unwrap());
    server.shutdown().unwrap();
    (ns, "ns/call")
}

/// `call`, to a server that hibernates after every message: each call
/// wakes it on a fresh stack (the cost of a wake from hibernation).
fn call_hibernated_workload() -> (f64, &'static str) {
    let t0 = Instant::now();
    let server = smarm::gen_server::start::<CallCounter>(true).unwrap();
    let ns = drive_calls(t0, &server, |s| s.call(()).unwrap());
    server.shutdown().unwrap();
    (ns, "ns/call")
}

/// The call server again, as a `#[derive(Actor)]` typed actor: the same
/// counter, the same calls, through the generated client method.
#[derive(smarm::Actor)]
enum DerivedCounter {
    Incr(smarm::Reply<u64>),
}

struct DerivedCounterState(u64);

impl smarm::actor::Handler<DerivedCounter> for DerivedCounterState {
    fn handle(&mut self, msg: DerivedCounter) -> smarm::gen_server::Flow {
        match msg {
            DerivedCounter::Incr(reply) => {
                self.0 += 1;
                reply.reply(self.0);
            }
        }
        smarm::gen_server::Flow::Continue
    }
}

fn call_derived_workload() -> (f64, &'static str) {
    let t0 = Instant::now();
    let server = smarm::actor::start(DerivedCounterState(0)).unwrap();
    let ns = drive_calls(t0, &server, |s| s.incr().unwrap());
    smarm::request_stop(server);
    (ns, "ns/call")
}

/// The derived counter again, started as a gen_server (`Served`) and
/// called through its `GenServerRef`: the derived methods on a direct
/// channel, without the pid lookup of `call_derived`.
fn call_served_workload() -> (f64, &'static str) {
    use smarm::actor::Served;
    let t0 = Instant::now();
    let server = smarm::gen_server::start::<Served<DerivedCounter, DerivedCounterState>>(
        DerivedCounterState(0),
    )
    .unwrap();
    let ns = drive_calls(t0, &server, |s| s.incr().unwrap());
    server.shutdown().unwrap();
    (ns, "ns/call")
}

const TIMERS_N: usize = 100_000;

fn timers_workload() -> (f64, &'static str) {
    (timers_burst(), "ms")
}

/// `TIMERS_N` actors each sleeping 50 ms, spawned at once and joined: ms.
fn timers_burst() -> f64 {
    let t0 = Instant::now();
    let handles: Vec<_> = (0..TIMERS_N)
        .map(|_| smarm::spawn(|| smarm::sleep(Duration::from_millis(50))))
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    t0.elapsed().as_secs_f64() * 1e3
}

/// `timers` a second time in the same process: the stack pool, the slot
/// table and the timer heaps are warm (the first burst is an `EXTRA`).
fn timers_warm_workload() -> (f64, &'static str) {
    extra("cold", timers_burst(), "ms");
    (timers_burst(), "ms")
}

const YIELDS: u64 = 2_000_000;

/// Two actors yielding to each other on one scheduler: ns per switch
/// (each `yield_now` is one switch away and one back in).
fn yield_workload() -> (f64, &'static str) {
    let t0 = Instant::now();
    let yielders: Vec<_> = (0..2)
        .map(|_| {
            smarm::spawn(|| {
                for _ in 0..YIELDS / 2 {
                    smarm::yield_now();
                }
            })
        })
        .collect();
    for y in yielders {
        y.join().unwrap();
    }
    (t0.elapsed().as_nanos() as f64 / YIELDS as f64, "ns/switch")
}

const CRASHES: u32 = 5;
const CRASH_GAP: Duration = Duration::from_millis(10);

/// A heartbeat actor sleeping 1 ms at a time beside an actor that panics
/// `CRASHES` times, `CRASH_GAP` apart, from 40 frames deep (a crash
/// report's backtrace with `RUST_BACKTRACE=1`): the heartbeat's worst
/// lateness, ms. Run it with `RUST_BACKTRACE=0` and `=1`: the difference
/// is what crash reports cost the actors beside them. The gap is shorter
/// than the first backtrace's resolution (~50 ms), so later crashes are
/// captured while an earlier one is being resolved.
fn crash_heartbeat_workload() -> (f64, &'static str) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let done = Arc::new(AtomicBool::new(false));
    let beating = done.clone();
    let heartbeat = smarm::spawn(move || {
        let mut worst = Duration::ZERO;
        let mut lateness = Vec::new();
        while !beating.load(Ordering::Relaxed) {
            let t = Instant::now();
            smarm::sleep(Duration::from_millis(1));
            let late = t.elapsed().saturating_sub(Duration::from_millis(1));
            worst = worst.max(late);
            lateness.push(late);
        }
        lateness.sort();
        (worst, lateness[lateness.len() / 2])
    });
    fn deep(n: u32) -> u32 {
        if n == 0 {
            panic!("crash_heartbeat: the server went off");
        }
        std::hint::black_box(deep(n - 1)) + 1
    }
    for _ in 0..CRASHES {
        smarm::sleep(CRASH_GAP);
        let crasher = smarm::spawn(|| deep(40));
        assert!(crasher.join().is_err());
    }
    smarm::sleep(Duration::from_millis(100));
    done.store(true, Ordering::Relaxed);
    let (worst, median) = heartbeat.join().unwrap();
    extra("median_lateness", median.as_secs_f64() * 1e3, "ms");
    (worst.as_secs_f64() * 1e3, "ms")
}

const MEMORY_N: usize = 100_000;

fn memory_workload() -> (f64, &'static str) {
    let before = proc_status_kib("VmRSS").unwrap();
    let pte_before = proc_status_kib("VmPTE").unwrap();
    let (ready_tx, ready_rx) = channel::<()>();
    let (bye_tx, bye_rx) = channel::<()>();
    let mailboxes: Vec<Sender<u64>> = (0..MEMORY_N)
        .map(|_| {
            let (tx, rx) = channel::<u64>();
            let (ready, bye) = (ready_tx.clone(), bye_tx.clone());
            drop(smarm::spawn(move || {
                ready.send(()).unwrap();
                rx.recv().unwrap();
                bye.send(()).unwrap();
            }));
            tx
        })
        .collect();
    for _ in 0..MEMORY_N {
        ready_rx.recv().unwrap();
    }
    let after = proc_status_kib("VmRSS").unwrap();
    let pte_after = proc_status_kib("VmPTE").unwrap();
    // Page tables are not in RSS; stacks spaced far apart cost one
    // page-table page per few parked actors, so report them beside it.
    extra(
        "page_tables",
        ((pte_after - pte_before) * 1024) as f64 / MEMORY_N as f64,
        "bytes/proc",
    );
    for tx in &mailboxes {
        tx.send(1).unwrap();
    }
    for _ in 0..MEMORY_N {
        bye_rx.recv().unwrap();
    }
    (
        ((after - before) * 1024) as f64 / MEMORY_N as f64,
        "bytes/proc",
    )
}

/// `memory` with gen_servers that hibernate: `MEMORY_N` servers started,
/// each sent one cast after which it hibernates, then the RSS growth per
/// server once the stack pool has given the freed stacks' pages back
/// (stack (I3): after 250 ms, a few thousand per monitor tick).
fn memory_hibernated_workload() -> (f64, &'static str) {
    let before = proc_status_kib("VmRSS").unwrap();
    let servers: Vec<_> = (0..MEMORY_N)
        .map(|_| smarm::gen_server::start::<CallCounter>(true).unwrap())
        .collect();
    for server in &servers {
        server.cast(()).unwrap();
    }
    // Until the RSS stops falling: every server hibernated, and the pool
    // has given back the pages of its free stacks (it starts once they
    // have been free for 250 ms).
    smarm::sleep(Duration::from_millis(500));
    let mut after = proc_status_kib("VmRSS").unwrap();
    for _ in 0..100 {
        smarm::sleep(Duration::from_millis(200));
        let now = proc_status_kib("VmRSS").unwrap();
        let settled = now + 64 >= after;
        after = after.min(now);
        if settled {
            break;
        }
    }
    let per = ((after - before) * 1024) as f64 / MEMORY_N as f64;
    for server in &servers {
        server.shutdown().unwrap();
    }
    (per, "bytes/proc")
}

const SPAWN_1M: usize = 1_000_000;
const SPAWN_1M_FIFTH: usize = SPAWN_1M / 5;

/// A million actors spawned and left parked (each waits on a channel of
/// its own), then released and joined, twice: how spawn cost grows with
/// the population (the first fifth against the last; the second round
/// reuses the first's memory, so it shows smarm's own cost without the
/// kernel's first-touch faults), and how long `run` takes to return once
/// they are gone. The value is the first round's spawning time.
fn spawn_1m_workload() -> (f64, &'static str) {
    let sys0 = sys_time_ms();
    let (spawned, fifths) = spawn_parked_round("");
    extra("spawn_sys_time", sys_time_ms() - sys0, "ms");
    let (_, again) = spawn_parked_round("round2_");
    extra("round2_last_over_first", again[4] / again[0], "x");
    extra("last_over_first", fifths[4] / fifths[0], "x");
    *ROOT_DONE.lock().unwrap() = Some(Instant::now());
    (spawned, "ms")
}

/// One round of `spawn_1m`: spawn, report, release, join. Returns the
/// spawning time and each fifth's, in ms.
fn spawn_parked_round(prefix: &str) -> (f64, Vec<f64>) {
    let t0 = Instant::now();
    let mut fifths = Vec::with_capacity(5);
    let mut parked = Vec::with_capacity(SPAWN_1M);
    let mut mark = t0;
    for i in 0..SPAWN_1M {
        let (tx, rx) = channel::<()>();
        let h = smarm::spawn(move || {
            let _ = rx.recv();
        });
        parked.push((tx, h));
        if (i + 1) % SPAWN_1M_FIFTH == 0 {
            let now = Instant::now();
            fifths.push(now.duration_since(mark).as_secs_f64() * 1e3);
            mark = now;
        }
    }
    let spawned = t0.elapsed().as_secs_f64() * 1e3;
    extra(&format!("{prefix}first_200k"), fifths[0], "ms");
    extra(&format!("{prefix}last_200k"), fifths[4], "ms");
    if let Some(kib) = proc_status_kib("VmRSS") {
        extra(&format!("{prefix}rss_parked"), kib as f64 / 1024.0, "MiB");
    }
    if let Some(kib) = proc_status_kib("VmPTE") {
        extra(
            &format!("{prefix}page_tables_parked"),
            kib as f64 / 1024.0,
            "MiB",
        );
    }
    let t1 = Instant::now();
    for (tx, _) in &parked {
        tx.send(()).unwrap();
    }
    for (_, h) in parked {
        h.join().unwrap();
    }
    extra(
        &format!("{prefix}release_and_join"),
        t1.elapsed().as_secs_f64() * 1e3,
        "ms",
    );
    (spawned, fifths)
}

/// System CPU time of the process so far, in ms.
fn sys_time_ms() -> f64 {
    // SAFETY: getrusage writes only into `usage`.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is always valid.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_stime.tv_sec as f64 * 1e3 + usage.ru_stime.tv_usec as f64 / 1e3
}

/// RSS once it has settled: after the stack scavenger's delay (250 ms of
/// stacks above the warm set), read RSS and page tables every 100 ms until
/// two readings of each are within 1% (the scavenger returns pages over a
/// few ticks, then page tables), at most 10 s.
fn settled_rss_mib() -> f64 {
    let read = || {
        (
            proc_status_kib("VmRSS").unwrap(),
            proc_status_kib("VmPTE").unwrap(),
        )
    };
    smarm::sleep(Duration::from_millis(600));
    let mut last = read();
    for _ in 0..100 {
        smarm::sleep(Duration::from_millis(100));
        let now = read();
        let close = |a: u64, b: u64| a.abs_diff(b) * 100 <= b.max(1);
        if close(now.0, last.0) && close(now.1, last.1) {
            return now.0 as f64 / 1024.0;
        }
        last = now;
    }
    last.0 as f64 / 1024.0
}

/// Spawn `n` actors that each touch `touch` bytes of stack and park, then
/// release and join them all.
fn touch_park_join(n: usize, touch: usize) {
    let parked: Vec<_> = (0..n)
        .map(|_| {
            let (tx, rx) = channel::<()>();
            let h = smarm::spawn(move || {
                touch_stack(touch);
                let _ = rx.recv();
            });
            (tx, h)
        })
        .collect();
    for (tx, _) in &parked {
        tx.send(()).unwrap();
    }
    for (_, h) in parked {
        h.join().unwrap();
    }
}

/// Use `bytes` of stack (64 KiB frames, each page written).
fn touch_stack(bytes: usize) {
    #[inline(never)]
    fn frame(left: usize) {
        let mut buf = [0u8; 64 * 1024];
        for b in buf.iter_mut().step_by(4096) {
            *b = 1;
        }
        std::hint::black_box(&mut buf);
        if left > buf.len() {
            frame(left - buf.len());
        }
    }
    if bytes > 0 {
        frame(bytes);
    }
}

/// Memory that comes back: RSS after a warm-up (1,000 actors that touched
/// 64 KiB of stack each), then after 10,000 such actors alive at once,
/// then after 1,000,000 spawned-parked-joined actors, each once the
/// scavenger has run; then both rounds again. Stacks come back; the slot
/// table's segments (192 bytes per actor at the peak) and what the
/// allocator keeps of its heap stay, and are reused by the second rounds.
/// The value is the final RSS over the RSS after the first rounds.
fn memory_return_workload() -> (f64, &'static str) {
    touch_park_join(1_000, 64 * 1024);
    extra("rss_warm", settled_rss_mib(), "MiB");
    let mut after_first = 0.0;
    for round in ["first", "second"] {
        touch_park_join(10_000, 64 * 1024);
        extra(
            &format!("rss_after_10k_64k_{round}"),
            settled_rss_mib(),
            "MiB",
        );
        touch_park_join(SPAWN_1M, 0);
        let rss = settled_rss_mib();
        extra(&format!("rss_after_1m_{round}"), rss, "MiB");
        if round == "first" {
            after_first = rss;
        } else {
            if let Some(kib) = proc_status_kib("VmPTE") {
                extra("page_tables_end", kib as f64 / 1024.0, "MiB");
            }
            return (rss / after_first, "x first rounds");
        }
    }
    unreachable!("two rounds")
}
