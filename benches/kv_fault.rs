//! The fault driver of `benches/kv_fault.sh`: `kv_fault <port> <seconds>
//! <victim-shard> <shards>` runs, against a kv started with
//! `--enable-debug`, for `seconds`:
//!
//! - a crasher: `DEBUG CRASH-SHARD <victim>` every second;
//! - checkers: 8 clients that SET and GET their own keys, all on healthy
//!   shards (not the victim), and count every error or wrong answer;
//! - droppers: 1,000 clients over the run that connect, send half a
//!   command and hang up;
//! - slowloris: 100 clients that send one byte of a command per second;
//! - garbage senders: a client every 100 ms that sends bytes that are not
//!   RESP and reads until the server closes it.
//!
//! It prints one `RESULT key=value` line per figure; the exit status is 1
//! if a checker saw an error.
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// kv's shard of a key (FNV-1a, as `examples/kv/shard.rs`).
fn shard_of(key: &[u8], shards: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h % shards
}

fn resp(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn connect(port: u16) -> std::io::Result<TcpStream> {
    let c = TcpStream::connect(("127.0.0.1", port))?;
    c.set_read_timeout(Some(Duration::from_secs(10)))?;
    c.set_nodelay(true)?;
    Ok(c)
}

/// Send `req`, read exactly `expect.len()` bytes; whether they match.
fn exchange(c: &mut TcpStream, req: &[u8], expect: &[u8]) -> bool {
    let mut got = vec![0u8; expect.len()];
    c.write_all(req).is_ok() && c.read_exact(&mut got).is_ok() && got == expect
}

struct Stats {
    stop: AtomicBool,
    checks: AtomicU64,
    errors: AtomicU64,
    crashes: AtomicU64,
    dropped: AtomicU64,
    slowloris_bytes: AtomicU64,
    garbage: AtomicU64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok());
    let (Some(port), Some(secs), Some(victim), Some(shards)) = (arg(1), arg(2), arg(3), arg(4))
    else {
        eprintln!("usage: kv_fault <port> <seconds> <victim-shard> <shards>");
        std::process::exit(2);
    };
    let port = port as u16;
    let stats = Arc::new(Stats {
        stop: AtomicBool::new(false),
        checks: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        crashes: AtomicU64::new(0),
        dropped: AtomicU64::new(0),
        slowloris_bytes: AtomicU64::new(0),
        garbage: AtomicU64::new(0),
    });
    let mut threads = Vec::new();

    // Checkers: keys on healthy shards only.
    for t in 0..8u64 {
        let stats = stats.clone();
        threads.push(thread::spawn(move || {
            let keys: Vec<Vec<u8>> = (0..)
                .map(|i| format!("check:{t}:{i}").into_bytes())
                .filter(|k| shard_of(k, shards) != victim)
                .take(16)
                .collect();
            let mut c = None;
            let mut n = 0u64;
            while !stats.stop.load(Ordering::Relaxed) {
                let conn = match &mut c {
                    Some(conn) => conn,
                    None => match connect(port) {
                        Ok(conn) => c.insert(conn),
                        Err(e) => {
                            eprintln!("checker {t}: connect failed: {e}");
                            stats.errors.fetch_add(1, Ordering::Relaxed);
                            thread::sleep(Duration::from_millis(100));
                            continue;
                        }
                    },
                };
                let key = &keys[(n % keys.len() as u64) as usize];
                let value = format!("v{n}").into_bytes();
                let get_reply = [
                    format!("${}\r\n", value.len()).into_bytes(),
                    value.clone(),
                    b"\r\n".to_vec(),
                ]
                .concat();
                let ok = exchange(conn, &resp(&[b"SET", key, &value]), b"+OK\r\n")
                    && exchange(conn, &resp(&[b"GET", key]), &get_reply);
                if ok {
                    stats.checks.fetch_add(1, Ordering::Relaxed);
                } else {
                    eprintln!(
                        "checker {t}: wrong or missing answer for {}",
                        String::from_utf8_lossy(key)
                    );
                    stats.errors.fetch_add(1, Ordering::Relaxed);
                    c = None;
                }
                n += 1;
            }
        }));
    }

    // The crasher.
    {
        let stats = stats.clone();
        threads.push(thread::spawn(move || {
            let cmd = resp(&[b"DEBUG", b"CRASH-SHARD", victim.to_string().as_bytes()]);
            while !stats.stop.load(Ordering::Relaxed) {
                if let Ok(mut c) = connect(port)
                    && exchange(&mut c, &cmd, b"-ERR shard unavailable\r\n")
                {
                    stats.crashes.fetch_add(1, Ordering::Relaxed);
                }
                thread::sleep(Duration::from_secs(1));
            }
        }));
    }

    // Droppers: 1,000 over the run.
    {
        let stats = stats.clone();
        let every = Duration::from_secs_f64(secs as f64 / 1000.0);
        threads.push(thread::spawn(move || {
            for _ in 0..1000 {
                if stats.stop.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(mut c) = connect(port) {
                    let _ = c.write_all(b"*3\r\n$3\r\nSET\r\n$4\r\nhalf");
                    stats.dropped.fetch_add(1, Ordering::Relaxed);
                }
                thread::sleep(every);
            }
        }));
    }

    // Slowloris: 100 clients, one byte per second each.
    {
        let stats = stats.clone();
        threads.push(thread::spawn(move || {
            let mut conns: Vec<TcpStream> = (0..100).filter_map(|_| connect(port).ok()).collect();
            let pattern = b"*2\r\n$3\r\nGET\r\n$100000\r\n";
            let mut at = 0usize;
            while !stats.stop.load(Ordering::Relaxed) {
                let byte = pattern.get(at).copied().unwrap_or(b'x');
                for c in &mut conns {
                    if c.write_all(&[byte]).is_ok() {
                        stats.slowloris_bytes.fetch_add(1, Ordering::Relaxed);
                    }
                }
                at += 1;
                thread::sleep(Duration::from_secs(1));
            }
        }));
    }

    // Garbage senders.
    {
        let stats = stats.clone();
        threads.push(thread::spawn(move || {
            let mut seed = 0x9e37_79b9_7f4a_7c15u64;
            while !stats.stop.load(Ordering::Relaxed) {
                if let Ok(mut c) = connect(port) {
                    let junk: Vec<u8> = (0..512)
                        .map(|_| {
                            seed ^= seed << 13;
                            seed ^= seed >> 7;
                            seed ^= seed << 17;
                            (seed % 251) as u8
                        })
                        .collect();
                    let mut framed = b"*1\r\n".to_vec();
                    framed.extend_from_slice(&junk);
                    let _ = c.write_all(&framed);
                    let mut sink = Vec::new();
                    let _ = c.read_to_end(&mut sink);
                    stats.garbage.fetch_add(1, Ordering::Relaxed);
                }
                thread::sleep(Duration::from_millis(100));
            }
        }));
    }

    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(secs) {
        thread::sleep(Duration::from_millis(200));
    }
    stats.stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    let errors = stats.errors.load(Ordering::Relaxed);
    println!("RESULT checks={}", stats.checks.load(Ordering::Relaxed));
    println!("RESULT checker_errors={errors}");
    println!("RESULT crashes={}", stats.crashes.load(Ordering::Relaxed));
    println!(
        "RESULT dropped_mid_command={}",
        stats.dropped.load(Ordering::Relaxed)
    );
    println!(
        "RESULT slowloris_bytes={}",
        stats.slowloris_bytes.load(Ordering::Relaxed)
    );
    println!(
        "RESULT garbage_connections={}",
        stats.garbage.load(Ordering::Relaxed)
    );
    std::process::exit(i32::from(errors > 0));
}
