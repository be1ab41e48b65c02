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
//! "dead" decidable even after its slot is reused, and an exit hook removes
//! an actor's bindings and inbox as it exits.
//!
//! # Invariants
//!
//! - (I1) Every name maps to the full pid (index and generation) of an
//!   actor that had published an inbox when the name was bound.
//! - (I2) An entry whose pid is not alive is treated as absent and removed
//!   by whoever touches it.
//! - (I3) Changes happen behind one lock per runtime and are published
//!   for lock-free reads (`read_side.rs`: each actor's inbox, immutable;
//!   `names.rs`: the name table, one immutable value per binding). A name-
//!   or pid-addressed send takes no registry lock: it resolves through them
//!   and sends on the actor's channel (no sender clone, no allocation), so
//!   the channel's lock is the only one it takes. It falls back to the lock
//!   only when the send fails, to classify the failure and prune.
//! - (I4) An actor's names and inbox are removed by an exit hook when it
//!   exits, so a send that finds them needs no liveness check (which would
//!   read the holder's slot word, a cache line its scheduler writes at every
//!   park and wake). Only a failed send checks liveness, to report `Dead` or
//!   `Unresolved` rather than `Closed`.

mod error;
mod names;
mod read_side;
mod tables;

pub use error::{RegisterError, SendError};

use read_side::ReadSide;
use tables::{Locked, Tables};

use crate::key::TypedKey;
use smarm_core::channel::{channel, Receiver, Sender};
use smarm_core::time::TimerId;
use smarm_core::{introspect, runtime, time};
use smarm_core::{Addressable, Pid};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// A name that accepts messages of type `M`. `const`, so the usual form is
/// a module-level constant shared by every caller.
pub struct Name<M>(TypedKey<M>);

impl<M> Name<M> {
    /// The name `name` for messages of type `M`.
    pub const fn new(name: &'static str) -> Self {
        Name(TypedKey::new(name))
    }

    /// The name's text.
    pub const fn as_str(&self) -> &'static str {
        self.0.text()
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
        self.0.fmt_as("Name", f)
    }
}

/// The registry of one runtime: the locked tables, and their lock-free
/// read side.
struct Registry {
    tables: Mutex<Tables>,
    read_side: ReadSide,
}

impl Default for Registry {
    /// A runtime's first registry use creates it, and hooks the registry
    /// into that runtime's introspection.
    fn default() -> Self {
        install_hook();
        Registry {
            tables: Mutex::default(),
            read_side: ReadSide::default(),
        }
    }
}

/// The hook that lets introspection ask this runtime for names and
/// mailbox depth, installed in the runtime by its first registry use.
fn install_hook() {
    smarm_core::introspect::set_extras_hook(introspection_extras);
}

