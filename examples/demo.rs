//! The main demo: a small job runner built from actors.
//!
//! The root actor plays a dispatcher. It fans a batch of jobs out over a
//! tree of worker actors, each sleeping for its job's "IO" and computing a
//! result that it sends back over a channel; one job is poisoned and
//! panics, and the panic is contained and reported; a watchdog that
//! selects over a control channel and a tick is told to stop while a
//! monitor reports its exit; a supervision tree restarts a named
//! gen_server after an injected crash, and prints itself; a
//! long-running sleeper is stopped cooperatively; an echo server and a
//! client talk over TCP and a blocking call runs on the IO pool; a pair of
//! actors left waiting on each other forever, and the idle acceptor, are
//! swept when the root returns. Number crunchers that never block share
//! the schedulers with a heartbeat, preempted at their allocations (this
//! binary installs `PreemptingAlloc`). It grows with each capability the
//! runtime gains.
//!
//! Run it with `cargo run --release --example demo` (with `--features
//! trace`, it also writes a trace of the fairness phase for Perfetto).
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use smarm::actor::Handler;
use smarm::channel;
use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, ServerName};
use smarm::net::{TcpListener, TcpStream};
use smarm::runtime::{self, Config};
use smarm::supervisor::{self, ChildSpec, Strategy, SupFlags};
use smarm::{Actor, Reply};
use std::io::{Read, Write};

/// Every allocation is a timeslice safepoint: busy actors that allocate
/// are switched out when their slice is spent.
#[global_allocator]
static ALLOC: smarm::PreemptingAlloc = smarm::PreemptingAlloc::system();

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
/// Results come back over channels; a worker that panics drops its
/// sender while unwinding, so the collecting loop still ends.
fn run_jobs(lo: u64, n: u64) -> (u64, u64) {
    if n <= 100 {
        let (tx, rx) = channel::<u64>();
        let handles: Vec<_> = (lo..lo + n)
            .map(|j| {
                let tx = tx.clone();
                smarm::spawn(move || tx.send(job(j)).unwrap())
            })
            .collect();
        drop(tx);
        let mut sum = 0u64;
        while let Ok(result) = rx.recv() {
            sum = sum.wrapping_add(result);
        }
        let mut failed = 0;
        for h in handles {
            if let Err(e) = h.join() {
                println!("  contained a failure in a worker: {e}");
                failed += 1;
            }
        }
        return (sum, failed);
    }
    let half = n / 2;
    let (tx, rx) = channel();
    let left = smarm::spawn(move || tx.send(run_jobs(lo, half)).unwrap());
    let (rs, rf) = run_jobs(lo + half, n - half);
    let (ls, lf) = rx.recv().expect("a subtree dispatcher failed");
    left.join().expect("a subtree dispatcher failed");
    (ls.wrapping_add(rs), lf + rf)
}

/// A bank account server: deposits and withdrawals on a balance. An
/// overdraft is a bug here, and crashes the server (the injected fault).
struct Account {
    balance: u64,
}

enum Op {
    Deposit(u64),
    Withdraw(u64),
}

impl GenServer for Account {
    type Args = ();
    type Call = Op;
    type Reply = u64;
    type Cast = ();
    type Info = ();

    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Account { balance: 0 })
    }

    fn handle_call(&mut self, op: Op, reply: Reply<u64>, _: &mut Ctx<Self>) -> Flow {
        match op {
            Op::Deposit(n) => {
                self.balance += n;
                let _ = LEDGER.record(format!("deposit {n}"));
            }
            Op::Withdraw(n) => {
                assert!(n <= self.balance, "overdraft: {n} > {}", self.balance);
                self.balance -= n;
            }
        }
        reply.reply(self.balance);
        Flow::Continue
    }
}

const ACCOUNT: ServerName<Account> = ServerName::new("account");

