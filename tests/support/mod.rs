//! Shared helpers for the integration tests.
#![allow(dead_code)] // each test file uses a subset
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

use smarm::runtime::{self, Config};

/// Scheduler thread counts every runtime test runs at.
pub const THREADS: [usize; 3] = [1, 2, 4];

/// Run `f` as the root actor on a fresh runtime with `threads` schedulers.
pub fn run_with<F: FnOnce() + Send + 'static>(threads: usize, f: F) {
    runtime::init(Config::exact(threads)).run(f);
}

/// Counts its drops: a destructor that ran during an unwind shows up here.
pub struct CountDrop(pub std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for CountDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A small deterministic PRNG (xorshift64*), so tests need no crate.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Re-run this test binary's test `name` in a child process with `env`
/// set (the child branch of the test looks for it), capturing its output:
/// for tests that must abort, or whose output is the thing checked.
pub fn rerun_in_child(name: &str, env: &str) -> std::process::Output {
    rerun_in_child_with(name, env, &[])
}

/// [`rerun_in_child`] with the child's environment changed: each
/// `(var, Some(value))` set, each `(var, None)` removed, in order.
pub fn rerun_in_child_with(
    name: &str,
    env: &str,
    vars: &[(&str, Option<&str>)],
) -> std::process::Output {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child.args(["--exact", name, "--nocapture"]).env(env, "1");
    for (var, value) in vars {
        match value {
            Some(value) => child.env(var, value),
            None => child.env_remove(var),
        };
    }
    child.output().unwrap()
}

/// Sleep 1 ms `n` times from the calling actor; the worst lateness seen.
pub fn heartbeat_worst_lateness(n: u32) -> std::time::Duration {
    let mut worst = std::time::Duration::ZERO;
    for _ in 0..n {
        let t0 = std::time::Instant::now();
        smarm::sleep(std::time::Duration::from_millis(1));
        worst = worst.max(
            t0.elapsed()
                .saturating_sub(std::time::Duration::from_millis(1)),
        );
    }
    worst
}

/// Aborts the test process if not dropped within `limit`: for tests whose
/// failure mode is a hang (a lost wake leaves a run that never ends), so
/// the failure is a message and an exit, not a stuck test binary.
pub struct HangGuard(Option<std::sync::mpsc::Sender<()>>);

impl HangGuard {
    pub fn new(limit: std::time::Duration, what: &'static str) -> HangGuard {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                eprintln!("hung for {limit:?}: {what}");
                std::process::abort();
            }
        });
        HangGuard(Some(tx))
    }
}

impl Drop for HangGuard {
    fn drop(&mut self) {
        // Dropping the sender disconnects the watchdog, which then leaves.
        self.0.take();
    }
}

/// Wait (sleeping) until `pid` is parked, and say on what.
pub fn parked_on(pid: smarm::Pid) -> Option<smarm::WaitingOn> {
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let info = smarm::actor_info(pid).unwrap();
        if info.state == smarm::ActorState::Parked {
            return info.waiting_on;
        }
        assert!(
            info.waiting_on.is_none(),
            "only a parked actor waits on something"
        );
        assert!(std::time::Instant::now() < give_up, "{pid} never parked");
        smarm::sleep(std::time::Duration::from_millis(1));
    }
}

/// A field of /proc/self/status in KiB (VmRSS, VmHWM).
pub fn proc_status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

/// Assert a restart came `gap` after the last start, `expected` by its
/// backoff: within 25% (a loaded machine) plus the backoff's `jitter`.
pub fn assert_backoff_gap(gap: std::time::Duration, expected_ms: u64, jitter: f64) {
    let expected = std::time::Duration::from_millis(expected_ms);
    let (low, high) = (
        expected.mul_f64(1.0 - 0.25 - jitter),
        expected.mul_f64(1.0 + 0.25 + jitter),
    );
    assert!(
        gap >= low && gap <= high,
        "restart after {gap:?}, expected {expected:?} (within {low:?}..{high:?})"
    );
}
