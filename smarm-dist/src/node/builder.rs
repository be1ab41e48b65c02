//! Starting a node: its options ([`Builder`]), the cookie, the EPMD
//! registration (or serving EPMD when none answers) and its keeper.

use super::{
    DEFAULT_MAX_FRAME, DEFAULT_MAX_HANDSHAKES, DEFAULT_TICKTIME, Inner, Node, State, Stats, current,
};
use crate::epmd;
use crate::epmd::{NodeEntry, Registration};
use crate::flags::Flags;
use crate::handshake::Local;
use smarm_core::Mutex;
use smarm_core::io::net::TcpListener;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;
/// Why a node could not start.
#[derive(Debug, Error)]
pub enum StartError {
    /// The name is not `name@host`.
    #[error(
        "smarm::dist::Node::start: {0:?} is not a node name: give name@host, as \"shop@localhost\""
    )]
    BadName(String),
    /// No cookie was given and `~/.erlang.cookie` could not be read.
    #[error(
        "smarm::dist::Node::start: no cookie given and {path} could not be read ({error}): pass one with Builder::cookie"
    )]
    NoCookie {
        /// The cookie file tried.
        path: String,
        /// Why it could not be read.
        error: io::Error,
    },
    /// The listener could not be bound.
    #[error("smarm::dist::Node::start: cannot listen on {addr}: {error}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The error.
        error: io::Error,
    },
    /// Neither an EPMD answered nor could one be served.
    #[error("smarm::dist::Node::start: no EPMD on port {port}, and serving one failed: {error}")]
    Epmd {
        /// The EPMD port.
        port: u16,
        /// The error.
        error: io::Error,
    },
    /// EPMD already has a node of this name.
    #[error("smarm::dist::Node::start: a node named {0:?} is already registered with EPMD")]
    NameTaken(String),
}

/// Options for starting a node.
#[derive(Debug, Clone)]
pub struct Builder {
    name: String,
    cookie: Option<String>,
    listen: Option<SocketAddr>,
    ticktime: Duration,
    max_frame: usize,
    handshake_timeout: Duration,
    max_handshakes: usize,
    epmd_port: Option<u16>,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::TlsConfig>,
}

impl Builder {
    /// A node named `name` (`name@host`).
    pub fn new(name: &str) -> Builder {
        Builder {
            name: name.to_string(),
            cookie: None,
            listen: None,
            ticktime: DEFAULT_TICKTIME,
            max_frame: DEFAULT_MAX_FRAME,
            handshake_timeout: crate::handshake::HANDSHAKE_TIMEOUT,
            max_handshakes: DEFAULT_MAX_HANDSHAKES,
            epmd_port: None,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// Speak TLS on every connection, as OTP's `inet_tls_dist` (feature
    /// `tls`): peers must be TLS nodes too, with certificates `tls`'s CA
    /// signed (see [`TlsConfig`](crate::TlsConfig)). EPMD stays plain.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: crate::tls::TlsConfig) -> Builder {
        self.tls = Some(tls);
        self
    }

    /// The cookie; without one, `~/.erlang.cookie` is read, as Erlang does.
    pub fn cookie(mut self, cookie: &str) -> Builder {
        self.cookie = Some(cookie.to_string());
        self
    }

    /// Listen for other nodes on `addr` (default: all IPv4 addresses, a
    /// port the kernel picks).
    pub fn listen(mut self, addr: SocketAddr) -> Builder {
        self.listen = Some(addr);
        self
    }

    /// Erlang's `net_ticktime`: a peer silent this long is declared down
    /// (default 60 s). Both sides of a connection should agree.
    ///
    /// # Panics
    ///
    /// If `ticktime` is under 400 ms (ticks go every quarter of it).
    pub fn ticktime(mut self, ticktime: Duration) -> Builder {
        assert!(
            ticktime >= Duration::from_millis(400),
            "smarm::dist::Builder::ticktime: {ticktime:?} is too short; give at least 400 ms"
        );
        self.ticktime = ticktime;
        self
    }

    /// The longest frame accepted from a peer (default 64 MiB); a longer
    /// one closes the connection.
    pub fn max_frame(mut self, bytes: usize) -> Builder {
        self.max_frame = bytes;
        self
    }

    /// How long a whole handshake may take, either way (default 15 s;
    /// Erlang's `net_setuptime` is 7 s): a peer that has not finished
    /// by then is cut off.
    ///
    /// # Panics
    ///
    /// If `timeout` is zero.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Builder {
        assert!(
            !timeout.is_zero(),
            "smarm::dist::Builder::handshake_timeout: a zero timeout admits no peer; give a positive one"
        );
        self.handshake_timeout = timeout;
        self
    }

    /// How many incoming connections may be in their handshake at once
    /// (default 64); one more is closed at once and counted
    /// ([`Stats::busy_handshakes`](super::Stats::busy_handshakes)), so
    /// peers that connect and say nothing cannot exhaust the node.
    ///
    /// # Panics
    ///
    /// If `max` is 0.
    pub fn max_handshakes(mut self, max: usize) -> Builder {
        assert!(
            max > 0,
            "smarm::dist::Builder::max_handshakes: 0 admits no peer; give at least 1"
        );
        self.max_handshakes = max;
        self
    }

