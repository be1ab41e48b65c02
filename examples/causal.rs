//! Causal profiling of small services whose answers are known, printing
//! each profile and writing the first one's plot to `causal.svg`.
//!
//! ```text
//! cargo run --release --example causal --features smarm-causal [-- SCENARIO [SECONDS]]
//! ```
//!
//! Scenarios (default `pipeline`, 30 s of profiling each):
//!
//! - `pipeline`: a producer (stage A, the bottleneck) feeds a consumer
//!   (stage B, with time to spare). The profile predicts a large gain for
//!   A and none for B; `pipeline-real` then measures the real gain of
//!   making A 20% cheaper, to hold against the prediction.
//! - `parallel`: each request needs both of two servers, equally loaded:
//!   speeding up either alone gains nothing.
//! - `mutex` and `message`: clients that need a shared resource, behind a
//!   `smarm::Mutex` in one and behind a server actor in the other; the
//!   critical work is the bottleneck in both, and both profiles say so.
//!   `mutex-client-real` and `message-client-real` measure the real gain
//!   of making the clients' own work 60% cheaper.
//!
//! With `CAUSAL_RAW` set, each experiment is printed as well.
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock
#![allow(clippy::expect_used)] // a failed step should fail loudly here

use smarm::causal::{self, Settings};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Busy work of about `units` microseconds (calibrated at start).
fn work(units: u64) {
    let iters = units * ITERS_PER_US.load(Ordering::Relaxed);
    let mut x = 0u64;
    for i in 0..iters {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    black_box(x);
}

/// The clients' own work (microseconds), outside the critical section.
static CLIENT_US: AtomicU64 = AtomicU64::new(5);

static ITERS_PER_US: AtomicU64 = AtomicU64::new(100);

fn calibrate() {
    let t0 = Instant::now();
    ITERS_PER_US.store(1, Ordering::Relaxed);
    work(2_000_000);
    let per_us = 2_000_000.0 / t0.elapsed().as_secs_f64() / 1e6;
    ITERS_PER_US.store((per_us as u64).max(1), Ordering::Relaxed);
}

/// Stage A's cost in microseconds (20% less in `pipeline-real`'s second
/// run), stage B's.
const A_US: u64 = 40;
const B_US: u64 = 15;

/// Start the producer/consumer pipeline; stops when `stop` is set. The
/// consumer polls its queue (sleeping 20 us when it is empty) rather than
/// being woken by each send: a woken actor waits in the waker's scheduler
/// (its next slot), so a producer that never blocks would run the two
/// stages in turn on one scheduler, and this pipeline is meant to run them
/// in parallel, one per scheduler. At most `WINDOW` items are in flight:
/// a backlog left by one experiment would drain into the next.
fn pipeline(a_us: u64, stop: Arc<AtomicBool>) -> Vec<smarm::JoinHandle> {
    const WINDOW: u64 = 64;
    let (tx, rx) = smarm::channel::<u64>();
    let consumed = Arc::new(AtomicU64::new(0));
    let done = consumed.clone();
    let consumer = smarm::Builder::new().name("stage B").spawn(move || {
        loop {
            match rx.try_recv() {
                Ok(Some(item)) => {
                    causal::region("stage B", || work(B_US));
                    black_box(item);
                    smarm::progress!("items");
                    done.fetch_add(1, Ordering::Release);
                }
                Ok(None) => smarm::sleep(Duration::from_micros(20)),
                Err(_) => break,
            }
        }
    });
    let producer = smarm::Builder::new().name("stage A").spawn(move || {
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            causal::region("stage A", || work(a_us));
            while n - consumed.load(Ordering::Acquire) >= WINDOW {
                smarm::sleep(Duration::from_micros(20));
            }
            n += 1;
            if tx.send(n).is_err() {
                break;
            }
        }
    });
    vec![
        producer.expect("spawn producer"),
        consumer.expect("spawn consumer"),
    ]
}

/// Two halves every request needs, each an actor with 200 us of work per
/// request: a splitter hands each request to both, a joiner counts it
/// done once both halves are, and at most 8 are in flight. With two
/// schedulers the halves run in parallel, each the bottleneck.
fn parallel(stop: Arc<AtomicBool>) -> Vec<smarm::JoinHandle> {
    let (done_tx, done_rx) = smarm::channel::<u64>();
    // Each half polls its queue, as the pipeline's consumer does, so the
    // two keep a scheduler each instead of being woken into whichever
    // scheduler the splitter runs on (and run in turn there).
    let half = |name: &'static str, done: smarm::Sender<u64>| {
        let (tx, rx) = smarm::channel::<u64>();
        let h = smarm::spawn(move || {
            loop {
                match rx.try_recv() {
                    Ok(Some(request)) => {
                        causal::region(name, || work(200));
                        if done.send(request).is_err() {
                            break;
                        }
                    }
                    Ok(None) => smarm::sleep(Duration::from_micros(20)),
                    Err(_) => break,
                }
            }
        });
        (tx, h)
    };
    let (left, hl) = half("left half", done_tx.clone());
    let (right, hr) = half("right half", done_tx);
    let (window_tx, window_rx) = smarm::channel::<()>();
    for _ in 0..8 {
        let _ = window_tx.send(());
    }
    let joiner = smarm::spawn(move || {
        let mut halves = std::collections::HashMap::<u64, u8>::new();
        while let Ok(request) = done_rx.recv() {
            let n = halves.entry(request).or_insert(0);
            *n += 1;
            if *n == 2 {
                halves.remove(&request);
                smarm::progress!("requests");
                if window_tx.send(()).is_err() {
                    break;
                }
            }
        }
    });
    let splitter = smarm::spawn(move || {
        let mut request = 0;
        while !stop.load(Ordering::Relaxed) && window_rx.recv().is_ok() {
            request += 1;
            if left.send(request).is_err() || right.send(request).is_err() {
                break;
            }
        }
    });
    vec![splitter, joiner, hl, hr]
}

