//! The server loop: init, then take the system channel first and the
//! mailbox second, dispatch each message to its callback, and on the way
//! out run `terminate`, whatever the way out is.
//!
//! Everything arrives in the mailbox, in the order it was sent: calls,
//! casts, infos, and (once asked for) trapped exits and monitors' `Down`s,
//! which core delivers through the server's own sender
//! ([`trap_exit_with`](smarm_core::trap_exit_with),
//! [`monitor_with`](smarm_core::monitor_with)), as Erlang delivers them to
//! a gen_server's one mailbox.
//!
//! The loop waits on the mailbox alone. A server timer delivers its info
//! to the system channel, raises `sys_pending`, and drops a wake token in
//! the mailbox; the loop looks at the system channel only when the flag is
//! up (one load per message), before the next mailbox message, so timers
//! keep their priority without a two-channel select or a second lock per
//! message.
//!
//! # Invariants
//!
//! - (S1) `terminate` runs exactly once, outside any unwind: a stop request
//!   or a callback's panic is caught at the loop, `terminate` runs, and the
//!   unwind is re-raised so the actor still ends as stopped or panicked.
//! - (S2) The server holds a sender to its own mailbox (in its `Ctx`), so
//!   the mailbox never reads as closed while it runs; when the loop ends,
//!   the mailbox is dropped before the actor exits, dropping every queued
//!   request's reply slot (their callers fail at once).

use super::{Flow, GenServer, GenServerRef, Message, Reply, StopReason};
use crate::behaviour::{Behaviour, Inbox, Launch, callback};
use crate::sys::{self, About, Answered, Debug, SysEvent, WhileSuspended};
use smarm_core::actor::Hibernation;
use smarm_core::channel::{Receiver, Sender, channel};
use smarm_core::time::{TimerId, cancel_timer};
use smarm_core::{Down, DownReason, Exit, MonitorRef, Pid};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A message for a server of type `G` (what its mailbox carries). Opaque:
/// send through a [`GenServerRef`] or a [`ServerName`](super::ServerName).
pub struct Envelope<G: GenServer>(pub(super) Msg<G>);

pub(super) enum Msg<G: GenServer> {
    Call(G::Call, Reply<G::Reply>),
    Cast(G::Cast),
    Info(G::Info),
    /// A linked actor's exit, while the server traps exits.
    Exit(Exit),
    /// A monitor set through [`Ctx::monitor`] fired.
    Down(Down),
    /// Run a closure on the state between callbacks (`get_state`,
    /// `inspect`, `sys::replace_state`).
    Inspect(Box<dyn FnOnce(&mut G) + Send>),
    /// A `sys` request (boxed: a mailbox's messages are as large as
    /// their largest kind).
    System(Box<crate::sys::Request>),
    /// Stop with [`StopReason::Shutdown`]; acknowledged after `terminate`.
    Shutdown(Reply<()>),
    /// A timer delivered to the system channel: wake the loop.
    SysWake,
}

/// A server's client requests, for the client methods of its
/// [`GenServerRef`].
impl<G: GenServer> crate::behaviour::address::Requests for Envelope<G> {
    type Call = G::Call;
    type Reply = G::Reply;
    type Cast = G::Cast;
    type Info = G::Info;

    const NAMES: crate::behaviour::server_ref::RefNames =
        crate::behaviour::server_ref::ref_names!("GenServerRef", "gen_server");

