//! OTP behaviours on top of the smarm runtime.
//!
//! Built on `smarm-core`'s public API and its extension surface
//! (`runtime::with_runtime_local`, `signal::on_exit`, `time::call_after`): the typed registry ([`registry`]), process groups
//! ([`pg`]), servers ([`gen_server`]) and supervision trees
//! ([`supervisor`]).

mod ending; //        how a behaviour's loop ends, shared by the behaviours
pub mod gen_server; // a state-owning actor serving calls and casts
pub mod pg; //         process groups: dispatch to one member, broadcast to all
pub mod registry; //   names, typed addresses, name- and pid-addressed sends
mod start; //         synchronous starts shared by the behaviours
pub mod supervisor;
pub mod typed; //      typed actors: a derived message enum and its handler // start, watch and restart children; trees of them

pub use registry::{
    install, lookup_as, register, send, send_after, send_after_named, send_dyn, send_to,
    spawn_addr, unregister, whereis, Name, RegisterError, SendError,
};
