//! Look inside a running system: which actors exist, what each is doing,
//! who spawned whom (Erlang's `i()` and `observer`, in library form).
//!
//! ```
//! use smarm::{actor_info, channel, run, snapshot, spawn, ActorState};
//!
//! run(|| {
//!     let (ready_tx, ready_rx) = channel::<()>();
//!     let (gate_tx, gate_rx) = channel::<()>();
//!
//!     let worker = spawn(move || {
//!         ready_tx.send(()).unwrap();
//!         gate_rx.recv().unwrap(); // blocks here until released
//!     });
//!     ready_rx.recv().unwrap();
//!
//!     // `snapshot` sees every actor, including this one and the worker.
//!     let snap = snapshot();
//!     assert!(snap.actors.len() >= 2);
//!
//!     // `actor_info` gives a coherent view of just the worker. It is
//!     // blocked on the gate channel, so it must be Parked.
//!     let pid = worker.pid();
//!     let info = actor_info(pid).expect("worker is still alive");
//!     assert_eq!(info.state, ActorState::Parked);
//!
//!     gate_tx.send(()).unwrap();
//!     worker.join().unwrap();
//!
//!     // Once joined, the pid no longer names a live actor.
//!     assert!(actor_info(pid).is_none());
//! });
//! ```
//!
//! # Design
//!
//! [`snapshot`] walks the slot table: per actor one lock-free load of the
//! state word, then a brief hold of that actor's cold lock to copy its
//! relations (re-checking the generation, so the fields are coherent for
//! that one actor). Nothing is held across actors, so a snapshot is a
//! series of per-actor views, not a frozen instant (`ps` semantics).
//! [`actor_info`] is coherent for its one actor. [`tree`] folds a snapshot
//! into the spawn forest; an actor whose parent is gone is re-rooted and
//! marked orphaned. Names and mailbox depth come from the hook a layer
//! above installs in the runtime ([`set_extras_hook`]: the registry does).
//!
//! # Invariants
//!
//! - (I1) An `ActorInfo` describes one incarnation: every field was read
//!   while its generation matched the pid.
//! - (I2) At most one lock is held at a time while reading (a cold lock;
//!   the hook runs with none held).

pub(crate) mod display;
mod info;
mod read;

pub use crate::actor::extras::{ActorExtras, set_extras_hook};
pub use info::{
    ActorInfo, ActorState, RuntimeSnapshot, RuntimeTree, SNAPSHOT_FORMAT_VERSION, SchedulerStats,
    TreeNode, WaitingOn,
};
#[cfg(feature = "sim")]
pub(crate) use read::live_actors;
pub use read::{actor_info, heap_accounting, snapshot, tree, tree_from};
