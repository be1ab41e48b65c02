//! Echo round trips over loopback TCP, with 1 and 64 concurrent
//! connections. Prints `RESULT peer=<peer> workload=echo1|echo64
//! value=<ns per round trip> unit=ns/roundtrip`.
//!
//! ```sh
//! cargo bench --bench echo                       # against smarm's echo server (in process)
//! cargo bench --bench echo -- --server 127.0.0.1:7001 --peer tokio   # against another server
//! benches/peers/echo.sh                          # both, tokio built from benches/peers/tokio-echo
//! ```
//!
//! The clients are the same in both cases: plain OS threads with blocking
//! std sockets, each sending a 64-byte message and reading it back, one
//! round trip at a time. The smarm server is `examples/echo.rs` on a
//! 2-scheduler runtime.
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail the run

#[path = "../examples/echo.rs"]
#[allow(dead_code)] // the example's main
mod echo;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const MESSAGE: usize = 64;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let peer = arg("--peer").unwrap_or_else(|| "smarm".to_string());
    let addr: SocketAddr = match arg("--server") {
        Some(a) => a.parse().expect("--server takes an address"),
        None => start_smarm_server(),
    };
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(120));
        eprintln!("benchmark gave up after 120 s");
        std::process::exit(3);
    });
    for (conns, trips) in [(1usize, 20_000usize), (64, 2_000)] {
        let ns = run_clients(addr, conns, trips);
        println!("RESULT peer={peer} workload=echo{conns} value={ns:.1} unit=ns/roundtrip");
    }
    std::process::exit(0); // the in-process server never returns
}

fn start_smarm_server() -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        smarm::runtime::init(smarm::runtime::Config::exact(2)).run(move || {
            let listener = smarm::net::TcpListener::bind("127.0.0.1:0").unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            echo::serve(listener);
        });
    });
    rx.recv().unwrap()
}

/// `conns` client threads, `trips` round trips each; wall time per round
/// trip (total wall / total round trips).
fn run_clients(addr: SocketAddr, conns: usize, trips: usize) -> f64 {
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(conns + 1));
    let clients: Vec<_> = (0..conns)
        .map(|c| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_nodelay(true).unwrap();
                let msg = [c as u8; MESSAGE];
                let mut back = [0u8; MESSAGE];
                barrier.wait();
                for _ in 0..trips {
                    s.write_all(&msg).unwrap();
                    s.read_exact(&mut back).unwrap();
                    assert_eq!(back, msg);
                }
            })
        })
        .collect();
    barrier.wait();
    let t0 = Instant::now();
    for c in clients {
        c.join().unwrap();
    }
    t0.elapsed().as_nanos() as f64 / (conns * trips) as f64
}