/// The ledger: a typed actor from one enum and one handler. The derive
/// gives it `LEDGER.record(..)` (a cast) and `LEDGER.entries()` (a call).
#[derive(Actor)]
#[actor(name = "ledger")]
enum Ledger {
    Record(String),
    Entries(Reply<usize>),
}

struct Entries(Vec<String>);

impl Handler<Ledger> for Entries {
    fn handle(&mut self, msg: Ledger) -> Flow {
        match msg {
            Ledger::Record(line) => self.0.push(line),
            Ledger::Entries(reply) => {
                reply.reply(self.0.len());
            }
        }
        Flow::Continue
    }
}

/// A supervision tree: a one_for_one supervisor over the ledger (a
/// derived typed actor) and the named account server. A crash of the account is contained and
/// repaired: it is back under its name, with fresh state.
fn supervision_tree() -> supervisor::SupervisorRef {
    let flags = SupFlags::new(Strategy::OneForOne).intensity(3, Duration::from_secs(5));
    let sup = supervisor::start(
        flags,
        vec![
            ChildSpec::actor_server::<Ledger, _>("ledger", || Entries(Vec::new())),
            ChildSpec::named_server::<Account>("account", ACCOUNT, || ()),
        ],
    )
    .expect("the tree starts");
    let account = gen_server::whereis_server(ACCOUNT).expect("named when start returns");
    println!(
        "  supervisor {}: account {} balance {}",
        sup.pid(),
        account.pid(),
        account.call(Op::Deposit(100)).expect("a deposit")
    );
    let crashed = account.call(Op::Withdraw(500));
    println!(
        "  account {}: withdraw 500 -> {crashed:?} (crashed)",
        account.pid()
    );
    let restarted = loop {
        match gen_server::whereis_server(ACCOUNT) {
            Some(s) if s.pid() != account.pid() => break s,
            _ => smarm::sleep(Duration::from_millis(1)),
        }
    };
    println!(
        "  supervisor restarted it: account {} balance {}",
        restarted.pid(),
        restarted
            .call(Op::Deposit(0))
            .expect("the restarted account answers")
    );
    println!(
        "  ledger (a #[derive(Actor)] actor): {} entries",
        LEDGER.entries().expect("the ledger answers")
    );
    println!("  the process tree with the supervisor (smarm::tree()):");
    for line in smarm::tree().to_string().lines() {
        println!("    {line}");
    }
    sup
}

fn main() {
    let rt = runtime::init(Config::default());
    let threads = rt.config().thread_count();
    println!("smarm demo on {threads} scheduler thread(s)");
    rt.run(move || {
        let (stop_tx, stop_rx) = channel::<()>();
        let watchdog = smarm::spawn(move || watchdog(stop_rx));

        // A sleeper that never wakes on its own: stopped cooperatively.
        let sleeper = smarm::spawn(|| {
            struct Cleanup;
            impl Drop for Cleanup {
                fn drop(&mut self) {
                    println!("  sleeper: stopped, cleaned up");
                }
            }
            let _cleanup = Cleanup;
            smarm::sleep(Duration::from_secs(3600));
        });

        let t0 = Instant::now();
        let (checksum, failures) = run_jobs(0, JOBS);
        println!(
            "ran {JOBS} jobs on actors in {:?}: checksum {checksum:#x}, {failures} failure(s) contained",
            t0.elapsed()
        );
        assert_eq!(failures, 1);

        let watching = smarm::monitor(watchdog.pid());
        stop_tx.send(()).expect("the watchdog is alive");
        let down = watching.rx.recv().expect("one Down per monitor");
        println!("  monitor: watchdog {} {}", down.pid, down.reason);
        watchdog.join().expect("the watchdog exits normally");

        let sup = supervision_tree();
        smarm::request_stop(sleeper.pid());
        sleeper.join().expect("a stopped actor joins Ok");

        echo_and_block_on_io();

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
        traced(|| fairness(threads));
        sup.shutdown().expect("the tree stops in reverse order");

        println!("the process tree now (smarm::tree()):");
        print!("{}", smarm::tree());
        println!("root returning; two deadlocked actors and an idle acceptor are left for the root-exit sweep");
    });
    println!("run returned: every actor finished");
}