    fn call(request: G::Call, reply: Reply<G::Reply>) -> Self {
        Envelope(Msg::Call(request, reply))
    }
    fn cast(msg: G::Cast) -> Self {
        Envelope(Msg::Cast(msg))
    }
    fn info(msg: G::Info) -> Self {
        Envelope(Msg::Info(msg))
    }
    fn shutdown(reply: Reply<()>) -> Self {
        Envelope(Msg::Shutdown(reply))
    }
    fn system(request: Box<crate::sys::Request>) -> Self {
        Envelope(Msg::System(request))
    }
    fn into_call(self) -> (G::Call, Reply<G::Reply>) {
        match self.0 {
            Msg::Call(request, reply) => (request, reply),
            _ => unreachable!("a failed send hands back the message sent"),
        }
    }
    fn into_cast(self) -> G::Cast {
        match self.0 {
            Msg::Cast(msg) => msg,
            _ => unreachable!("a failed send hands back the message sent"),
        }
    }
    fn into_info(self) -> G::Info {
        match self.0 {
            Msg::Info(msg) => msg,
            _ => unreachable!("a failed send hands back the message sent"),
        }
    }
}

/// What a callback can do besides changing the state: reach its own
/// address, arm timers that deliver to its own `handle_info`, trap exits
/// and monitor actors (their news reaches `handle_exit` and `handle_down`).
pub struct Ctx<G: GenServer> {
    me: GenServerRef<G>,
    sys: Sender<G::Info>,
    sys_pending: Arc<AtomicBool>,
    /// The actor that started this server linked to it, if one did.
    parent: Option<Pid>,
}

impl<G: GenServer> Ctx<G> {
    /// This server's address.
    pub fn me(&self) -> &GenServerRef<G> {
        &self.me
    }

    /// The actor that started this server with a link
    /// ([`start_link`](super::start_link), [`Builder::link`](super::Builder::link)),
    /// if one did: its supervisor, in a supervision tree.
    pub fn parent(&self) -> Option<Pid> {
        self.parent
    }

    /// Trap exits (Erlang's `process_flag(trap_exit, true)`): from now on a
    /// linked actor's exit reaches [`GenServer::handle_exit`] instead of
    /// stopping this server, in order with the mailbox's other messages.
    /// The parent's exit still stops the server: `terminate` runs with
    /// [`StopReason::Shutdown`] (or [`StopReason::Error`] if the parent
    /// failed), as an OTP gen_server does. `false` if already trapping.
    ///
    /// Call it from `init` to trap from the start (before `start_link`
    /// returns).
    pub fn trap_exits(&self) -> bool {
        self.me
            .address()
            .trap_exits_as(|exit| Envelope(Msg::Exit(exit)))
    }

    /// Monitor `pid`: when it goes down, [`GenServer::handle_down`] gets
    /// its [`Down`] (at once, with `NoProc`, if it is already gone), in
    /// order with the mailbox's other messages.
    pub fn monitor<A>(&self, pid: Pid<A>) -> MonitorRef {
        self.me
            .address()
            .monitor_as(pid, |down| Envelope(Msg::Down(down)))
    }

    /// Cancel a monitor set by [`Ctx::monitor`]: `true` if it was still
    /// set. A `Down` already in the mailbox still arrives (Erlang's
    /// `demonitor/1`); `false` says one is on its way.
    pub fn demonitor(&self, monitor: MonitorRef) -> bool {
        smarm_core::demonitor(monitor).is_some()
    }

    /// Deliver `info` to this server's `handle_info` after `after`, ahead
    /// of its mailbox. Cancel with [`Ctx::cancel_timer`].
    pub fn send_after(&self, after: Duration, info: G::Info) -> TimerId {
        smarm_core::time::call_after(after, self.deliver_info(info))
    }

    /// [`Ctx::send_after`] on the wall clock: under causal profiling
    /// (feature `smarm-causal`) the timer keeps real time instead of
    /// waiting out the delay a profile inserts (for a deadline the outside
    /// world sets); without the feature it is [`Ctx::send_after`].
    pub fn send_after_wall(&self, after: Duration, info: G::Info) -> TimerId {
        smarm_core::time::call_after_wall(after, self.deliver_info(info))
    }