    /// EPMD's port (default `ERL_EPMD_PORT`, else 4369).
    pub fn epmd_port(mut self, port: u16) -> Builder {
        self.epmd_port = Some(port);
        self
    }

    /// Start the node: listen, register with EPMD (serving EPMD if none
    /// answers), accept connections.
    ///
    /// # Panics
    ///
    /// Outside a smarm actor: the node's actors run in the caller's
    /// runtime.
    pub fn start(self) -> Result<Node, StartError> {
        smarm_core::require_actor("smarm::dist::Node::start");
        let Some((alive, _host)) = self
            .name
            .split_once('@')
            .filter(|(a, h)| !a.is_empty() && !h.is_empty())
        else {
            return Err(StartError::BadName(self.name));
        };
        let alive = alive.to_string();
        let cookie = match self.cookie {
            Some(c) => c,
            None => read_cookie_file()?,
        };
        let addr = self
            .listen
            .unwrap_or_else(|| SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)));
        let listener =
            TcpListener::bind(addr).map_err(|error| StartError::Listen { addr, error })?;
        let port = listener
            .local_addr()
            .map_err(|error| StartError::Listen { addr, error })?
            .port();
        let epmd_port = self.epmd_port.unwrap_or_else(epmd::port_from_env);
        let entry = NodeEntry::new(&alive, port);
        let (registration, server) = register_or_serve(epmd_port, &entry)?;
        let node = Node {
            inner: Arc::new(Inner {
                local: Local {
                    name: self.name,
                    cookie,
                    flags: Flags::offered(),
                    creation: registration.creation,
                },
                alive,
                port,
                ticktime: self.ticktime,
                max_frame: self.max_frame,
                handshake_timeout: self.handshake_timeout,
                max_handshakes: self.max_handshakes,
                handshaking: std::sync::atomic::AtomicUsize::new(0),
                epmd_port,
                state: Mutex::new(State::new()),
                stats: Stats::default(),
                epmd_server: std::sync::OnceLock::new(),
                #[cfg(feature = "tls")]
                tls: self.tls,
            }),
        };
        if let Some(server) = server {
            let _ = node.inner.epmd_server.set(server);
        }
        // Before the acceptor: a peer that connects finds it (K1).
        node.start_kernel();
        node.start_rex();
        // Every Erlang node runs global_name_server: one that lacks it
        // keeps `global:sync()` on its peers waiting.
        let _ = node.global();
        node.export_builtins();
        let keeper = node.clone();
        node.spawn("smarm.dist.epmd_keeper", move || {
            keeper.keep_registration(registration)
        });
        let acceptor = node.clone();
        node.spawn("smarm.dist.acceptor", move || {
            acceptor.accept_loop(listener)
        });
        current::started(&node);
        Ok(node)
    }
}

/// The cookie in `~/.erlang.cookie`.
pub(super) fn read_cookie_file() -> Result<String, StartError> {
    let path = std::env::var("HOME").unwrap_or_default() + "/.erlang.cookie";
    match std::fs::read_to_string(&path) {
        Ok(c) => Ok(c.trim().to_string()),
        Err(error) => Err(StartError::NoCookie { path, error }),
    }
}

/// Register `entry` with the EPMD on `port`, serving EPMD first if none
/// answers (another node may win the race to serve: then register there).
pub(super) fn register_or_serve(
    port: u16,
    entry: &NodeEntry,
) -> Result<(Registration, Option<epmd::Server>), StartError> {
    // An EPMD that is going away (its node stopping) may accept and then
    // reset: such errors are tried again, for about a second.
    let transient = |e: &io::Error| {
        matches!(
            e.kind(),
            io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::UnexpectedEof
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::AddrInUse
        )
    };
    let mut last = None;
    for _ in 0..50 {
        match epmd::register(Ipv4Addr::LOCALHOST, port, entry) {
            Ok(r) => return Ok((r, None)),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                return Err(StartError::NameTaken(entry.name.clone()));
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                // On every address, as EPMD: other hosts look this node up.
                match epmd::Server::start(Ipv4Addr::UNSPECIFIED, port) {
                    Ok(server) => match epmd::register(Ipv4Addr::LOCALHOST, port, entry) {
                        Ok(r) => return Ok((r, Some(server))),
                        Err(error) => return Err(StartError::Epmd { port, error }),
                    },
                    // Someone else serves now, or the old server's port is
                    // not free yet: try again.
                    Err(e) => last = Some(e),
                }
            }
            Err(e) if transient(&e) => last = Some(e),
            Err(error) => return Err(StartError::Epmd { port, error }),
        }
        smarm_core::sleep(Duration::from_millis(20));
    }
    Err(StartError::Epmd {
        port,
        error: last.unwrap_or_else(|| io::Error::other("EPMD kept changing hands")),
    })
}

impl Node {
    pub(super) fn keep_registration(&self, mut registration: Registration) {
        let entry = NodeEntry::new(&self.inner.alive, self.inner.port);
        loop {
            registration.wait_closed();
            // EPMD went away: register again (serving it ourselves if no
            // one does), every second until it takes.
            loop {
                smarm_core::sleep(Duration::from_secs(1));
                if let Ok((r, server)) = register_or_serve(self.inner.epmd_port, &entry) {
                    if let Some(server) = server {
                        let _ = self.inner.epmd_server.set(server);
                    }
                    registration = r;
                    break;
                }
            }
        }
    }
}
