//! A TCP echo server: an acceptor actor, and one actor per connection that
//! writes back whatever it reads. Each connection's blocking-style loop
//! parks only its own actor.
//!
//! Run it with `cargo run --release --example echo -- 127.0.0.1:7000`,
//! then talk to it with any TCP client (`nc 127.0.0.1 7000`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here

use smarm::net::{TcpListener, TcpStream};
use std::io::{Read, Write};

/// Accept connections forever, one actor each.
pub fn serve(listener: TcpListener) {
    loop {
        match listener.accept() {
            Ok((conn, _peer)) => drop(smarm::spawn(move || echo(conn))),
            Err(e) => {
                // Out of fds, say: back off instead of spinning on it.
                eprintln!("accept failed: {e}");
                smarm::sleep(std::time::Duration::from_millis(100));
            }
        }
    }
}

/// Echo until the peer closes the connection.
pub fn echo(mut conn: TcpStream) {
    let _ = conn.set_nodelay(true);
    let mut buf = [0u8; 4096];
    loop {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if conn.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}

fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7000".to_string());
    smarm::run(move || {
        let listener = TcpListener::bind(&addr).expect("bind");
        println!(
            "echo server listening on {}",
            listener.local_addr().expect("local addr")
        );
        serve(listener);
    });
}
