//! The state machine's loop: init, then take the next event (inserted and
//! retried events first, then zero timeouts, then the mailbox), hand it
//! to `handle_event`, and carry out the transition in OTP's order; on the
//! way out run `terminate`, whatever the way out is.
//!
//! A transition (OTP's `gen_statem` "state transition" steps):
//!
//! 1. the actions are done in order: replies sent at once, inserted
//!    events and timeout changes kept for the steps below;
//! 2. on a state change, or `repeat_state`, or the initial state, the
//!    state enter call runs (its actions are done as in step 1; a
//!    `repeat_state` from it runs it again);
//! 3. a postponed event is set aside;
//! 4. on a state change, the queue restarts at the oldest postponed event;
//! 5. inserted events go ahead of the queue, in the order given;
//! 6. timeouts: a state change cancels the state timeout, then the
//!    transition's timeout changes are made in order (a zero timeout joins
//!    the zero queue);
//! 7. the next event is taken; every event cancels the event timeout.
//!
//! # Invariants
//!
//! - (M1) `terminate` runs exactly once, outside any unwind (as
//!   gen_server's (S1)), and the mailbox is dropped after it, so queued
//!   callers fail at once.
//! - (M2) The machine holds a sender to its own mailbox (in its `Ctx`),
//!   so the mailbox never reads as closed while it runs.
//! - (M3) System messages (inspection, state replacement, shutdown) and
//!   stale timer messages are not events: they do not cancel the event
//!   timeout and are never postponed.

use super::StatemRef;
use super::behaviour::{Action, Enter, Event, GenStatem, Init, Next, TimerKey, Transition};
use super::timers::Timers;
use crate::behaviour::{Behaviour, Inbox, Launch, Reply, StopReason, callback};
use crate::sys::{self, About, Answered, Debug, SysEvent, WhileSuspended};
use smarm_core::actor::Hibernation;
use smarm_core::{DownReason, Exit, MonitorRef, Pid};
use std::collections::VecDeque;
use std::time::Duration;

/// A message for a state machine of type `M` (what its mailbox carries).
/// Opaque: send through a [`StatemRef`] or a [`StatemName`](super::StatemName).
pub struct Envelope<M: GenStatem>(pub(super) Msg<M>);

/// A closure run on the state and data between events.
pub(super) type Inspection<M> = Box<dyn FnOnce(&mut <M as GenStatem>::State, &mut M) + Send>;

pub(super) enum Msg<M: GenStatem> {
    /// A call, a cast, an info, an exit or a `Down`.
    Event(Event<M>),
    /// A timeout's timer fired (T1).
    Timer(TimerKey, u64),
    /// Run a closure on the state and data between events.
    Inspect(Inspection<M>),
    /// Stop with [`StopReason::Shutdown`]; acknowledged after `terminate`.
    Shutdown(Reply<()>),
    /// A `sys` request (boxed: a mailbox's messages are as large as
    /// their largest kind).
    System(Box<crate::sys::Request>),
}

/// A machine's client requests, for the client methods of its
/// [`StatemRef`]: calls, casts and infos are events.
impl<M: GenStatem> crate::behaviour::address::Requests for Envelope<M> {
    type Call = M::Call;
    type Reply = M::Reply;
    type Cast = M::Cast;
    type Info = M::Info;

    const NAMES: crate::behaviour::server_ref::RefNames =
        crate::behaviour::server_ref::ref_names!("StatemRef", "gen_statem");

    fn call(request: M::Call, reply: Reply<M::Reply>) -> Self {
        Envelope(Msg::Event(Event::Call(request, reply)))
    }
    fn cast(msg: M::Cast) -> Self {
        Envelope(Msg::Event(Event::Cast(msg)))
    }
    fn info(msg: M::Info) -> Self {
        Envelope(Msg::Event(Event::Info(msg)))
    }
    fn shutdown(reply: Reply<()>) -> Self {
        Envelope(Msg::Shutdown(reply))
    }
    fn system(request: Box<crate::sys::Request>) -> Self {
        Envelope(Msg::System(request))
    }
    fn into_call(self) -> (M::Call, Reply<M::Reply>) {
        match self.0 {
            Msg::Event(Event::Call(request, reply)) => (request, reply),
            _ => unreachable!("a failed send hands back the message sent"),
        }
    }
    fn into_cast(self) -> M::Cast {
        match self.0 {
            Msg::Event(Event::Cast(msg)) => msg,
            _ => unreachable!("a failed send hands back the message sent"),
        }
    }
    fn into_info(self) -> M::Info {
        match self.0 {
            Msg::Event(Event::Info(msg)) => msg,
            _ => unreachable!("a failed send hands back the message sent"),
        }
    }
}

