//! Typed actors: a message enum (with `#[derive(Actor)]`) and a state that
//! handles it. The derive gives the enum its typed address (`Pid<M>`), one
//! client method per variant, and a `Name` constant; this module runs the
//! actor.
//!
//! Three ways to run one:
//!
//! - [`spawn`]: a plain loop over the mailbox, `handle` per message.
//! - [`start`] / [`start_link`]: the same loop with server semantics: it is
//!   registered under the enum's name (if the derive gave one) before
//!   `start` returns, [`Handler::terminate`] runs however it ends (a
//!   `Flow::Stop`, a stop request, a panic in `handle`), and a supervisor
//!   can run it ([`ChildSpec::actor_server`](crate::supervisor::ChildSpec::actor_server)).
//! - as a gen_server: [`Served<M, H>`](Served) is a [`GenServer`] whose
//!   casts are the messages; the derived methods work on its
//!   [`GenServerRef`] too.
//!
//! Calls are the variants carrying a `Reply`
//! as their last field; they go through
//! [`gen_server::call`](crate::gen_server::call), so they time out, fail
//! fast with `ServerDown` when the actor is gone, and fail when the handler
//! drops the `Reply`.

use crate::gen_server::{
    Ctx, Flow, GenServer, GenServerRef, InitError, Reply, StartError, StopReason,
};
use crate::registry::{self, Name};
use smarm_core::{Addressable, Pid};

/// A message enum with `#[derive(Actor)]`: its typed address is `Pid<Self>`.
pub trait Actor: Addressable<Msg = Self> + Send + Sized + 'static {
    /// The name from `#[actor(name = "...")]`, if any.
    const NAME: Option<&'static str>;

    /// The message's variant name (the derive gives it), for the crash
    /// report of an actor that panicked handling it.
    fn variant(&self) -> &'static str {
        ""
    }
}

/// The state of a typed actor of message type `M`.
pub trait Handler<M: Actor>: Send + 'static {
    /// Handle one message (answer a call through its `Reply`).
    fn handle(&mut self, msg: M) -> Flow;

    /// Clean up before a [`start`]ed actor exits, for any reason.
    fn terminate(&mut self, reason: &StopReason) {
        let _ = reason;
    }
}

/// Spawn `state` as a plain typed actor: it handles each message until
/// `handle` returns `Flow::Stop` or every sender is gone.
///
/// # Panics
///
/// Outside an actor.
pub fn spawn<M: Actor>(mut state: impl Handler<M>) -> Pid<M> {
    smarm_core::require_actor("actor::spawn");
    registry::spawn_addr::<M>(move |inbox| {
        while let Ok(msg) = inbox.recv() {
            if let Flow::Stop(_) = state.handle(msg) {
                break;
            }
        }
    })
}

/// Start `state` as a typed server: registered under `M::NAME` (if any)
/// before this returns, with `terminate` run however it ends.
///
/// # Panics
///
/// Outside an actor.
pub fn start<M: Actor>(state: impl Handler<M>) -> Result<Pid<M>, StartError> {
    smarm_core::require_actor("actor::start");
    start_with(state, false)
}

/// [`start`], linked to the caller (a supervisor's way to start it).
///
/// # Panics
///
/// Outside an actor.
pub fn start_link<M: Actor>(state: impl Handler<M>) -> Result<Pid<M>, StartError> {
    smarm_core::require_actor("actor::start_link");
    start_with(state, true)
}

fn start_with<M: Actor>(state: impl Handler<M>, link: bool) -> Result<Pid<M>, StartError> {
    let (tx, inbox) = smarm_core::channel::channel::<M>();
    let pid = crate::behaviour::start(
        if link {
            smarm_core::Builder::new().link()
        } else {
            smarm_core::Builder::new()
        },
        move |started| serve(state, tx, inbox, started),
    )?;
    Ok(pid.cast())
}

/// The typed server's body: register, report, loop, terminate.
fn serve<M: Actor>(
    mut state: impl Handler<M>,
    tx: smarm_core::Sender<M>,
    inbox: smarm_core::Receiver<M>,
    started: crate::behaviour::Started,
) {
    let registered = match M::NAME {
        Some(name) => registry::register(Name::<M>::new(name), tx).map_err(StartError::from),
        None => {
            registry::install::<M>(tx);
            Ok(())
        }
    };
    let ok = registered.is_ok();
    let _ = started.send(registered);
    drop(started);
    if !ok {
        return;
    }
    let mut last: Option<&'static str> = None;
    let ended = crate::behaviour::termination::run(|| {
        loop {
            match inbox.recv() {
                Ok(msg) => {
                    let variant = msg.variant();
                    last = Some(variant);
                    let flow = crate::behaviour::callback!(
                        region = (std::any::type_name::<M>(), variant),
                        "handle",
                        msg = variant,
                        state.handle(msg)
                    );
                    if let Flow::Stop(reason) = flow {
                        return reason;
                    }
                }
                Err(_) => return StopReason::Normal,
            }
        }
    });
    if ended.panicked() {
        let ty = std::any::type_name::<M>();
        smarm_core::report::note_last_message(match last {
            None => "none (it crashed before its first message)".to_string(),
            Some("") => format!("handle: a {ty}"),
            Some(variant) => format!("handle: {ty}::{variant}"),
        });
    }
    state.terminate(&ended.reason);
    drop(inbox);
    ended.finish();
}

