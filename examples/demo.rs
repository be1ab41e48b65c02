//! The main demo: a small job runner built from actors.
//!
//! The root actor plays a dispatcher. It fans a batch of jobs out over a
//! tree of worker actors, each sleeping for its job's "IO" and computing a
//! result; one job is poisoned and panics, and the panic is contained and
//! reported; a long-running watchdog is stopped cooperatively; a pair of
//! actors left waiting on each other forever is swept when the root
//! returns. It grows with each capability the runtime gains.
//!
//! Run it with `cargo run --release --example demo`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use smarm::runtime::{self, Config};

const JOBS: u64 = 10_000;
const POISONED: u64 = 4_242;

/// One job: wait for its (simulated) IO, then compute.
fn job(n: u64) -> u64 {
    smarm::sleep(Duration::from_micros(200 + n % 800));
    if n == POISONED {
        panic!("job {n}: poisoned input");
    }
    (1..=n % 1_000).fold(n, |acc, k| acc.wrapping_mul(31).wrapping_add(k))
}

/// Run jobs lo..lo+n on a tree of actors; returns (checksum, failures).
fn run_jobs(lo: u64, n: u64) -> (u64, u64) {
    if n <= 100 {
        let handles: Vec<_> = (lo..lo + n)
            .map(|j| {
                let out = Arc::new(AtomicU64::new(0));
                let o = out.clone();
                (
                    smarm::spawn(move || o.store(job(j), Ordering::Relaxed)),
                    out,
                )
            })
            .collect();
        let mut sum = 0u64;
        let mut failed = 0;
        for (h, out) in handles {
            match h.join() {
                Ok(()) => sum = sum.wrapping_add(out.load(Ordering::Relaxed)),
                Err(e) => {
                    println!("  contained a failure in a worker: {e}");
                    failed += 1;
                }
            }
        }
        return (sum, failed);
    }
    let half = n / 2;
    let left = Arc::new(Mutex::new((0, 0)));
    let l = left.clone();
    let h = smarm::spawn(move || *l.lock().unwrap() = run_jobs(lo, half));
    let (rs, rf) = run_jobs(lo + half, n - half);
    h.join().expect("a subtree dispatcher failed");
    let (ls, lf) = *left.lock().unwrap();
    (ls.wrapping_add(rs), lf + rf)
}

fn main() {
    let rt = runtime::init(Config::default());
    println!(
        "smarm demo on {} scheduler thread(s)",
        rt.config().thread_count()
    );
    rt.run(|| {
        let watchdog = smarm::spawn(|| {
            struct Cleanup;
            impl Drop for Cleanup {
                fn drop(&mut self) {
                    println!("  watchdog: stopped, cleaned up");
                }
            }
            let _cleanup = Cleanup;
            loop {
                smarm::sleep(Duration::from_millis(5));
            }
        });

        let t0 = Instant::now();
        let (checksum, failures) = run_jobs(0, JOBS);
        println!(
            "ran {JOBS} jobs on actors in {:?}: checksum {checksum:#x}, {failures} failure(s) contained",
            t0.elapsed()
        );
        assert_eq!(failures, 1);

        smarm::request_stop(watchdog.pid());
        watchdog.join().expect("a stopped actor joins Ok");

        // Two actors waiting on each other forever: the runtime stops them
        // when the root returns, so `run` still returns.
        let slot: Arc<Mutex<Option<smarm::JoinHandle>>> = Arc::new(Mutex::new(None));
        let s = slot.clone();
        let a = smarm::spawn(move || {
            smarm::sleep(Duration::from_millis(1));
            let b = s.lock().unwrap().take().unwrap();
            let _ = b.join();
        });
        *slot.lock().unwrap() = Some(smarm::spawn(move || {
            let _ = a.join();
        }));
        println!("root returning; two deadlocked actors are left for the root-exit sweep");
    });
    println!("run returned: every actor finished");
}
