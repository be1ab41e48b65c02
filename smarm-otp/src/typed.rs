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
//!
//! Every way answers [`sys`] requests between two messages.
//! The message enum has no variant for them, so the plain loops keep them
//! in a lane (`SysLane`) beside the mailbox and
//! [`interrupt`](smarm_core::Sender::interrupt) the mailbox's receive to
//! have them looked at: a message costs the loop nothing more. A
//! suspended typed actor is served by the suspended loop every behaviour
//! shares (`sys::suspend_loop`), reading both its mailbox and its lane.
//!
//! # Invariants
//!
//! - (T1) A `sys` request is answered after every message sent before it
//!   and before the loop next waits: it goes in the lane under the lane's
//!   lock with the number of the interrupt raised for it, and the loop
//!   takes from the lane only requests whose interrupt it has seen
//!   (`Receiver::interrupts_seen`), which `recv_or_interrupt` reports
//!   after the messages sent before it.
//! - (T2) A request for a loop that ended is dropped with its reply slot
//!   (the caller sees the actor down), never kept.

use crate::gen_server::{
    Ctx, Flow, GenServer, GenServerRef, InitError, Reply, StartError, StopReason,
};
use crate::registry::{self, Name};
use crate::sys::{self, About, Answered, Debug, Request, Suspendable, SysEvent, WhileSuspended};
use smarm_core::{Addressable, NoPreempt, Pid, Receiver, Sender};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// A message enum with `#[derive(Actor)]`: its typed address is `Pid<Self>`.
pub trait Actor: Addressable<Msg = Self> + Send + Sized + 'static {
    /// The name from `#[actor(name = "...")]`, if any.
    const NAME: Option<&'static str>;

    /// The message's variant name (the derive gives it), for the crash
    /// report of an actor that panicked handling it.
    fn variant(&self) -> &'static str {
        ""
    }

    /// Whether the message is a call (carries a `Reply`; the derive
    /// gives it), for [`sys`]'s events.
    fn is_call(&self) -> bool {
        false
    }

    /// How the message shows in [`sys`]'s trace and log
    /// events. By default its variant's name (or its type's); the derive
    /// shows it by its `Debug` when the enum implements `Debug`
    /// (`Add(5)`), else by its variant.
    fn format_message(&self) -> String {
        match self.variant() {
            "" => std::any::type_name::<Self>().to_string(),
            variant => variant.to_string(),
        }
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

    /// The state as [`sys::get_status`] shows it
    /// (OTP's `format_status`). By default: the state's type.
    fn format_status(&self) -> String {
        format!("a {}", std::any::type_name::<Self>())
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
    let (tx, inbox) = smarm_core::channel::channel::<M>();
    let lane = SysLane::new();
    let theirs = lane.clone();
    let handle = smarm_core::spawn(move || {
        let mut ack = None;
        let reason = serve_loop(&mut state, &inbox, &theirs, &mut ack, |state, msg| {
            state.handle(msg)
        });
        // Stopped by `sys::terminate`: through `terminate`, then said so.
        if let Some(ack) = ack {
            state.terminate(&reason);
            let _ = ack.reply(());
        }
    });
    let pid = handle.pid();
    drop(handle); // detached: its life is its own
    // Before the pid is returned, so a sys request right away reaches it.
    lane.note(pid, tx.clone());
    registry::publish(pid, tx)
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

fn start_with<M: Actor, H: Handler<M>>(state: H, link: bool) -> Result<Pid<M>, StartError> {
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
fn serve<M: Actor, H: Handler<M>>(
    mut state: H,
    tx: Sender<M>,
    inbox: Receiver<M>,
    started: crate::behaviour::Started,
) {
    let lane = SysLane::new();
    lane.note(smarm_core::self_pid(), tx.clone());
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
    // The acknowledgement of `sys::terminate`, sent once `terminate` ran.
    let mut ack: Option<crate::behaviour::Reply<()>> = None;
    let ended = crate::behaviour::termination::run(|| {
        serve_loop(&mut state, &inbox, &lane, &mut ack, |state, msg| {
            let variant = msg.variant();
            last = Some(variant);
            crate::behaviour::callback!(
                region = (std::any::type_name::<M>(), variant),
                "handle",
                msg = variant,
                state.handle(msg)
            )
        })
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
    if let Some(ack) = ack {
        let _ = ack.reply(());
    }
    ended.finish();
}

/// Handle each message with `handle`, and `sys` requests between them,
/// until it returns `Flow::Stop` (its reason) or the mailbox closes
/// (`Normal`). The receive is inlined here, which every message gains
/// from (`recv_or_interrupt` is always inlined: the suspended loop's
/// `next_while_suspended` receives too).
fn serve_loop<M: Actor, H: Handler<M>>(
    state: &mut H,
    inbox: &Receiver<M>,
    lane: &SysLane,
    ack: &mut Option<crate::behaviour::Reply<()>>,
    mut handle: impl FnMut(&mut H, M) -> Flow,
) -> StopReason {
    let mut debug = Debug::default();
    loop {
        let msg = match inbox.recv_or_interrupt() {
            Ok(Some(msg)) => msg,
            Ok(None) => {
                if let Some(reason) = interrupted(state, inbox, lane, &mut debug, ack, &mut handle)
                {
                    return reason;
                }
                continue;
            }
            Err(_) => return StopReason::Normal,
        };
        if debug.on {
            note_event(&mut debug, &msg);
        }
        if let Flow::Stop(reason) = handle(state, msg) {
            return reason;
        }
    }
}

/// The loop was interrupted: answer what its lane holds (out of line, so
/// the loop stays as tight as it is without `sys`).
#[cold]
#[inline(never)]
fn interrupted<M: Actor, H: Handler<M>>(
    state: &mut H,
    inbox: &Receiver<M>,
    lane: &SysLane,
    debug: &mut Debug,
    ack: &mut Option<crate::behaviour::Reply<()>>,
    handle: &mut dyn FnMut(&mut H, M) -> Flow,
) -> Option<StopReason> {
    let mut actor = Attended {
        state,
        inbox,
        debug,
        ack,
        held: VecDeque::new(),
    };
    actor.interrupted(lane, handle)
}

/// A typed actor's loop while it answers `sys` requests: its state, its
/// mailbox, its debug options, and what it keeps while suspended (D1).
struct Attended<'a, M, H> {
    state: &'a mut H,
    inbox: &'a Receiver<M>,
    debug: &'a mut Debug,
    /// The acknowledgement of `sys::terminate`, sent once `terminate` ran.
    ack: &'a mut Option<crate::behaviour::Reply<()>>,
    held: VecDeque<M>,
}

/// What a suspended typed actor reads: its mailbox and its lane.
enum Incoming<M> {
    Mail(M),
    Sys(Request),
}

impl<M: Actor, H: Handler<M>> Attended<'_, M, H> {
    /// The loop was interrupted: answer the requests in its lane whose
    /// interrupts it has seen (T1), a suspension they start served by the
    /// suspended loop every behaviour shares; if that leaves it running,
    /// handle what it kept while suspended. `Some` if it is to stop.
    fn interrupted(
        &mut self,
        lane: &SysLane,
        handle: &mut dyn FnMut(&mut H, M) -> Flow,
    ) -> Option<StopReason> {
        let inbox = self.inbox;
        let mut pending: VecDeque<Request> = lane.take(inbox.interrupts_seen()).into();
        while let Some(request) = pending.pop_front() {
            if let Err(reason) = self.answer(Incoming::Sys(request)) {
                return Some(reason);
            }
            if self.debug.suspended {
                let next = || next_while_suspended(inbox, lane, &mut pending);
                if let Err(reason) = sys::suspend_loop(self, next) {
                    return Some(reason);
                }
            }
        }
        while let Some(msg) = self.held.pop_front() {
            if self.debug.on {
                note_event(self.debug, &msg);
            }
            if let Flow::Stop(reason) = handle(self.state, msg) {
                return Some(reason);
            }
        }
        None
    }
}

/// The next message of a suspended typed actor: a request left from the
/// lane's last take, else whatever comes next, its mailbox's or its
/// lane's (T1). `None` once the mailbox closed.
fn next_while_suspended<M: Send + 'static>(
    inbox: &Receiver<M>,
    lane: &SysLane,
    pending: &mut VecDeque<Request>,
) -> Option<Incoming<M>> {
    loop {
        if let Some(request) = pending.pop_front() {
            return Some(Incoming::Sys(request));
        }
        match inbox.recv_or_interrupt() {
            Ok(Some(msg)) => return Some(Incoming::Mail(msg)),
            Ok(None) => pending.extend(lane.take(inbox.interrupts_seen())),
            Err(_) => return None,
        }
    }
}

impl<M: Actor, H: Handler<M>> Suspendable for Attended<'_, M, H> {
    type Msg = Incoming<M>;

    fn is_suspended(&self) -> bool {
        self.debug.suspended
    }

    fn while_suspended(&self, msg: Incoming<M>) -> WhileSuspended<Incoming<M>> {
        match msg {
            Incoming::Sys(_) => WhileSuspended::Answer(msg),
            Incoming::Mail(_) => WhileSuspended::Keep(msg),
        }
    }

    fn answer(&mut self, msg: Incoming<M>) -> Result<(), StopReason> {
        let Incoming::Sys(request) = msg else {
            return Ok(()); // never: mail is kept, not answered
        };
        let mailbox_len = self.inbox.len() + self.held.len();
        let answered = self
            .debug
            .handle(request, self.state, crate::sys::itself, |state: &H| About {
                pid: smarm_core::self_pid(),
                behaviour: "actor",
                module: std::any::type_name::<H>(),
                state: state.format_status(),
                mailbox_len,
            });
        if let Answered::Terminate(reason, reply) = answered {
            *self.ack = Some(reply);
            return Err(reason);
        }
        Ok(())
    }

    fn keep(&mut self, msg: Incoming<M>) {
        if let Incoming::Mail(msg) = msg {
            self.held.push_back(msg);
        }
    }
}

/// Note a handled message for `sys` (only while a debug option is on).
#[cold]
fn note_event<M: Actor>(debug: &mut Debug, msg: &M) {
    let (kind, message) = sys_event(msg);
    debug.event(SysEvent::now(smarm_core::self_pid(), "got", kind, message));
}

/// A typed actor's message as `sys`'s events show it, however the actor
/// runs: `call` (it carries a `Reply`) or `cast`, shown by
/// [`Actor::format_message`].
fn sys_event<M: Actor>(msg: &M) -> (&'static str, String) {
    let kind = if msg.is_call() { "call" } else { "cast" };
    (kind, msg.format_message())
}

/// A typed actor's `sys` requests, kept beside its mailbox (its message
/// type has no variant for them), each with its interrupt's number: (T1),
/// (T2).
struct SysLane(Mutex<VecDeque<(u32, Request)>>);

impl SysLane {
    fn new() -> Arc<SysLane> {
        Arc::new(SysLane(Mutex::new(VecDeque::new())))
    }

    /// Make `pid` (running this lane's loop, receiving from `tx`'s
    /// channel) reachable by pid for `sys` until it exits.
    fn note<M: Send + 'static>(self: &Arc<Self>, pid: Pid, tx: Sender<M>) {
        let lane = self.clone();
        crate::sys::note(
            pid,
            Arc::new(move |request| {
                // Under the lock: the loop takes it only once it has seen
                // its interrupt (T1). If the loop ended, it drops here (T2).
                let _ = lane.with(|q| tx.interrupt().map(|n| q.push_back((n, request))));
            }),
        );
    }

    /// The requests whose interrupts are seen (`seen` the newest), oldest
    /// first.
    fn take(&self, seen: u32) -> Vec<Request> {
        self.with(|q| {
            let mut due = Vec::new();
            // Numbers wrap: `n` is seen if not past `seen`.
            while let Some((n, _)) = q.front()
                && seen.wrapping_sub(*n) < u32::MAX / 2
            {
                if let Some((_, request)) = q.pop_front() {
                    due.push(request);
                }
            }
            due
        })
    }

    fn with<R>(&self, f: impl FnOnce(&mut VecDeque<(u32, Request)>) -> R) -> R {
        // A std lock held by an actor: no preemption while it is held, or
        // another actor of this thread could wait on it forever.
        let _gate = NoPreempt::new();
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// `Deliver::deliver_async` sending with `$send` (an async method of
/// `$this` taking the message, of type `$m`, `M` if not given) and mapping
/// its error with `$error`.
macro_rules! deliver_async_by {
    (|$this:ident, $msg:ident| $send:expr, $error:path) => {
        deliver_async_by!(M; |$this, $msg| $send, $error);
    };
    ($m:ty; |$this:ident, $msg:ident| $send:expr, $error:path) => {
        #[allow(clippy::manual_async_fn)] // the signature promises `Send`
        fn deliver_async(
            &self,
            $msg: $m,
        ) -> impl std::future::Future<Output = Result<(), crate::registry::SendError<$m>>> + Send + '_
        where
            Self: Sync,
        {
            let $this = self;
            async move { $send.await.map_err(|e| $error(e.0)) }
        }
    };
}

/// How the derived client methods deliver: to a pid, to a name, to a
/// server or a state machine, or on a channel.
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

    fn format_status(&self) -> String {
        self.state.format_status()
    }

    fn sys_state(&mut self) -> (&mut dyn std::any::Any, &'static str) {
        crate::sys::itself(&mut self.state)
    }

    fn sys_cast_event(msg: &M) -> (&'static str, String) {
        sys_event(msg)
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

/// A state machine whose casts are a derived message enum: the derived
/// client methods cast to it, a call's `Reply` riding in its event (so
/// the machine may postpone it like any other).
impl<S: crate::gen_statem::GenStatem> Deliver<S::Cast> for crate::gen_statem::StatemRef<S>
where
    S::Cast: Actor,
{
    fn deliver(&self, msg: S::Cast) -> Result<(), crate::registry::SendError<S::Cast>> {
        self.cast(msg)
            .map_err(|e| crate::registry::SendError::Dead(e.0))
    }

    fn callee(&self) -> Option<Pid> {
        Some(self.pid())
    }

    deliver_async_by!(
        S::Cast; |machine, msg| machine.cast_async(msg),
        crate::registry::SendError::Dead
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request whose answer says which it was.
    fn request(answered: &Arc<Mutex<Vec<u32>>>, which: u32) -> Request {
        let answered = answered.clone();
        Request::NoDebug(crate::behaviour::Reply::forward(move |()| {
            answered
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(which);
            true
        }))
    }

    #[test]
    fn a_lane_hands_out_only_the_requests_whose_interrupts_were_seen() {
        let answered = Arc::new(Mutex::new(Vec::new()));
        let lane = SysLane::new();
        lane.with(|q| {
            q.push_back((1, request(&answered, 1)));
            q.push_back((2, request(&answered, 2)));
            q.push_back((3, request(&answered, 3)));
        });
        let answer = |requests: Vec<Request>| {
            for r in requests {
                if let Request::NoDebug(reply) = r {
                    reply.reply(());
                }
            }
        };
        assert!(lane.take(0).is_empty(), "none seen yet");
        answer(lane.take(2));
        assert_eq!(*answered.lock().unwrap_or_else(|e| e.into_inner()), [1, 2]);
        answer(lane.take(3));
        assert_eq!(
            *answered.lock().unwrap_or_else(|e| e.into_inner()),
            [1, 2, 3]
        );
        // Numbers wrap: u32::MAX comes before 0 and 1.
        lane.with(|q| {
            q.push_back((u32::MAX, request(&answered, 4)));
            q.push_back((1, request(&answered, 5)));
        });
        answer(lane.take(0));
        assert_eq!(
            *answered.lock().unwrap_or_else(|e| e.into_inner()),
            [1, 2, 3, 4]
        );
        answer(lane.take(1));
        assert_eq!(
            *answered.lock().unwrap_or_else(|e| e.into_inner()),
            [1, 2, 3, 4, 5]
        );
    }
}