/// Clients whose critical work (30 us) is serialised behind a
/// `smarm::Mutex`; each also works 5 us on its own.
fn mutex(stop: Arc<AtomicBool>) -> Vec<smarm::JoinHandle> {
    let shared = smarm::Mutex::new(0u64);
    (0..4)
        .map(|_| {
            let (shared, stop) = (shared.clone(), stop.clone());
            smarm::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    {
                        let Ok(mut n) = shared.lock() else { break };
                        causal::region("critical", || work(30));
                        *n += 1;
                    }
                    causal::region("client", || work(CLIENT_US.load(Ordering::Relaxed)));
                    smarm::progress!("requests");
                }
            })
        })
        .collect()
}

/// The same, with the critical work done by a server actor the clients
/// call.
fn message(stop: Arc<AtomicBool>) -> Vec<smarm::JoinHandle> {
    let (tx, rx) = smarm::channel::<smarm::Sender<()>>();
    let mut handles = vec![smarm::spawn(move || {
        let mut n = 0u64;
        while let Ok(reply) = rx.recv() {
            causal::region("critical", || work(30));
            n += 1;
            let _ = reply.send(());
        }
        black_box(n);
    })];
    for _ in 0..4 {
        let (server, stop) = (tx.clone(), stop.clone());
        handles.push(smarm::spawn(move || {
            let (me, replies) = smarm::channel();
            while !stop.load(Ordering::Relaxed) {
                if server.send(me.clone()).is_err() {
                    break;
                }
                let _ = replies.recv();
                causal::region("client", || work(CLIENT_US.load(Ordering::Relaxed)));
                smarm::progress!("requests");
            }
        }));
    }
    handles
}

/// Run `scenario` for `secs` of profiling and return its profile.
fn profile(scenario: &str, secs: u64) -> causal::Profile {
    let stop = Arc::new(AtomicBool::new(false));
    let handles = match scenario {
        "pipeline" => pipeline(A_US, stop.clone()),
        "parallel" => parallel(stop.clone()),
        "mutex" => mutex(stop.clone()),
        "message" => message(stop.clone()),
        other => panic!(
            "unknown scenario {other:?}: pipeline, pipeline-real, parallel, mutex, message, all"
        ),
    };
    // Only the scenario's own regions (not the actors named after them).
    let settings = Settings::new(Duration::from_secs(secs))
        .only("stage ")
        .only("half")
        .only("critical")
        .only("client");
    let profile = causal::profile_with(settings);
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        smarm::request_stop(h.pid());
        let _ = h.join();
    }
    profile
}

/// A scenario's throughput at its progress point `point`, unprofiled.
fn throughput(
    start: impl FnOnce(Arc<AtomicBool>) -> Vec<smarm::JoinHandle>,
    point: &str,
    secs: u64,
) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let handles = start(stop.clone());
    smarm::sleep(Duration::from_millis(500)); // warm up
    let before = visits(point);
    let t0 = Instant::now();
    smarm::sleep(Duration::from_secs(secs));
    let rate = (visits(point) - before) as f64 / t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        smarm::request_stop(h.pid());
        let _ = h.join();
    }
    rate
}

fn visits(point: &str) -> u64 {
    match causal::progress_point(point) {
        Some(causal::ProgressCount::Throughput { visits }) => visits,
        _ => 0,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let scenario = args.next().unwrap_or_else(|| "pipeline".into());
    let secs: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(30);
    calibrate();
    let rt = smarm::runtime::init(smarm::runtime::Config::exact(2));
    rt.run(move || {
        if scenario == "pipeline-real" {
            let before = throughput(|stop| pipeline(A_US, stop), "items", secs);
            let after = throughput(|stop| pipeline(A_US * 8 / 10, stop), "items", secs);
            println!(
                "pipeline, stage A 20% cheaper: {before:.0} -> {after:.0} items/s, \
                 program speedup {:+.1}% (period)",
                (1.0 - before / after) * 100.0
            );
            return;
        }
        if let Some(which) = scenario.strip_suffix("-client-real") {
            let start = match which {
                "mutex" => mutex,
                "message" => message,
                other => panic!("no {other}-client-real: mutex or message"),
            };
            let before = throughput(start, "requests", secs);
            CLIENT_US.store(2, Ordering::Relaxed);
            let after = throughput(start, "requests", secs);
            println!(
                "{which}, client work 5 -> 2 us (60% cheaper): {before:.0} -> {after:.0} \
                 requests/s, program speedup {:+.1}% (period)",
                (1.0 - before / after) * 100.0
            );
            return;
        }
        let scenarios: Vec<&str> = match scenario.as_str() {
            "all" => vec!["pipeline", "parallel", "mutex", "message"],
            one => vec![one],
        };
        for (i, s) in scenarios.iter().enumerate() {
            let profile = profile(s, secs);
            println!(
                "== {s}: {} experiments\n{profile}",
                profile.experiments.len()
            );
            if std::env::var_os("CAUSAL_RAW").is_some() {
                for e in &profile.experiments {
                    println!(
                        "{} {:.2} {:?} {:?} {:?}",
                        e.region, e.speedup, e.duration, e.region_time, e.points
                    );
                }
            }
            if i == 0 {
                std::fs::write("causal.svg", profile.to_svg()).expect("write causal.svg");
                println!("wrote causal.svg");
            }
        }
    });
}
