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
//! gives up with a non-zero exit after 120 s. Runtime: 2 scheduler threads.
//!
//! Workloads that need message passing use what the runtime offers today:
//! skynet's children add their number into the parent's accumulator and are
//! joined; `memory` parks each actor in a long `sleep` and releases it with
//! `request_stop`. They switch to channels when channels land.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed check must fail the run

use smarm::runtime::{self, Config};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WORKLOADS: [&str; 4] = ["spawn", "skynet", "timers", "memory"];
const CHILD_ENV: &str = "SMARM_BENCH_WORKLOAD";

fn main() -> ExitCode {
    if let Ok(name) = std::env::var(CHILD_ENV) {
        return run_child(&name);
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
            eprintln!("FAIL peer=smarm workload={w} exit={status}");
            ok = false;
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn run_child(name: &str) -> ExitCode {
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(120));
        eprintln!("benchmark gave up after 120 s");
        std::process::exit(3);
    });
    let result = Arc::new(Mutex::new(None));
    let r = result.clone();
    let body: fn() -> (f64, &'static str) = match name {
        "spawn" => spawn_workload,
        "skynet" => skynet_workload,
        "timers" => timers_workload,
        "memory" => memory_workload,
        other => {
            eprintln!("unknown workload {other}; known: {WORKLOADS:?}");
            return ExitCode::FAILURE;
        }
    };
    runtime::init(Config::exact(2)).run(move || *r.lock().unwrap() = Some(body()));
    let (value, unit) = result
        .lock()
        .unwrap()
        .take()
        .expect("workload produced no value");
    println!("RESULT peer=smarm workload={name} value={value:.1} unit={unit}");
    if let Some(kib) = proc_status_kib("VmHWM") {
        println!("EXTRA peer=smarm workload={name} metric=peak_rss value={kib} unit=KiB");
    }
    ExitCode::SUCCESS
}

/// A field of /proc/self/status in KiB (VmRSS, VmHWM).
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

fn skynet(num: u64, size: u64, parent: Arc<AtomicU64>) {
    if size == 1 {
        parent.fetch_add(num, Ordering::Relaxed);
        return;
    }
    let acc = Arc::new(AtomicU64::new(0));
    let step = size / 10;
    let children: Vec<_> = (0..10)
        .map(|i| {
            let acc = acc.clone();
            smarm::spawn(move || skynet(num + i * step, step, acc))
        })
        .collect();
    for c in children {
        c.join().unwrap();
    }
    parent.fetch_add(acc.load(Ordering::Relaxed), Ordering::Relaxed);
}

fn skynet_workload() -> (f64, &'static str) {
    let t0 = Instant::now();
    let total = Arc::new(AtomicU64::new(0));
    let t = total.clone();
    smarm::spawn(move || skynet(0, 1_000_000, t))
        .join()
        .unwrap();
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    assert_eq!(total.load(Ordering::Relaxed), 499_999_500_000, "skynet sum");
    (ms, "ms")
}

const TIMERS_N: usize = 100_000;

fn timers_workload() -> (f64, &'static str) {
    let t0 = Instant::now();
    let handles: Vec<_> = (0..TIMERS_N)
        .map(|_| smarm::spawn(|| smarm::sleep(Duration::from_millis(50))))
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    (t0.elapsed().as_secs_f64() * 1e3, "ms")
}

const MEMORY_N: usize = 100_000;

fn memory_workload() -> (f64, &'static str) {
    let before = proc_status_kib("VmRSS").unwrap();
    let ready = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..MEMORY_N)
        .map(|_| {
            let ready = ready.clone();
            smarm::spawn(move || {
                ready.fetch_add(1, Ordering::Release);
                smarm::sleep(Duration::from_secs(3600));
            })
        })
        .collect();
    while ready.load(Ordering::Acquire) < MEMORY_N {
        smarm::sleep(Duration::from_millis(1));
    }
    smarm::sleep(Duration::from_millis(10)); // the last ones finish parking
    let after = proc_status_kib("VmRSS").unwrap();
    for h in &handles {
        smarm::request_stop(h.pid());
    }
    for h in handles {
        h.join().unwrap();
    }
    (
        ((after - before) * 1024) as f64 / MEMORY_N as f64,
        "bytes/proc",
    )
}
