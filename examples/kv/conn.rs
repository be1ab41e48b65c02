//! One connection: an actor that reads commands (pipelined: every
//! complete command of a read is one batch), sends each shard its part of
//! the batch, and writes the replies back in order.
//!
//! A protocol error gets its `-ERR Protocol error` reply and closes this
//! connection only. A shard that crashes mid-batch answers nothing: its
//! commands get `-ERR shard unavailable` and the connection goes on.

use crate::resp::{self, Command, Reply};
use crate::shard::{self, Batch, Op, SetCond, Shard};
use smarm::gen_server::{GenServerRef, ServerName};
use smarm::net::TcpStream;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

/// How long a connection waits for a shard's replies.
const SHARD_TIMEOUT: Duration = Duration::from_secs(5);

/// The read buffer's size once the client has sent something (an idle
/// connection that never did holds none).
const READ_CHUNK: usize = 16 << 10;

/// What every connection shares: the shards' names and the server's
/// switches.
pub struct Shared {
    pub shards: Vec<ServerName<Shard>>,
    pub debug: bool,
    /// The connection supervisor, for INFO's `connected_clients`.
    pub clients: Box<dyn Fn() -> usize + Send + Sync>,
}

/// Serve one client until it disconnects, sends QUIT, or breaks the
/// protocol.
pub fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let mut conn = Conn {
        stream,
        refs: vec![None; shared.shards.len()],
        shared,
        buf: Vec::new(),
        start: 0,
        end: 0,
        out: Vec::new(),
    };
    let _ = conn.run();
}

struct Conn {
    stream: TcpStream,
    shared: Arc<Shared>,
    /// The shards' servers as last resolved (a restarted shard is resolved
    /// again when a cast to the old one fails).
    refs: Vec<Option<GenServerRef<Shard>>>,
    /// Received bytes; `start..end` is not yet parsed.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    out: Vec<u8>,
}

/// What a batch does once its replies are in.
enum Then {
    Continue,
    Close,
}

impl Conn {
    fn run(&mut self) -> std::io::Result<()> {
        let mut commands = Vec::new();
        loop {
            if !self.fill()? {
                return Ok(()); // EOF
            }
            let parsed = resp::parse(&self.buf[self.start..self.end], &mut commands);
            let (used, error) = match parsed {
                Ok(used) => (used, None),
                Err(e) => (0, Some(e)),
            };
            self.start += used;
            let then = self.execute(&mut commands);
            let broken = error.is_some();
            if let Some(e) = error {
                Reply::err(e).write(&mut self.out);
            }
            if !self.out.is_empty() {
                (&self.stream).write_all(&self.out)?;
                self.out.clear();
            }
            if broken || matches!(then, Then::Close) {
                return Ok(());
            }
        }
    }

