//! Binding names: the runtime's registry (its locked tables and their
//! lock-free read side), and registering, looking up and forgetting
//! names and published inboxes.

use super::tables::{Locked, Tables};
use super::{Name, ReadSide, RegisterError};
use smarm_core::channel::{Receiver, Sender, channel};
use smarm_core::{Addressable, Pid};
use smarm_core::{introspect, runtime};
use std::sync::{Mutex, MutexGuard};

/// The registry of one runtime: the locked tables, and their lock-free
/// read side.
struct Registry {
    tables: Mutex<Tables>,
    read_side: ReadSide,
    /// The introspection hook is installed (by the first locked
    /// operation: before it, no actor has a name or an inbox to report).
    /// Installed after the registry's own runtime local, so that one is
    /// found first by the sends' lookups.
    hooked: std::sync::Once,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            tables: Mutex::default(),
            read_side: ReadSide::default(),
            hooked: std::sync::Once::new(),
        }
    }
}

/// The hook that lets introspection ask this runtime for names, mailbox
/// depth and supervisor restarts, installed in the runtime by its first
/// registry use or supervisor start.
fn install_hook() {
    smarm_core::introspect::set_extras_hook(introspection_extras);
}

/// Install the introspection hook in the current runtime if no registry
/// use did yet (a supervisor's restarts are read through it).
pub(crate) fn ensure_introspection_hook() {
    runtime::with_runtime_local::<Registry, ()>(|reg, _| reg.hooked.call_once(install_hook));
}

/// Run `f` on the current runtime's registry, locked (I3). No user code
/// runs under the lock (a message's destructor may, when a send fails: it
/// runs after the guard is dropped, as the message is handed back), so a
/// poisoned guard still holds consistent tables.
pub(super) fn with_tables<R>(f: impl FnOnce(&mut Locked<'_>) -> R) -> R {
    runtime::with_runtime_local::<Registry, R>(|reg, _| {
        reg.hooked.call_once(install_hook);
        let mut tables: MutexGuard<'_, Tables> =
            reg.tables.lock().unwrap_or_else(|e| e.into_inner());
        let mut locked = Locked {
            tables: &mut tables,
            read_side: &reg.read_side,
        };
        f(&mut locked)
    })
}

/// Run `f` on `rt`'s registry tables, locked, from any thread: for
/// callers outside the runtime, which take the lock (never the lock-free
/// side: its values are kept alive for scheduler threads only). Reads
/// only: a dead binding is pruned by the next locked use inside the
/// runtime. Under the lock, a published inbox is alive (it is retired
/// under the lock, and freed only after).
pub(super) fn with_tables_of<R>(
    rt: &smarm_core::runtime::RuntimeHandle,
    f: impl FnOnce(&Tables, &ReadSide) -> R,
) -> R {
    rt.with_local::<Registry, R>(|reg, _| {
        let tables = reg.tables.lock().unwrap_or_else(|e| e.into_inner());
        f(&tables, &reg.read_side)
    })
}

/// Run `f` on the current runtime's lock-free read side (I3): `f` must
/// not block (it cannot switch: what it reads stays alive until it ends).
pub(super) fn with_read_side<R>(f: impl FnOnce(&ReadSide, runtime::RuntimeRef<'_>) -> R) -> R {
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
            restarts: crate::facts::restarts_of(pid),
            next_restart: crate::facts::next_restart_of(pid),
        }
    })
}