/// `Deliver::deliver_async` sending with `$send` (an async method of
/// `$this` taking the message) and mapping its error with `$error`.
macro_rules! deliver_async_by {
    (|$this:ident, $msg:ident| $send:expr, $error:path) => {
        #[allow(clippy::manual_async_fn)] // the signature promises `Send`
        fn deliver_async(
            &self,
            $msg: M,
        ) -> impl std::future::Future<Output = Result<(), crate::registry::SendError<M>>> + Send + '_
        where
            Self: Sync,
        {
            let $this = self;
            async move { $send.await.map_err(|e| $error(e.0)) }
        }
    };
}

/// How the derived client methods deliver: to a pid, to a name, to a
/// server, or on a channel.
#[doc(hidden)]
pub trait Deliver<M: Actor> {
    /// Send `msg`; `Err(msg)` back if it was not delivered.
    fn deliver(&self, msg: M) -> Result<(), crate::registry::SendError<M>>;

    /// The actor a call through this reaches, if known: asked only when a
    /// call is slow to answer, to look for a cycle of callers.
    fn callee(&self) -> Option<Pid> {
        None
    }

    /// Send `msg` from async code (the `_async` calls): by default at the
    /// first poll, as [`deliver`](Self::deliver) does; a channel or server
    /// waits for room on a full bounded mailbox without blocking.
    #[allow(clippy::manual_async_fn)] // the signature promises `Send`
    fn deliver_async(
        &self,
        msg: M,
    ) -> impl std::future::Future<Output = Result<(), crate::registry::SendError<M>>> + Send + '_
    where
        Self: Sync,
    {
        async move { self.deliver(msg) }
    }
}

/// A typed actor's channel (from [`registry::resolve_in`], say) delivers
/// too: the derived methods work on it from outside the runtime.
impl<M: Actor> Deliver<M> for smarm_core::channel::Sender<M> {
    fn deliver(&self, msg: M) -> Result<(), crate::registry::SendError<M>> {
        self.send(msg)
            .map_err(|e| crate::registry::SendError::Closed(e.0))
    }

    deliver_async_by!(
        |tx, msg| tx.send_async(msg),
        crate::registry::SendError::Closed
    );
}

impl<M: Actor> Deliver<M> for Pid<M> {
    fn deliver(&self, msg: M) -> Result<(), crate::registry::SendError<M>> {
        registry::send_to(*self, msg)
    }

    fn callee(&self) -> Option<Pid> {
        Some(self.erase())
    }
}

impl<M: Actor> Deliver<M> for Name<M> {
    fn deliver(&self, msg: M) -> Result<(), crate::registry::SendError<M>> {
        registry::send(*self, msg)
    }

    fn callee(&self) -> Option<Pid> {
        registry::whereis(self.as_str())
    }
}

/// A typed actor run as a [`GenServer`]: its state is the handler `H`, its
/// casts are the messages `M` (calls travel inside them, with their
/// `Reply`). Start it with `gen_server::start::<Served<M, H>>(state)`; the
/// derived client methods work on the [`GenServerRef`] it returns.
///
/// ```
/// use smarm::actor::{Handler, Served};
/// use smarm::gen_server::{self, Flow};
/// use smarm::{Actor, Reply};
///
/// #[derive(Actor)]
/// enum Counter {
///     Add(u64),
///     Get(Reply<u64>),
/// }
///
/// struct Count(u64);
/// impl Handler<Counter> for Count {
///     fn handle(&mut self, msg: Counter) -> Flow {
///         match msg {
///             Counter::Add(n) => self.0 += n,
///             Counter::Get(reply) => {
///                 reply.reply(self.0);
///             }
///         }
///         Flow::Continue
///     }
/// }
///
/// smarm::run(|| {
///     let server = gen_server::start::<Served<Counter, Count>>(Count(1)).unwrap();
///     server.add(2).unwrap();
///     assert_eq!(server.get(), Ok(3));
///     server.shutdown().unwrap();
/// });
/// ```
pub struct Served<M: Actor, H: Handler<M>> {
    state: H,
    _msg: std::marker::PhantomData<fn(M)>,
}

impl<M: Actor, H: Handler<M>> GenServer for Served<M, H> {
    type Args = H;
    type Call = std::convert::Infallible;
    type Reply = ();
    type Cast = M;
    type Info = ();

    fn init(state: H, _ctx: &mut Ctx<Self>) -> Result<Self, InitError> {
        Ok(Served {
            state,
            _msg: std::marker::PhantomData,
        })
    }

    fn handle_call(&mut self, never: Self::Call, _: Reply<()>, _: &mut Ctx<Self>) -> Flow {
        match never {}
    }

    fn handle_cast(&mut self, msg: M, _ctx: &mut Ctx<Self>) -> Flow {
        self.state.handle(msg)
    }

    fn terminate(&mut self, reason: &StopReason, _ctx: &mut Ctx<Self>) {
        self.state.terminate(reason);
    }
}

impl<M: Actor, H: Handler<M>> Deliver<M> for GenServerRef<Served<M, H>> {
    fn deliver(&self, msg: M) -> Result<(), crate::registry::SendError<M>> {
        self.cast(msg)
            .map_err(|e| crate::registry::SendError::Dead(e.0))
    }

    fn callee(&self) -> Option<Pid> {
        Some(self.pid())
    }

    deliver_async_by!(
        |server, msg| server.cast_async(msg),
        crate::registry::SendError::Dead
    );
}
