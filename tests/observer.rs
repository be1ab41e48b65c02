//! The observer's HTTP endpoint (feature `observer`): the snapshot JSON
//! round-trips and matches `smarm::snapshot()`, the stream and history
//! serve, the token guards everything, bad requests get clear statuses,
//! and `stop` closes it.
#![cfg(feature = "observer")]
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

use serde_json::Value;
use smarm::Reply;
use smarm::gen_server::{Ctx, Flow, GenServer, InitError, ServerName};
use smarm::net::TcpStream;
use smarm::observer::{Observer, ObserverError};
use smarm::supervisor::{self, ChildSpec, Strategy, SupFlags};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

struct Idle;

impl GenServer for Idle {
    type Args = ();
    type Call = ();
    type Reply = ();
    type Cast = ();
    type Info = ();

    fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Idle)
    }

    fn handle_call(&mut self, _: (), reply: Reply<()>, _: &mut Ctx<Self>) -> Flow {
        reply.reply(());
        Flow::Continue
    }
}

const ALPHA: ServerName<Idle> = ServerName::new("obs.alpha");
const BETA: ServerName<Idle> = ServerName::new("obs.beta");

fn start_tree() -> supervisor::SupervisorRef {
    supervisor::start(
        SupFlags::new(Strategy::OneForOne),
        vec![
            ChildSpec::named_server::<Idle>("alpha", ALPHA, || ()),
            ChildSpec::named_server::<Idle>("beta", BETA, || ()),
        ],
    )
    .unwrap()
}

/// Send `request` raw and read the whole response: (status line, body).
fn exchange(addr: SocketAddr, request: &[u8]) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

fn get(addr: SocketAddr, path: &str) -> (String, String) {
    exchange(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(),
    )
}

#[test]
fn the_snapshot_round_trips_and_matches_smarm_snapshot() {
    smarm::run(|| {
        let _tree = start_tree();
        let obs = smarm::observer::serve("127.0.0.1:0").unwrap();
        let (status, body) = get(obs.local_addr(), "/api/snapshot");
        let local = smarm::snapshot();
        // Stopped before any assertion: a failed one must end the run, not
        // leave the sampler ticking under it.
        obs.stop();
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(body.starts_with(&format!(
            "{{\"format_version\":{}",
            smarm::SNAPSHOT_FORMAT_VERSION
        )));
        let json: Value = serde_json::from_str(&body).unwrap();
        let again: Value = serde_json::from_str(&json.to_string()).unwrap();
        assert_eq!(json, again, "the JSON round-trips");

        // Every actor but the connection that served the request is in
        // both, with the same fields. The connection may still be ending
        // when the local snapshot is taken (the client saw its socket
        // close, its actor has not exited yet), so it is left out of both.
        let conn = "smarm.observer.conn";
        let served: Vec<&Value> = json["actors"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["label"] != conn)
            .collect();
        let local_actors: Vec<_> = local
            .actors
            .iter()
            .filter(|a| a.label.as_deref() != Some(conn))
            .collect();
        assert_eq!(served.len(), local_actors.len());
        for (j, a) in served.iter().zip(&local_actors) {
            assert_eq!(j["pid"], a.pid.to_string());
            assert_eq!(j["label"], serde_json::json!(a.label));
            assert_eq!(j["names"], serde_json::json!(a.names));
            assert_eq!(j["supervisor"], a.supervisor.to_string());
            assert_eq!(j["links"], a.links);
            assert_eq!(j["monitors"], a.monitors);
            assert_eq!(j["trap_exit"], a.trap_exit);
            assert_eq!(j["restarts"], a.restarts);
        }
        let names: Vec<&str> = served
            .iter()
            .flat_map(|a| a["names"].as_array().unwrap())
            .map(|n| n.as_str().unwrap())
            .collect();
        assert!(names.contains(&"obs.alpha") && names.contains(&"obs.beta"));
        assert_eq!(
            json["schedulers"].as_array().unwrap().len(),
            local.schedulers.len()
        );
        // With the feature, run time is measured.
        assert!(served.iter().any(|a| a["budget_cycles"].as_u64() > Some(0)));
    });
}