/// Claim `name` for the calling actor, reachable through `tx`. A name held
/// by a dead actor is taken over; registering a name the caller holds
/// already, for the same type and channel, is `Ok` (nothing changes).
///
/// Errors: [`RegisterError::NameTaken`] if a live actor holds it;
/// [`AlreadyNamed`](RegisterError::AlreadyNamed) if the caller holds
/// another name for `M`; [`OtherType`](RegisterError::OtherType) if it
/// holds this name for another type; [`OtherChannel`](RegisterError::OtherChannel)
/// if it published a different channel for `M` before.
///
/// # Panics
///
/// Outside an actor.
pub fn register<M: Send + 'static>(name: Name<M>, tx: Sender<M>) -> Result<(), RegisterError> {
    smarm_core::require_actor("register");
    let me = smarm_core::self_pid();
    let text = name.as_str();
    let msg = std::any::TypeId::of::<M>();
    let msg_name = std::any::type_name::<M>();
    with_tables(|t| {
        let held = t.holder(text);
        match held {
            Some(holder) if holder != me => {
                return Err(RegisterError::NameTaken { name: text, holder });
            }
            Some(_) => {
                let registered = t.binding_type(text);
                if registered.map(|(id, _)| id) != Some(msg) {
                    return Err(RegisterError::OtherType {
                        name: text,
                        registered: registered.map_or("?", |(_, n)| n),
                        asked: msg_name,
                    });
                }
            }
            None => {
                if let Some(held) = t.name_for_type(me, msg) {
                    return Err(RegisterError::AlreadyNamed {
                        name: text,
                        held,
                        msg: msg_name,
                    });
                }
            }
        }
        // The channel already published for `M`: the same one, another one.
        let published = t
            .live_inbox(me)
            .and_then(|i| i.sender::<M>())
            .map(|current| current.same_channel(&tx));
        match published {
            Some(true) => {}
            Some(false) => {
                return Err(RegisterError::OtherChannel {
                    name: text,
                    msg: msg_name,
                });
            }
            None => t.publish(me, tx),
        }
        if held.is_none() {
            t.bind(text, me, msg, msg_name);
        }
        Ok(())
    })?;
    // A registered actor is a region causal profiling can speed up, by
    // its name (unless it has one by its label already).
    #[cfg(feature = "smarm-causal")]
    smarm_core::profiler::name_actor_region(text);
    Ok(())
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

/// The first (in order) of the names `pid` holds, for `sys`'s events.
pub(crate) fn name_of(pid: Pid) -> Option<&'static str> {
    with_tables(|t| {
        t.tables
            .by_name
            .iter()
            .filter(|(_, binding)| binding.pid == pid)
            .map(|(name, _)| *name)
            .min()
    })
}

/// [`whereis`] from outside the runtime (a tokio task, a plain thread):
/// the live actor holding `name` in `rt`.
///
/// ```
/// let rt = smarm::runtime::init(smarm::runtime::Config::exact(2));
/// let (ready_tx, ready_rx) = std::sync::mpsc::channel();
/// let (stop_tx, stop_rx) = smarm::channel::<()>();
/// let running = rt.start(move || {
///     smarm::registry::register(smarm::registry::Name::<()>::new("db"), stop_tx).unwrap();
///     ready_tx.send(smarm::self_pid()).unwrap();
///     stop_rx.recv().ok(); // until unregistered senders are gone
/// });
/// let root = ready_rx.recv().unwrap();
/// assert_eq!(smarm::registry::whereis_in(&rt.handle(), "db"), Some(root));
/// assert_eq!(smarm::registry::whereis_in(&rt.handle(), "cache"), None);
/// smarm::registry::send_in(&rt.handle(), smarm::registry::Name::<()>::new("db"), ()).unwrap();
/// running.join();
/// ```
pub fn whereis_in(rt: &smarm_core::runtime::RuntimeHandle, name: &str) -> Option<Pid> {
    let pid = with_tables_of(rt, |t, _| t.by_name.get(name).map(|b| b.pid))?;
    rt.is_alive(pid).then_some(pid)
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
    smarm_core::require_actor("install");
    let me = smarm_core::self_pid();
    with_tables(|t| t.publish(me, tx));
    me.cast()
}

/// Spawn an actor that receives `A::Msg` on the `Receiver` handed to
/// `body`, and return its typed address. The inbox is published before
/// this returns, so a [`send_to`](super::send_to) right away always reaches it.
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
    publish(pid, tx)
}

/// Publish `tx` as `pid`'s channel for `A::Msg` (an actor just spawned)
/// and return its typed address.
pub(crate) fn publish<A: Addressable>(pid: Pid, tx: Sender<A::Msg>) -> Pid<A> {
    with_tables(|t| t.publish(pid, tx));
    pid.cast()
}

/// The exit hook of an actor that published channels (I4).
pub(super) fn forget(pid: Pid) {
    with_tables(|t| t.forget(pid));
}