    /// What a timer does to deliver `info` to this server's `handle_info`.
    fn deliver_info(&self, info: G::Info) -> impl FnOnce() + Send + 'static {
        let (sys, pending, me) = (self.sys.clone(), self.sys_pending.clone(), self.me.clone());
        move || {
            if sys.send(info).is_ok() {
                pending.store(true, Ordering::Release);
                let _ = me.wake_for_sys();
            }
        }
    }

    /// Call off a timer armed by [`Ctx::send_after`]: `true` if it had not
    /// fired yet (its info will not arrive).
    pub fn cancel_timer(&self, id: TimerId) -> bool {
        cancel_timer(id)
    }
}

/// The gen_server behaviour's actor body, for `behaviour::launch`.
pub(super) struct Server<G>(std::marker::PhantomData<G>);

impl<G: GenServer> Behaviour for Server<G> {
    type Envelope = Envelope<G>;
    type Args = G::Args;

    fn serve<I: Inbox<Envelope<G>>>(launch: Launch<Envelope<G>, G::Args>, inbox: I) -> Hibernation {
        let (sys_tx, sys) = channel::<G::Info>();
        let mut ctx = Ctx {
            me: GenServerRef::new(smarm_core::self_pid(), launch.me.clone()),
            sys: sys_tx,
            sys_pending: Arc::new(AtomicBool::new(false)),
            parent: launch.parent,
        };
        let hibernate_after = launch.hibernate_after;
        let Some(state) =
            launch.init(|args| callback!("init", server = server::<G>(), G::init(args, &mut ctx)))
        else {
            return Hibernation::none();
        };
        ctx.me
            .address()
            .note_system(|request| Envelope(Msg::System(Box::new(request))));
        Serving {
            state,
            sys,
            ctx,
            ack: None,
            last: Handled::Nothing,
            hibernate_after,
            debug: Debug::default(),
            deferred: VecDeque::new(),
        }
        .run(inbox)
    }
}

/// A running server: what its loop works on besides its mailbox, and
/// what a hibernation carries over to the fresh stack.
struct Serving<G: GenServer> {
    state: G,
    sys: Receiver<G::Info>,
    ctx: Ctx<G>,
    /// The reply to a shutdown request, sent once `terminate` has run.
    ack: Option<Reply<()>>,
    last: Handled,
    /// Hibernate after this long without a message.
    hibernate_after: Option<Duration>,
    /// Its `sys` debug options and suspension.
    debug: Debug,
    /// Messages received while suspended, to handle after (D1).
    deferred: VecDeque<Msg<G>>,
}

impl<G: GenServer> Serving<G> {
    /// Serve `inbox` until the server stops (then run `terminate` and end
    /// the actor as the loop ended) or hibernates: then return the
    /// hibernation to the actor's base (cheaper than unwinding), which
    /// waits for the next message holding no stack and serves on from a
    /// fresh one, the state moved to the heap with the rest.
    fn run<I: Inbox<Envelope<G>>>(mut self, inbox: I) -> Hibernation {
        let mut hibernating = false;
        let ended = crate::behaviour::termination::run(|| {
            // One loop per way of waiting, so neither pays for the other.
            let turn = match self.hibernate_after {
                None => serve_loop(&mut self, &inbox, |inbox: &I| {
                    inbox.recv().ok() // never closed while serving (S2)
                }),
                Some(idle) => serve_loop(&mut self, &inbox, |inbox: &I| {
                    inbox.recv_timeout(idle).ok() // idle (never closed: (S2))
                }),
            };
            match turn {
                Turn::Stop(reason) => reason,
                Turn::Hibernate => {
                    hibernating = true;
                    StopReason::Normal
                }
            }
        });
        if hibernating {
            return Hibernation::until(inbox, move |inbox| self.run(inbox));
        }
        if ended.panicked() {
            smarm_core::report::note_last_message(self.last.describe::<G>());
        }
        let Serving {
            mut state,
            mut ctx,
            ack,
            ..
        } = self;
        callback!(
            "terminate",
            server = server::<G>(),
            state.terminate(&ended.reason, &mut ctx)
        ); // (S1)
        drop(inbox); // (S2): queued callers fail now
        drop(state);
        if let Some(ack) = ack {
            let _ = ack.reply(());
        }
        ended.finish();
        Hibernation::none()
    }
}

