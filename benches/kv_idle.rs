//! Holds idle connections open, for `benches/kv.sh`'s memory-per-idle-
//! connection figure: `kv_idle <port> <count>` connects `count` times to
//! 127.0.0.1:`port`, prints `ready`, and keeps them open, silent, until
//! stdin closes (the script checks the server's `connected_clients`).

use std::io::{BufRead, Write};
use std::net::TcpStream;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(port), Some(count)) = (
        args.get(1).and_then(|p| p.parse::<u16>().ok()),
        args.get(2).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: kv_idle <port> <count>");
        std::process::exit(2);
    };
    let mut held = Vec::with_capacity(count);
    for i in 0..count {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(c) => held.push(c),
            Err(e) => {
                eprintln!("kv_idle: connection {i} failed: {e}");
                std::process::exit(1);
            }
        }
    }
    println!("ready");
    let _ = std::io::stdout().flush();
    for _ in std::io::stdin().lock().lines() {}
    drop(held);
}