/// A watchdog: ticks every 5 ms until told to stop on its control channel
/// (listed first in the select, so it always wins).
fn watchdog(stop_rx: smarm::Receiver<()>) {
    let (tick_tx, tick_rx) = channel::<()>();
    let mut ticks = 0u32;
    loop {
        let t = tick_tx.clone();
        drop(smarm::spawn(move || {
            smarm::sleep(Duration::from_millis(5));
            let _ = t.send(());
        }));
        if smarm::select(&[&stop_rx, &tick_rx]) == 0 {
            break;
        }
        let _ = tick_rx.try_recv();
        ticks += 1;
    }
    println!("  watchdog: told to stop after {ticks} tick(s)");
}

/// IO: an echo server and a client, both plain blocking-style actors over
/// non-blocking sockets; and a blocking call on the pool.
fn echo_and_block_on_io() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a port");
    let addr = listener.local_addr().expect("a bound address");
    drop(smarm::spawn(move || {
        while let Ok((mut conn, _)) = listener.accept() {
            drop(smarm::spawn(move || {
                let mut buf = [0u8; 256];
                while let Ok(n @ 1..) = conn.read(&mut buf) {
                    if conn.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }));
        }
    }));
    let mut client = TcpStream::connect(addr).expect("connect to the echo server");
    client.write_all(b"hello over TCP").expect("write");
    let mut reply = [0u8; 14];
    client.read_exact(&mut reply).expect("read the echo");
    println!(
        "  echo server on {addr} answered {:?}",
        String::from_utf8_lossy(&reply)
    );
    let size = smarm::io::block_on_io(|| std::fs::metadata("Cargo.toml").map(|m| m.len()));
    println!("  block_on_io: Cargo.toml is {} bytes", size.unwrap_or(0));
}

/// Run `phase`; with the `trace` feature, under a runtime trace written
/// to the temporary directory for Perfetto (`cargo run --release
/// --features trace --example demo`).
fn traced(phase: impl FnOnce()) {
    #[cfg(feature = "trace")]
    smarm::trace::start();
    phase();
    #[cfg(feature = "trace")]
    {
        let trace = smarm::trace::stop().expect("started above");
        let path = std::env::temp_dir().join("smarm-demo-trace.json");
        trace
            .write_chrome(&path)
            .expect("the temporary directory is writable");
        println!(
            "  trace of that phase: {} events in {} (open it in Perfetto)",
            trace.events().len(),
            path.display()
        );
    }
}

/// One cruncher per scheduler, each building strings for 100 ms without
/// ever blocking, beside a heartbeat that sleeps 1 ms at a time: the
/// crunchers are preempted at their allocations, so the heartbeat keeps
/// its rhythm.
fn fairness(threads: usize) {
    let crunchers: Vec<_> = (0..threads)
        .map(|k| {
            smarm::spawn(move || {
                let t0 = Instant::now();
                let mut longest = 0;
                while t0.elapsed() < Duration::from_millis(100) {
                    let s: String = (0..64).map(|i| format!("{k}:{i};")).collect();
                    longest = longest.max(s.len());
                }
                std::hint::black_box(longest);
            })
        })
        .collect();
    let mut worst = Duration::ZERO;
    for _ in 0..50 {
        let t0 = Instant::now();
        smarm::sleep(Duration::from_millis(1));
        worst = worst.max(t0.elapsed().saturating_sub(Duration::from_millis(1)));
    }
    let overruns: u64 = crunchers
        .iter()
        .filter_map(|h| smarm::actor_info(h.pid()))
        .map(|i| i.overruns)
        .sum();
    for h in crunchers {
        h.join().unwrap();
    }
    println!(
        "  {threads} cruncher(s) that never block: preempted {overruns} time(s); \
         the heartbeat beside them was at most {:.1} ms late",
        worst.as_secs_f64() * 1e3
    );
}