/// How a turn of the loop ended.
enum Turn {
    Stop(StopReason),
    Hibernate,
}

/// What the server last handed to a callback, for its crash report
/// (OTP's "last message in"). The message itself went into the callback;
/// its kind and type are what is kept (one store per message).
#[derive(Debug, Clone, Copy)]
enum Handled {
    Nothing,
    Call,
    Cast,
    Info,
    Exit(Pid),
    Down(Pid),
    Inspect,
}

impl Handled {
    fn describe<G: GenServer>(self) -> String {
        use std::any::type_name;
        match self {
            Handled::Nothing => "none (it crashed before its first message)".to_string(),
            Handled::Call => format!("handle_call: a {}", type_name::<G::Call>()),
            Handled::Cast => format!("handle_cast: a {}", type_name::<G::Cast>()),
            Handled::Info => format!("handle_info: a {}", type_name::<G::Info>()),
            Handled::Exit(from) => format!("handle_exit: an exit signal from {from}"),
            Handled::Down(of) => format!("handle_down: the down notice of {of}"),
            Handled::Inspect => "an inspection of its state".to_string(),
        }
    }
}

/// The server's type, for its callbacks' spans.
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
fn server<G>() -> &'static str {
    std::any::type_name::<G>()
}

/// Serve until a callback or a shutdown request stops the server, or it
/// hibernates; `receive` waits for the next message (`None`: idle).
fn serve_loop<G: GenServer, I: Inbox<Envelope<G>>>(
    serving: &mut Serving<G>,
    inbox: &I,
    receive: impl Fn(&I) -> Option<Envelope<G>>,
) -> Turn {
    // A callback asked to hibernate: done at the next wait for the
    // mailbox, once the system channel is drained (a timer's info there
    // would not wake a server waiting on its mailbox alone).
    let mut hibernate = false;
    loop {
        if serving.ctx.sys_pending.load(Ordering::Acquire) {
            let Serving {
                state,
                sys,
                ctx,
                last,
                debug,
                ..
            } = serving;
            match drain_system(state, sys, ctx, last, debug) {
                Flow::Continue => {}
                Flow::Hibernate => hibernate = true,
                Flow::Stop(reason) => return Turn::Stop(reason),
            }
        }
        if hibernate {
            return Turn::Hibernate;
        }
        // The next message; none: idle for `hibernate_after`.
        let Some(Envelope(msg)) = receive(inbox) else {
            return Turn::Hibernate;
        };
        match dispatch(serving, inbox, msg) {
            Flow::Continue => {}
            Flow::Hibernate => hibernate = true,
            Flow::Stop(reason) => return Turn::Stop(reason),
        }
    }
}

/// Hand one message to its callback (or answer it, for a system
/// message), and say what the loop does next.
#[inline(always)]
fn dispatch<G: GenServer, I: Inbox<Envelope<G>>>(
    serving: &mut Serving<G>,
    inbox: &I,
    mut msg: Msg<G>,
) -> Flow {
    if serving.debug.on {
        note_event::<G>(&mut serving.debug, serving.ctx.me.pid(), &mut msg);
    }
    let Serving {
        state, ctx, last, ..
    } = serving;
    match msg {
        Msg::Call(request, reply) => {
            *last = Handled::Call;
            callback!(
                "handle_call",
                server = server::<G>(),
                state.handle_call(request, reply, ctx)
            )
        }
        Msg::Cast(msg) => {
            *last = Handled::Cast;
            callback!(
                "handle_cast",
                server = server::<G>(),
                state.handle_cast(msg, ctx)
            )
        }
        Msg::Info(msg) => {
            *last = Handled::Info;
            callback!(
                "handle_info",
                server = server::<G>(),
                state.handle_info(msg, ctx)
            )
        }
        other => dispatch_rare(serving, inbox, other),
    }
}

