//! The machinery every OTP behaviour here is built on, written once:
//!
//! - [`start`]: a synchronous start (spawn, wait for the actor to report
//!   that it is ready, or why not), as Erlang's `proc_lib` does;
//! - [`call`]: a request with a reply slot and a deadline, failing fast
//!   when the server is gone;
//! - [`cycle`]: who waits on whom in calls slow to answer, and the walk
//!   that finds a cycle of callers;
//! - [`address`]: a behaviour's pid and mailbox, the sends a client
//!   makes there and the call through it (a call to oneself fails at
//!   once);
//! - [`server_ref`]: [`ServerRef`], the public address of a gen_server or
//!   gen_statem, its client methods written once;
//! - [`builder`]: [`ServerBuilder`], how either is started (named,
//!   linked, bounded, ...), written once;
//! - [`termination`]: how a behaviour's loop ends (a stop, a panic, a
//!   returned reason) and how the actor then exits;
//! - [`StartError`], [`StopReason`]: why a behaviour did not start, or
//!   stopped;
//! - `callback!`: a callback run inside a `tracing` span of its own
//!   (feature `tracing`) and as a region causal profiling can speed up
//!   (feature `smarm-causal`); plain code without either.
//!
//! gen_server, typed actors and supervisors use these; their public paths
//! are the gen_server module's re-exports.

/// Run `$body` (a behaviour callback) inside a DEBUG span named `$name`
/// with `$field = $value` (feature `tracing`), through
/// `smarm_core::actor::in_span` so the span survives the callback's
/// blocking calls; and as the causal profiling region `owner::callback`
/// (feature `smarm-causal`): a server's callbacks are named by its type
/// (`server = ...`), a typed actor's by its message enum and variant
/// (`region = (owner, callback)`). Without the features, just `$body`.
macro_rules! callback {
    ($name:literal, server = $value:expr, $body:expr) => {{
        let server: &'static str = $value;
        $crate::behaviour::callback!(region = (server, $name), $name, server = server, $body)
    }};
    (region = ($owner:expr, $callback:expr), $name:literal, $field:ident = $value:expr, $body:expr) => {{
        #[cfg(feature = "smarm-causal")]
        let _region = smarm_core::profiler::callback_region($owner, $callback);
        #[cfg(not(feature = "smarm-causal"))]
        let _ = (&$owner, &$callback);
        $crate::behaviour::callback!(@span $name, $field = $value, $body)
    }};
    (@span $name:literal, $field:ident = $value:expr, $body:expr) => {{
        #[cfg(feature = "tracing")]
        {
            let span = tracing::debug_span!(target: "smarm", $name, $field = $value);
            smarm_core::actor::in_span(&span, || $body)
        }
        #[cfg(not(feature = "tracing"))]
        {
            let _ = &$value;
            $body
        }
    }};
}
pub(crate) use callback;

pub(crate) mod address;
pub(crate) mod builder;
pub(crate) mod call;
pub(crate) mod cycle;
mod reason;
pub(crate) mod server_ref;
pub(crate) mod start;
pub(crate) mod termination;

pub use address::{CastError, TryCastError};
pub use builder::ServerBuilder;
pub use call::{CallError, DEFAULT_CALL_TIMEOUT, Reply, call, call_as, call_async, call_to};
pub use reason::{InitError, ReplaceStateError, StartError, StopReason};
pub use server_ref::ServerRef;
pub(crate) use start::{Behaviour, Inbox, Launch, Options, Started, launch, start};