/// Run `f` on the current runtime's registry, locked (I3). No user code
/// runs under the lock (a message's destructor may, when a send fails: it
/// runs after the guard is dropped, as the message is handed back), so a
/// poisoned guard still holds consistent tables.
fn with_tables<R>(f: impl FnOnce(&mut Locked<'_>) -> R) -> R {
    runtime::with_runtime_local::<Registry, R>(|reg, _| {
        let mut tables: MutexGuard<'_, Tables> =
            reg.tables.lock().unwrap_or_else(|e| e.into_inner());
        let mut locked = Locked {
            tables: &mut tables,
            read_side: &reg.read_side,
        };
        f(&mut locked)
    })
}

/// Run `f` on the current runtime's lock-free read side (I3): `f` must
/// not block (it cannot switch: what it reads stays alive until it ends).
fn with_read_side<R>(f: impl FnOnce(&ReadSide, runtime::RuntimeRef<'_>) -> R) -> R {
    runtime::with_runtime_local::<Registry, R>(|reg, rt| f(&reg.read_side, rt))
}

/// Names and mailbox depth of `pid`, for core's introspection.
fn introspection_extras(pid: Pid) -> introspect::ActorExtras {
    with_tables(|t| {
        let mut names: Vec<&'static str> = t
            .tables
            .by_name
            .iter()
            .filter(|(_, binding)| binding.pid == pid)
            .map(|(name, _)| *name)
            .collect();
        names.sort_unstable();
        let inbox = t.read_side.inbox(pid.index()).filter(|i| i.pid == pid);
        let (depth, received) = inbox.map_or((0, 0), |i| {
            i.channels
                .iter()
                .map(|p| p.counts())
                .fold((0, 0), |(d, r), (q, n)| (d + q, r + n))
        });
        introspect::ActorExtras {
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
        if let Some(holder) = t.holder(name.as_str()) {
            if holder != me {
                return Err(RegisterError::NameTaken {
                    name: name.as_str(),
                    holder,
                });
            }
        }
        t.publish(me, tx);
        t.bind(name.as_str(), me, std::any::TypeId::of::<M>());
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
    with_tables(|t| t.publish(me, tx));
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
    with_tables(|t| t.publish(pid, tx));
    pid.cast()
}

/// Send `msg` to whichever live actor holds `name` now: a lock-free
/// lookup and the channel send itself (no allocation, no sender clone).
pub fn send<M: Send + 'static>(name: Name<M>, msg: M) -> Result<(), SendError<M>> {
    // ReadSide path (I4): a bound name's holder is alive until its exit hook
    // unbinds it, so only a failed send needs the liveness check.
    let msg =
        match with_read_side(
            |read_side, _| match read_side.name(name.as_str(), name.0.hash()) {
                None => Ok(Err(SendError::Unresolved(msg))),
                Some(bound) => {
                    let sent = match bound.sender::<M>() {
                        Some(tx) => tx.send(msg).map_err(|e| e.0),
                        None => deliver_to(bound.inbox(), msg).map_err(SendError::into_inner),
                    };
                    sent.map(Ok)
                }
            },
        ) {
            Ok(sent) => return sent,
            Err(msg) => msg,
        };
    with_tables(|t| match t.holder(name.as_str()) {
        Some(pid) => deliver(t.read_side, pid, msg),
        None => Err(SendError::Unresolved(msg)),
    })
}

/// Send `msg` to exactly the actor `pid` names; `Dead` once that
/// incarnation is gone, even if its slot now holds another actor.
pub fn send_to<A: Addressable>(pid: Pid<A>, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
    send_dyn(pid.erase(), msg)
}

/// [`send_to`] without the address type: the untyped escape hatch.
pub fn send_dyn<M: Send + 'static>(pid: Pid, msg: M) -> Result<(), SendError<M>> {
    with_read_side(|read_side, rt| {
        // ReadSide path (I4): an inbox still published is its live owner's.
        let msg = match deliver(read_side, pid, msg) {
            Ok(()) => return Ok(()),
            Err(e) => e.into_inner(),
        };
        if !rt.is_alive(pid) {
            return Err(SendError::Dead(msg));
        }
        deliver(read_side, pid, msg)
    })
}

/// The exit hook of an actor that published channels (I4).
fn forget(pid: Pid) {
    with_tables(|t| t.forget(pid));
}

/// The live holder of `name` and a clone of its sender for `M`: how
/// `gen_server` rebuilds a typed server address from a name.
pub(crate) fn resolve_sender<M: Send + 'static>(name: Name<M>) -> Option<(Pid, Sender<M>)> {
    with_tables(|t| {
        let pid = t.holder(name.as_str())?;
        let tx = t.live_inbox(pid)?.sender::<M>()?.clone();
        Some((pid, tx))
    })
}

/// Send on `pid`'s channel for `M` (the channel's lock is the only lock
/// taken; the wake it may make takes only run-queue locks).
fn deliver<M: Send + 'static>(read_side: &ReadSide, pid: Pid, msg: M) -> Result<(), SendError<M>> {
    deliver_to(read_side.inbox(pid.index()).filter(|i| i.pid == pid), msg)
}

/// Send on `inbox`'s channel for `M`.
fn deliver_to<M: Send + 'static>(
    inbox: Option<&read_side::Inbox>,
    msg: M,
) -> Result<(), SendError<M>> {
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
    time::call_after(after, move || {
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
    time::call_after(after, move || {
        let _ = send(name, msg);
    })
}