/// [`dispatch`] for the messages other than calls, casts and infos: out of
/// line, so the loop's own code stays small.
#[cold]
#[inline(never)]
fn dispatch_rare<G: GenServer, I: Inbox<Envelope<G>>>(
    serving: &mut Serving<G>,
    inbox: &I,
    msg: Msg<G>,
) -> Flow {
    let Serving {
        state,
        ctx,
        ack,
        last,
        ..
    } = serving;
    match msg {
        Msg::Exit(exit) if Some(exit.from) == ctx.parent => Flow::Stop(parent_exit(exit.reason)),
        Msg::Exit(exit) => {
            *last = Handled::Exit(exit.from);
            callback!(
                "handle_exit",
                server = server::<G>(),
                state.handle_exit(exit, ctx)
            )
        }
        Msg::Down(down) => {
            *last = Handled::Down(down.pid);
            callback!(
                "handle_down",
                server = server::<G>(),
                state.handle_down(down, ctx)
            )
        }
        Msg::Inspect(f) => {
            *last = Handled::Inspect;
            f(state);
            Flow::Continue
        }
        Msg::Shutdown(reply) => {
            *ack = Some(reply);
            Flow::Stop(StopReason::Shutdown)
        }
        Msg::System(request) => system_request(serving, inbox, *request),
        Msg::SysWake => Flow::Continue, // the flag is up: next turn
        Msg::Call(..) | Msg::Cast(_) | Msg::Info(_) => dispatch(serving, inbox, msg),
    }
}

/// Note a handled message for `sys` (only while a debug option is on);
/// a call's reply is counted for `messages_out` when sent.
#[cold]
#[inline(never)]
fn note_event<G: GenServer>(debug: &mut Debug, pid: Pid, msg: &mut Msg<G>) {
    let (kind, message) = match &*msg {
        Msg::Call(request, _) => ("call", G::format_message(Message::Call(request))),
        Msg::Cast(msg) => G::sys_cast_event(msg),
        Msg::Info(info) => ("info", G::format_message(Message::Info(info))),
        Msg::Exit(exit) => ("exit", format!("{} {}", exit.from, exit.reason)),
        Msg::Down(down) => ("down", format!("{} {}", down.pid, down.reason)),
        Msg::Inspect(_) | Msg::Shutdown(_) | Msg::System(_) | Msg::SysWake => return,
    };
    debug.event(SysEvent::now(pid, "got", kind, message));
    if let Msg::Call(_, reply) = msg {
        debug.count_reply(reply);
    }
}

/// A `sys` request: answer it; one that suspends the server holds the
/// loop in the suspended loop until it is resumed, then the server handles
/// what was kept meanwhile, in order (D1).
#[cold]
#[inline(never)]
fn system_request<G: GenServer, I: Inbox<Envelope<G>>>(
    serving: &mut Serving<G>,
    inbox: &I,
    request: crate::sys::Request,
) -> Flow {
    if let Err(reason) = answer_system(serving, request) {
        return Flow::Stop(reason);
    }
    if !serving.debug.suspended {
        return Flow::Continue;
    }
    if let Err(reason) = sys::suspend_loop(serving, || {
        inbox.recv_while_suspended().ok().map(|Envelope(msg)| msg)
    }) {
        return Flow::Stop(reason);
    }
    let mut flow = Flow::Continue;
    while let Some(msg) = serving.deferred.pop_front() {
        match dispatch(serving, inbox, msg) {
            Flow::Continue => {}
            Flow::Hibernate => flow = Flow::Hibernate,
            stop @ Flow::Stop(_) => return stop,
        }
    }
    flow
}

