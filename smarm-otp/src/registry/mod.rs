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
//!   resolves and clones the sender under it and sends after releasing it.

mod error;

pub use error::{RegisterError, SendError};

use smarm_core::channel::{channel, Receiver, Sender};
use smarm_core::ext;
use smarm_core::time::TimerId;
use smarm_core::{Addressable, Pid};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard};
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

/// One actor's published channels, by message type.
struct Inbox {
    pid: Pid,
    channels: Vec<(TypeId, Box<dyn Any + Send>)>,
}

impl Inbox {
    fn sender<M: Send + 'static>(&self) -> Option<&Sender<M>> {
        self.channels
            .iter()
            .find(|(t, _)| *t == TypeId::of::<M>())
            .and_then(|(_, s)| s.downcast_ref::<Sender<M>>())
    }

    fn publish<M: Send + 'static>(&mut self, tx: Sender<M>) {
        self.channels.retain(|(t, _)| *t != TypeId::of::<M>());
        self.channels.push((TypeId::of::<M>(), Box::new(tx)));
    }
}

#[derive(Default)]
struct Tables {
    by_name: HashMap<&'static str, Pid>,
    /// Inboxes by slot index; the pid inside says which incarnation.
    inboxes: HashMap<u32, Inbox>,
}

impl Tables {
    /// The live inbox of `pid`, pruning the slot's inbox if its owner is
    /// dead (I2).
    fn live_inbox(&mut self, pid: Pid) -> Option<&mut Inbox> {
        let idx = pid.index();
        if self
            .inboxes
            .get(&idx)
            .is_some_and(|i| !ext::is_alive(i.pid))
        {
            self.inboxes.remove(&idx);
        }
        self.inboxes.get_mut(&idx).filter(|i| i.pid == pid)
    }

    /// The live holder of `name`, pruning a dead binding (I2).
    fn holder(&mut self, name: &str) -> Option<Pid> {
        let pid = *self.by_name.get(name)?;
        if ext::is_alive(pid) {
            Some(pid)
        } else {
            self.by_name.remove(name);
            None
        }
    }

    /// `pid`'s inbox, replacing one a previous tenant of the slot left.
    fn inbox_for(&mut self, pid: Pid) -> &mut Inbox {
        let inbox = self.inboxes.entry(pid.index()).or_insert_with(|| Inbox {
            pid,
            channels: Vec::new(),
        });
        if inbox.pid != pid {
            *inbox = Inbox {
                pid,
                channels: Vec::new(),
            };
        }
        inbox
    }
}

/// The registry of one runtime.
#[derive(Default)]
struct Registry {
    tables: Mutex<Tables>,
}

/// The current runtime's registry.
fn registry() -> Arc<Registry> {
    ext::runtime_local::<Registry>()
}

fn lock(reg: &Registry) -> MutexGuard<'_, Tables> {
    // No user code runs under this lock; a poisoned guard holds consistent
    // tables.
    reg.tables.lock().unwrap_or_else(|e| e.into_inner())
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
    let reg = registry();
    let mut t = lock(&reg);
    if let Some(holder) = t.holder(name.name) {
        if holder != me {
            return Err(RegisterError::NameTaken {
                name: name.name,
                holder,
            });
        }
    }
    t.inbox_for(me).publish(tx);
    t.by_name.insert(name.name, me);
    Ok(())
}

/// Give up `name` if the calling actor's runtime has it bound; returns the
/// pid that held it.
pub fn unregister(name: &str) -> Option<Pid> {
    let reg = registry();
    let mut t = lock(&reg);
    let holder = t.holder(name)?;
    t.by_name.remove(name);
    Some(holder)
}

/// The live actor holding `name`, if any.
pub fn whereis(name: &str) -> Option<Pid> {
    let reg = registry();
    let mut t = lock(&reg);
    t.holder(name)
}

/// [`whereis`], typed: the holder as a `Pid<A>` if it has published a
/// channel for `A::Msg`.
pub fn lookup_as<A: Addressable>(name: &str) -> Option<Pid<A>> {
    let reg = registry();
    let mut t = lock(&reg);
    let pid = t.holder(name)?;
    t.live_inbox(pid)?.sender::<A::Msg>()?;
    Some(pid.cast())
}

/// Publish `tx` as the calling actor's channel for `A::Msg` and return its
/// typed address.
///
/// # Panics
///
/// Outside an actor.
pub fn install<A: Addressable>(tx: Sender<A::Msg>) -> Pid<A> {
    let me = smarm_core::self_pid();
    let reg = registry();
    lock(&reg).inbox_for(me).publish(tx);
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
    let reg = registry();
    lock(&reg).inbox_for(pid).publish(tx);
    pid.cast()
}

/// Send `msg` to whichever live actor holds `name` now.
pub fn send<M: Send + 'static>(name: Name<M>, msg: M) -> Result<(), SendError<M>> {
    let reg = registry();
    let tx = {
        let mut t = lock(&reg);
        let Some(pid) = t.holder(name.name) else {
            return Err(SendError::Unresolved(msg));
        };
        match t.live_inbox(pid).and_then(|i| i.sender::<M>()) {
            Some(tx) => tx.clone(),
            None => return Err(SendError::NoChannel(msg)),
        }
    };
    tx.send(msg).map_err(|e| SendError::Closed(e.0))
}

/// Send `msg` to exactly the actor `pid` names; `Dead` once that
/// incarnation is gone, even if its slot now holds another actor.
pub fn send_to<A: Addressable>(pid: Pid<A>, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
    send_dyn(pid.erase(), msg)
}

/// [`send_to`] without the address type: the untyped escape hatch.
pub fn send_dyn<M: Send + 'static>(pid: Pid, msg: M) -> Result<(), SendError<M>> {
    let reg = registry();
    let tx = {
        let mut t = lock(&reg);
        if !ext::is_alive(pid) {
            return Err(SendError::Dead(msg));
        }
        match t.live_inbox(pid).and_then(|i| i.sender::<M>()) {
            Some(tx) => tx.clone(),
            None => return Err(SendError::NoChannel(msg)),
        }
    };
    tx.send(msg).map_err(|e| SendError::Closed(e.0))
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
