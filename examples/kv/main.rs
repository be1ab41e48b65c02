//! kv: a Redis-protocol key-value server built as a smarm application.
//!
//! ```text
//! cargo run --release --example kv -- --port 6380
//! redis-cli -p 6380 set greeting hello
//! redis-benchmark -p 6380 -t set,get -n 100000 -q
//! ```
//!
//! The supervision tree (rest_for_one: a crash restarts what depends on
//! it):
//!
//! ```text
//! kv (rest_for_one)
//! ├── shards (one_for_one)      kv-shard-0 .. kv-shard-N-1: gen_servers, the keyspace
//! ├── connections (dynamic)     one actor per client, temporary, max_children
//! └── acceptor                  binds the port, hands each accepted stream over
//! ```
//!
//! SIGTERM or SIGINT stops the tree in reverse order (the acceptor, then
//! every connection, then the shards) and exits 0.

mod conn;
mod resp;
mod server;
mod shard;

use server::parse_args;
use smarm::application::{AppExit, Application};
use std::time::Duration;

fn main() -> AppExit {
    let opts = match parse_args(std::env::args().skip(1)) {
        Ok(opts) => opts,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let mut config = smarm::runtime::Config::default();
    if let Some(threads) = opts.threads {
        config = smarm::runtime::Config::exact(threads);
    }
    Application::new()
        .config(config)
        .shutdown_timeout(Duration::from_secs(10))
        .run(move || server::start(opts))
}
