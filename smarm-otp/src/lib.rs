//! OTP behaviours on top of the smarm runtime.
//!
//! Built on `smarm-core`'s public API and its extension points
//! (`runtime::with_runtime_local`, `signal::on_exit`, `time::call_after`):
//! the typed registry ([`registry`]), process groups ([`pg`]), servers
//! ([`gen_server`]), state machines ([`gen_statem`]), supervision trees ([`supervisor`]), typed actors
//! ([`typed`]), and running a tree as the program ([`application`]).
//!
//! # Layers
//!
//! The crate is built in layers, each using only the layers below it (and
//! modules of its own row); `tests/layers.rs` reads this table and fails on
//! a `crate::` or `super::` path that reaches a row above its module's, and
//! on a folder whose modules sit on two rows.
//!
//! ```text layers
//! 0 loom key facts
//! 1 registry pg
//! 2 behaviour sys
//! 3 gen_server gen_statem
//! 4 typed
//! 5 supervisor
//! 6 application observer
//! ```
//!
//! - 0: the sync facade (`loom`), typed keys behind names and groups,
//!   and what supervisors publish for introspection (`facts`).
//! - 1: the registry and process groups.
//! - 2: what every behaviour shares (start, call, address, termination)
//!   and `sys`, which answers a behaviour's system requests: a behaviour's
//!   address makes it reachable for `sys`, and `sys` answers through the
//!   behaviours' reply slots, so the two are one row.
//! - 3: the two behaviours users implement.
//! - 4: typed actors, which run as their own loop or as a gen_server.
//! - 5: supervisors (gen_servers that start any of the above).
//! - 6: the program as a supervision tree; the observer.

pub mod application; // a top supervisor as the program: signals, shutdown, exit status
mod behaviour; //      start, call, termination, StartError / StopReason: for every behaviour
mod facts; //          what supervisors publish for introspection (restarts)
pub mod gen_server; // a state-owning actor serving calls and casts
pub mod gen_statem; // a state machine: events, transitions, postponing, timeouts
mod key; //            the typed name behind registry::Name and pg::Group
mod loom; //           the sync facade of the lock-free registry (loom or std)
#[cfg(feature = "observer")]
pub mod observer; // the web and terminal observer (feature `observer`)
pub mod pg; //         process groups: dispatch to one member, broadcast to all
pub mod registry; //   names, typed addresses, name- and pid-addressed sends
pub mod supervisor; // start, watch and restart children; trees of them
pub mod sys; //        inspecting and debugging a live behaviour (OTP's sys)
pub mod typed; //      typed actors: a derived message enum and its handler

pub use registry::{
    Name, RegisterError, SendError, install, lookup_as, register, send, send_after,
    send_after_named, send_after_named_wall, send_after_wall, send_dyn, send_to, spawn_addr,
    unregister, whereis,
};
