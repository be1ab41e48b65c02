//! The observer (feature `observer`): a running system seen from a browser
//! or a terminal, like Erlang's `observer` and `observer_cli`.
//!
//! [`serve`] starts, inside the runtime and on smarm's own sockets, a
//! read-only HTTP endpoint:
//!
//! - `/`: one static page (HTML and JavaScript served from the binary, no
//!   build step, nothing fetched from elsewhere) showing the supervision
//!   tree, top-N tables (mailbox depth, run time, messages received,
//!   restarts, overruns: totals or growth per interval, as recon's
//!   `proc_count` / `proc_window`), per-scheduler utilisation and run-queue
//!   plots over the last five minutes, and an actor's detail;
//! - `/api/snapshot`: [`smarm::snapshot()`](smarm_core::introspect::snapshot)
//!   as JSON, `format_version` first;
//! - `/api/stream`: the same snapshot as server-sent events, once per
//!   interval;
//! - `/api/history`: per-scheduler utilisation and run-queue samples, one
//!   per interval, the last [`HISTORY`];
//! - `/api/status/0.I.G`: [`sys::status_of`](crate::sys::status_of) the
//!   behaviour running as `<0.I.G>`, as JSON (404 for any other actor);
//!   the page shows it in the actor detail;
//! - `/api/causal.svg` (feature `smarm-causal`): the plot of the latest
//!   causal profile taken in this process (404 before the first), which
//!   the page shows under "Causal profile".
//!
//! It shows; it does not stop or message actors. It binds only the address
//! given (examples use loopback) and can require a token
//! ([`Observer::token`]: `?token=` in the URL or an
//! `Authorization: Bearer` header). What it exposes: every actor's pid,
//! label, registered names, state, parent, counts of links, monitors and
//! queued messages, and the schedulers' counters; never message contents.
//!
//! ```no_run
//! use smarm::observer;
//!
//! smarm::run(|| {
//!     let obs = observer::serve("127.0.0.1:9000").unwrap();
//!     println!("observer at {}", obs.url());
//!     // ... the application runs; the observer serves until the runtime
//!     // ends or `obs.stop()`.
//! # obs.stop();
//! });
//! ```
//!
//! [`top_text`] renders the same data as a `top`-like text table, and
//! [`run_top`] refreshes it on a terminal, for machines without a browser.
//!
//! # Invariants
//!
//! - (O1) Every observer actor (acceptor, sampler, connection) is labelled
//!   `smarm.observer.*`, ends once [`ObserverHandle::stop`] has been
//!   called, and holds no lock across a blocking call.
//! - (O2) A connection costs one actor for a bounded time (request head
//!   size and read timeout in `http`), except an event stream, which ends
//!   when its client goes, stops reading (the write timeout) or the
//!   observer stops; at most [`MAX_CONNECTIONS`] are open at once, the
//!   next get 503.

mod http;
mod json;
mod top;

pub use top::{TopBy, run_top, top_text};

use http::ReadError;
use json::Sample;
use smarm_core::actor::{Builder, JoinHandle};
use smarm_core::io::net::{TcpListener, TcpStream};
use std::collections::VecDeque;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

/// History samples kept (five minutes at the default interval).
pub const HISTORY: usize = 300;

/// Connections served at once; more get `503 Service Unavailable`.
pub const MAX_CONNECTIONS: usize = 64;

const PAGE: &str = include_str!("page.html");

/// Why the observer could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ObserverError {
    /// The address could not be bound.
    #[error("observer: cannot listen on {addr}: {source}")]
    Bind {
        /// The address as given.
        addr: String,
        /// What `bind` said.
        source: std::io::Error,
    },
    /// [`Observer::token`] was given an empty string.
    #[error("observer: the token is empty; give a non-empty secret or no token at all")]
    EmptyToken,
    /// [`Observer::interval`] was zero.
    #[error("observer: the sampling interval must be longer than zero")]
    ZeroInterval,
    /// The runtime could not spawn the observer's actors.
    #[error("observer: cannot spawn its actors: {0}")]
    Spawn(#[from] smarm_core::SpawnError),
}

/// Observer settings; [`serve`] uses the defaults.
#[derive(Debug, Clone)]
pub struct Observer {
    token: Option<String>,
    interval: Duration,
}

impl Default for Observer {
    fn default() -> Self {
        Observer {
            token: None,
            interval: Duration::from_secs(1),
        }
    }
}

impl Observer {
    /// The defaults: no token, one sample and one streamed snapshot per
    /// second.
    pub fn new() -> Self {
        Self::default()
    }

