//! Starting a state machine: [`start`], [`start_link`], [`start_named`],
//! and the [`Builder`] behind them.

use super::machine::Statem;
use super::{GenStatem, StatemName, StatemRef};
use crate::behaviour::{Options, StartError, launch};
use std::time::Duration;

/// Start a state machine with `args`: spawn it, run [`GenStatem::init`]
/// there, and return its address once init has succeeded (the initial
/// state's enter call runs after, in the machine).
///
/// # Panics
///
/// Outside an actor.
pub fn start<M: GenStatem>(args: M::Args) -> Result<StatemRef<M>, StartError> {
    smarm_core::require_actor("gen_statem::start");
    Builder::new().start(args)
}

/// [`start`], linked to the caller (a supervisor's way to start a child).
///
/// # Panics
///
/// Outside an actor.
pub fn start_link<M: GenStatem>(args: M::Args) -> Result<StatemRef<M>, StartError> {
    smarm_core::require_actor("gen_statem::start_link");
    Builder::new().link().start(args)
}

/// [`start`], registered under `name` before `init` runs.
///
/// # Panics
///
/// Outside an actor.
pub fn start_named<M: GenStatem>(
    name: StatemName<M>,
    args: M::Args,
) -> Result<StatemRef<M>, StartError> {
    smarm_core::require_actor("gen_statem::start_named");
    Builder::new().name(name).start(args)
}

/// How to start a state machine: named, linked, labelled, with a bounded
/// mailbox, hibernating when idle, or with a heap limit, as
/// [`gen_server::Builder`](crate::gen_server::Builder).
pub struct Builder<M: GenStatem> {
    name: Option<StatemName<M>>,
    options: Options,
}

impl<M: GenStatem> Default for Builder<M> {
    fn default() -> Self {
        Builder::new()
    }
}

impl<M: GenStatem> Builder<M> {
    /// An unnamed, unlinked machine.
    pub fn new() -> Self {
        Builder {
            name: None,
            options: Options::default(),
        }
    }

    /// Register the machine under `name` before its `init` runs.
    pub fn name(mut self, name: StatemName<M>) -> Self {
        self.name = Some(name);
        self
    }

    /// Link the machine to the caller.
    pub fn link(mut self) -> Self {
        self.options.link = true;
        self
    }

    /// Label the machine's actor for introspection, crash reports and the
    /// observer.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.options.label = Some(label.into());
        self
    }

    /// Bound the mailbox to `capacity` messages, as
    /// [`gen_server::Builder::mailbox_capacity`](crate::gen_server::Builder::mailbox_capacity)
    /// (timeouts, exits and `Down`s go in past it).
    ///
    /// # Panics
    ///
    /// If `capacity` is 0.
    pub fn mailbox_capacity(mut self, capacity: usize) -> Self {
        self.options
            .set_mailbox_capacity("gen_statem::Builder", capacity);
        self
    }

    /// Hibernate whenever no message came for `idle` (OTP's
    /// `hibernate_after`).
    pub fn hibernate_after(mut self, idle: Duration) -> Self {
        self.options.hibernate_after = Some(idle);
        self
    }

    /// Stop the machine if its heap grows past `bytes` (0: no limit), as
    /// [`gen_server::Builder::max_heap_size`](crate::gen_server::Builder::max_heap_size).
    ///
    /// # Panics
    ///
    /// If `bytes` is not 0 and the accounting allocator is not installed.
    pub fn max_heap_size(mut self, bytes: usize) -> Self {
        self.options.set_max_heap_size("gen_statem::Builder", bytes);
        self
    }

    /// Spawn the machine, run its `init`, and return its address (or why
    /// it did not start).
    ///
    /// # Panics
    ///
    /// Outside an actor.
    pub fn start(self, args: M::Args) -> Result<StatemRef<M>, StartError> {
        smarm_core::require_actor("gen_statem::Builder::start");
        let (pid, inbox) = launch::<Statem<M>>(self.options, self.name, args)?;
        Ok(StatemRef::new(pid, inbox))
    }
}