/// Answer a `sys` request; `Err` to stop (`sys::terminate`).
fn answer_system<G: GenServer>(
    serving: &mut Serving<G>,
    request: crate::sys::Request,
) -> Result<(), StopReason> {
    let Serving {
        state,
        ctx,
        debug,
        deferred,
        ack,
        ..
    } = serving;
    let about = |state: &G| About {
        pid: ctx.me.pid(),
        behaviour: G::BEHAVIOUR,
        module: server::<G>(),
        state: state.format_status(),
        // What it keeps while suspended is still queued for it.
        mailbox_len: ctx.me.mailbox_len() + deferred.len(),
    };
    match debug.handle(request, state, G::sys_state, about) {
        Answered::GoOn => Ok(()),
        Answered::Terminate(reason, reply) => {
            *ack = Some(reply);
            Err(reason)
        }
    }
}

/// What the suspended loop needs of a server.
impl<G: GenServer> sys::Suspendable for Serving<G> {
    type Msg = Msg<G>;

    fn is_suspended(&self) -> bool {
        self.debug.suspended
    }

    fn while_suspended(&self, msg: Msg<G>) -> WhileSuspended<Msg<G>> {
        match msg {
            Msg::Exit(exit) if Some(exit.from) == self.ctx.parent => {
                WhileSuspended::Stop(parent_exit(exit.reason))
            }
            Msg::Inspect(_) | Msg::Shutdown(_) | Msg::SysWake | Msg::System(_) => {
                WhileSuspended::Answer(msg)
            }
            other => WhileSuspended::Keep(other),
        }
    }

    fn answer(&mut self, msg: Msg<G>) -> Result<(), StopReason> {
        match msg {
            Msg::System(request) => answer_system(self, *request),
            Msg::Inspect(f) => {
                self.last = Handled::Inspect;
                f(&mut self.state);
                Ok(())
            }
            Msg::Shutdown(reply) => {
                self.ack = Some(reply);
                Err(StopReason::Shutdown)
            }
            // A timer's info waits on the system channel, its flag up: the
            // loop drains it once resumed.
            _ => Ok(()),
        }
    }

    fn keep(&mut self, msg: Msg<G>) {
        self.deferred.push_back(msg);
    }
}

/// Handle what waits on the system channel (timer infos and other
/// messages sent there), in order, until it is empty or a callback stops
/// the server; a hibernation asked for on the way is returned once it is
/// empty. Out of line: the flag is down on almost every turn.
#[cold]
#[inline(never)]
fn drain_system<G: GenServer>(
    state: &mut G,
    sys: &Receiver<G::Info>,
    ctx: &mut Ctx<G>,
    last: &mut Handled,
    debug: &mut Debug,
) -> Flow {
    ctx.sys_pending.store(false, Ordering::Relaxed);
    let mut hibernate = false;
    while let Ok(Some(info)) = sys.try_recv() {
        *last = Handled::Info;
        if debug.on {
            let message = G::format_message(Message::Info(&info));
            debug.event(SysEvent::now(ctx.me.pid(), "got", "info", message));
        }
        let flow = callback!(
            "handle_info",
            server = server::<G>(),
            state.handle_info(info, ctx)
        );
        match flow {
            Flow::Continue => {}
            Flow::Hibernate => hibernate = true,
            stop @ Flow::Stop(_) => return stop,
        }
    }
    if hibernate {
        Flow::Hibernate
    } else {
        Flow::Continue
    }
}

/// Why a trapping server stops when its parent exits: a parent's failure
/// is the server's failure; any other exit is a shutdown.
fn parent_exit(reason: DownReason) -> StopReason {
    if matches!(
        reason,
        DownReason::Exit | DownReason::Stopped | DownReason::Shutdown
    ) {
        StopReason::Shutdown
    } else {
        StopReason::Error(format!("parent exited: {reason}"))
    }
}
