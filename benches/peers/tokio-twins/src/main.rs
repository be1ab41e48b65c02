//! tokio twins of smarm workloads that the shared peer suite does not have:
//!
//! - `yield`: two tasks calling `tokio::task::yield_now` in turn on the
//!   current-thread runtime: ns per switch, as smarm's `yield` workload.
//! - `timers_warm`: the `timers` workload (100,000 tasks sleeping 50 ms)
//!   twice in one process on the 2-worker runtime: the second burst's ms,
//!   the first as an `EXTRA` line.
//!
//! Prints the same RESULT/EXTRA lines as smarm's bench.
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

const YIELDS: u64 = 2_000_000;
const TIMERS_N: usize = 100_000;

fn report(workload: &str, value: f64, unit: &str) {
    println!("RESULT peer=tokio workload={workload} value={value:.1} unit={unit}");
}

fn main() {
    let workload = std::env::args().nth(1).unwrap_or_default();
    match workload.as_str() {
        "yield" => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime");
            rt.block_on(async {
                let t = Instant::now();
                let yielders: Vec<_> = (0..2)
                    .map(|_| {
                        tokio::spawn(async {
                            for _ in 0..YIELDS / 2 {
                                tokio::task::yield_now().await;
                            }
                        })
                    })
                    .collect();
                for y in yielders {
                    y.await.expect("yielder");
                }
                report(
                    "yield",
                    t.elapsed().as_nanos() as f64 / YIELDS as f64,
                    "ns/switch",
                );
            });
        }
        "timers_warm" => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                tokio::spawn(async {
                    let cold = timers_burst().await;
                    println!(
                        "EXTRA peer=tokio workload=timers_warm metric=cold value={cold:.1} unit=ms"
                    );
                    report("timers_warm", timers_burst().await, "ms");
                })
                .await
                .expect("root task");
            });
        }
        other => {
            eprintln!("usage: tokio-twins yield|timers_warm (not {other:?})");
            std::process::exit(2);
        }
    }
}

/// The shared suite's `timers` workload: ms for the whole burst.
async fn timers_burst() -> f64 {
    let t = Instant::now();
    let (tx, mut rx) = mpsc::unbounded_channel::<()>();
    for _ in 0..TIMERS_N {
        let tx = tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            tx.send(()).expect("the root waits");
        });
    }
    drop(tx);
    for _ in 0..TIMERS_N {
        rx.recv().await.expect("a timer task");
    }
    t.elapsed().as_secs_f64() * 1e3
}
