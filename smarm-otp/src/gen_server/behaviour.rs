//! The [`GenServer`] behaviour: the callbacks a server implements, and
//! the [`Flow`] each returns.

use super::{Ctx, InitError, Reply, StopReason};
use smarm_core::{Down, Exit};

/// A server's behaviour: its state type and the callbacks that run on it.
/// Only [`init`](GenServer::init) and
/// [`handle_call`](GenServer::handle_call) are required.
pub trait GenServer: Send + Sized + 'static {
    /// What [`start`](super::start) passes to [`init`](GenServer::init).
    type Args: Send + 'static;
    /// A request that expects a reply.
    type Call: Send + 'static;
    /// The reply to a [`Call`](GenServer::Call).
    type Reply: Send + 'static;
    /// A message that expects no reply.
    type Cast: Send + 'static;
    /// Any other message: from [`GenServerRef::info`](super::GenServerRef::info) and the server's own
    /// timers.
    type Info: Send + 'static;

    /// Build the state, in the server's own actor. [`start`](super::start) returns once
    /// this has: with the server, or with this error.
    fn init(args: Self::Args, ctx: &mut Ctx<Self>) -> Result<Self, InitError>;

    /// Handle a call: answer through `reply` now, or keep it and answer
    /// later (dropping it unanswered fails the call).
    fn handle_call(
        &mut self,
        request: Self::Call,
        reply: Reply<Self::Reply>,
        ctx: &mut Ctx<Self>,
    ) -> Flow;

    /// Handle a cast. By default: ignore it.
    fn handle_cast(&mut self, msg: Self::Cast, ctx: &mut Ctx<Self>) -> Flow {
        let _ = (msg, ctx);
        Flow::Continue
    }

    /// Handle an info message. By default: ignore it.
    fn handle_info(&mut self, msg: Self::Info, ctx: &mut Ctx<Self>) -> Flow {
        let _ = (msg, ctx);
        Flow::Continue
    }

    /// Handle a linked actor's exit, once the server traps exits
    /// ([`Ctx::trap_exits`]; the parent's exit stops the server instead).
    /// By default: ignore it, as an OTP gen_server's default `handle_info`
    /// does.
    fn handle_exit(&mut self, exit: Exit, ctx: &mut Ctx<Self>) -> Flow {
        let _ = (exit, ctx);
        Flow::Continue
    }

    /// Handle the `Down` of a monitor set with [`Ctx::monitor`]. By
    /// default: ignore it.
    fn handle_down(&mut self, down: Down, ctx: &mut Ctx<Self>) -> Flow {
        let _ = (down, ctx);
        Flow::Continue
    }

    /// Clean up before the server exits, for any reason. By default:
    /// nothing (the state is dropped after this).
    fn terminate(&mut self, reason: &StopReason, ctx: &mut Ctx<Self>) {
        let _ = (reason, ctx);
    }

    /// The state as [`sys::get_status`](crate::sys::get_status) shows it
    /// (OTP's `format_status`): what is worth seeing, without secrets. By
    /// default: the state's type.
    fn format_status(&self) -> String {
        format!("a {}", std::any::type_name::<Self>())
    }

    /// How a message shows in [`sys`](crate::sys)'s trace and log events
    /// (OTP's `format_status` for messages). By default: its type's name,
    /// so nothing of a message leaks into a log unless the server says so;
    /// a server whose messages implement `Debug` shows them with
    /// `format!("{message:?}")`:
    ///
    /// ```
    /// # use smarm::gen_server::{Ctx, Flow, GenServer, InitError, Message, Reply};
    /// # struct Counter(u64);
    /// # impl GenServer for Counter {
    /// #     type Args = ();
    /// #     type Call = ();
    /// #     type Reply = u64;
    /// #     type Cast = u64;
    /// #     type Info = ();
    /// #     fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> { Ok(Counter(0)) }
    /// #     fn handle_call(&mut self, _: (), reply: Reply<u64>, _: &mut Ctx<Self>) -> Flow {
    /// #         reply.reply(self.0);
    /// #         Flow::Continue
    /// #     }
    /// fn format_message(message: Message<'_, Self>) -> String {
    ///     format!("{message:?}") // `*DBG* <0.3.1> got cast 5`
    /// }
    /// # }
    /// ```
    fn format_message(message: Message<'_, Self>) -> String {
        message.type_name().to_string()
    }

    /// The behaviour's name in [`sys::Status`](crate::sys::Status).
    #[doc(hidden)]
    const BEHAVIOUR: &'static str = "gen_server";

    /// What [`sys::get_state_of`](crate::sys::get_state_of) reaches of
    /// the server, and that type's name: the server itself (a typed actor
    /// run as a gen_server, `Served`, gives its handler).
    #[doc(hidden)]
    fn sys_state(&mut self) -> (&mut dyn std::any::Any, &'static str) {
        crate::sys::itself(self)
    }

    /// How a cast shows in [`sys`](crate::sys)'s events: its kind and
    /// message (`Served` shows a typed actor's message as the typed loop
    /// does).
    #[doc(hidden)]
    fn sys_cast_event(msg: &Self::Cast) -> (&'static str, String) {
        ("cast", Self::format_message(Message::Cast(msg)))
    }
}

/// A message a server handles, as its
/// [`format_message`](GenServer::format_message) hook sees it. Its `Debug`
/// shows the message itself (`5`, not `Cast(5)`: the event says which
/// kind), where the server's message types implement `Debug`.
pub enum Message<'a, G: GenServer> {
    /// A call's request.
    Call(&'a G::Call),
    /// A cast.
    Cast(&'a G::Cast),
    /// An info.
    Info(&'a G::Info),
}

impl<G: GenServer> Message<'_, G> {
    /// The message's type's name (the hook's default).
    pub fn type_name(&self) -> &'static str {
        match self {
            Message::Call(_) => std::any::type_name::<G::Call>(),
            Message::Cast(_) => std::any::type_name::<G::Cast>(),
            Message::Info(_) => std::any::type_name::<G::Info>(),
        }
    }
}

impl<G: GenServer> std::fmt::Debug for Message<'_, G>
where
    G::Call: std::fmt::Debug,
    G::Cast: std::fmt::Debug,
    G::Info: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Message::Call(m) => m.fmt(f),
            Message::Cast(m) => m.fmt(f),
            Message::Info(m) => m.fmt(f),
        }
    }
}

/// What a callback tells the server loop.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Flow {
    /// Keep serving.
    Continue,
    /// Keep serving, but hibernate until the next message (OTP's
    /// `{noreply, State, hibernate}`): the state stays on the heap, the
    /// server's stack is given back, and the next message is handled on a
    /// fresh one ([`smarm::hibernate`](smarm_core::hibernate)). For servers
    /// idle for long between messages: waking costs a new stack. Typed
    /// actors run by `actor::spawn` / `actor::start` treat it as
    /// `Continue`; run as [`Served`](crate::typed::Served), they hibernate.
    Hibernate,
    /// Run [`terminate`](GenServer::terminate), then exit for this reason.
    Stop(StopReason),
}
