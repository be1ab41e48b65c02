//! The kv example (`examples/kv`), driven over TCP: pipelining, inline
//! commands, errors, expiry, hostile input closing only its connection,
//! `max_clients`, a crashed shard restarting while the others keep their
//! keys, and SIGTERM stopping the server (run as kv's `main` runs it) with
//! status 0.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(dead_code)] // the example's command-line parsing
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

#[path = "../examples/kv/conn.rs"]
mod conn;
#[path = "../examples/kv/resp.rs"]
mod resp;
#[path = "../examples/kv/server.rs"]
mod server;
#[path = "../examples/kv/shard.rs"]
mod shard;

mod support;

use smarm::net::TcpStream;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::run_with;

/// Start the kv tree on a free port; its address.
fn start_kv(
    tweak: impl FnOnce(&mut server::Options),
) -> (smarm::supervisor::SupervisorRef, SocketAddr) {
    let (tx, rx) = smarm::channel();
    let mut opts = server::Options {
        port: 0,
        announce: Some(tx),
        ..server::Options::default()
    };
    tweak(&mut opts);
    let top = server::start(opts).unwrap();
    (top, rx.recv().unwrap())
}

/// A client connection.
struct Client(TcpStream);

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Client(s)
    }

    /// Send `request`, read exactly `expected.len()` bytes, compare.
    fn expect(&mut self, request: &[u8], expected: &[u8]) {
        self.0.write_all(request).unwrap();
        let mut got = vec![0u8; expected.len()];
        self.0.read_exact(&mut got).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected),
            "reply to {:?}",
            String::from_utf8_lossy(request)
        );
    }

    /// The connection was closed by the server (after any pending reply).
    fn expect_closed(&mut self) {
        let mut rest = Vec::new();
        self.0.read_to_end(&mut rest).unwrap();
    }
}