    /// Read more bytes into the buffer; `false` at EOF.
    fn fill(&mut self) -> std::io::Result<bool> {
        if self.buf.is_empty() {
            // Nothing received yet: wait without holding a buffer.
            smarm::io::wait_readable(self.stream.as_raw_fd())?;
            self.buf = vec![0; READ_CHUNK];
        }
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if self.end == self.buf.len() {
            // Make room: move the partial command to the front, growing
            // the buffer if the command alone fills it (the parser bounds
            // how large a command may get).
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
            if self.end == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        // A read that left room in the buffer drained the socket: the next
        // one waits for new bytes without a failed read first (smarm::net).
        loop {
            match (&self.stream).read(&mut self.buf[self.end..]) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Run `commands` (draining them) and append their replies to `out`.
    fn execute(&mut self, commands: &mut Vec<Command>) -> Then {
        let mut replies: Vec<Option<Reply>> = Vec::with_capacity(commands.len());
        // Per shard: the operations and which reply slot each fills.
        let mut per_shard: Vec<(Vec<Op>, Vec<Slot>)> = Vec::new();
        let mut then = Then::Continue;
        for cmd in commands.drain(..) {
            let at = replies.len();
            replies.push(None);
            match self.plan(cmd, at, &mut per_shard) {
                Planned::Now(reply) => replies[at] = Some(reply),
                Planned::Sent(initial) => replies[at] = initial,
                Planned::Quit => {
                    replies[at] = Some(Reply::Status("OK"));
                    then = Then::Close;
                    break;
                }
            }
        }
        self.run_shards(per_shard, &mut replies);
        for reply in replies {
            reply
                .unwrap_or_else(|| Reply::err("shard unavailable"))
                .write(&mut self.out);
        }
        then
    }

    /// Send each shard its operations, then gather the replies into their
    /// slots.
    fn run_shards(&mut self, per_shard: Vec<(Vec<Op>, Vec<Slot>)>, replies: &mut [Option<Reply>]) {
        let mut pending = Vec::new();
        for (i, (ops, slots)) in per_shard.into_iter().enumerate() {
            if ops.is_empty() {
                continue;
            }
            let (tx, rx) = smarm::channel::oneshot();
            if self.cast(i, Batch { ops, reply: tx }) {
                pending.push((rx, slots));
            }
        }
        for (rx, slots) in pending {
            let Ok(results) = rx.recv_timeout(SHARD_TIMEOUT) else {
                // The shard went down: every command it had a part in says so.
                for slot in slots {
                    replies[slot.command()] = Some(Reply::err("shard unavailable"));
                }
                continue;
            };
            for (slot, result) in slots.into_iter().zip(results) {
                match slot {
                    Slot::Reply(at) => replies[at] = Some(result),
                    Slot::Sum(at) => {
                        if let (Some(Reply::Int(total)), Reply::Int(n)) = (&mut replies[at], result)
                        {
                            *total += n;
                        }
                    }
                    Slot::Element(at, k) => {
                        if let Some(Reply::Array(items)) = &mut replies[at] {
                            items[k] = result;
                        }
                    }
                    Slot::Ok(at) => {
                        if replies[at].is_none() {
                            replies[at] = Some(result);
                        }
                    }
                }
            }
        }
    }

    /// Cast `batch` to shard `i`, resolving it again if the cached server
    /// is gone; `false` if no shard server runs.
    fn cast(&mut self, i: usize, batch: Batch) -> bool {
        let mut batch = batch;
        for _ in 0..2 {
            let server = match &self.refs[i] {
                Some(server) => server.clone(),
                None => match smarm::gen_server::whereis_server(self.shared.shards[i]) {
                    Some(server) => {
                        self.refs[i] = Some(server.clone());
                        server
                    }
                    None => return false,
                },
            };
            match server.cast(batch) {
                Ok(()) => return true,
                Err(e) => {
                    batch = e.0;
                    self.refs[i] = None;
                }
            }
        }
        false
    }

    /// Turn one command into a reply now, or operations for the shards.
    fn plan(
        &mut self,
        cmd: Command,
        at: usize,
        per_shard: &mut Vec<(Vec<Op>, Vec<Slot>)>,
    ) -> Planned {
        let n_shards = self.shared.shards.len();
        if per_shard.is_empty() {
            per_shard.resize_with(n_shards, || (Vec::new(), Vec::new()));
        }
        // The shard is picked before the key moves into its operation
        // (the arguments are evaluated in order): no copy of the key.
        let mut push = |s: usize, op: Op, slot: Slot| {
            per_shard[s].0.push(op);
            per_shard[s].1.push(slot);
        };
        let name = cmd[0].to_ascii_uppercase();
        let mut args = cmd.into_iter().skip(1);
        let argc = args.len();
        let arity_error = || {
            Planned::Now(Reply::err(format!(
                "wrong number of arguments for '{}' command",
                String::from_utf8_lossy(&name).to_lowercase()
            )))
        };
        match name.as_slice() {
            b"PING" => match argc {
                0 => Planned::Now(Reply::Status("PONG")),
                1 => Planned::Now(Reply::Bulk(args.next().unwrap_or_default())),
                _ => arity_error(),
            },
            b"ECHO" if argc == 1 => Planned::Now(Reply::Bulk(args.next().unwrap_or_default())),
            b"QUIT" => Planned::Quit,
            b"GET" | b"SET" | b"INCR" | b"DECR" | b"INCRBY" | b"DECRBY" | b"EXPIRE"
            | b"PEXPIRE" | b"TTL" => {
                plan_one_key(&name, argc, args, at, n_shards, &mut push).unwrap_or_else(arity_error)
            }
            b"DEL" | b"EXISTS" | b"MSET" | b"MGET" => {
                plan_many_keys(&name, args.collect(), at, n_shards, &mut push)
                    .unwrap_or_else(arity_error)
            }
            b"DBSIZE" if argc == 0 => {
                for (ops, slots) in per_shard.iter_mut() {
                    ops.push(Op::DbSize);
                    slots.push(Slot::Sum(at));
                }
                Planned::Sent(Some(Reply::Int(0)))
            }
            b"FLUSHALL" | b"FLUSHDB" => {
                for (ops, slots) in per_shard.iter_mut() {
                    ops.push(Op::Flush);
                    slots.push(Slot::Ok(at));
                }
                Planned::Sent(None)
            }
            b"CONFIG" if argc >= 2 => {
                let sub = args.next().unwrap_or_default().to_ascii_uppercase();
                if sub.as_slice() != b"GET" {
                    return Planned::Now(Reply::err("only CONFIG GET is supported"));
                }
                Planned::Now(config_get(args))
            }
            b"INFO" => Planned::Now(self.info()),
            b"COMMAND" => Planned::Now(Reply::Array(Vec::new())),
            b"DEBUG" if argc == 2 && self.shared.debug => {
                let sub = args.next().unwrap_or_default().to_ascii_uppercase();
                let which = integer(&args.next().unwrap_or_default());
                match (sub.as_slice(), which) {
                    (b"CRASH-SHARD", Some(s)) if (0..n_shards as i64).contains(&s) => {
                        per_shard[s as usize].0.push(Op::Crash);
                        per_shard[s as usize].1.push(Slot::Reply(at));
                        Planned::Sent(None)
                    }
                    _ => Planned::Now(Reply::err("DEBUG CRASH-SHARD <shard>")),
                }
            }
            b"ECHO" | b"DBSIZE" | b"CONFIG" => arity_error(),
            _ => Planned::Now(Reply::err(format!(
                "unknown command '{}'",
                String::from_utf8_lossy(&name).to_lowercase()
            ))),
        }
    }

    fn info(&self) -> Reply {
        let rss = resident_bytes();
        let text = format!(
            "# Server\r\nredis_version:7.0.0-smarm-kv\r\nshards:{}\r\n\r\n# Clients\r\nconnected_clients:{}\r\n\r\n# Memory\r\nused_memory:{rss}\r\nused_memory_rss:{rss}\r\n",
            self.shared.shards.len(),
            (self.shared.clients)(),
        );
        Reply::Bulk(text.into_bytes())
    }
}

impl Slot {
    /// The command this slot belongs to.
    fn command(&self) -> usize {
        match *self {
            Slot::Reply(at) | Slot::Sum(at) | Slot::Element(at, _) | Slot::Ok(at) => at,
        }
    }
}

/// Where one shard result goes.
enum Slot {
    /// The command's reply.
    Reply(usize),
    /// Added into the command's integer reply (DEL, EXISTS, DBSIZE).
    Sum(usize),
    /// Element `k` of the command's array reply (MGET).
    Element(usize, usize),
    /// The command's reply if none is there yet (MSET, FLUSHALL: "OK").
    Ok(usize),
}

/// What planning a command did.
enum Planned {
    /// Answered without the shards.
    Now(Reply),
    /// Sent to the shards, the reply starting as this (a sum's zero, an
    /// array to fill) or empty (the one shard result fills it).
    Sent(Option<Reply>),
    /// QUIT: answer OK, then close.
    Quit,
}

fn integer(arg: &[u8]) -> Option<i64> {
    std::str::from_utf8(arg).ok()?.parse().ok()
}

/// SET's options: `EX s`, `PX ms`, `NX`, `XX`.
fn set_options(
    mut args: impl Iterator<Item = Vec<u8>>,
) -> Result<(Option<Duration>, SetCond), Reply> {
    let (mut expire, mut cond) = (None, SetCond::Always);
    while let Some(opt) = args.next() {
        match opt.to_ascii_uppercase().as_slice() {
            b"NX" if cond == SetCond::Always => cond = SetCond::IfAbsent,
            b"XX" if cond == SetCond::Always => cond = SetCond::IfPresent,
            u @ (b"EX" | b"PX") if expire.is_none() => {
                let n = args.next().as_deref().and_then(integer);
                let Some(n) = n.filter(|n| *n > 0) else {
                    return Err(Reply::err("invalid expire time in 'set' command"));
                };
                let ms = if u == b"EX" {
                    n.saturating_mul(1000)
                } else {
                    n
                };
                expire = Some(Duration::from_millis(ms as u64));
            }
            _ => return Err(Reply::err("syntax error")),
        }
    }
    Ok((expire, cond))
}

/// CONFIG GET for the parameters clients ask about (redis-benchmark asks
/// for `save` and `appendonly`).
fn config_get(params: impl Iterator<Item = Vec<u8>>) -> Reply {
    let mut items = Vec::new();
    for p in params {
        let value: &[u8] = match p.to_ascii_lowercase().as_slice() {
            b"save" => b"",
            b"appendonly" => b"no",
            b"maxmemory" => b"0",
            b"databases" => b"1",
            _ => continue,
        };
        items.push(Reply::Bulk(p.to_ascii_lowercase()));
        items.push(Reply::Bulk(value.to_vec()));
    }
    Reply::Array(items)
}

/// The process's resident memory, from /proc/self/statm.
fn resident_bytes() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .unwrap_or(0);
    pages * 4096
}

/// The operation of a command on one key, for its shard; `None` when the
/// command has the wrong number of arguments.
fn plan_one_key(
    name: &[u8],
    argc: usize,
    mut args: impl Iterator<Item = Vec<u8>>,
    at: usize,
    n_shards: usize,
    push: &mut impl FnMut(usize, Op, Slot),
) -> Option<Planned> {
    let of = |key: &[u8]| shard::of(key, n_shards);
    Some(match name {
        b"GET" if argc == 1 => {
            let key = args.next().unwrap_or_default();
            push(of(&key), Op::Get(key), Slot::Reply(at));
            Planned::Sent(None)
        }
        b"SET" if argc >= 2 => {
            let key = args.next().unwrap_or_default();
            let value = args.next().unwrap_or_default();
            match set_options(args) {
                Ok((expire, cond)) => {
                    push(
                        of(&key),
                        Op::Set {
                            key,
                            value,
                            expire,
                            cond,
                        },
                        Slot::Reply(at),
                    );
                    Planned::Sent(None)
                }
                Err(reply) => Planned::Now(reply),
            }
        }
        b"INCR" | b"DECR" if argc == 1 => {
            let by = if name == b"INCR" { 1 } else { -1 };
            let key = args.next().unwrap_or_default();
            push(of(&key), Op::IncrBy(key, by), Slot::Reply(at));
            Planned::Sent(None)
        }
        b"INCRBY" | b"DECRBY" if argc == 2 => {
            let key = args.next().unwrap_or_default();
            let Some(by) = integer(&args.next().unwrap_or_default()) else {
                return Some(Planned::Now(Reply::err(
                    "value is not an integer or out of range",
                )));
            };
            let by = if name == b"INCRBY" {
                Some(by)
            } else {
                by.checked_neg()
            };
            let Some(by) = by else {
                return Some(Planned::Now(Reply::err("decrement would overflow")));
            };
            push(of(&key), Op::IncrBy(key, by), Slot::Reply(at));
            Planned::Sent(None)
        }
        b"EXPIRE" | b"PEXPIRE" if argc == 2 => {
            let key = args.next().unwrap_or_default();
            let Some(n) = integer(&args.next().unwrap_or_default()) else {
                return Some(Planned::Now(Reply::err(
                    "value is not an integer or out of range",
                )));
            };
            let unit = if name == b"EXPIRE" { 1000 } else { 1 };
            let after = Duration::from_millis(u64::try_from(n).unwrap_or(0).saturating_mul(unit));
            push(of(&key), Op::Expire(key, after), Slot::Reply(at));
            Planned::Sent(None)
        }
        b"TTL" if argc == 1 => {
            let key = args.next().unwrap_or_default();
            push(of(&key), Op::Ttl(key), Slot::Reply(at));
            Planned::Sent(None)
        }
        _ => return None, // a known command with the wrong arity
    })
}

/// The operations of a command on several keys, one per key, each for
/// its shard; `None` when the command has the wrong number of arguments.
fn plan_many_keys(
    name: &[u8],
    args: Vec<Vec<u8>>,
    at: usize,
    n_shards: usize,
    push: &mut impl FnMut(usize, Op, Slot),
) -> Option<Planned> {
    let of = |key: &[u8]| shard::of(key, n_shards);
    let n = args.len();
    if n == 0 {
        return None;
    }
    match name {
        b"DEL" | b"EXISTS" => {
            for key in args {
                let s = of(&key);
                let op = if name == b"DEL" {
                    Op::Del(key)
                } else {
                    Op::Exists(key)
                };
                push(s, op, Slot::Sum(at));
            }
            Some(Planned::Sent(Some(Reply::Int(0))))
        }
        b"MSET" if n.is_multiple_of(2) => {
            let mut args = args.into_iter();
            while let (Some(key), Some(value)) = (args.next(), args.next()) {
                let s = of(&key);
                let cond = SetCond::Always;
                push(
                    s,
                    Op::Set {
                        key,
                        value,
                        expire: None,
                        cond,
                    },
                    Slot::Ok(at),
                );
            }
            Some(Planned::Sent(None))
        }
        b"MGET" => {
            // The array is filled element by element as shards answer.
            let initial = Reply::Array(vec![Reply::Nil; n]);
            for (k, key) in args.into_iter().enumerate() {
                push(of(&key), Op::Get(key), Slot::Element(at, k));
            }
            Some(Planned::Sent(Some(initial)))
        }
        _ => None, // MSET with a key without a value
    }
}
