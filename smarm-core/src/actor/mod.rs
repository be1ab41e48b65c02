//! Actors: spawning, identity, joining, yielding and cooperative stop.
//!
//! An actor is a green thread: a closure running on its own stack,
//! scheduled cooperatively across the runtime's scheduler threads. It
//! blocks only itself: `sleep`, `join` and every other blocking call park
//! the actor and let the scheduler run another.
//!
//! # Design
//!
//! `spawn` takes a stack from the pool and a slot from the table, writes
//! the entry frame, counts the actor live (runtime (I1)) and enqueues it
//! into the spawner's LIFO next slot, so a fresh child runs as soon as its
//! parent blocks or yields. The closure runs under `catch_unwind` at the
//! actor's base frame; its result becomes the actor's outcome (exit,
//! panic, stopped), which the `JoinHandle` collects.
//!
//! `request_stop` sets the target's stop flag and wakes it whatever it
//! waits for. The actor observes the flag at its next safepoint (every
//! blocking call, `yield_now`) and unwinds from there with a private
//! payload, running destructors; its outcome is Stopped and `join`
//! returns `Ok`.
//!
//! # Invariants
//!
//! - (I1) A slot stays reserved from spawn until the actor is finished and
//!   its `JoinHandle` is joined or dropped (slot (I4)); the handle's pid
//!   therefore always reaches its own actor's outcome.
//! - (I2) A stop unwind never starts while the thread is already
//!   unwinding, and never while an internal lock is held (safepoints are
//!   outside every critical section).

mod builder;
mod error;
mod exit;
pub(crate) mod extras;
mod hibernate;
mod join;
pub(crate) mod outcome;
#[cfg(feature = "tracing")]
mod span;
mod spawn;

pub(crate) use crate::slot::Outcome;
pub use crate::slot::{Addressable, ExitReason, ParsePidError, Pid};
pub use builder::Builder;
pub use error::SpawnError;
pub(crate) use exit::exit_hook;
pub use hibernate::{Hibernation, hibernate};
pub use join::{JoinFuture, JoinHandle, JoinTimeoutError};
pub use outcome::JoinError;
#[cfg(feature = "tracing")]
pub use span::in_span;

pub(crate) use spawn::{ExitWith, SpawnOpts, alive_in, spawn_in};
pub use spawn::{
    exit_with, in_actor, is_alive, panicking, request_stop, request_stop_all, require_actor,
    self_pid, spawn, spawn_under, try_self_pid, try_spawn, yield_now,
};
