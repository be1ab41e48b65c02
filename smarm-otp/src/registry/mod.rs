//! Give an actor a name so other actors can find it and message it.
//!
//! ```
//! use smarm::{channel, register, run, send, spawn, unregister, whereis, Name};
//!
//! const COUNTER: Name<u64> = Name::new("counter");
//!
//! run(|| {
//!     let (ready_tx, ready_rx) = channel::<()>();
//!     let (tx, rx) = channel::<u64>();
//!
//!     let worker = spawn(move || {
//!         // Claim the name for this actor's inbox. Any actor holding
//!         // `COUNTER` can now reach this one by name.
//!         register(COUNTER, tx).unwrap();
//!         ready_tx.send(()).unwrap();
//!         assert_eq!(rx.recv().unwrap(), 42);
//!     });
//!
//!     ready_rx.recv().unwrap(); // wait for the worker to register
//!
//!     // Look the name up, or just send to it directly.
//!     assert_eq!(whereis("counter"), Some(worker.pid()));
//!     send(COUNTER, 42).unwrap();
//!
//!     worker.join().unwrap();
//!
//!     // The name dies with the actor: nobody holds it anymore.
//!     assert_eq!(whereis("counter"), None);
//! });
//! ```
//!
//! # Design
//!
//! A [`Name<M>`] is a string and the message type it accepts. Each actor
//! that publishes channels owns an *inbox*: typed `Sender`s keyed by the
//! message's `TypeId`, so one actor can be reached with several message
//! types. A name maps to one actor's pid; [`send`] re-resolves it on every
//! call (a restarted holder is reached), while [`send_to`] is bound to one
//! incarnation (`Dead` once it is gone, never redirected). Bindings to
//! dead actors are pruned when touched; the generation in a pid makes
//! "dead" decidable even after its slot is reused.
//!
//! # Invariants
//!
//! - (I1) Every name maps to the full pid (index and generation) of an
//!   actor that had published an inbox when the name was bound.
//! - (I2) An entry whose pid is not alive is treated as absent and removed
//!   by whoever touches it.
//! - (I3) All tables sit behind one lock per runtime; a name-addressed send
//!   resolves the name and sends on the actor's channel in one hold of it
//!   (no sender clone, no allocation). The channel lock is the only lock
//!   taken under it, and a send never parks.

mod error;

pub use error::{RegisterError, SendError};

use smarm_core::channel::{channel, Receiver, Sender};
use smarm_core::ext;
use smarm_core::time::TimerId;
use smarm_core::{Addressable, Pid};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::marker::PhantomData;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// A name that accepts messages of type `M`. `const`, so the usual form is
/// a module-level constant shared by every caller.
pub struct Name<M> {
    name: &'static str,
    _msg: PhantomData<fn(M)>,
}

impl<M> Name<M> {
    /// The name `name` for messages of type `M`.
    pub const fn new(name: &'static str) -> Self {
        Name {
            name,
            _msg: PhantomData,
        }
    }

    /// The name's text.
    pub const fn as_str(&self) -> &'static str {
        self.name
    }
}

impl<M> Clone for Name<M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<M> Copy for Name<M> {}
impl<M> std::fmt::Debug for Name<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Name({:?})", self.name)
    }
}

/// One actor's published channels, by message type, each with the
/// function that reads its queue length without knowing the type.
struct Inbox {
    pid: Pid,
    channels: Vec<Published>,
}

/// A published `Sender<M>`: its type, the sender, and the reader of its
/// (queued, received) counts.
type Published = (TypeId, Box<dyn Any + Send>, fn(&dyn Any) -> (usize, u64));

impl Inbox {
    fn sender<M: Send + 'static>(&self) -> Option<&Sender<M>> {
        let (_, tx, _) = self
            .channels
            .iter()
            .find(|(t, _, _)| *t == TypeId::of::<M>())?;
        let tx: *const (dyn Any + Send) = &**tx;
        // SAFETY: `publish` stores every `Sender<M>` beside
        // `TypeId::of::<M>()`, so the box found by that id holds a
        // `Sender<M>` (the cast skips `downcast_ref`'s virtual call).
        Some(unsafe { &*tx.cast::<Sender<M>>() })
    }

    fn publish<M: Send + 'static>(&mut self, tx: Sender<M>) {
        self.channels.retain(|(t, _, _)| *t != TypeId::of::<M>());
        let counts: fn(&dyn Any) -> (usize, u64) = |s| {
            s.downcast_ref::<Sender<M>>()
                .map_or((0, 0), |tx| (tx.queued_len(), tx.received_count()))
        };
        self.channels
            .push((TypeId::of::<M>(), Box::new(tx), counts));
    }
}

