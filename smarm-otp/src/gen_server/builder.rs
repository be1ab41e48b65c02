//! Starting a server: [`start`], [`start_named`], [`start_link`], and the
//! [`Builder`] behind them (how a gen_server is launched, for the builder
//! both behaviours share).

use super::server::{Envelope, Server};
use super::{GenServer, GenServerRef, ServerName, StartError};
use crate::behaviour::builder::{ServerBuilder, Starts};
use crate::behaviour::{Options, launch};
use smarm_core::Pid;
use smarm_core::channel::Sender;

/// Start a server with `args`: spawn it, run [`GenServer::init`] there,
/// and return its address once init has succeeded.
///
/// # Panics
///
/// Outside an actor.
pub fn start<G: GenServer>(args: G::Args) -> Result<GenServerRef<G>, StartError> {
    smarm_core::require_actor("gen_server::start");
    Builder::new().start(args)
}

/// [`start`], registered under `name` before `init` runs, so the name
/// resolves the moment this returns.
///
/// # Panics
///
/// Outside an actor.
pub fn start_named<G: GenServer>(
    name: ServerName<G>,
    args: G::Args,
) -> Result<GenServerRef<G>, StartError> {
    smarm_core::require_actor("gen_server::start_named");
    Builder::new().name(name).start(args)
}

/// [`start`], linked to the caller (a supervisor's way to start a child).
///
/// # Panics
///
/// Outside an actor.
pub fn start_link<G: GenServer>(args: G::Args) -> Result<GenServerRef<G>, StartError> {
    smarm_core::require_actor("gen_server::start_link");
    Builder::new().link().start(args)
}

/// How to start a server: named, linked to the caller, labelled, with a
/// bounded mailbox, hibernating when idle or with a heap limit. Its
/// methods are [`ServerBuilder`]'s, shared with
/// [`gen_statem::Builder`](crate::gen_statem::Builder).
pub type Builder<G> = ServerBuilder<Envelope<G>>;

impl<G: GenServer> Starts for Envelope<G> {
    type Args = G::Args;

    fn launch(
        options: Options,
        name: Option<ServerName<G>>,
        args: G::Args,
    ) -> Result<(Pid, Sender<Envelope<G>>), StartError> {
        launch::<Server<G>>(options, name, args)
    }
}
