//! Process groups (Erlang's `pg`): named groups of many actors, to send to
//! one member (spreading the load) or to all.
//!
//! ```
//! use smarm::pg::{self, Group};
//!
//! const WORKERS: Group<u32> = Group::new("workers");
//!
//! smarm::run(|| {
//!     let (done_tx, done_rx) = smarm::channel::<u32>();
//!     let (ready_tx, ready_rx) = smarm::channel::<()>();
//!     for _ in 0..3 {
//!         let (done_tx, ready_tx) = (done_tx.clone(), ready_tx.clone());
//!         smarm::spawn(move || {
//!             let (tx, rx) = smarm::channel::<u32>();
//!             pg::join(WORKERS, tx);
//!             ready_tx.send(()).unwrap();
//!             while let Ok(job) = rx.recv() {
//!                 done_tx.send(job * 2).unwrap();
//!             }
//!         });
//!     }
//!     for _ in 0..3 {
//!         ready_rx.recv().unwrap();
//!     }
//!     assert_eq!(pg::members(WORKERS).len(), 3);
//!     for job in 1..=6 {
//!         pg::dispatch(WORKERS, job).unwrap(); // one member each, in turn
//!     }
//!     let mut results: Vec<u32> = (0..6).map(|_| done_rx.recv().unwrap()).collect();
//!     results.sort();
//!     assert_eq!(results, [2, 4, 6, 8, 10, 12]);
//!     assert_eq!(pg::broadcast(WORKERS, 0), 3); // every member once
//! });
//! ```
//!
//! # Design
//!
//! A [`Group<M>`] is a name and the message type its members accept. A
//! member joins with the channel it wants group messages on. Groups are
//! per runtime (core's `runtime::with_runtime_local`) behind one lock. A
//! member that exits leaves its groups at once (core's `signal::on_exit`), and
//! the group's watchers ([`monitor`]) hear about it; nobody calls `leave`
//! for the dead.
//!
//! # Invariants
//!
//! - (I1) `dispatch` delivers to exactly one live member, or returns the
//!   message (`NoMember`) when there is none.
//! - (I2) `broadcast` delivers once to each member live at the call.
//! - (I3) Sends happen under the groups lock; they never park.
//! - (I4) A member leaves when it exits: an exit hook registered at its
//!   first join removes it and tells the group's watchers, so watchers
//!   hear `Left` as it happens; touching a group also prunes members that
//!   died in the moment before their hook ran.

use crate::key::{AtomTableFull, TypedKey};
use crate::registry::SendError;
use smarm_core::channel::{Receiver, Sender, channel};
use smarm_core::hash::BuildWordHasher;
use smarm_core::{Pid, runtime, signal};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Mutex;

/// A process group accepting messages of type `M`. `const`, so the usual
/// form is a module-level constant; a group named at run time comes from
/// [`Group::intern`].
pub struct Group<M>(TypedKey<M>);

impl<M> Group<M> {
    /// The group `name` for messages of type `M`.
    pub const fn new(name: &'static str) -> Self {
        Group(TypedKey::new(name))
    }

    /// The group `name`, built at run time: its text is stored once for the
    /// life of the process (as [`Name::intern`](crate::registry::Name::intern)
    /// stores a name's), and it is the same group as a constant with the
    /// same text.
    ///
    /// # Panics
    ///
    /// If the process already holds [`ATOM_LIMIT`](crate::registry::ATOM_LIMIT)
    /// names built at run time; [`Group::try_intern`] returns the error
    /// instead.
    pub fn intern(name: &str) -> Self {
        Group(TypedKey::intern_or_panic(name, "Group::intern"))
    }

    /// [`Group::intern`], failing instead of panicking when the atom table
    /// is full.
    pub fn try_intern(name: &str) -> Result<Self, AtomTableFull> {
        TypedKey::intern(name).map(Group)
    }

    /// The group's name.
    pub const fn as_str(&self) -> &'static str {
        self.0.text()
    }
}

impl<M> Clone for Group<M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<M> Copy for Group<M> {}
impl<M> std::fmt::Debug for Group<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt_as("Group", f)
    }
}

struct Members {
    /// `(member, its Sender<M>)`.
    list: Vec<(Pid, Box<dyn Any + Send>)>,
    /// Where the next dispatch starts (round robin).
    cursor: usize,
    /// Actors watching membership changes ([`monitor`]).
    watchers: Vec<Sender<GroupEvent>>,
}

impl Members {
    /// Drop members that died without their exit hook having run yet
    /// (a hook runs at finalisation; this covers the window before it).
    fn prune(&mut self) {
        self.list.retain(|(pid, _)| smarm_core::is_alive(*pid));
    }

    fn notify(&mut self, event: GroupEvent) {
        self.watchers.retain(|w| w.send(event).is_ok());
    }
}

/// A change in a group's membership, for [`monitor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupEvent {
    /// The actor joined the group.
    Joined(Pid),
    /// The actor left the group, by [`leave`] or by exiting.
    Left(Pid),
}

