//! EPMD, the Erlang port mapper: a client for its requests, and a server
//! of the same protocol that a node runs itself when no EPMD answers, so a
//! cluster of smarm nodes needs no Erlang install and leaves no daemon
//! behind.
//!
//! Every request is a 2-byte big-endian length and the request; the port
//! is `ERL_EPMD_PORT` or 4369, as for Erlang. A node registers with
//! `ALIVE2_REQ` and keeps that connection open: closing it unregisters
//! the node. `PORT_PLEASE2_REQ` looks a node up, `NAMES_REQ` lists them.
//!
//! Invariants of the server:
//! - (E1) A name is registered while, and only while, the connection that
//!   registered it is open; a second registration of a live name is
//!   refused (result 1), as EPMD does.
//! - (E2) Every request is bounded: a request longer than
//!   [`MAX_REQUEST`] or a connection idle past [`REQUEST_TIMEOUT`] before
//!   its request is closed, so a bad client costs one actor briefly.
//! - (E3) Only a client on this host registers a name: `ALIVE2_REQ` from
//!   another address is closed unanswered, as EPMD refuses it; lookups
//!   are answered from anywhere (a node serves on every address, so other
//!   hosts find its nodes).

use smarm_core::Mutex;
use smarm_core::io::net::{TcpListener, TcpStream};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

/// EPMD's port when `ERL_EPMD_PORT` does not say otherwise.
pub const DEFAULT_PORT: u16 = 4369;

const ALIVE2_REQ: u8 = 120;
const ALIVE2_X_RESP: u8 = 118;
const ALIVE2_RESP: u8 = 121;
const PORT_PLEASE2_REQ: u8 = 122;
const PORT2_RESP: u8 = 119;
const NAMES_REQ: u8 = 110;

/// The longest request the server reads (a name is at most 255 bytes).
pub const MAX_REQUEST: usize = 1024;
/// How long the server waits for a connection's request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The EPMD port of this process: `ERL_EPMD_PORT`, else 4369.
pub fn port_from_env() -> u16 {
    std::env::var("ERL_EPMD_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(DEFAULT_PORT)
}

/// What EPMD knows of a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeEntry {
    /// The node's name before the `@`.
    pub name: String,
    /// The port it accepts distribution connections on.
    pub port: u16,
    /// 77 for a normal node, 72 for a hidden one.
    pub node_type: u8,
    /// 0: TCP over IPv4.
    pub protocol: u8,
    /// The highest distribution version it speaks.
    pub highest: u16,
    /// The lowest distribution version it speaks.
    pub lowest: u16,
    /// The extra field of its registration.
    pub extra: Vec<u8>,
}

impl NodeEntry {
    /// A normal node on `port` speaking distribution version 6.
    pub fn new(name: &str, port: u16) -> NodeEntry {
        NodeEntry {
            name: name.to_string(),
            port,
            node_type: 77,
            protocol: 0,
            highest: 6,
            lowest: 6,
            extra: Vec::new(),
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.port.to_be_bytes());
        out.push(self.node_type);
        out.push(self.protocol);
        out.extend_from_slice(&self.highest.to_be_bytes());
        out.extend_from_slice(&self.lowest.to_be_bytes());
        out.extend_from_slice(&(self.name.len() as u16).to_be_bytes());
        out.extend_from_slice(self.name.as_bytes());
        out.extend_from_slice(&(self.extra.len() as u16).to_be_bytes());
        out.extend_from_slice(&self.extra);
    }

    fn decode(bytes: &[u8]) -> io::Result<NodeEntry> {
        let mut r = Fields(bytes);
        let port = r.u16()?;
        let node_type = r.u8()?;
        let protocol = r.u8()?;
        let highest = r.u16()?;
        let lowest = r.u16()?;
        let nlen = r.u16()? as usize;
        let name =
            String::from_utf8(r.take(nlen)?.to_vec()).map_err(|_| bad("node name is not UTF-8"))?;
        let elen = r.u16()? as usize;
        let extra = r.take(elen)?.to_vec();
        Ok(NodeEntry {
            name,
            port,
            node_type,
            protocol,
            highest,
            lowest,
            extra,
        })
    }
}

/// A cursor over a request's fields.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(bad("EPMD message ends early"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> io::Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> io::Result<u16> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

fn epmd_addr(host: Ipv4Addr, port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(host, port))
}

fn request(stream: &mut TcpStream, body: &[u8]) -> io::Result<()> {
    let mut framed = Vec::with_capacity(body.len() + 2);
    framed.extend_from_slice(&(body.len() as u16).to_be_bytes());
    framed.extend_from_slice(body);
    stream.write_all(&framed)
}

/// A node's registration with EPMD: held open for as long as the node is
/// registered (dropping it unregisters).
#[derive(Debug)]
pub struct Registration {
    stream: TcpStream,
    /// The creation EPMD gave the node: part of its pids and references.
    pub creation: u32,
}