/// A command as a RESP array.
fn cmd(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

#[test]
fn commands_pipelining_inline_and_errors() {
    run_with(2, || {
        let (top, addr) = start_kv(|_| {});
        let mut c = Client::connect(addr);
        c.expect(b"PING\r\n", b"+PONG\r\n");
        c.expect(b"ping hello\r\n", b"$5\r\nhello\r\n");
        // One write, many commands, replies in order, keys on every shard.
        let mut batch = Vec::new();
        for i in 0..40 {
            batch.extend(cmd(&["SET", &format!("k{i}"), &format!("v{i}")]));
        }
        batch.extend(cmd(&["MGET", "k0", "k17", "nope", "k39"]));
        batch.extend(cmd(&["INCR", "n"]));
        batch.extend(cmd(&["INCRBY", "n", "41"]));
        batch.extend(cmd(&["DECR", "n"]));
        batch.extend(cmd(&["EXISTS", "k1", "k2", "nope"]));
        batch.extend(cmd(&["DEL", "k1", "k2", "nope"]));
        batch.extend(cmd(&["DBSIZE"]));
        batch.extend(cmd(&["ECHO", "e"]));
        let mut expected = b"+OK\r\n".repeat(40);
        expected.extend_from_slice(b"*4\r\n$2\r\nv0\r\n$3\r\nv17\r\n$-1\r\n$3\r\nv39\r\n");
        expected.extend_from_slice(b":1\r\n:42\r\n:41\r\n:2\r\n:2\r\n:39\r\n$1\r\ne\r\n");
        c.expect(&batch, &expected);
        // SET options.
        c.expect(&cmd(&["SET", "k0", "x", "NX"]), b"$-1\r\n");
        c.expect(&cmd(&["SET", "fresh", "x", "XX"]), b"$-1\r\n");
        c.expect(&cmd(&["SET", "fresh", "x", "NX"]), b"+OK\r\n");
        c.expect(
            &cmd(&["SET", "k0", "x", "EX", "0"]),
            b"-ERR invalid expire time in 'set' command\r\n",
        );
        c.expect(&cmd(&["SET", "k0", "x", "BOGUS"]), b"-ERR syntax error\r\n");
        // Errors are replies; the connection goes on.
        c.expect(
            &cmd(&["INCR", "k0"]),
            b"-ERR value is not an integer or out of range\r\n",
        );
        c.expect(
            &cmd(&["GET"]),
            b"-ERR wrong number of arguments for 'get' command\r\n",
        );
        c.expect(&cmd(&["NOPE"]), b"-ERR unknown command 'nope'\r\n");
        c.expect(&cmd(&["SET", "big", "9223372036854775807"]), b"+OK\r\n");
        c.expect(
            &cmd(&["INCR", "big"]),
            b"-ERR increment or decrement would overflow\r\n",
        );
        // What redis-benchmark asks first.
        c.expect(
            &cmd(&["CONFIG", "GET", "save"]),
            b"*2\r\n$4\r\nsave\r\n$0\r\n\r\n",
        );
        c.expect(&cmd(&["FLUSHALL"]), b"+OK\r\n");
        c.expect(&cmd(&["DBSIZE"]), b":0\r\n");
        c.expect(&cmd(&["QUIT"]), b"+OK\r\n");
        c.expect_closed();
        top.shutdown().unwrap();
    });
}

#[test]
fn expire_and_ttl_run_on_timers() {
    run_with(2, || {
        let (top, addr) = start_kv(|_| {});
        let mut c = Client::connect(addr);
        c.expect(&cmd(&["SET", "a", "1", "PX", "60"]), b"+OK\r\n");
        c.expect(&cmd(&["SET", "b", "1"]), b"+OK\r\n");
        c.expect(&cmd(&["TTL", "b"]), b":-1\r\n");
        c.expect(&cmd(&["TTL", "missing"]), b":-2\r\n");
        c.expect(&cmd(&["EXPIRE", "b", "100"]), b":1\r\n");
        c.expect(&cmd(&["TTL", "b"]), b":100\r\n");
        c.expect(&cmd(&["EXPIRE", "missing", "5"]), b":0\r\n");
        smarm::sleep(Duration::from_millis(300));
        c.expect(&cmd(&["GET", "a"]), b"$-1\r\n");
        // The tick dropped it even untouched: DBSIZE counts only b.
        c.expect(&cmd(&["DBSIZE"]), b":1\r\n");
        top.shutdown().unwrap();
    });
}

#[test]
fn hostile_input_closes_only_its_own_connection() {
    run_with(2, || {
        let (top, addr) = start_kv(|_| {});
        let mut good = Client::connect(addr);
        good.expect(&cmd(&["SET", "stay", "here"]), b"+OK\r\n");
        for hostile in [
            b"*1\r\n$999999999999\r\n".to_vec(), // oversize bulk
            b"*2\r\n*1\r\n$1\r\nx\r\n".to_vec(), // nesting
            b"*1\r\n$3\r\nabcdef\r\n".to_vec(),  // bad framing
            b"*zz\r\n".to_vec(),                 // garbage
            vec![b'A'; resp::MAX_INLINE + 100],  // an endless line
        ] {
            let mut bad = Client::connect(addr);
            bad.0.write_all(&hostile).unwrap();
            let mut reply = Vec::new();
            bad.0.read_to_end(&mut reply).unwrap(); // closed after the error
            assert!(
                reply.starts_with(b"-ERR Protocol error"),
                "{:?}",
                String::from_utf8_lossy(&reply)
            );
        }
        // A client that disconnects mid-command is just gone.
        let mut half = Client::connect(addr);
        half.0.write_all(b"*2\r\n$3\r\nGET\r\n$5\r\nab").unwrap();
        drop(half);
        good.expect(&cmd(&["GET", "stay"]), b"$4\r\nhere\r\n");
        top.shutdown().unwrap();
    });
}

#[test]
fn max_clients_refuses_the_next_connection() {
    run_with(2, || {
        let (top, addr) = start_kv(|o| o.max_clients = 2);
        let mut a = Client::connect(addr);
        let mut b = Client::connect(addr);
        a.expect(b"PING\r\n", b"+PONG\r\n");
        b.expect(b"PING\r\n", b"+PONG\r\n");
        let mut refused = Client::connect(addr);
        let mut reply = Vec::new();
        refused.0.read_to_end(&mut reply).unwrap();
        assert_eq!(reply, b"-ERR max number of clients reached\r\n");
        drop(a);
        // Room again once one has gone (its actor ends on EOF).
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut c = Client::connect(addr);
            c.0.write_all(b"PING\r\n").unwrap();
            let mut r = [0u8; 7];
            c.0.read_exact(&mut r).unwrap();
            if &r == b"+PONG\r\n" {
                break;
            }
            assert!(Instant::now() < deadline, "no room after a client left");
            smarm::sleep(Duration::from_millis(10));
        }
        top.shutdown().unwrap();
    });
}