#[derive(Default)]
struct Groups {
    groups: Mutex<HashMap<(&'static str, TypeId), Members, BuildWordHasher>>,
}

fn with_group<M: 'static, R>(group: Group<M>, f: impl FnOnce(&mut Members) -> R) -> R {
    runtime::with_runtime_local::<Groups, R>(|g, _| {
        let mut groups = g.groups.lock().unwrap_or_else(|e| e.into_inner());
        let members = groups
            .entry((group.as_str(), TypeId::of::<M>()))
            .or_insert_with(|| Members {
                list: Vec::new(),
                cursor: 0,
                watchers: Vec::new(),
            });
        f(members)
    })
}

/// Join `group` with the channel the calling actor wants its messages on.
/// Joining again replaces the channel.
///
/// # Panics
///
/// Outside an actor.
pub fn join<M: Send + 'static>(group: Group<M>, tx: Sender<M>) {
    smarm_core::require_actor("pg::join");
    let me = smarm_core::self_pid();
    let rejoin = with_group(group, |m| {
        m.prune();
        let rejoin = m.list.iter().any(|(pid, _)| *pid == me);
        m.list.retain(|(pid, _)| *pid != me);
        m.list.push((me, Box::new(tx)));
        if !rejoin {
            m.notify(GroupEvent::Joined(me));
        }
        rejoin
    });
    if !rejoin {
        // Leave at once on exit, telling the watchers (I4).
        signal::on_exit(me, move |pid, _reason| {
            with_group(group, |m| {
                let before = m.list.len();
                m.list.retain(|(p, _)| *p != pid);
                if m.list.len() != before {
                    m.notify(GroupEvent::Left(pid));
                }
            });
        });
    }
}

/// Leave `group`; `true` if the caller was a member.
///
/// # Panics
///
/// Outside an actor.
pub fn leave<M: Send + 'static>(group: Group<M>) -> bool {
    smarm_core::require_actor("pg::leave");
    let me = smarm_core::self_pid();
    with_group(group, |m| {
        let before = m.list.len();
        m.list.retain(|(pid, _)| *pid != me);
        let left = m.list.len() != before;
        if left {
            m.notify(GroupEvent::Left(me));
        }
        left
    })
}

/// Watch `group`: its current live members, and a channel of every later
/// [`GroupEvent`] (a join, a leave, a member's exit, reported as it
/// happens). Drop the receiver to stop watching.
///
/// ```
/// use smarm::pg::{self, Group, GroupEvent};
///
/// const G: Group<()> = Group::new("watched");
///
/// smarm::run(|| {
///     let (members, events) = pg::monitor(G);
///     assert!(members.is_empty());
///     let member = smarm::spawn(|| {
///         let (tx, _rx) = smarm::channel::<()>();
///         pg::join(G, tx);
///         smarm::sleep(std::time::Duration::from_millis(5));
///     });
///     assert_eq!(events.recv().unwrap(), GroupEvent::Joined(member.pid()));
///     assert_eq!(events.recv().unwrap(), GroupEvent::Left(member.pid()));
/// });
/// ```
pub fn monitor<M: Send + 'static>(group: Group<M>) -> (Vec<Pid>, Receiver<GroupEvent>) {
    let (tx, rx) = channel();
    let members = with_group(group, |m| {
        m.prune();
        m.watchers.push(tx);
        m.list.iter().map(|(pid, _)| *pid).collect()
    });
    (members, rx)
}

/// The live members of `group`.
pub fn members<M: Send + 'static>(group: Group<M>) -> Vec<Pid> {
    with_group(group, |m| {
        m.prune();
        m.list.iter().map(|(pid, _)| *pid).collect()
    })
}

/// Send `msg` to one live member, taking members in turn so the load
/// spreads; `NoMember` (the message back) if the group has none (I1). A
/// member whose channel is closed is skipped.
pub fn dispatch<M: Send + 'static>(group: Group<M>, msg: M) -> Result<(), SendError<M>> {
    with_group(group, |m| {
        m.prune();
        let mut msg = msg;
        for _ in 0..m.list.len() {
            let i = m.cursor % m.list.len();
            m.cursor = m.cursor.wrapping_add(1);
            let Some(tx) = m.list[i].1.downcast_ref::<Sender<M>>() else {
                continue;
            };
            match tx.send(msg) {
                Ok(()) => return Ok(()),
                Err(e) => msg = e.0,
            }
        }
        Err(SendError::NoMember(msg))
    })
}

/// Send a clone of `msg` to every live member (I2); returns how many it
/// reached.
pub fn broadcast<M: Send + Clone + 'static>(group: Group<M>, msg: M) -> usize {
    with_group(group, |m| {
        m.prune();
        m.list
            .iter()
            .filter_map(|(_, tx)| tx.downcast_ref::<Sender<M>>())
            .filter(|tx| tx.send(msg.clone()).is_ok())
            .count()
    })
}
