//! What the distribution tests share: free ports, and real Erlang nodes
//! started on loopback with a private EPMD port, stopped when dropped.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

#[cfg(feature = "tls")]
pub mod certs;
pub mod terms;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Wait (inside an actor, up to `within`) for `cond`, failing with `what`.
pub fn eventually(what: &str, within: Duration, cond: &dyn Fn() -> bool) {
    let deadline = std::time::Instant::now() + within;
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        smarm::sleep(Duration::from_millis(10));
    }
}

/// A TCP port nothing listens on right now, for a private EPMD.
///
/// Not the kernel's pick for port 0: that port is free again once this
/// returns, and the next socket bound to port 0 (a node's distribution
/// listener, an Erlang VM's) may be handed it before the EPMD binds it.
/// So the port comes from below the kernel's ephemeral range, where no
/// port-0 bind lands, on a walk that starts at a place set by the process
/// id and moves one port on for every call, so tests running at once in this
/// process or another do not pick the same one.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const BASE: u32 = 10_000;
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    assert!(
        low > BASE + 1_000,
        "free_port: the ephemeral port range starts at {low}, leaving no room below it"
    );
    let span = low - BASE;
    let start = std::process::id().wrapping_mul(2_654_435_761) % span;
    for _ in 0..span {
        let port = BASE + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span;
        let port = u16::try_from(port).unwrap();
        if std::net::TcpListener::bind(("0.0.0.0", port)).is_ok() {
            return port;
        }
    }
    panic!("free_port: no free port in {BASE}..{low}");
}

/// `erl` must be on the PATH: these tests check interoperation with a
/// real Erlang node and must not pass without one (`.ci/run` installs
/// Debian's erlang-base when it is missing).
pub fn require_erl() {
    let found = Command::new("erl")
        .args(["-noshell", "-eval", "halt()."])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        found,
        "these tests need Erlang's `erl` on the PATH: apt-get install erlang-base"
    );
}

/// An Erlang node running `eval` (an expression sequence), registered with
/// the EPMD on `epmd_port` (which it does not start). Its stdout lines
/// arrive on `lines`. Killed when dropped.
pub struct Erl {
    child: Child,
    pub lines: mpsc::Receiver<String>,
}

impl Erl {
    pub fn start(sname: &str, cookie: &str, epmd_port: u16, eval: &str) -> Erl {
        Erl::start_named("-sname", sname, cookie, epmd_port, eval)
    }

    /// [`Erl::start`] with a long name (`-name erl@127.0.0.1`).
    pub fn start_long(name: &str, cookie: &str, epmd_port: u16, eval: &str) -> Erl {
        Erl::start_named("-name", name, cookie, epmd_port, eval)
    }

    /// [`Erl::start`] with more arguments to `erl` (`-proto_dist ...`).
    pub fn start_with(
        sname: &str,
        cookie: &str,
        epmd_port: u16,
        extra: &[&str],
        eval: &str,
    ) -> Erl {
        Erl::spawn("-sname", sname, cookie, epmd_port, extra, eval)
    }

    fn start_named(flag: &str, name: &str, cookie: &str, epmd_port: u16, eval: &str) -> Erl {
        Erl::spawn(flag, name, cookie, epmd_port, &[], eval)
    }

    fn spawn(
        flag: &str,
        name: &str,
        cookie: &str,
        epmd_port: u16,
        extra: &[&str],
        eval: &str,
    ) -> Erl {
        let mut child = Command::new("erl")
            .args(extra)
            .args([
                flag,
                name,
                "-setcookie",
                cookie,
                "-noshell",
                "-start_epmd",
                "false",
                "-kernel",
                "net_ticktime",
                "60",
                "-eval",
                eval,
            ])
            .env("ERL_EPMD_PORT", epmd_port.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start erl");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                // ERL_ECHO=1 shows everything erl prints (with --nocapture).
                if std::env::var_os("ERL_ECHO").is_some() {
                    eprintln!("erl| {line}");
                }
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Erl { child, lines }
    }

    /// The next line it prints, within `timeout`.
    pub fn line(&self, timeout: Duration) -> String {
        self.lines
            .recv_timeout(timeout)
            .unwrap_or_else(|e| panic!("erl printed nothing within {timeout:?}: {e}"))
    }

    /// Wait for a line starting with `prefix`, returning the rest.
    pub fn expect(&self, prefix: &str, timeout: Duration) -> String {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = self.line(left);
            if let Some(rest) = line.strip_prefix(prefix) {
                return rest.trim().to_string();
            }
        }
    }

    /// Kill the node (as a crash would).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Wait for it to exit by itself.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Erl {
    fn drop(&mut self) {
        self.kill();
    }
}
