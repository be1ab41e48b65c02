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

mod binding;
mod error;
mod name;
mod names;
mod read_side;
mod send;
mod tables;

pub use crate::key::{ATOM_LIMIT, AtomTableFull};
pub(crate) use binding::ensure_introspection_hook;
pub use binding::{install, lookup_as, register, spawn_addr, unregister, whereis, whereis_in};
pub(crate) use binding::{name_of, publish};
pub use error::{RegisterError, SendError};
pub use name::Name;
pub(crate) use send::resolve_sender;
pub use send::{
    resolve_in, send, send_after, send_after_named, send_after_named_wall, send_after_wall,
    send_dyn, send_in, send_to,
};

use binding::{forget, with_read_side, with_tables, with_tables_of};
use read_side::ReadSide;
