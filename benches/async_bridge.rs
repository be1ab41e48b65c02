//! The async bridge's costs, in one sitting, interleaved rounds:
//!
//! - `wake_rtt`: a future that becomes ready after one wake from another
//!   thread, awaited in a loop: by an actor with `smarm::future::block_on`
//!   (peer `smarm`), and by a tokio task on a current-thread runtime (peer
//!   `tokio`). The other thread spins on the waker slot, so the figure is
//!   the awaiting side's park, wake and re-poll.
//! - `blocking_job`: a trivial closure through the blocking pool,
//!   `block_on_io` and `block_on_io_scoped`, beside calling it directly.
//!
//! Prints `RESULT peer=<peer> workload=<name> value=<ns> unit=ns/op` per
//! round; the medians are what to compare.
//!
//! ```sh
//! cargo bench --bench async_bridge              # 5 rounds
//! cargo bench --bench async_bridge -- 11        # 11 rounds
//! ```
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail the run

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

const ROUND_TRIPS: u32 = 20_000;
const JOBS: u32 = 20_000;

/// What the awaiting side and the waking thread share.
#[derive(Default)]
struct Slot {
    waker: Mutex<Option<Waker>>,
    ready: AtomicBool,
    stop: AtomicBool,
}

/// Ready once the other thread set `ready`; leaves its waker otherwise.
struct OneWake<'a>(&'a Slot);

impl Future for OneWake<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.ready.swap(false, Ordering::Acquire) {
            return Poll::Ready(());
        }
        *self.0.waker.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// The waking thread: take each waker left, make the future ready, wake.
fn waker_thread(slot: Arc<Slot>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !slot.stop.load(Ordering::Relaxed) {
            let taken = slot.waker.lock().unwrap().take();
            match taken {
                Some(w) => {
                    slot.ready.store(true, Ordering::Release);
                    w.wake();
                }
                None => std::hint::spin_loop(),
            }
        }
    })
}

fn wake_rtt_smarm() -> f64 {
    let slot = Arc::new(Slot::default());
    let waking = waker_thread(slot.clone());
    let s = slot.clone();
    let ns = smarm::runtime::init(smarm::runtime::Config::exact(1)).run(move || {
        let t0 = Instant::now();
        for _ in 0..ROUND_TRIPS {
            smarm::future::block_on(OneWake(&s));
        }
        t0.elapsed().as_nanos() as f64 / f64::from(ROUND_TRIPS)
    });
    slot.stop.store(true, Ordering::Relaxed);
    waking.join().unwrap();
    ns
}

fn wake_rtt_tokio() -> f64 {
    let slot = Arc::new(Slot::default());
    let waking = waker_thread(slot.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let s = slot.clone();
    let ns = rt.block_on(async move {
        tokio::spawn(async move {
            let t0 = Instant::now();
            for _ in 0..ROUND_TRIPS {
                OneWake(&s).await;
            }
            t0.elapsed().as_nanos() as f64 / f64::from(ROUND_TRIPS)
        })
        .await
        .unwrap()
    });
    slot.stop.store(true, Ordering::Relaxed);
    waking.join().unwrap();
    ns
}

fn blocking_jobs() -> (f64, f64, f64) {
    smarm::runtime::init(smarm::runtime::Config::exact(2)).run(|| {
        let mut x = 0u64;
        let t0 = Instant::now();
        for i in 0..JOBS {
            x = x.wrapping_add(std::hint::black_box(u64::from(i)));
        }
        let direct = t0.elapsed().as_nanos() as f64 / f64::from(JOBS);
        let t0 = Instant::now();
        for i in 0..JOBS {
            x = x.wrapping_add(smarm::io::block_on_io(move || {
                std::hint::black_box(u64::from(i))
            }));
        }
        let pooled = t0.elapsed().as_nanos() as f64 / f64::from(JOBS);
        let t0 = Instant::now();
        for i in 0..JOBS {
            let y = &mut x;
            smarm::io::block_on_io_scoped(|| {
                *y = y.wrapping_add(std::hint::black_box(u64::from(i)))
            });
        }
        let scoped = t0.elapsed().as_nanos() as f64 / f64::from(JOBS);
        std::hint::black_box(x);
        (direct, pooled, scoped)
    })
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let print = |peer: &str, workload: &str, ns: f64| {
        println!("RESULT peer={peer} workload={workload} value={ns:.0} unit=ns/op");
    };
    for _ in 0..rounds {
        // Interleaved: each round measures every peer once.
        print("smarm", "wake_rtt", wake_rtt_smarm());
        print("tokio", "wake_rtt", wake_rtt_tokio());
        let (direct, pooled, scoped) = blocking_jobs();
        print("direct", "blocking_job", direct);
        print("block_on_io", "blocking_job", pooled);
        print("block_on_io_scoped", "blocking_job", scoped);
    }
}