#[test]
fn a_crashed_shard_restarts_and_the_others_keep_their_keys() {
    run_with(2, || {
        let (top, addr) = start_kv(|o| o.debug = true);
        let mut c = Client::connect(addr);
        let shards = server::Options::default().shards;
        // One key per shard.
        let keys: Vec<String> = (0..shards)
            .map(|s| {
                (0..)
                    .map(|i| format!("key{i}"))
                    .find(|k| shard::of(k.as_bytes(), shards) == s)
                    .unwrap()
            })
            .collect();
        for k in &keys {
            c.expect(&cmd(&["SET", k, "v"]), b"+OK\r\n");
        }
        let victim = 3;
        c.expect(
            &cmd(&["DEBUG", "CRASH-SHARD", "3"]),
            b"-ERR shard unavailable\r\n",
        );
        // The others kept their keys, on the same connection.
        for (s, k) in keys.iter().enumerate() {
            if s != victim {
                c.expect(&cmd(&["GET", k]), b"$1\r\nv\r\n");
            }
        }
        // The victim is back (empty) once its supervisor restarted it.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            c.0.write_all(&cmd(&["SET", &keys[victim], "again"]))
                .unwrap();
            let mut r = [0u8; 5];
            c.0.read_exact(&mut r).unwrap();
            if &r == b"+OK\r\n" {
                break;
            }
            let mut rest = [0u8; 19]; // the rest of "-ERR shard unavailable\r\n"
            c.0.read_exact(&mut rest).unwrap();
            assert!(Instant::now() < deadline, "the shard did not come back");
            smarm::sleep(Duration::from_millis(10));
        }
        c.expect(&cmd(&["GET", &keys[victim]]), b"$5\r\nagain\r\n");
        top.shutdown().unwrap();
    });
}

/// The child side of the SIGTERM test: kv as its `main` runs it.
fn kv_main() -> ! {
    let opts = server::Options {
        port: 0,
        ..server::Options::default()
    };
    let exit = smarm::application::Application::new()
        .config(smarm::runtime::Config::exact(2))
        .run(move || server::start(opts));
    std::process::exit(i32::from(exit.code()));
}

#[test]
fn sigterm_stops_the_server_in_order_with_status_zero() {
    use std::io::BufRead;
    if std::env::var("SMARM_KV_CHILD").is_ok() {
        kv_main();
    }
    // This test binary again, running kv's application as `main` does.
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sigterm_stops_the_server_in_order_with_status_zero",
            "--nocapture",
        ])
        .env("SMARM_KV_CHILD", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let addr: SocketAddr = lines
        .map(|l| l.unwrap())
        .find_map(|l| {
            l.rsplit("kv: listening on ")
                .next()
                .filter(|_| l.contains("listening"))
                .map(str::to_owned)
        })
        .unwrap()
        .parse()
        .unwrap();
    // A connected client sees the server close its connection.
    let mut client = std::net::TcpStream::connect(addr).unwrap();
    client.write_all(b"PING\r\n").unwrap();
    let mut pong = [0u8; 7];
    client.read_exact(&mut pong).unwrap();
    assert_eq!(&pong, b"+PONG\r\n");
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    client
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "an ordered stop exits 0");
}