/// What a callback can do besides changing the data: reach its own
/// address, trap exits and monitor actors (their news arrives as
/// [`Event::Exit`] and [`Event::Down`]).
pub struct Ctx<M: GenStatem> {
    me: StatemRef<M>,
    parent: Option<Pid>,
}

impl<M: GenStatem> Ctx<M> {
    /// This machine's address.
    pub fn me(&self) -> &StatemRef<M> {
        &self.me
    }

    /// The actor that started this machine with a link, if one did: its
    /// supervisor, in a supervision tree.
    pub fn parent(&self) -> Option<Pid> {
        self.parent
    }

    /// Trap exits: a linked actor's exit arrives as [`Event::Exit`]
    /// instead of stopping the machine. The parent's exit still stops it
    /// (`terminate` runs), as OTP's does. `false` if already trapping.
    pub fn trap_exits(&self) -> bool {
        self.me
            .address()
            .trap_exits_as(|exit| Envelope(Msg::Event(Event::Exit(exit))))
    }

    /// Monitor `pid`: when it goes down, its [`Down`](smarm_core::Down) arrives as
    /// [`Event::Down`] (at once, with `NoProc`, if it is already gone).
    pub fn monitor<A>(&self, pid: Pid<A>) -> MonitorRef {
        self.me
            .address()
            .monitor_as(pid, |down| Envelope(Msg::Event(Event::Down(down))))
    }

    /// Cancel a monitor set by [`Ctx::monitor`]: `true` if it was still
    /// set (a `Down` already queued still arrives).
    pub fn demonitor(&self, monitor: MonitorRef) -> bool {
        smarm_core::demonitor(monitor).is_some()
    }
}

/// The gen_statem behaviour's actor body, for `behaviour::launch`.
pub(super) struct Statem<M>(std::marker::PhantomData<M>);

impl<M: GenStatem> Behaviour for Statem<M> {
    type Envelope = Envelope<M>;
    type Args = M::Args;

    fn serve<I: Inbox<Envelope<M>>>(launch: Launch<Envelope<M>, M::Args>, inbox: I) -> Hibernation {
        let mut ctx = Ctx {
            me: StatemRef::new(smarm_core::self_pid(), launch.me.clone()),
            parent: launch.parent,
        };
        let hibernate_after = launch.hibernate_after;
        let Some(init) =
            launch.init(|args| callback!("init", server = machine::<M>(), M::init(args, &mut ctx)))
        else {
            return Hibernation::none();
        };
        ctx.me
            .address()
            .note_system(|request| Envelope(Msg::System(Box::new(request))));
        let Init {
            state,
            data,
            actions,
        } = init;
        Machine {
            data,
            state,
            ctx,
            first: Some(actions),
            queue: VecDeque::new(),
            postponed: VecDeque::new(),
            timers: Timers::default(),
            hibernate: false,
            ack: None,
            last: Handled::Init,
            hibernate_after,
            debug: Debug::default(),
            deferred: VecDeque::new(),
        }
        .run(inbox)
    }
}

/// A running machine: its data and state, its queues and timeouts, and
/// what a hibernation carries over to the fresh stack.
struct Machine<M: GenStatem> {
    data: M,
    state: M::State,
    ctx: Ctx<M>,
    /// `init`'s actions, until the initial state is entered (its enter
    /// call runs with itself as the old state, as a repeated state's).
    first: Option<Vec<Action<M>>>,
    /// Inserted and retried events, taken before anything else.
    queue: VecDeque<Event<M>>,
    /// Postponed events, oldest first.
    postponed: VecDeque<Event<M>>,
    timers: Timers<M::Timeout>,
    /// The last transition asked to hibernate.
    hibernate: bool,
    /// The reply to a shutdown request, sent once `terminate` has run.
    ack: Option<Reply<()>>,
    last: Handled,
    hibernate_after: Option<Duration>,
    /// Its `sys` debug options and suspension.
    debug: Debug,
    /// Messages received while suspended, handled after (D1).
    deferred: VecDeque<Msg<M>>,
}

