//! A shard: a gen_server owning a slice of the keyspace (the keys whose
//! hash picks it), with expiry. Connections send it batches of operations
//! (every operation of one pipelined read that falls on this shard) and
//! get the replies back, in order, on a oneshot.
//!
//! An expired key reads as absent at once; a tick every 100 ms drops it
//! (the timers of EXPIRE, SET EX/PX), unless a write replaced it first.
#![allow(clippy::disallowed_methods)] // real time: this measures the OS clock

use crate::resp::Reply;
use smarm::Name;
use smarm::channel::OneshotSender;
use smarm::gen_server::{Ctx, Flow, GenServer, InitError, Reply as CallReply, ServerName};
use std::cmp::Reverse;
use std::collections::hash_map::Entry as MapEntry;
use std::collections::{BinaryHeap, HashMap};
use std::time::{Duration, Instant};

/// The registered name of shard `i` (re-registered at each restart).
pub fn name(i: usize) -> ServerName<Shard> {
    Name::intern(&format!("kv-shard-{i}"))
}

/// Which shard holds `key`: FNV-1a over the key.
pub fn of(key: &[u8], shards: usize) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (h % shards as u64) as usize
}

/// One operation on one key (or on the whole shard).
#[derive(Debug)]
pub enum Op {
    Get(Vec<u8>),
    Set {
        key: Vec<u8>,
        value: Vec<u8>,
        expire: Option<Duration>,
        cond: SetCond,
    },
    Del(Vec<u8>),
    Exists(Vec<u8>),
    IncrBy(Vec<u8>, i64),
    Expire(Vec<u8>, Duration),
    Ttl(Vec<u8>),
    DbSize,
    Flush,
    /// Panic the shard (the fault test's crash, behind `--enable-debug`).
    Crash,
}

/// SET's NX / XX.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetCond {
    Always,
    IfAbsent,
    IfPresent,
}

/// A batch: operations and where their replies go.
pub struct Batch {
    pub ops: Vec<Op>,
    pub reply: OneshotSender<Vec<Reply>>,
}

struct Entry {
    value: Vec<u8>,
    expires: Option<Instant>,
}

impl Entry {
    fn is_live(&self, now: Instant) -> bool {
        self.expires.is_none_or(|at| at > now)
    }
}

/// The shard's state.
pub struct Shard {
    map: HashMap<Vec<u8>, Entry>,
    /// Deadlines of keys with a TTL (an entry is stale if the key's
    /// deadline changed since).
    deadlines: BinaryHeap<Reverse<(Instant, Vec<u8>)>>,
}

/// The expiry tick.
pub struct Tick;

const TICK: Duration = Duration::from_millis(100);

impl GenServer for Shard {
    type Args = ();
    type Call = ();
    type Reply = ();
    type Cast = Batch;
    type Info = Tick;

    fn init(_: (), ctx: &mut Ctx<Self>) -> Result<Self, InitError> {
        ctx.send_after(TICK, Tick);
        Ok(Shard {
            map: HashMap::new(),
            deadlines: BinaryHeap::new(),
        })
    }

    fn handle_call(&mut self, _: (), reply: CallReply<()>, _: &mut Ctx<Self>) -> Flow {
        let _ = reply.reply(());
        Flow::Continue
    }

    fn handle_cast(&mut self, batch: Batch, _: &mut Ctx<Self>) -> Flow {
        let now = Instant::now();
        let replies = batch
            .ops
            .into_iter()
            .map(|op| self.apply(op, now))
            .collect();
        let _ = batch.reply.send(replies); // the connection may be gone
        Flow::Continue
    }

    fn handle_info(&mut self, _: Tick, ctx: &mut Ctx<Self>) -> Flow {
        self.expire_due(Instant::now());
        ctx.send_after(TICK, Tick);
        Flow::Continue
    }
}

