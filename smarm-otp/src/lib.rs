//! OTP behaviours on top of the smarm runtime.
//!
//! Built on `smarm-core`'s public API and its extension points
//! (`runtime::with_runtime_local`, `signal::on_exit`, `time::call_after`):
//! the typed registry ([`registry`]), process groups ([`pg`]), servers
//! ([`gen_server`]), state machines ([`gen_statem`]), supervision trees ([`supervisor`]), typed actors
//! ([`typed`]), and running a tree as the program ([`application`]).

pub mod application; // a top supervisor as the program: signals, shutdown, exit status
mod behaviour; //      start, call, termination, StartError / StopReason: for every behaviour
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