impl Registration {
    /// Block until EPMD closes the registration's connection (it went
    /// away): the node is no longer registered.
    pub fn wait_closed(&mut self) {
        let mut byte = [0u8; 1];
        loop {
            match self.stream.read(&mut byte) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    }
}

/// Register `entry` with the EPMD at `host:port`.
pub fn register(host: Ipv4Addr, port: u16, entry: &NodeEntry) -> io::Result<Registration> {
    let mut stream = TcpStream::connect(epmd_addr(host, port))?;
    stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    let mut body = vec![ALIVE2_REQ];
    entry.encode(&mut body);
    request(&mut stream, &body)?;
    let mut head = [0u8; 2];
    stream.read_exact(&mut head)?;
    let creation = match head {
        [ALIVE2_X_RESP, 0] => {
            let mut c = [0u8; 4];
            stream.read_exact(&mut c)?;
            u32::from_be_bytes(c)
        }
        [ALIVE2_RESP, 0] => {
            let mut c = [0u8; 2];
            stream.read_exact(&mut c)?;
            u32::from(u16::from_be_bytes(c))
        }
        [ALIVE2_X_RESP | ALIVE2_RESP, _] => {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!(
                    "EPMD refused to register {:?}: the name is taken",
                    entry.name
                ),
            ));
        }
        _ => return Err(bad("unexpected EPMD reply to ALIVE2_REQ")),
    };
    stream.set_read_timeout(None)?;
    Ok(Registration { stream, creation })
}

/// Look `name` (before the `@`) up with the EPMD at `host:port`: `None`
/// if it is not registered there.
pub fn port_please(host: Ipv4Addr, port: u16, name: &str) -> io::Result<Option<NodeEntry>> {
    let mut stream = TcpStream::connect(epmd_addr(host, port))?;
    stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    let mut body = vec![PORT_PLEASE2_REQ];
    body.extend_from_slice(name.as_bytes());
    request(&mut stream, &body)?;
    let mut reply = Vec::new();
    stream.take(MAX_REQUEST as u64).read_to_end(&mut reply)?;
    match reply.as_slice() {
        [PORT2_RESP, 0, rest @ ..] => NodeEntry::decode(rest).map(Some),
        [PORT2_RESP, _, ..] => Ok(None),
        _ => Err(bad("unexpected EPMD reply to PORT_PLEASE2_REQ")),
    }
}

/// The names registered with the EPMD at `host:port`, with their ports.
pub fn names(host: Ipv4Addr, port: u16) -> io::Result<Vec<(String, u16)>> {
    let mut stream = TcpStream::connect(epmd_addr(host, port))?;
    stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    request(&mut stream, &[NAMES_REQ])?;
    let mut reply = Vec::new();
    stream.take(1 << 20).read_to_end(&mut reply)?;
    let text = reply
        .get(4..)
        .ok_or_else(|| bad("EPMD NAMES reply ends early"))?;
    let text = String::from_utf8_lossy(text);
    Ok(text
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("name ")?;
            let (name, port) = rest.rsplit_once(" at port ")?;
            Some((name.to_string(), port.trim().parse().ok()?))
        })
        .collect())
}

/// The names an EPMD server holds (E1).
#[derive(Default)]
struct Table {
    nodes: HashMap<String, (NodeEntry, u64)>,
    next_registration: u64,
}

/// An EPMD server run by a node (module docs): it answers as long as the
/// returned handle lives and the runtime runs.
#[derive(Clone)]
pub struct Server {
    table: Arc<Mutex<Table>>,
    /// Its actors: the acceptor and one per open connection.
    actors: Arc<Mutex<Vec<smarm_core::Pid>>>,
    port: u16,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("port", &self.port).finish()
    }
}

impl Server {
    /// Serve EPMD's protocol on `host:port`, in actors of the calling
    /// runtime. Fails if the port is taken (another EPMD answers there).
    ///
    /// # Panics
    ///
    /// Outside a smarm actor.
    pub fn start(host: Ipv4Addr, port: u16) -> io::Result<Server> {
        smarm_core::require_actor("smarm::dist::epmd::Server::start");
        let listener = TcpListener::bind(epmd_addr(host, port))?;
        let port = listener.local_addr()?.port();
        let server = Server {
            table: Arc::new(Mutex::new(Table::default())),
            actors: Arc::new(Mutex::new(Vec::new())),
            port,
        };
        let (table, actors) = (server.table.clone(), server.actors.clone());
        let acceptor = smarm_core::Builder::new()
            .name("smarm.dist.epmd")
            .spawn(move || accept_loop(listener, table, &actors))
            .map_err(io::Error::other)?;
        server.track(acceptor.pid());
        Ok(server)
    }

    /// The port it serves on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stop serving: the listener and every connection close (the nodes
    /// registered through them are unregistered).
    pub fn stop(&self) {
        let actors = match self.actors.lock() {
            Ok(mut a) => std::mem::take(&mut *a),
            Err(_) => Vec::new(),
        };
        for a in actors {
            smarm_core::request_stop(a);
        }
    }