impl Shard {
    fn apply(&mut self, op: Op, now: Instant) -> Reply {
        match op {
            Op::Get(key) => match self.live(&key, now) {
                Some(e) => Reply::Bulk(e.value.clone()),
                None => Reply::Nil,
            },
            Op::Set {
                key,
                value,
                expire,
                cond,
            } => {
                let expires = expire.map(|d| now + d);
                // One lookup: an expired entry counts as absent.
                let entry = self.map.entry(key);
                let exists = matches!(&entry, MapEntry::Occupied(e) if e.get().is_live(now));
                let refused = match cond {
                    SetCond::Always => false,
                    SetCond::IfAbsent => exists,
                    SetCond::IfPresent => !exists,
                };
                if refused {
                    return Reply::Nil;
                }
                if let Some(at) = expires {
                    self.deadlines.push(Reverse((at, entry.key().clone())));
                }
                let new = Entry { value, expires };
                match entry {
                    MapEntry::Occupied(mut e) => {
                        e.insert(new);
                    }
                    MapEntry::Vacant(e) => {
                        e.insert(new);
                    }
                }
                Reply::Status("OK")
            }
            Op::Del(key) => Reply::Int(i64::from(
                self.map.remove(&key).is_some_and(|e| e.is_live(now)),
            )),
            Op::Exists(key) => Reply::Int(i64::from(self.live(&key, now).is_some())),
            Op::IncrBy(key, by) => self.incr_by(key, by, now),
            Op::Expire(key, after) => {
                let at = now + after;
                match self.map.get_mut(&key).filter(|e| e.is_live(now)) {
                    Some(e) => {
                        e.expires = Some(at);
                        self.deadlines.push(Reverse((at, key)));
                        Reply::Int(1)
                    }
                    None => Reply::Int(0),
                }
            }
            Op::Ttl(key) => match self.live(&key, now) {
                None => Reply::Int(-2),
                Some(Entry { expires: None, .. }) => Reply::Int(-1),
                Some(Entry {
                    expires: Some(at), ..
                }) => {
                    // Round up, as Redis does: a key with 0.5 s left has 1.
                    let left = at.saturating_duration_since(now);
                    Reply::Int(left.as_millis().div_ceil(1000) as i64)
                }
            },
            Op::DbSize => {
                self.expire_due(now);
                Reply::Int(self.map.len() as i64)
            }
            Op::Flush => {
                self.map.clear();
                self.deadlines.clear();
                Reply::Status("OK")
            }
            Op::Crash => panic!("kv: shard crashed on request (DEBUG CRASH)"),
        }
    }

    fn incr_by(&mut self, key: Vec<u8>, by: i64, now: Instant) -> Reply {
        // One lookup; an absent or expired key counts from 0, with no TTL
        // (0 + by cannot overflow, so a fresh entry never stays empty).
        let (entry, fresh) = match self.map.entry(key) {
            MapEntry::Occupied(o) => {
                let e = o.into_mut();
                let fresh = !e.is_live(now);
                (e, fresh)
            }
            MapEntry::Vacant(v) => (
                v.insert(Entry {
                    value: Vec::new(),
                    expires: None,
                }),
                true,
            ),
        };
        let current = if fresh {
            entry.expires = None;
            0
        } else {
            match std::str::from_utf8(&entry.value)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
            {
                Some(n) => n,
                None => return Reply::err("value is not an integer or out of range"),
            }
        };
        let Some(next) = current.checked_add(by) else {
            return Reply::err("increment or decrement would overflow");
        };
        entry.value = next.to_string().into_bytes();
        Reply::Int(next)
    }

    /// The entry for `key` unless it has expired (expired entries are
    /// dropped by the tick, or overwritten by the next write).
    fn live(&self, key: &[u8], now: Instant) -> Option<&Entry> {
        self.map.get(key).filter(|e| e.is_live(now))
    }

    /// Drop every key whose deadline has passed.
    fn expire_due(&mut self, now: Instant) {
        while let Some(Reverse((at, _))) = self.deadlines.peek() {
            if *at > now {
                break;
            }
            let Some(Reverse((at, key))) = self.deadlines.pop() else {
                break;
            };
            // Only if the key still has this deadline (not re-set since).
            if self.map.get(&key).is_some_and(|e| e.expires == Some(at)) {
                self.map.remove(&key);
            }
        }
    }
}
