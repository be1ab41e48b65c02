//! The observer example: the shop of `shop.rs` under the web observer.
//!
//! ```text
//! cargo run --release --features observer --example observer [ADDR] [--token T] [--top]
//! ```
//!
//! Prints the page's URL (ADDR defaults to 127.0.0.1:9000); open it in a
//! browser. With `--top`, draws the terminal view instead of serving.
//! With the `trace` feature too, `--trace FILE` writes a one-second
//! Chrome trace of the shop (open it in Perfetto) and exits.

#![allow(clippy::unwrap_used, clippy::expect_used)] // an example fails loudly

mod shop;

use smarm::observer::{self, Observer, TopBy};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag_value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let addr = args
        .first()
        .filter(|a| !a.starts_with("--"))
        .cloned()
        .unwrap_or_else(|| "127.0.0.1:9000".to_string());
    let token = flag_value("--token");
    let top = args.iter().any(|a| a == "--top");
    let trace_file = flag_value("--trace");
    smarm::run(move || {
        let _shop = shop::start();
        if let Some(file) = trace_file {
            write_trace(&file);
            return;
        }
        if top {
            observer::run_top(TopBy::RunTime, 20, Duration::from_secs(1));
        }
        let mut settings = Observer::new();
        if let Some(token) = token {
            settings = settings.token(token);
        }
        let obs = settings.serve(addr.as_str()).unwrap();
        println!("observer at {}", obs.url());
        // Serve until killed: the shop runs forever.
        loop {
            smarm::time::sleep(Duration::from_secs(3600));
        }
    });
}

#[cfg(feature = "trace")]
fn write_trace(file: &str) {
    smarm::trace::start();
    smarm::time::sleep(Duration::from_secs(1));
    let trace = smarm::trace::stop().unwrap();
    trace.write_chrome(file).unwrap();
    println!(
        "wrote {} events ({} lost) to {file}: open it in Perfetto or chrome://tracing",
        trace.events().len(),
        trace.lost()
    );
}

#[cfg(not(feature = "trace"))]
fn write_trace(_: &str) {
    eprintln!(
        "--trace needs the trace feature: cargo run --features observer,trace --example observer -- --trace FILE"
    );
    std::process::exit(2);
}
