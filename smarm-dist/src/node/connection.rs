//! A node's connections: connecting to a peer (EPMD lookup, handshake,
//! simultaneous attempts), accepting one, registering it, and its reader,
//! which decodes and delivers every frame and declares the peer down (the
//! module docs' (N1)-(N3)).

use super::wire::{Direct, FrameError, FrameReader, Next, Out, Outbox, write_loop};
use super::{Node, NodeEvent, SendError, link, log, monitor, spawn};
use crate::control;
use crate::flags::Flags;
use crate::handshake::{HandshakeError, Status, Transport};
use crate::stream::DistStream;
use crate::{epmd, handshake};
use smarm_core::Mutex;
use smarm_core::channel::channel;
use smarm_core::io::net::{TcpListener, TcpStream};
use std::io;
use std::net::{Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
pub(super) struct Conn {
    pub(super) tx: Outbox,
    pub(super) flags: Flags,
    /// Tells this connection from a later one to the same peer (N2).
    pub(super) id: u64,
    /// The socket, to shut down when the node stops: its reader and
    /// writer may be stopped before they close it themselves.
    pub(super) closer: DistStream,
    /// Disconnected once the writer has ended (written what was queued
    /// before its `Close`, or failed): what a stopping node waits on
    /// before it shuts the socket. Taken by the stop.
    pub(super) writer_done: Option<smarm_core::channel::Receiver<()>>,
}

/// Resolve `host` to an IPv4 address (`localhost` and literals at once;
/// other names on the blocking pool, so the scheduler does not wait).
pub(super) fn resolve_v4(host: &str) -> io::Result<Ipv4Addr> {
    if host == "localhost" {
        return Ok(Ipv4Addr::LOCALHOST);
    }
    if let Ok(ip) = host.parse() {
        return Ok(ip);
    }
    let host = host.to_string();
    smarm_core::io::block_on_io(move || {
        (host.as_str(), 0)
            .to_socket_addrs()?
            .find_map(|a| match a {
                SocketAddr::V4(v4) => Some(*v4.ip()),
                SocketAddr::V6(_) => None,
            })
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no IPv4 address"))
    })
}

impl Node {
    /// The writer of the connection to `peer`, connecting first if needed.
    pub(super) fn connection(&self, peer: &str) -> Result<(Outbox, Flags), SendError> {
        let existing = self
            .with_state(|s| {
                if s.stopped {
                    return Err(SendError::Stopped);
                }
                Ok(s.conns.peers.get(peer).map(|c| (c.tx.clone(), c.flags)))
            })
            .ok_or(SendError::Stopped)??;
        if let Some(c) = existing {
            return Ok(c);
        }
        self.connect(peer)
    }

    pub(super) fn connect(&self, peer: &str) -> Result<(Outbox, Flags), SendError> {
        let Some((alive, host)) = peer.split_once('@') else {
            return Err(SendError::BadNode(peer.to_string()));
        };
        let lookup = || {
            self.with_state(|s| s.conns.peers.get(peer).map(|c| (c.tx.clone(), c.flags)))
                .flatten()
        };
        // One handshake with a peer at a time: wait for one it started
        // with us (or that a send of ours started) before starting another.
        let deadline = smarm_core::time::now() + self.inner.handshake_timeout;
        loop {
            let busy = self
                .with_state(|s| {
                    if s.conns.peers.contains_key(peer) {
                        return Some(None);
                    }
                    if s.conns.accepting.contains(peer) || s.conns.connecting.contains(peer) {
                        return Some(Some(s.conns.await_settle(peer)));
                    }
                    s.conns.connecting.insert(peer.to_string());
                    None
                })
                .flatten();
            match busy {
                Some(None) => {
                    if let Some(c) = lookup() {
                        return Ok(c);
                    }
                }
                Some(Some(settled)) => {
                    let left = deadline.saturating_duration_since(smarm_core::time::now());
                    if left.is_zero() {
                        return Err(SendError::Closed(peer.to_string()));
                    }
                    let _ = settled.recv_timeout(left);
                }
                None => break, // ours to make
            }
        }
        let result = self.handshake_to(peer, alive, host);
        let _ = self.with_state(|s| {
            s.conns.connecting.remove(peer);
            s.conns.settled(peer);
        });
        match result {
            Ok(Some(c)) => Ok(c),
            // Lost a simultaneous connect: the winner is in the table.
            Ok(None) => lookup().ok_or_else(|| SendError::Closed(peer.to_string())),
            // The peer's own attempt wins (its name is the greater), or we
            // had a connection by the time it said alive: use that one.
            Err(SendError::Connect {
                error: HandshakeError::Refused { ref status, .. },
                ..
            }) if status == "nok" || status == "alive" => loop {
                let waiting = self
                    .with_state(|s| match s.conns.peers.get(peer) {
                        Some(c) => Ok((c.tx.clone(), c.flags)),
                        None => Err(s.conns.await_settle(peer)),
                    })
                    .ok_or(SendError::Stopped)?;
                let left = deadline.saturating_duration_since(smarm_core::time::now());
                match waiting {
                    Ok(c) => return Ok(c),
                    Err(_) if left.is_zero() => return Err(SendError::Closed(peer.to_string())),
                    Err(settled) => drop(settled.recv_timeout(left)),
                }
            },
            Err(e) => Err(e),
        }
    }

    /// Look `peer` up, connect and shake hands; registers the connection.
    pub(super) fn handshake_to(
        &self,
        peer: &str,
        alive: &str,
        host: &str,
    ) -> Result<Option<(Outbox, Flags)>, SendError> {
        let host_ip = resolve_v4(host).map_err(|e| SendError::NoNode {
            node: peer.to_string(),
            why: format!("cannot resolve {host}: {e}"),
        })?;
        let entry = epmd::port_please(host_ip, self.inner.epmd_port, alive)
            .map_err(|e| SendError::NoNode {
                node: peer.to_string(),
                why: e.to_string(),
            })?
            .ok_or_else(|| SendError::NoNode {
                node: peer.to_string(),
                why: "not registered".into(),
            })?;
        let failed = |error: HandshakeError| {
            if !matches!(error, HandshakeError::Refused { .. }) {
                self.count(|s| &s.failed_handshakes);
            }
            SendError::Connect {
                node: peer.to_string(),
                error,
            }
        };
        let socket = TcpStream::connect(SocketAddr::from((host_ip, entry.port)))
            .map_err(|e| failed(e.into()))?;
        let _ = socket.set_nodelay(true);
        let have_none = || {
            self.with_state(|s| !s.conns.peers.contains_key(peer))
                .unwrap_or(false)
        };
        let timeout = self.inner.handshake_timeout;
        let deadline = smarm_core::time::now() + timeout;
        let mut stream = self.secure(socket, Some(peer), deadline).map_err(failed)?;
        let left = deadline.saturating_duration_since(smarm_core::time::now());
        let remote = handshake::initiate(&mut stream, &self.inner.local, peer, left, have_none)
            .map_err(failed)?;
        Ok(self.established(stream, remote))
    }

    /// The connection's stream: TLS over `socket` when the node has it
    /// (connecting to `peer`, or accepting when `None`), plain otherwise.
    fn secure(
        &self,
        socket: TcpStream,
        peer: Option<&str>,
        deadline: Instant,
    ) -> Result<DistStream, HandshakeError> {
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.inner.tls {
            let timeout = self.inner.handshake_timeout;
            let stream = match peer {
                Some(peer) => crate::tls::TlsStream::connect(socket, tls, peer, timeout, deadline)?,
                None => crate::tls::TlsStream::accept(socket, tls, timeout, deadline)?,
            };
            return Ok(DistStream::Tls(stream));
        }
        let _ = (peer, deadline);
        Ok(DistStream::Tcp(socket))
    }

    /// Whether the peer's certificate (TLS only) fits the name it gave.
    fn check_certificate(
        &self,
        certificate: Option<&[u8]>,
        peer: &str,
    ) -> Result<(), HandshakeError> {
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.inner.tls {
            return tls.check_name(certificate, peer);
        }
        let _ = (certificate, peer);
        Ok(())
    }

    /// A handshake succeeded: register the connection (N1) and start its
    /// reader and writer. `None` if one to the peer was registered first.
    pub(super) fn established(
        &self,
        stream: DistStream,
        peer: handshake::Peer,
    ) -> Option<(Outbox, Flags)> {
        let (Ok(write_half), Ok(closer)) = (stream.try_clone(), stream.try_clone()) else {
            return None;
        };
        let (queue, rx) = channel::<Out>();
        let tx = Outbox {
            tx: queue,
            direct: Arc::new(Direct {
                stream: Mutex::new(write_half),
                queued: AtomicUsize::new(0),
                last_write: AtomicU64::new(0),
                epoch: smarm_core::time::now(),
            }),
        };
        let (done_tx, writer_done) = channel::<()>();
        let registered = self
            .with_state(|s| {
                if s.stopped || s.conns.peers.contains_key(&peer.name) {
                    return None;
                }
                s.conns.next_conn += 1;
                let id = s.conns.next_conn;
                s.conns.peers.insert(
                    peer.name.clone(),
                    Conn {
                        tx: tx.clone(),
                        flags: peer.flags,
                        id,
                        closer,
                        writer_done: Some(writer_done),
                    },
                );
                s.conns
                    .subscribers
                    .retain(|sub| sub.send(NodeEvent::Up(peer.name.clone())).is_ok());
                s.conns.settled(&peer.name);
                Some(id)
            })
            .flatten()?;
        let writer = self.clone();
        let ticktime = self.inner.ticktime;
        let out = tx.clone();
        self.spawn("smarm.dist.writer", move || {
            write_loop(&out, rx, ticktime);
            drop((writer, done_tx));
        });
        let reader = self.clone();
        let name = peer.name.clone();
        self.spawn("smarm.dist.reader", move || {
            reader.read_loop(stream, &name, registered)
        });
        Some((tx, peer.flags))
    }

    /// Remove connection `id` to `peer` and announce it down (N2): the
    /// monitors on its processes fire with `noconnection`, and its
    /// processes' monitors on ours are forgotten.
    pub(super) fn connection_down(&self, peer: &str, id: u64) {
        let _ = self.with_state(|s| {
            if s.conns.peers.get(peer).is_some_and(|c| c.id == id) {
                if let Some(c) = s.conns.peers.remove(peer) {
                    c.tx.try_send(Out::Close);
                }
                s.conns
                    .subscribers
                    .retain(|sub| sub.send(NodeEvent::Down(peer.to_string())).is_ok());
                monitor::node_down(s, peer);
                link::node_down(s, peer);
                spawn::node_down(s, peer);
            }
        });
    }

    /// Drop the connection to `node`, as `erlang:disconnect_node/1`: its
    /// monitors fire with `noconnection`, its links break, and a later
    /// send connects again. `false` if there was none.
    pub fn disconnect(&self, node: &str) -> bool {
        let conn = self
            .with_state(|s| {
                s.conns
                    .peers
                    .get(node)
                    .map(|c| (c.id, c.closer.try_clone()))
            })
            .flatten();
        let Some((id, closer)) = conn else {
            return false;
        };
        if let Ok(closer) = closer {
            let _ = closer.shutdown(std::net::Shutdown::Both);
        }
        self.connection_down(node, id);
        true
    }

    pub(super) fn accept_loop(&self, listener: TcpListener) {
        loop {
            let Ok((stream, _)) = listener.accept() else {
                // Out of descriptors, say: let some close before trying again.
                smarm_core::sleep(Duration::from_millis(10));
                continue;
            };
            // (N4) At the cap, close it unread.
            let handshaking = &self.inner.handshaking;
            if handshaking.fetch_add(1, Ordering::AcqRel) >= self.inner.max_handshakes {
                handshaking.fetch_sub(1, Ordering::AcqRel);
                self.count(|s| &s.busy_handshakes);
                drop(stream);
                continue;
            }
            let node = self.clone();
            let started = self.spawn("smarm.dist.accepting", move || {
                node.accept_one(stream);
                node.inner.handshaking.fetch_sub(1, Ordering::AcqRel);
            });
            if !started {
                handshaking.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    pub(super) fn accept_one(&self, socket: TcpStream) {
        let _ = socket.set_nodelay(true);
        let timeout = self.inner.handshake_timeout;
        let deadline = smarm_core::time::now() + timeout;
        let addr = socket.peer_addr().ok();
        let mut stream = match self.secure(socket, None, deadline) {
            Ok(s) => s,
            Err(e) => {
                self.count(|s| &s.failed_handshakes);
                log(&format!("connection from {addr:?} refused: {e}"));
                return;
            }
        };
        let me = self.name().to_string();
        let mut accepting: Option<String> = None;
        let mut decide = |peer: &str| {
            let status = self
                .with_state(|s| {
                    let status = if s.conns.accepting.contains(peer) {
                        Status::Nok // a handshake from it is under way already
                    } else if s.conns.peers.contains_key(peer) {
                        Status::Alive
                    } else if s.conns.connecting.contains(peer) {
                        // Both sides connect: the greater name's attempt wins.
                        if me.as_str() > peer {
                            Status::Nok
                        } else {
                            Status::OkSimultaneous
                        }
                    } else {
                        Status::Ok
                    };
                    if status != Status::Nok {
                        // Until this handshake ends, no other one to the
                        // peer starts here (`connect` waits for it).
                        s.conns.accepting.insert(peer.to_string());
                    }
                    status
                })
                .unwrap_or(Status::Nok);
            if status != Status::Nok {
                accepting = Some(peer.to_string());
            }
            status
        };
        // Under TLS, a peer whose certificate does not fit the name it
        // gives is answered `not_allowed`, as OTP's allowed-nodes check.
        let mut unfit = None;
        let certificate = stream.peer_certificate();
        let decide = |peer: &str| match self.check_certificate(certificate.as_deref(), peer) {
            Ok(()) => decide(peer),
            Err(e) => {
                unfit = Some(e);
                Status::NotAllowed
            }
        };
        let left = deadline.saturating_duration_since(smarm_core::time::now());
        let shaken = handshake::accept(&mut stream, &self.inner.local, left, decide);
        let shaken = match (shaken, unfit) {
            (Err(_), Some(unfit)) => Err(unfit),
            (shaken, _) => shaken,
        };
        match shaken {
            Ok(peer) => {
                // "alive" answered true: our connection to it is stale.
                let old = self
                    .with_state(|s| s.conns.peers.get(&peer.name).map(|c| c.id))
                    .flatten();
                if let Some(id) = old {
                    self.connection_down(&peer.name, id);
                }
                let _ = self.established(stream, peer);
            }
            Err(HandshakeError::Refused { .. }) => {}
            Err(e) => {
                self.inner
                    .stats
                    .failed_handshakes
                    .fetch_add(1, Ordering::Relaxed);
                log(&format!("handshake from {addr:?} failed: {e}"));
            }
        }
        if let Some(peer) = accepting {
            let _ = self.with_state(|s| {
                s.conns.accepting.remove(&peer);
                s.conns.settled(&peer);
            });
        }
    }

    /// The reader of a connection (module docs, N2, N3).
    pub(super) fn read_loop(&self, mut stream: DistStream, peer: &str, id: u64) {
        let ticktime = self.inner.ticktime;
        let why = (|| -> Result<(), String> {
            stream
                .set_read_timeout(Some(ticktime / 4))
                .map_err(|e| e.to_string())?;
            let mut last = smarm_core::time::now();
            let mut reader = FrameReader::new();
            loop {
                let frame = match reader.next(&mut stream, self.inner.max_frame) {
                    Ok(Next::Frame(frame)) => frame,
                    Ok(Next::Idle) => {
                        if last.elapsed() > ticktime {
                            return Err(format!("no tick for {ticktime:?} (net_ticktime)"));
                        }
                        continue;
                    }
                    Err(e) => {
                        if matches!(e, FrameError::TooLong { .. }) {
                            self.inner.stats.malformed.fetch_add(1, Ordering::Relaxed);
                        }
                        return Err(e.to_string());
                    }
                };
                last = smarm_core::time::now();
                if frame.is_empty() {
                    continue; // a tick
                }
                if let Err(e) = self.handle_frame(&reader.buf[frame]) {
                    self.inner.stats.malformed.fetch_add(1, Ordering::Relaxed);
                    return Err(format!("malformed message: {e}"));
                }
            }
        })();
        if let Err(why) = why {
            log(&format!("connection to {peer} closed: {why}"));
        }
        let _ = stream.shutdown(std::net::Shutdown::Both);
        self.connection_down(peer, id);
    }

    pub(super) fn handle_frame(&self, frame: &[u8]) -> Result<(), String> {
        let (control, message) = control::decode_message(frame).map_err(|e| e.to_string())?;
        self.dispatch(control, message, None)
            .map_err(|e| e.to_string())
    }
}