    /// Require `token` on every request (`?token=...`, which the page
    /// passes on, or `Authorization: Bearer ...`); others get 401.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// How often the history is sampled and the stream sends a snapshot.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Bind `addr` and serve until the runtime ends or
    /// [`ObserverHandle::stop`].
    ///
    /// # Errors
    ///
    /// [`ObserverError`]: the address cannot be bound, or the settings are
    /// unusable.
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn serve(
        self,
        addr: impl ToSocketAddrs + std::fmt::Debug,
    ) -> Result<ObserverHandle, ObserverError> {
        smarm_core::require_actor("smarm::observer::serve");
        if self.token.as_deref() == Some("") {
            return Err(ObserverError::EmptyToken);
        }
        if self.interval.is_zero() {
            return Err(ObserverError::ZeroInterval);
        }
        let shown = format!("{addr:?}");
        let bind_error = |source| ObserverError::Bind {
            addr: shown.clone(),
            source,
        };
        let listener = TcpListener::bind(addr).map_err(bind_error)?;
        let local = listener.local_addr().map_err(bind_error)?;
        let state = Arc::new(State {
            token: self.token,
            interval: self.interval,
            started: smarm_core::time::now(),
            stopped: AtomicBool::new(false),
            connections: AtomicUsize::new(0),
            history: Mutex::new(VecDeque::with_capacity(HISTORY)),
        });
        let sampler = {
            let state = state.clone();
            spawn_labelled("smarm.observer.sampler", move || sample(&state))?
        };
        let acceptor = {
            let state = state.clone();
            spawn_labelled("smarm.observer.acceptor", move || accept(&listener, &state))
        };
        let acceptor = match acceptor {
            Ok(acceptor) => acceptor,
            Err(e) => {
                state.stopped.store(true, Ordering::Release);
                smarm_core::request_stop(sampler.pid());
                return Err(e.into());
            }
        };
        Ok(ObserverHandle {
            addr: local,
            state,
            acceptor,
            sampler,
        })
    }
}

/// [`Observer::new`]`.serve(addr)`.
///
/// # Errors
///
/// As [`Observer::serve`].
///
/// # Panics
///
/// Outside an actor.
pub fn serve(addr: impl ToSocketAddrs + std::fmt::Debug) -> Result<ObserverHandle, ObserverError> {
    Observer::new().serve(addr)
}

/// A running observer. Dropping it leaves the observer serving until the
/// runtime ends; [`stop`](ObserverHandle::stop) ends it.
#[derive(Debug)]
pub struct ObserverHandle {
    addr: SocketAddr,
    state: Arc<State>,
    acceptor: JoinHandle,
    sampler: JoinHandle,
}

impl ObserverHandle {
    /// The address it listens on (the port chosen, for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The page's URL, with the token if one is required.
    pub fn url(&self) -> String {
        match &self.state.token {
            Some(token) => format!("http://{}/?token={}", self.addr, percent_encode(token)),
            None => format!("http://{}/", self.addr),
        }
    }

    /// Stop serving: close the listener, end the sampler, and end every
    /// event stream at its next interval, or once its write times out (O1, O2).
    pub fn stop(self) {
        self.state.stopped.store(true, Ordering::Release);
        smarm_core::request_stop(self.acceptor.pid());
        smarm_core::request_stop(self.sampler.pid());
        let _ = self.acceptor.join();
        let _ = self.sampler.join();
    }
}

/// What the observer's actors share.
#[derive(Debug)]
struct State {
    token: Option<String>,
    interval: Duration,
    started: Instant,
    stopped: AtomicBool,
    connections: AtomicUsize,
    history: Mutex<VecDeque<Sample>>,
}

impl State {
    fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    fn snapshot_json(&self) -> String {
        json::snapshot(
            &smarm_core::snapshot(),
            unix_ms(),
            self.started.elapsed().as_millis() as u64,
        )
    }

    fn history_json(&self) -> String {
        let history = self.history.lock().unwrap_or_else(|e| e.into_inner());
        json::history(self.interval.as_millis() as u64, history.iter())
    }
}

