//! Starting a state machine: [`start`], [`start_link`], [`start_named`],
//! and the [`Builder`] behind them (how a gen_statem is launched, for the
//! builder both behaviours share).

use super::machine::{Envelope, Statem};
use super::{GenStatem, StatemName, StatemRef};
use crate::behaviour::builder::{ServerBuilder, Starts};
use crate::behaviour::{Options, StartError, launch};
use smarm_core::Pid;
use smarm_core::channel::Sender;

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

/// How to start a state machine: named, linked to the caller, labelled,
/// with a bounded mailbox, hibernating when idle or with a heap limit. Its
/// methods are [`ServerBuilder`]'s, shared with
/// [`gen_server::Builder`](crate::gen_server::Builder).
pub type Builder<M> = ServerBuilder<Envelope<M>>;

impl<M: GenStatem> Starts for Envelope<M> {
    type Args = M::Args;

    fn launch(
        options: Options,
        name: Option<StatemName<M>>,
        args: M::Args,
    ) -> Result<(Pid, Sender<Envelope<M>>), StartError> {
        launch::<Statem<M>>(options, name, args)
    }
}