/// What the machine last handled, for its crash report.
#[derive(Debug, Clone, Copy)]
enum Handled {
    Init,
    Event(&'static str),
    Enter,
    Inspect,
}

/// How a turn of the loop ended.
enum Turn {
    Stop(StopReason),
    Hibernate,
}

/// The machine's type, for its callbacks' spans and regions.
fn machine<M>() -> &'static str {
    std::any::type_name::<M>()
}

impl<M: GenStatem> Machine<M> {
    /// Run `inbox`'s events until the machine stops (then run `terminate`
    /// and end the actor as the loop ended) or hibernates (then wait for
    /// the next message holding no stack, and go on from a fresh one).
    fn run<I: Inbox<Envelope<M>>>(mut self, inbox: I) -> Hibernation {
        let mut hibernating = false;
        let ended = crate::behaviour::termination::run(|| {
            if let Some(actions) = self.first.take() {
                let first = Transition {
                    next: Next::Repeat,
                    postpone: None,
                    actions,
                };
                if let Some(reason) = self.transition(first) {
                    return reason;
                }
            }
            let turn = match self.hibernate_after {
                None => self.serve(&inbox, |inbox: &I| inbox.recv().ok()), // (M2)
                Some(idle) => self.serve(&inbox, |inbox: &I| inbox.recv_timeout(idle).ok()),
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
            self.hibernate = false;
            return Hibernation::until(inbox, move |inbox| self.run(inbox));
        }
        self.end(ended, inbox)
    }

    /// The machine stopped: run `terminate` (M1) and end the actor.
    fn end<I>(mut self, ended: crate::behaviour::termination::Ended, inbox: I) -> Hibernation {
        if ended.panicked() {
            smarm_core::report::note_last_message(self.describe_last());
        }
        self.timers.clear();
        callback!(
            "terminate",
            server = machine::<M>(),
            self.data
                .terminate(&ended.reason, &self.state, &mut self.ctx)
        );
        drop(inbox); // (M1): queued callers fail now
        let ack = self.ack.take();
        drop(self);
        if let Some(ack) = ack {
            let _ = ack.reply(());
        }
        ended.finish();
        Hibernation::none()
    }

    fn describe_last(&self) -> String {
        let state = &self.state;
        match self.last {
            Handled::Init => format!("the enter call of its initial state {state:?}"),
            Handled::Event(kind) => format!("handle_event: a {kind} event in state {state:?}"),
            Handled::Enter => format!("state_enter: entering state {state:?}"),
            Handled::Inspect => format!("an inspection of its state, in state {state:?}"),
        }
    }

    /// Handle events until the machine stops or hibernates; `receive`
    /// waits for the next message (`None`: idle).
    fn serve<I: Inbox<Envelope<M>>>(
        &mut self,
        inbox: &I,
        receive: impl Fn(&I) -> Option<Envelope<M>>,
    ) -> Turn {
        loop {
            if self.debug.suspended
                && let Err(reason) = sys::suspend_loop(self, || {
                    inbox.recv_while_suspended().ok().map(|Envelope(msg)| msg)
                })
            {
                return Turn::Stop(reason);
            }
            // Taken from the queue or a zero timeout, or received (a
            // message, or a timer's: `sys` notes those as `receive`).
            let (event, received) = match self.queue.pop_front() {
                Some(event) => (event, false),
                None => match self.timers.pop_zero() {
                    Some(event) => (event, false),
                    None => {
                        let msg = match self.deferred.pop_front() {
                            Some(msg) => msg, // (D1)
                            None => {
                                if self.hibernate {
                                    return Turn::Hibernate;
                                }
                                let Some(Envelope(msg)) = receive(inbox) else {
                                    return Turn::Hibernate;
                                };
                                msg
                            }
                        };
                        match self.system(msg) {
                            Ok(Some(event)) => (event, true),
                            Ok(None) => continue, // (M3)
                            Err(reason) => return Turn::Stop(reason),
                        }
                    }
                },
            };
            if !matches!(event, Event::EventTimeout(_)) {
                self.timers.cancel(TimerKey::Event);
            }
            let (event, noted) = if self.debug.on {
                let noted = self.note_event(&event, received);
                let mut event = event;
                if let Event::Call(_, reply) = &mut event
                    && received
                {
                    // Counted once, when received (not again when a
                    // postponed call is retried).
                    self.debug.count_reply(reply);
                }
                (event, Some(noted))
            } else {
                (event, None)
            };
            self.last = Handled::Event(event.kind());
            let transition = callback!(
                "handle_event",
                server = machine::<M>(),
                self.data.handle_event(&self.state, event, &mut self.ctx)
            );
            if let Some(noted) = noted {
                self.note_handled(noted, &transition);
            }
            if let Some(reason) = self.transition(transition) {
                return Turn::Stop(reason);
            }
        }
    }

    /// A message from the mailbox: its event, or nothing (a system
    /// message, done here, or a stale timer's), or why to stop.
    fn system(&mut self, msg: Msg<M>) -> Result<Option<Event<M>>, StopReason> {
        match msg {
            Msg::Event(Event::Exit(exit)) if Some(exit.from) == self.ctx.parent => {
                Err(parent_exit(exit))
            }
            Msg::Event(event) => Ok(Some(event)),
            Msg::Timer(key, serial) => Ok(self.timers.fired(key, serial)),
            Msg::Inspect(f) => {
                self.last = Handled::Inspect;
                f(&mut self.state, &mut self.data);
                Ok(None)
            }
            Msg::Shutdown(reply) => {
                self.ack = Some(reply);
                Err(StopReason::Shutdown)
            }
            Msg::System(request) => {
                let (state, me, kept) = (&self.state, &self.ctx.me, self.deferred.len());
                let about = |data: &M| About {
                    pid: me.pid(),
                    behaviour: "gen_statem",
                    module: machine::<M>(),
                    state: data.format_status(state),
                    // What it keeps while suspended is still queued for it.
                    mailbox_len: me.mailbox_len() + kept,
                };
                // By type, a state machine's state is its data.
                let by_type = crate::sys::itself::<M>;
                match self.debug.handle(*request, &mut self.data, by_type, about) {
                    Answered::GoOn => Ok(None),
                    Answered::Terminate(reason, reply) => {
                        self.ack = Some(reply);
                        Err(reason)
                    }
                }
            }
        }
    }

    /// Note an event for `sys` (only while a debug option is on): a
    /// received one as `receive`; what the callback did with it follows
    /// ([`note_handled`](Self::note_handled)).
    #[cold]
    #[inline(never)]
    fn note_event(&mut self, event: &Event<M>, received: bool) -> SysEvent {
        let noted = SysEvent::now(
            self.ctx.me.pid(),
            "receive",
            event.kind(),
            M::format_message(event),
        )
        .in_state(format!("{:?}", self.state));
        if received {
            self.debug.event(noted.clone());
        }
        noted
    }

    /// Note what the callback did with the event `noted`: `postpone` or
    /// `consume`, with the state it goes to if another (OTP's
    /// `... in state Locked => Open`).
    #[cold]
    #[inline(never)]
    fn note_handled(&mut self, mut noted: SysEvent, transition: &Transition<M>) {
        noted.action = if transition.postpone.is_some() {
            "postpone"
        } else {
            "consume"
        };
        if let Next::To(next) = &transition.next
            && *next != self.state
        {
            noted.next_state = Some(format!("{next:?}"));
        }
        noted.at = smarm_core::time::system_now();
        if self.debug.on {
            self.debug.event(noted);
        }
    }

    /// Carry out a transition in OTP's order (the module's steps 1–6);
    /// `Some(reason)` if the machine is to stop.
    fn transition(&mut self, transition: Transition<M>) -> Option<StopReason> {
        let Transition {
            next,
            postpone,
            actions,
        } = transition;
        let mut pending = Pending::default();
        pending.take(actions); // step 1
        let changed = match next {
            Next::Stop(reason) => return Some(reason),
            Next::Keep => None,
            Next::Repeat => Some(None),
            Next::To(state) if state == self.state => None,
            Next::To(state) => Some(Some(std::mem::replace(&mut self.state, state))),
        };
        let changed = match changed {
            None => false,
            Some(old) => {
                // Step 2.
                if let Some(reason) = self.enter(old.as_ref(), &mut pending) {
                    return Some(reason);
                }
                old.is_some()
            }
        };
        if let Some(event) = postpone {
            self.postponed.push_back(event); // step 3
        }
        if changed {
            // Step 4: the oldest postponed event first.
            while let Some(event) = self.postponed.pop_back() {
                self.queue.push_front(event);
            }
        }
        for event in pending.next_events.into_iter().rev() {
            self.queue.push_front(event); // step 5
        }
        if changed {
            self.timers.cancel(TimerKey::State); // step 6
        }
        let me = &self.ctx.me;
        let arm = |key: TimerKey, serial: u64, after: Duration| {
            let me = me.clone();
            smarm_core::time::call_after(after, move || {
                let _ = me.deliver_system(Msg::Timer(key, serial));
            })
        };
        for (key, op) in pending.timers {
            self.timers.apply(key, op, &arm);
        }
        self.hibernate = pending.hibernate;
        None
    }

    /// Run the state enter call (again while it asks to repeat); `old` is
    /// the state left, `None` when the state was not changed.
    fn enter(&mut self, old: Option<&M::State>, pending: &mut Pending<M>) -> Option<StopReason> {
        let mut old = old;
        loop {
            self.last = Handled::Enter;
            if self.debug.on {
                self.note_enter();
            }
            let from = old.unwrap_or(&self.state);
            let Enter { next, actions } = callback!(
                "state_enter",
                server = machine::<M>(),
                self.data.state_enter(from, &self.state, &mut self.ctx)
            );
            pending.take(actions);
            match next {
                Next::Keep | Next::To(()) => return None,
                Next::Repeat => old = None,
                Next::Stop(reason) => return Some(reason),
            }
        }
    }
}

impl<M: GenStatem> Machine<M> {
    /// Note a state enter call for `sys`.
    #[cold]
    #[inline(never)]
    fn note_enter(&mut self) {
        let entered = SysEvent::now(self.ctx.me.pid(), "enter", "enter", String::new())
            .in_state(format!("{:?}", self.state));
        self.debug.event(entered);
    }
}

/// What a transition's actions leave for its later steps.
struct Pending<M: GenStatem> {
    next_events: Vec<Event<M>>,
    timers: Vec<(TimerKey, super::behaviour::TimerOp<M::Timeout>)>,
    hibernate: bool,
}

impl<M: GenStatem> Default for Pending<M> {
    fn default() -> Self {
        Pending {
            next_events: Vec::new(),
            timers: Vec::new(),
            hibernate: false,
        }
    }
}

impl<M: GenStatem> Pending<M> {
    /// Do `actions` in order: replies now, the rest kept.
    fn take(&mut self, actions: Vec<Action<M>>) {
        for action in actions {
            match action {
                Action::Reply(reply, value) => {
                    let _ = reply.reply(value);
                }
                Action::NextEvent(event) => self.next_events.push(event),
                Action::Hibernate => self.hibernate = true,
                Action::Timer(key, op) => self.timers.push((key, op)),
            }
        }
    }
}

/// What the suspended loop needs of a machine.
impl<M: GenStatem> sys::Suspendable for Machine<M> {
    type Msg = Msg<M>;

    fn is_suspended(&self) -> bool {
        self.debug.suspended
    }

    fn while_suspended(&self, msg: Msg<M>) -> WhileSuspended<Msg<M>> {
        match msg {
            Msg::Event(Event::Exit(exit)) if Some(exit.from) == self.ctx.parent => {
                WhileSuspended::Stop(parent_exit(exit))
            }
            Msg::System(_) | Msg::Inspect(_) | Msg::Shutdown(_) => WhileSuspended::Answer(msg),
            other => WhileSuspended::Keep(other),
        }
    }

    fn answer(&mut self, msg: Msg<M>) -> Result<(), StopReason> {
        self.system(msg).map(drop)
    }

    fn keep(&mut self, msg: Msg<M>) {
        self.deferred.push_back(msg);
    }
}

/// Why a machine stops when its parent exits.
fn parent_exit(exit: Exit) -> StopReason {
    if matches!(
        exit.reason,
        DownReason::Exit | DownReason::Stopped | DownReason::Shutdown
    ) {
        StopReason::Shutdown
    } else {
        StopReason::Error(format!("parent exited: {}", exit.reason))
    }
}