#[derive(Default)]
struct Tables {
    by_name: HashMap<&'static str, Pid, BuildHasherDefault<NameHasher>>,
    /// Recently resolved `'static` names, by the address and length of
    /// their text (a `Name` constant's text is one static string, so a hot
    /// loop sending to it skips hashing and comparing). Only `'static`
    /// texts enter: their address can never be reused for other text.
    /// Cleared whenever `by_name` changes.
    recent: [Option<(usize, usize, Pid)>; RECENT],
    /// Inboxes by slot index; the pid inside says which incarnation.
    inboxes: Vec<Option<Inbox>>,
}

/// Entries of `Tables::recent`.
const RECENT: usize = 8;

/// A multiply-rotate hash over 8-byte words (FxHash's step): names are a
/// program's own short constants, so SipHash's DoS resistance buys nothing,
/// and a byte-at-a-time hash (FNV) is a serial chain of multiplies that
/// cost more than the rest of a name-addressed send.
#[derive(Default)]
struct NameHasher(u64);

impl NameHasher {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Whole words, then the tail as one (overlapping) word: no byte
        // copies through memory, which would stall the load that follows.
        let mut rest = bytes;
        while let Some((word, tail)) = rest.split_first_chunk::<8>() {
            self.mix(u64::from_le_bytes(*word));
            rest = tail;
        }
        if !rest.is_empty() {
            let tail = match bytes.last_chunk::<8>() {
                Some(word) => u64::from_le_bytes(*word),
                None => rest
                    .iter()
                    .enumerate()
                    .fold(0, |w, (i, b)| w | u64::from(*b) << (8 * i)),
            };
            self.mix(tail);
        }
    }

    fn write_u8(&mut self, byte: u8) {
        self.mix(u64::from(byte));
    }
}

impl Tables {
    /// The live inbox of `pid`, pruning the slot's inbox if its owner is
    /// dead (I2).
    fn live_inbox(&mut self, pid: Pid) -> Option<&mut Inbox> {
        let slot = self.inboxes.get_mut(pid.index() as usize)?;
        if slot.as_ref().is_some_and(|i| !ext::is_alive(i.pid)) {
            *slot = None;
        }
        slot.as_mut().filter(|i| i.pid == pid)
    }

    /// The live holder of `name`, pruning a dead binding (I2).
    fn holder(&mut self, name: &str) -> Option<Pid> {
        let pid = *self.by_name.get(name)?;
        self.alive_or_prune(name, pid)
    }

    /// [`Tables::holder`] for a `'static` name, through `recent`.
    fn holder_static(&mut self, name: &'static str) -> Option<Pid> {
        let key = (name.as_ptr() as usize, name.len());
        let i = (key.0 ^ key.0 >> 7 ^ key.1) % RECENT;
        let pid = match self.recent[i] {
            Some((addr, len, pid)) if (addr, len) == key => pid,
            _ => {
                let pid = *self.by_name.get(name)?;
                self.recent[i] = Some((key.0, key.1, pid));
                pid
            }
        };
        self.alive_or_prune(name, pid)
    }

    fn alive_or_prune(&mut self, name: &str, pid: Pid) -> Option<Pid> {
        if ext::is_alive(pid) {
            Some(pid)
        } else {
            self.unbind(name);
            None
        }
    }

    fn bind(&mut self, name: &'static str, pid: Pid) {
        self.by_name.insert(name, pid);
        self.recent = [None; RECENT];
    }

    fn unbind(&mut self, name: &str) {
        self.by_name.remove(name);
        self.recent = [None; RECENT];
    }

