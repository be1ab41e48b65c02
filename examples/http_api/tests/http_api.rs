//! The example run as users run it, in a child process: requests over
//! HTTP, a crash and its restart, and the drain on SIGTERM.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail loudly here
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The example's process, its address, and its stdout lines as they come.
struct Api {
    child: Child,
    addr: String,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Api {
    fn start(test: &str) -> Api {
        let db =
            std::env::temp_dir().join(format!("http-api-{test}-{}.sqlite", std::process::id()));
        let _ = std::fs::remove_file(&db);
        let mut child = Command::new(env!("CARGO_BIN_EXE_http_api"))
            .env("HTTP_API_ADDR", "127.0.0.1:0")
            .env("HTTP_API_DB", &db)
            .stdout(Stdio::piped())
            .stderr(Stdio::null()) // the crash and supervisor reports
            .spawn()
            .unwrap();
        let (tx, lines) = mpsc::channel();
        let out = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut api = Api {
            child,
            addr: String::new(),
            lines,
            seen: Vec::new(),
        };
        let listening = api.wait_for("listening on ");
        api.addr = listening.trim_start_matches("listening on ").to_string();
        api.wait_for("ready");
        api
    }

    /// The next line starting with `prefix` (within 30 s).
    fn wait_for(&mut self, prefix: &str) -> String {
        let give_up = Instant::now() + Duration::from_secs(30);
        loop {
            let left = give_up.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.starts_with(prefix) {
                        return line;
                    }
                }
                Err(e) => panic!("no {prefix:?} line ({e}); saw {:?}", self.seen),
            }
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: signalling our own child process.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, sig) }, 0);
    }

    /// Wait for the exit (within 30 s): its status code.
    fn exit_code(&mut self) -> i32 {
        let give_up = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The rest of stdout.
                while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
                    self.seen.push(line);
                }
                return status.code().unwrap_or(-1);
            }
            assert!(
                Instant::now() < give_up,
                "the example did not exit: {:?}",
                self.seen
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_request_that_crashes_the_store_is_a_500_and_the_store_comes_back() {
    let mut api = Api::start("crash");
    let client = reqwest::Client::new();
    tokio().block_on(async {
        let added = client
            .post(api.url("/items"))
            .json(&serde_json::json!({ "name": "apple" }))
            .send()
            .await
            .unwrap();
        assert_eq!(added.status(), 201);
        // While the store crashes and restarts, the quotes keep coming.
        let quotes = {
            let (client, url) = (client.clone(), api.url("/quote"));
            tokio::spawn(async move {
                let mut ok = 0;
                for _ in 0..50 {
                    if client.get(&url).send().await.unwrap().status() == 200 {
                        ok += 1;
                    }
                }
                ok
            })
        };
        let crashed = client.post(api.url("/crash")).send().await.unwrap();
        assert_eq!(crashed.status(), 500);
        assert_eq!(
            quotes.await.unwrap(),
            50,
            "other requests were served throughout"
        );
        // The restarted store has the items (they are on disk).
        let mut items = None;
        for _ in 0..200 {
            let resp = client.get(api.url("/items")).send().await.unwrap();
            if resp.status() == 200 {
                items = Some(resp.json::<serde_json::Value>().await.unwrap());
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            items.unwrap(),
            serde_json::json!([{ "id": 1, "name": "apple" }])
        );
    });
    api.signal(libc::SIGTERM);
    assert_eq!(api.exit_code(), 0, "{:?}", api.seen);
}

#[test]
fn sigterm_drains_the_in_flight_requests_then_stops_the_tree_in_order() {
    let mut api = Api::start("drain");
    let rt = tokio();
    let client = reqwest::Client::new();
    let slow = {
        let (client, url) = (client.clone(), api.url("/slow?ms=800"));
        rt.spawn(async move {
            let resp = client.get(&url).send().await.unwrap();
            (resp.status().as_u16(), resp.text().await.unwrap())
        })
    };
    std::thread::sleep(Duration::from_millis(200)); // the request is in flight
    api.signal(libc::SIGTERM);
    api.wait_for("drain begins");
    // Answered in full, though the signal came while it was in flight.
    assert_eq!(rt.block_on(slow).unwrap(), (200, "slow done".to_string()));
    api.wait_for("front drained");
    // No longer accepting: the socket is closed, so a new connection is
    // refused at once rather than queued until the process exits.
    let refused = std::net::TcpStream::connect(&api.addr);
    assert_eq!(
        refused.map_err(|e| e.kind()).err(),
        Some(std::io::ErrorKind::ConnectionRefused),
        "the front's socket was still open after draining"
    );
    assert_eq!(api.exit_code(), 0, "{:?}", api.seen);
    let order: Vec<&str> = api
        .seen
        .iter()
        .map(String::as_str)
        .filter(|l| {
            [
                "drain begins",
                "front drained",
                "quotes stopped",
                "store stopped",
            ]
            .contains(l)
        })
        .collect();
    assert_eq!(
        order,
        [
            "drain begins",
            "front drained",
            "quotes stopped",
            "store stopped"
        ],
        "the drain first, then the tree in reverse start order"
    );
}