fn spawn_labelled(
    label: &str,
    f: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle, smarm_core::SpawnError> {
    Builder::new().name(label).spawn(f)
}

/// Counts a connection out when its actor ends, however it ends.
struct Counted<'a>(&'a AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn unix_ms() -> u64 {
    smarm_core::time::system_now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The sampler: per interval, each scheduler's utilisation (from the
/// growth of its idle time) and run queue, into the history.
fn sample(state: &State) {
    let mut last: Option<(Instant, Vec<Duration>)> = None;
    while !state.stopped() {
        let now = smarm_core::time::now();
        let schedulers = smarm_core::snapshot().schedulers;
        if let Some((then, idle_then)) = &last {
            let wall = now.duration_since(*then).as_secs_f64().max(1e-9);
            let sample = Sample {
                t_ms: unix_ms(),
                schedulers: schedulers
                    .iter()
                    .filter(|s| s.active)
                    .map(|s| {
                        let idle_before = idle_then.get(s.id).copied().unwrap_or_default();
                        let idle = s.idle.saturating_sub(idle_before).as_secs_f64();
                        (s.id, (1.0 - idle / wall).clamp(0.0, 1.0), s.run_queue)
                    })
                    .collect(),
            };
            let mut history = state.history.lock().unwrap_or_else(|e| e.into_inner());
            if history.len() == HISTORY {
                history.pop_front();
            }
            history.push_back(sample);
        }
        last = Some((now, schedulers.iter().map(|s| s.idle).collect()));
        smarm_core::time::sleep(state.interval);
    }
}

/// The acceptor: one actor per connection, up to MAX_CONNECTIONS (O2).
fn accept(listener: &TcpListener, state: &Arc<State>) {
    while !state.stopped() {
        let mut stream = match listener.accept() {
            Ok((stream, _)) => stream,
            // Out of fds, or a connection reset before accept: go on.
            Err(_) => {
                smarm_core::time::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if state.connections.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            state.connections.fetch_sub(1, Ordering::AcqRel);
            let _ = http::respond(
                &mut stream,
                "503 Service Unavailable",
                "text/plain",
                b"busy\n",
            );
            continue;
        }
        let conn = Builder::new().name("smarm.observer.conn").spawn({
            let state = state.clone();
            move || {
                let _counted = Counted(&state.connections);
                serve_connection(stream, &state);
            }
        });
        if conn.is_err() {
            // The runtime is at its actor limit: the closure (and the
            // stream with it) was dropped unrun, closing the connection.
            state.connections.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

fn serve_connection(mut stream: TcpStream, state: &State) {
    let _ = stream.set_read_timeout(Some(http::READ_TIMEOUT));
    let request = match http::read_request(&mut stream) {
        Ok(request) => request,
        Err(ReadError::TooLarge) => {
            let _ = http::respond(
                &mut stream,
                "431 Request Header Fields Too Large",
                "text/plain",
                b"request head too large\n",
            );
            return;
        }
        Err(ReadError::Malformed) => {
            let _ = http::respond(
                &mut stream,
                "400 Bad Request",
                "text/plain",
                b"bad request\n",
            );
            return;
        }
        Err(ReadError::Closed) => return,
    };
    if request.method != "GET" {
        let _ = http::respond(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            b"the observer is read-only: GET only\n",
        );
        return;
    }
    if let Some(token) = &state.token {
        let given = request.query_token.as_deref().or(request.bearer.as_deref());
        if !given.is_some_and(|g| http::same_secret(g, token)) {
            let _ = http::respond(
                &mut stream,
                "401 Unauthorized",
                "text/plain",
                b"this observer needs its token: ?token=... or Authorization: Bearer ...\n",
            );
            return;
        }
    }
    let json = "application/json";
    let _ = match request.path.as_str() {
        "/" | "/index.html" => http::respond(
            &mut stream,
            "200 OK",
            "text/html; charset=utf-8",
            PAGE.as_bytes(),
        ),
        "/api/snapshot" => http::respond(
            &mut stream,
            "200 OK",
            json,
            state.snapshot_json().as_bytes(),
        ),
        "/api/history" => {
            http::respond(&mut stream, "200 OK", json, state.history_json().as_bytes())
        }
        "/api/stream" => stream_snapshots(&mut stream, state),
        "/api/causal.svg" => causal_svg(&mut stream),
        path if path.starts_with("/api/status/") => sys_status(&mut stream, &path[12..]),
        _ => http::respond(&mut stream, "404 Not Found", "text/plain", b"not found\n"),
    };
}

/// `/api/status/0.I.G`: the `sys` status of the behaviour running as pid
/// `<0.I.G>` (404 if none does).
fn sys_status(stream: &mut TcpStream, pid: &str) -> std::io::Result<()> {
    let status = pid
        .parse::<smarm_core::Pid>()
        .ok()
        .and_then(|pid| crate::sys::status_of(pid).ok());
    match status {
        Some(status) => http::respond(
            stream,
            "200 OK",
            "application/json",
            json::status(&status).as_bytes(),
        ),
        None => http::respond(
            stream,
            "404 Not Found",
            "text/plain",
            b"no behaviour runs as that pid\n",
        ),
    }
}

/// The latest causal profile's plot (feature `smarm-causal`); 404 without
/// one (or without the feature).
fn causal_svg(stream: &mut TcpStream) -> std::io::Result<()> {
    #[cfg(feature = "smarm-causal")]
    if let Some(profile) = smarm_core::causal::latest_profile() {
        return http::respond(
            stream,
            "200 OK",
            "image/svg+xml",
            profile.to_svg().as_bytes(),
        );
    }
    http::respond(
        stream,
        "404 Not Found",
        "text/plain",
        b"no causal profile yet\n",
    )
}

/// Server-sent events: a snapshot per interval until the client goes or
/// the observer stops (O2).
fn stream_snapshots(stream: &mut TcpStream, state: &State) -> std::io::Result<()> {
    // A client that stops reading fills the socket: the write times out
    // and the stream ends, rather than holding its actor forever (O2).
    stream.set_write_timeout(Some(http::WRITE_TIMEOUT))?;
    http::begin_events(stream)?;
    while !state.stopped() {
        http::send_event(stream, "snapshot", &state.snapshot_json())?;
        smarm_core::time::sleep(state.interval);
    }
    Ok(())
}