#[test]
fn the_page_the_stream_and_the_history_are_served() {
    smarm::run(|| {
        let _tree = start_tree();
        let obs = Observer::new()
            .interval(Duration::from_millis(20))
            .serve("127.0.0.1:0")
            .unwrap();
        let addr = obs.local_addr();
        let (status, page) = get(addr, "/");
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(page.contains("smarm observer") && page.contains("top-table"));

        // Two events off the stream, each a whole snapshot.
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .write_all(b"GET /api/stream HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let mut seen = String::new();
        let mut buf = [0u8; 16 * 1024];
        while seen.matches("\n\n").count() < 3 {
            let n = stream.read(&mut buf).unwrap();
            assert!(n > 0, "the stream ended early: {seen}");
            seen.push_str(std::str::from_utf8(&buf[..n]).unwrap());
        }
        assert!(seen.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream"));
        let events: Vec<&str> = seen
            .split("\r\n\r\n")
            .nth(1)
            .unwrap()
            .split("\n\n")
            .collect();
        for event in &events[..2] {
            let data = event.strip_prefix("event: snapshot\ndata: ").unwrap();
            let snap: Value = serde_json::from_str(data).unwrap();
            assert!(snap["actors"].as_array().unwrap().len() >= 4);
        }
        drop(stream);

        // The sampler has filled some history by now.
        smarm::time::sleep(Duration::from_millis(200));
        let (_, history) = get(addr, "/api/history");
        let history: Value = serde_json::from_str(&history).unwrap();
        assert_eq!(history["interval_ms"], 20);
        let samples = history["samples"].as_array().unwrap();
        assert!(samples.len() >= 3, "{history}");
        for sample in samples {
            for s in sample["schedulers"].as_array().unwrap() {
                let u = s["utilisation"].as_f64().unwrap();
                assert!((0.0..=1.0).contains(&u), "{s}");
            }
        }
        obs.stop();
    });
}

#[test]
fn a_token_guards_every_path() {
    smarm::run(|| {
        let obs = Observer::new()
            .token("s3 cret")
            .serve("127.0.0.1:0")
            .unwrap();
        let addr = obs.local_addr();
        assert!(obs.url().ends_with("/?token=s3%20cret"), "{}", obs.url());
        for path in ["/", "/api/snapshot", "/api/stream", "/api/history"] {
            assert_eq!(get(addr, path).0, "HTTP/1.1 401 Unauthorized", "{path}");
            let wrong = format!("{path}?token=s3");
            assert_eq!(get(addr, &wrong).0, "HTTP/1.1 401 Unauthorized", "{wrong}");
        }
        assert_eq!(
            get(addr, "/api/snapshot?token=s3%20cret").0,
            "HTTP/1.1 200 OK"
        );
        let bearer = b"GET /api/snapshot HTTP/1.1\r\nAuthorization: Bearer s3 cret\r\n\r\n";
        assert_eq!(exchange(addr, bearer).0, "HTTP/1.1 200 OK");
        obs.stop();
    });
}

#[test]
fn bad_requests_get_clear_statuses() {
    smarm::run(|| {
        let obs = smarm::observer::serve("127.0.0.1:0").unwrap();
        let addr = obs.local_addr();
        assert_eq!(get(addr, "/nope").0, "HTTP/1.1 404 Not Found");
        let (status, body) = exchange(addr, b"POST /api/snapshot HTTP/1.1\r\n\r\n");
        assert_eq!(status, "HTTP/1.1 405 Method Not Allowed");
        assert!(body.contains("read-only"));
        assert_eq!(
            exchange(addr, b"hello\r\n\r\n").0,
            "HTTP/1.1 400 Bad Request"
        );
        let huge = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
        // The observer answers once the head is too long and closes; the
        // rest of what was sent may reset the connection, so read what
        // arrives.
        let mut stream = TcpStream::connect(addr).unwrap();
        let _ = stream.write_all(huge.as_bytes());
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response);
        assert!(
            String::from_utf8_lossy(&response)
                .starts_with("HTTP/1.1 431 Request Header Fields Too Large"),
            "{}",
            String::from_utf8_lossy(&response)
        );
        obs.stop();
    });
}

#[test]
fn settings_and_addresses_that_cannot_work_are_errors() {
    smarm::run(|| {
        let err = Observer::new().token("").serve("127.0.0.1:0").unwrap_err();
        assert!(matches!(err, ObserverError::EmptyToken));
        let err = Observer::new()
            .interval(Duration::ZERO)
            .serve("127.0.0.1:0")
            .unwrap_err();
        assert!(matches!(err, ObserverError::ZeroInterval));
        let first = smarm::observer::serve("127.0.0.1:0").unwrap();
        let taken = first.local_addr().to_string();
        let err = smarm::observer::serve(taken.as_str()).unwrap_err();
        assert!(err.to_string().contains(&taken), "{err}");
        first.stop();
    });
}

#[test]
fn stop_closes_the_listener_and_ends_every_observer_actor() {
    smarm::run(|| {
        let obs = Observer::new()
            .interval(Duration::from_millis(10))
            .serve("127.0.0.1:0")
            .unwrap();
        let addr = obs.local_addr();
        // An open event stream ends at its next interval.
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .write_all(b"GET /api/stream HTTP/1.1\r\n\r\n")
            .unwrap();
        let mut buf = [0u8; 1024];
        assert!(stream.read(&mut buf).unwrap() > 0);
        obs.stop();
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest); // ends: EOF, not a hang
        assert!(TcpStream::connect(addr).is_err(), "still listening");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let left = smarm::snapshot()
                .actors
                .iter()
                .filter(|a| {
                    a.label
                        .as_deref()
                        .is_some_and(|l| l.starts_with("smarm.observer"))
                })
                .count();
            if left == 0 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{left} observer actors left"
            );
            smarm::time::sleep(Duration::from_millis(5));
        }
    });
}