    fn track(&self, pid: smarm_core::Pid) {
        track(&self.actors, pid);
    }

    /// The names registered with it.
    pub fn registered(&self) -> Vec<String> {
        match self.table.lock() {
            Ok(t) => t.nodes.keys().cloned().collect(),
            Err(_) => Vec::new(),
        }
    }
}

fn track(actors: &Mutex<Vec<smarm_core::Pid>>, pid: smarm_core::Pid) {
    if let Ok(mut a) = actors.lock() {
        a.retain(|p| smarm_core::is_alive(*p));
        a.push(pid);
    }
}

fn accept_loop(
    listener: TcpListener,
    table: Arc<Mutex<Table>>,
    actors: &Mutex<Vec<smarm_core::Pid>>,
) {
    loop {
        let Ok((stream, _)) = listener.accept() else {
            // Out of descriptors, say: let some close before trying again.
            smarm_core::sleep(Duration::from_millis(10));
            continue;
        };
        let table = table.clone();
        if let Ok(h) = smarm_core::Builder::new()
            .name("smarm.dist.epmd.conn")
            .spawn(move || serve(stream, &table))
        {
            track(actors, h.pid());
        }
    }
}

/// One client connection (E2).
fn serve(mut stream: TcpStream, table: &Mutex<Table>) {
    if stream.set_read_timeout(Some(REQUEST_TIMEOUT)).is_err() {
        return;
    }
    let mut len = [0u8; 2];
    if stream.read_exact(&mut len).is_err() {
        return;
    }
    let len = u16::from_be_bytes(len) as usize;
    if len == 0 || len > MAX_REQUEST {
        return;
    }
    let mut req = vec![0u8; len];
    if stream.read_exact(&mut req).is_err() {
        return;
    }
    match req[0] {
        // (E3)
        ALIVE2_REQ if local_peer(&stream) => alive(stream, table, &req[1..]),
        ALIVE2_REQ => {}
        PORT_PLEASE2_REQ => {
            let name = String::from_utf8_lossy(&req[1..]).into_owned();
            let entry = table
                .lock()
                .ok()
                .and_then(|t| t.nodes.get(&name).map(|(e, _)| e.clone()));
            let mut reply = vec![PORT2_RESP];
            match entry {
                Some(entry) => {
                    reply.push(0);
                    entry.encode(&mut reply);
                }
                None => reply.push(1),
            }
            let _ = stream.write_all(&reply);
        }
        NAMES_REQ => {
            let mut reply = u32::from(epmd_port_of(&stream)).to_be_bytes().to_vec();
            if let Ok(t) = table.lock() {
                for (name, (entry, _)) in &t.nodes {
                    reply.extend_from_slice(
                        format!("name {name} at port {}\n", entry.port).as_bytes(),
                    );
                }
            }
            let _ = stream.write_all(&reply);
        }
        _ => {} // unknown request: closed, as EPMD does
    }
}

/// Whether the client is on this host (a loopback address).
fn local_peer(stream: &TcpStream) -> bool {
    stream.peer_addr().is_ok_and(|a| a.ip().is_loopback())
}

fn epmd_port_of(stream: &TcpStream) -> u16 {
    stream
        .local_addr()
        .map(|a| a.port())
        .unwrap_or(DEFAULT_PORT)
}

/// An `ALIVE2_REQ`: register, answer, hold the name while the connection
/// stays open (E1).
fn alive(mut stream: TcpStream, table: &Mutex<Table>, body: &[u8]) {
    let Ok(entry) = NodeEntry::decode(body) else {
        return;
    };
    let name = entry.name.clone();
    let registered = table.lock().ok().and_then(|mut t| {
        if t.nodes.contains_key(&name) {
            return None;
        }
        t.next_registration += 1;
        let id = t.next_registration;
        t.nodes.insert(name.clone(), (entry, id));
        Some(id)
    });
    let Some(id) = registered else {
        let _ = stream.write_all(&[ALIVE2_X_RESP, 1, 0, 0, 0, 0]);
        return;
    };
    let creation = creation_for(id);
    let mut reply = vec![ALIVE2_X_RESP, 0];
    reply.extend_from_slice(&creation.to_be_bytes());
    if stream.write_all(&reply).is_ok() && stream.set_read_timeout(None).is_ok() {
        let mut byte = [0u8; 1];
        while let Ok(n) = stream.read(&mut byte) {
            if n == 0 {
                break;
            }
        }
    }
    if let Ok(mut t) = table.lock()
        && t.nodes.get(&name).is_some_and(|(_, held)| *held == id)
    {
        t.nodes.remove(&name);
    }
}

/// A creation for registration `id`: non-zero, and different for each
/// registration of a name (so a restarted node's old pids are told apart).
fn creation_for(id: u64) -> u32 {
    let seed = smarm_core::time::system_now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mixed = (seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    ((mixed >> 32) as u32).max(4)
}
