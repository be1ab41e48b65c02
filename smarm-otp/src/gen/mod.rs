//! The machinery every OTP behaviour here is built on, written once:
//!
//! - [`start`]: a synchronous start (spawn, wait for the actor to report
//!   that it is ready, or why not), as Erlang's `proc_lib` does;
//! - [`call`]: a request with a reply slot and a deadline, failing fast
//!   when the server is gone;
//! - [`termination`]: how a behaviour's loop ends (a stop, a panic, a
//!   returned reason) and how the actor then exits;
//! - [`StartError`], [`StopReason`]: why a behaviour did not start, or
//!   stopped.
//!
//! gen_server, typed actors and supervisors use these; their public paths
//! are the gen_server module's re-exports.

pub(crate) mod call;
mod reason;
pub(crate) mod start;
pub(crate) mod termination;

pub use call::{call, call_as, CallError, Reply, DEFAULT_CALL_TIMEOUT};
pub use reason::{InitError, StartError, StopReason};
pub(crate) use start::{start, Started};