/// The page's "Causal profile" panel reads the latest profile's plot:
/// none before the first session in the process, the SVG after one. (The
/// only test in this binary that profiles.)
#[cfg(feature = "smarm-causal")]
#[test]
fn the_latest_causal_profile_is_served_as_svg() {
    use smarm::causal::{self, Settings};
    smarm::run(|| {
        let obs = smarm::observer::serve("127.0.0.1:0").unwrap();
        let addr = obs.local_addr();
        assert_eq!(get(addr, "/api/causal.svg").0, "HTTP/1.1 404 Not Found");
        causal::profile_with(
            Settings::new(Duration::from_millis(200)).window(Duration::from_millis(50)),
        );
        let (status, body) = get(addr, "/api/causal.svg");
        assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
        assert!(body.contains("<svg"), "{body}");
        let (_, page) = get(addr, "/");
        assert!(page.contains("id=\"causal\""));
        obs.stop();
    });
}

/// A typed actor, for its sys status.
#[derive(smarm::Actor)]
enum Gauge {
    Set(u64),
}

struct Level(u64);

impl smarm::actor::Handler<Gauge> for Level {
    fn handle(&mut self, Gauge::Set(n): Gauge) -> smarm::gen_server::Flow {
        self.0 = n;
        smarm::gen_server::Flow::Continue
    }
    fn format_status(&self) -> String {
        format!("level {}", self.0)
    }
}

#[test]
fn a_behaviours_sys_status_is_served_by_pid() {
    smarm::run(|| {
        let tree = start_tree();
        let alpha = smarm::gen_server::whereis_server(ALPHA).unwrap();
        let plain = smarm::spawn(|| smarm::sleep(Duration::from_secs(10)));
        let gauge = smarm::actor::spawn(Level(0));
        smarm::send_to(gauge, Gauge::Set(3)).unwrap();
        let obs = smarm::observer::serve("127.0.0.1:0").unwrap();
        let addr = obs.local_addr();
        let pid = alpha.pid().to_string();
        let (status, body) = get(
            addr,
            &format!("/api/status/{}", pid.trim_matches(['<', '>'])),
        );
        let (sup_status, sup_body) = get(
            addr,
            &format!(
                "/api/status/{}",
                tree.pid().to_string().trim_matches(['<', '>'])
            ),
        );
        let (plain_status, _) = get(
            addr,
            &format!(
                "/api/status/{}",
                plain.pid().to_string().trim_matches(['<', '>'])
            ),
        );
        let (gauge_status, gauge_body) = get(
            addr,
            &format!(
                "/api/status/{}",
                gauge.erase().to_string().trim_matches(['<', '>'])
            ),
        );
        let (bad_status, _) = get(addr, "/api/status/not-a-pid");
        obs.stop();
        smarm::request_stop(plain.pid());
        smarm::request_stop(gauge);
        assert_eq!(gauge_status, "HTTP/1.1 200 OK");
        let json: Value = serde_json::from_str(&gauge_body).unwrap();
        assert_eq!(json["behaviour"], "actor");
        assert_eq!(json["state"], "level 3");
        assert_eq!(status, "HTTP/1.1 200 OK");
        let json: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(json["pid"], pid);
        assert_eq!(json["behaviour"], "gen_server");
        assert_eq!(json["suspended"], false);
        assert_eq!(sup_status, "HTTP/1.1 200 OK");
        let sup: Value = serde_json::from_str(&sup_body).unwrap();
        assert_eq!(sup["behaviour"], "supervisor");
        assert!(sup["state"].as_str().unwrap().contains("alpha"), "{sup}");
        assert_eq!(plain_status, "HTTP/1.1 404 Not Found");
        assert_eq!(bad_status, "HTTP/1.1 404 Not Found");
        tree.shutdown().unwrap();
    });
}