    /// `pid`'s inbox, replacing one a previous tenant of the slot left.
    fn inbox_for(&mut self, pid: Pid) -> &mut Inbox {
        let idx = pid.index() as usize;
        if self.inboxes.len() <= idx {
            self.inboxes.resize_with(idx + 1, || None);
        }
        let slot = &mut self.inboxes[idx];
        if slot.as_ref().is_none_or(|i| i.pid != pid) {
            *slot = Some(Inbox {
                pid,
                channels: Vec::new(),
            });
        }
        match slot {
            Some(inbox) => inbox,
            None => unreachable!("filled just above"),
        }
    }
}

/// The registry of one runtime.
#[derive(Default)]
struct Registry {
    tables: Mutex<Tables>,
}

/// Run `f` on the current runtime's registry tables, locked (I3). No user
/// code runs under the lock (a message's destructor may, when a send
/// fails: it runs after the guard is dropped, as the message is handed
/// back), so a poisoned guard still holds consistent tables.
fn with_tables<R>(f: impl FnOnce(&mut Tables) -> R) -> R {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| ext::set_introspection_hook(introspection_extras));
    ext::with_runtime_local::<Registry, R>(|reg| {
        let mut t: MutexGuard<'_, Tables> = reg.tables.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut t)
    })
}

/// Names and mailbox depth of `pid`, for core's introspection.
fn introspection_extras(pid: Pid) -> ext::ActorExtras {
    with_tables(|t| {
        let mut names: Vec<&'static str> = t
            .by_name
            .iter()
            .filter(|(_, holder)| **holder == pid)
            .map(|(name, _)| *name)
            .collect();
        names.sort_unstable();
        let inbox = t
            .inboxes
            .get(pid.index() as usize)
            .and_then(Option::as_ref)
            .filter(|i| i.pid == pid);
        let (depth, received) = inbox.map_or((0, 0), |i| {
            i.channels
                .iter()
                .map(|(_, s, counts)| counts(s.as_ref()))
                .fold((0, 0), |(d, r), (q, n)| (d + q, r + n))
        });
        ext::ActorExtras {
            names,
            mailbox_depth: u32::try_from(depth).unwrap_or(u32::MAX),
            messages_received: received,
        }
    })
}

/// Claim `name` for the calling actor, reachable through `tx`. Fails with
/// [`RegisterError::NameTaken`] if a live actor holds it; a name held by a
/// dead actor is taken over.
///
/// # Panics
///
/// Outside an actor.
pub fn register<M: Send + 'static>(name: Name<M>, tx: Sender<M>) -> Result<(), RegisterError> {
    let me = smarm_core::self_pid();
    with_tables(|t| {
        if let Some(holder) = t.holder_static(name.name) {
            if holder != me {
                return Err(RegisterError::NameTaken {
                    name: name.name,
                    holder,
                });
            }
        }
        t.inbox_for(me).publish(tx);
        t.bind(name.name, me);
        Ok(())
    })
}

/// Give up `name` if the calling actor's runtime has it bound; returns the
/// pid that held it.
pub fn unregister(name: &str) -> Option<Pid> {
    with_tables(|t| {
        let holder = t.holder(name)?;
        t.unbind(name);
        Some(holder)
    })
}

/// The live actor holding `name`, if any.
pub fn whereis(name: &str) -> Option<Pid> {
    with_tables(|t| t.holder(name))
}

/// [`whereis`], typed: the holder as a `Pid<A>` if it has published a
/// channel for `A::Msg`.
pub fn lookup_as<A: Addressable>(name: &str) -> Option<Pid<A>> {
    with_tables(|t| {
        let pid = t.holder(name)?;
        t.live_inbox(pid)?.sender::<A::Msg>()?;
        Some(pid.cast())
    })
}

/// Publish `tx` as the calling actor's channel for `A::Msg` and return its
/// typed address.
///
/// # Panics
///
/// Outside an actor.
pub fn install<A: Addressable>(tx: Sender<A::Msg>) -> Pid<A> {
    let me = smarm_core::self_pid();
    with_tables(|t| t.inbox_for(me).publish(tx));
    me.cast()
}

/// Spawn an actor that receives `A::Msg` on the `Receiver` handed to
/// `body`, and return its typed address. The inbox is published before
/// this returns, so a [`send_to`] right away always reaches it.
///
/// ```
/// use smarm::{send_to, spawn_addr, Addressable};
///
/// struct Echo;
/// impl Addressable for Echo {
///     type Msg = (u32, smarm::Sender<u32>);
/// }
///
/// smarm::run(|| {
///     let echo = spawn_addr::<Echo>(|rx| {
///         while let Ok((n, reply)) = rx.recv() {
///             let _ = reply.send(n);
///         }
///     });
///     let (tx, rx) = smarm::channel();
///     send_to(echo, (7, tx)).unwrap();
///     assert_eq!(rx.recv().unwrap(), 7);
///     smarm::request_stop(echo);
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn spawn_addr<A: Addressable>(body: impl FnOnce(Receiver<A::Msg>) + Send + 'static) -> Pid<A> {
    let (tx, rx) = channel::<A::Msg>();
    let handle = smarm_core::spawn(move || body(rx));
    let pid = handle.pid();
    drop(handle); // detached: its life is its own
    with_tables(|t| t.inbox_for(pid).publish(tx));
    pid.cast()
}

/// Send `msg` to whichever live actor holds `name` now: one registry lock,
/// and the send itself (no allocation, no sender clone).
pub fn send<M: Send + 'static>(name: Name<M>, msg: M) -> Result<(), SendError<M>> {
    with_tables(|t| {
        let Some(pid) = t.holder_static(name.name) else {
            return Err(SendError::Unresolved(msg));
        };
        deliver(t, pid, msg)
    })
}

/// Send `msg` to exactly the actor `pid` names; `Dead` once that
/// incarnation is gone, even if its slot now holds another actor.
pub fn send_to<A: Addressable>(pid: Pid<A>, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
    send_dyn(pid.erase(), msg)
}

/// [`send_to`] without the address type: the untyped escape hatch.
pub fn send_dyn<M: Send + 'static>(pid: Pid, msg: M) -> Result<(), SendError<M>> {
    with_tables(|t| {
        if !ext::is_alive(pid) {
            return Err(SendError::Dead(msg));
        }
        deliver(t, pid, msg)
    })
}

/// Send on `pid`'s channel for `M`, under the registry lock (the channel's
/// own lock ranks after it; the wake it may make takes only run-queue
/// locks).
fn deliver<M: Send + 'static>(t: &mut Tables, pid: Pid, msg: M) -> Result<(), SendError<M>> {
    let inbox = t
        .inboxes
        .get(pid.index() as usize)
        .and_then(Option::as_ref)
        .filter(|i| i.pid == pid);
    match inbox.and_then(|i| i.sender::<M>()) {
        Some(tx) => tx.send(msg).map_err(|e| SendError::Closed(e.0)),
        None => Err(SendError::NoChannel(msg)),
    }
}

/// Deliver `msg` to `pid` after `after` (Erlang's `erlang:send_after`).
/// Resolved when the timer fires: if that incarnation is gone by then, the
/// message is dropped. Cancel with [`cancel_timer`](smarm_core::time::cancel_timer).
///
/// ```
/// use smarm::{send_after, spawn_addr, Addressable};
/// use std::time::Duration;
///
/// struct Alarm;
/// impl Addressable for Alarm {
///     type Msg = &'static str;
/// }
///
/// smarm::run(|| {
///     let (tx, rx) = smarm::channel();
///     let alarm = spawn_addr::<Alarm>(move |inbox| tx.send(inbox.recv().unwrap()).unwrap());
///     send_after(Duration::from_millis(5), alarm, "wake up");
///     assert_eq!(rx.recv().unwrap(), "wake up");
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn send_after<A: Addressable>(after: Duration, pid: Pid<A>, msg: A::Msg) -> TimerId {
    ext::call_after(after, move || {
        let _ = send_to(pid, msg); // a dead target: dropped
    })
}

/// Deliver `msg` to whoever holds `name` when the timer fires (a restarted
/// holder is reached); dropped if nobody does.
///
/// # Panics
///
/// Outside an actor.
pub fn send_after_named<M: Send + 'static>(after: Duration, name: Name<M>, msg: M) -> TimerId {
    ext::call_after(after, move || {
        let _ = send(name, msg);
    })
}
