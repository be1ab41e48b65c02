//! The [`GenStatem`] behaviour: the callbacks a state machine implements,
//! the [`Event`]s it handles, and what each callback returns: a
//! [`Transition`] from an event, an [`Enter`] from a state enter call, an
//! [`Init`] from `init`, each carrying its transition actions.

use super::Ctx;
use crate::behaviour::{InitError, Reply, StopReason};
use smarm_core::{Down, Exit};
use std::fmt::Debug;
use std::time::{Duration, Instant};

/// A state machine's behaviour: its data type (`Self`), its state type,
/// its event types and the callbacks that run on them, as Erlang's
/// `gen_statem` in `handle_event_function` mode (match on the state and
/// the event together; a `match state` per event reads as OTP's
/// `state_functions`). Only [`init`](GenStatem::init) and
/// [`handle_event`](GenStatem::handle_event) are required.
pub trait GenStatem: Send + Sized + 'static {
    /// What [`start`](super::start) passes to [`init`](GenStatem::init).
    type Args: Send + 'static;
    /// The machine's state (its name, in OTP's words): a change of state
    /// is a new value not equal to the current one. `Debug` names it in
    /// crash reports.
    type State: PartialEq + Debug + Send + 'static;
    /// A request that expects a reply ([`Event::Call`]).
    type Call: Send + 'static;
    /// The reply to a [`Call`](GenStatem::Call).
    type Reply: Send + 'static;
    /// A message that expects no reply ([`Event::Cast`]).
    type Cast: Send + 'static;
    /// Any other message ([`Event::Info`]).
    type Info: Send + 'static;
    /// An event the machine inserts itself with
    /// [`Transition::next_event`] ([`Event::Internal`]).
    type Internal: Send + 'static;
    /// What a timeout delivers when it fires ([`Event::EventTimeout`],
    /// [`Event::StateTimeout`], [`Event::Timeout`]).
    type Timeout: Send + 'static;

    /// Build the data and choose the initial state, in the machine's own
    /// actor. [`start`](super::start) returns once this has. The state
    /// enter call ([`state_enter`](GenStatem::state_enter)) runs for the
    /// initial state before the first event.
    fn init(args: Self::Args, ctx: &mut Ctx<Self>) -> Result<Init<Self>, InitError>;

    /// Handle an event in `state`: change the data in place, and say
    /// where to go and what else to do.
    fn handle_event(
        &mut self,
        state: &Self::State,
        event: Event<Self>,
        ctx: &mut Ctx<Self>,
    ) -> Transition<Self>;

    /// The state enter call: `state` was just entered from `old` (the
    /// same state for the initial state and for
    /// [`repeat_state`](Transition::repeat_state)). It cannot change the
    /// state, postpone or insert events (an [`Enter`] has no such
    /// actions), as OTP's enter calls cannot. By default: nothing.
    fn state_enter(
        &mut self,
        old: &Self::State,
        state: &Self::State,
        ctx: &mut Ctx<Self>,
    ) -> Enter<Self> {
        let _ = (old, state, ctx);
        Enter::keep_state()
    }

    /// Clean up before the machine exits, for any reason, in `state`. By
    /// default: nothing (the data is dropped after this).
    fn terminate(&mut self, reason: &StopReason, state: &Self::State, ctx: &mut Ctx<Self>) {
        let _ = (reason, state, ctx);
    }

    /// The state and data as [`sys::get_status`](crate::sys::get_status)
    /// shows them (OTP's `format_status`). By default: the state, and the
    /// data's type.
    fn format_status(&self, state: &Self::State) -> String {
        format!("{state:?} (data: a {})", std::any::type_name::<Self>())
    }

    /// How an event's message shows in [`sys`](crate::sys)'s trace and
    /// log events (`*DBG* code-lock receive cast 1 in state Locked`). By
    /// default: its type's name, so nothing of a message leaks into a log
    /// unless the machine says so; a machine whose event types implement
    /// `Debug` shows them with [`Event::payload`]:
    ///
    /// ```
    /// # use smarm::gen_statem::{Ctx, Event, GenStatem, Init, InitError, Transition};
    /// # struct Door;
    /// # impl GenStatem for Door {
    /// #     type Args = ();
    /// #     type State = bool;
    /// #     type Call = ();
    /// #     type Reply = ();
    /// #     type Cast = u8;
    /// #     type Info = ();
    /// #     type Internal = ();
    /// #     type Timeout = ();
    /// #     fn init(_: (), _: &mut Ctx<Self>) -> Result<Init<Self>, InitError> {
    /// #         Ok(Init::new(false, Door))
    /// #     }
    /// #     fn handle_event(&mut self, _: &bool, _: Event<Self>, _: &mut Ctx<Self>) -> Transition<Self> {
    /// #         Transition::keep_state()
    /// #     }
    /// fn format_message(event: &Event<Self>) -> String {
    ///     format!("{:?}", event.payload()) // `*DBG* door receive cast 1 in state false`
    /// }
    /// # }
    /// ```
    fn format_message(event: &Event<Self>) -> String {
        event.type_name().to_string()
    }
}

/// An event for [`GenStatem::handle_event`]: OTP's event types.
pub enum Event<M: GenStatem> {
    /// A call ([`StatemRef::call`](super::StatemRef::call)): answer
    /// through the [`Reply`], now, with [`Transition::reply`], or later.
    Call(M::Call, Reply<M::Reply>),
    /// A cast ([`StatemRef::cast`](super::StatemRef::cast)).
    Cast(M::Cast),
    /// Any other message ([`StatemRef::info`](super::StatemRef::info)).
    Info(M::Info),
    /// An event inserted by [`Transition::next_event`] (OTP's `internal`;
    /// any other kind can be inserted too).
    Internal(M::Internal),
    /// The event timeout fired: no event arrived for its time.
    EventTimeout(M::Timeout),
    /// The state timeout fired: the machine stayed in the state for its
    /// time.
    StateTimeout(M::Timeout),
    /// The generic timeout of this name fired.
    Timeout(&'static str, M::Timeout),
    /// A linked actor exited, while the machine traps exits
    /// ([`Ctx::trap_exits`]).
    Exit(Exit),
    /// An actor watched with [`Ctx::monitor`] went down.
    Down(Down),
}

impl<M: GenStatem> Event<M> {
    /// The event's kind, for logs and crash reports.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Call(..) => "call",
            Event::Cast(_) => "cast",
            Event::Info(_) => "info",
            Event::Internal(_) => "internal",
            Event::EventTimeout(_) => "timeout",
            Event::StateTimeout(_) => "state_timeout",
            Event::Timeout(..) => "{timeout, Name}",
            Event::Exit(_) => "exit",
            Event::Down(_) => "down",
        }
    }
}

impl<M: GenStatem> Event<M> {
    /// The name of the type of the event's message (the
    /// [`format_message`](GenStatem::format_message) hook's default).
    pub fn type_name(&self) -> &'static str {
        use std::any::type_name;
        match self {
            Event::Call(..) => type_name::<M::Call>(),
            Event::Cast(_) => type_name::<M::Cast>(),
            Event::Info(_) => type_name::<M::Info>(),
            Event::Internal(_) => type_name::<M::Internal>(),
            Event::EventTimeout(_) | Event::StateTimeout(_) | Event::Timeout(..) => {
                type_name::<M::Timeout>()
            }
            Event::Exit(_) => type_name::<Exit>(),
            Event::Down(_) => type_name::<Down>(),
        }
    }

    /// The event's message, whose `Debug` shows it alone (`1`, not
    /// `Cast(1)`: `sys`'s events say the kind), where the machine's event
    /// types implement `Debug`.
    pub fn payload(&self) -> Payload<'_, M> {
        Payload(self)
    }
}

/// An [`Event`]'s message, by [`Event::payload`]: its `Debug` shows the
/// message without the event's kind (a named timeout: its name and
/// value).
pub struct Payload<'a, M: GenStatem>(&'a Event<M>);

impl<M: GenStatem> Debug for Payload<'_, M>
where
    M::Call: Debug,
    M::Cast: Debug,
    M::Info: Debug,
    M::Internal: Debug,
    M::Timeout: Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Event::Call(call, _) => call.fmt(f),
            Event::Cast(cast) => cast.fmt(f),
            Event::Info(info) => info.fmt(f),
            Event::Internal(internal) => internal.fmt(f),
            Event::EventTimeout(value) | Event::StateTimeout(value) => value.fmt(f),
            Event::Timeout(name, value) => write!(f, "{name:?} {value:?}"),
            Event::Exit(exit) => exit.fmt(f),
            Event::Down(down) => down.fmt(f),
        }
    }
}

/// `Cast(1)`, `Call(Code, Reply)`, `Timeout("idle", ())`: the event's
/// kind and message.
impl<M: GenStatem> Debug for Event<M>
where
    M::Call: Debug,
    M::Cast: Debug,
    M::Info: Debug,
    M::Internal: Debug,
    M::Timeout: Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let variant = match self {
            Event::Call(call, _) => return write!(f, "Call({call:?}, Reply)"),
            Event::Timeout(name, value) => return write!(f, "Timeout({name:?}, {value:?})"),
            Event::Cast(_) => "Cast",
            Event::Info(_) => "Info",
            Event::Internal(_) => "Internal",
            Event::EventTimeout(_) => "EventTimeout",
            Event::StateTimeout(_) => "StateTimeout",
            Event::Exit(_) => "Exit",
            Event::Down(_) => "Down",
        };
        write!(f, "{variant}({:?})", self.payload())
    }
}

/// Which timeout an action is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TimerKey {
    /// The event timeout (`timeout`).
    Event,
    /// The state timeout (`state_timeout`).
    State,
    /// A generic timeout (`{timeout, Name}`).
    Named(&'static str),
}

/// When a timeout is to fire.
#[derive(Debug, Clone, Copy)]
pub(super) enum When {
    /// A relative time of zero: queued after the events already queued,
    /// before any message not yet received.
    Zero,
    After(Duration),
    At(Instant),
}

/// What an action does to a timeout.
pub(super) enum TimerOp<T> {
    Start(When, T),
    Cancel,
    /// Replace a running timeout's content; start it at zero if none runs.
    Update(T),
}

/// A transition action, done in order once the callback returns.
pub(super) enum Action<M: GenStatem> {
    /// Sent at once, when the actions are done.
    Reply(Reply<M::Reply>, M::Reply),
    /// Inserted ahead of the queue, in the order given.
    NextEvent(Event<M>),
    /// Hibernate before waiting for the next message.
    Hibernate,
    Timer(TimerKey, TimerOp<M::Timeout>),
}

/// Where a [`Transition`] goes.
pub(super) enum Next<S> {
    Keep,
    Repeat,
    To(S),
    Stop(StopReason),
}

/// What an event's callback returns: where the machine goes
/// ([`next_state`](Transition::next_state),
/// [`keep_state`](Transition::keep_state),
/// [`repeat_state`](Transition::repeat_state),
/// [`stop`](Transition::stop)), and the actions to take on the way, done
/// in the order given (replies are sent at once; of two timeouts of one
/// kind, the later wins).
#[must_use = "a Transition does nothing unless returned from the callback"]
pub struct Transition<M: GenStatem> {
    pub(super) next: Next<M::State>,
    pub(super) postpone: Option<Event<M>>,
    pub(super) actions: Vec<Action<M>>,
}

/// What a state enter call returns: stay (or run the enter call again),
/// or stop, with the actions an enter call may take (replies, timeouts,
/// hibernation; no postponing and no inserted events, as in OTP).
#[must_use = "an Enter does nothing unless returned from state_enter"]
pub struct Enter<M: GenStatem> {
    pub(super) next: Next<()>,
    pub(super) actions: Vec<Action<M>>,
}

/// What `init` returns: the initial state, the data, and actions to take
/// before the first event (timeouts, inserted events, hibernation).
#[must_use = "an Init does nothing unless returned from init"]
pub struct Init<M: GenStatem> {
    pub(super) state: M::State,
    pub(super) data: M,
    pub(super) actions: Vec<Action<M>>,
}

impl<M: GenStatem> Transition<M> {
    fn to(next: Next<M::State>) -> Self {
        Transition {
            next,
            postpone: None,
            actions: Vec::new(),
        }
    }

    /// Go to `state` (OTP's `next_state`): a state change if it differs
    /// from the current one, which retries the postponed events, cancels
    /// the state timeout and runs the state enter call.
    pub fn next_state(state: M::State) -> Self {
        Transition::to(Next::To(state))
    }

    /// Stay in the current state (OTP's `keep_state`): no enter call, no
    /// retry of postponed events.
    pub fn keep_state() -> Self {
        Transition::to(Next::Keep)
    }

    /// Stay in the current state and run its enter call again (OTP's
    /// `repeat_state`); postponed events are not retried.
    pub fn repeat_state() -> Self {
        Transition::to(Next::Repeat)
    }

    /// Stop: [`GenStatem::terminate`] runs with `reason`, then the
    /// machine exits. Replies among the actions are sent first (OTP's
    /// `stop_and_reply`); other actions are dropped.
    pub fn stop(reason: StopReason) -> Self {
        Transition::to(Next::Stop(reason))
    }

    /// Stop after answering `reply` with `value` (OTP's
    /// `stop_and_reply`).
    pub fn stop_and_reply(reason: StopReason, reply: Reply<M::Reply>, value: M::Reply) -> Self {
        Transition::stop(reason).reply(reply, value)
    }

    /// Postpone `event` (the one being handled): it is kept and retried,
    /// oldest first, after the next state change.
    pub fn postpone(mut self, event: Event<M>) -> Self {
        self.postpone = Some(event);
        self
    }

    /// Insert `event` to be handled next, before any queued event; several
    /// are handled in the order inserted.
    pub fn next_event(mut self, event: Event<M>) -> Self {
        self.actions.push(Action::NextEvent(event));
        self
    }
}

impl<M: GenStatem> Enter<M> {
    fn to(next: Next<()>) -> Self {
        Enter {
            next,
            actions: Vec::new(),
        }
    }

    /// Stay in the state just entered.
    pub fn keep_state() -> Self {
        Enter::to(Next::Keep)
    }

    /// Run the enter call again, with the state as its own old state.
    pub fn repeat_state() -> Self {
        Enter::to(Next::Repeat)
    }

    /// Stop, as [`Transition::stop`].
    pub fn stop(reason: StopReason) -> Self {
        Enter::to(Next::Stop(reason))
    }
}

impl<M: GenStatem> Init<M> {
    /// Start in `state` with `data`.
    pub fn new(state: M::State, data: M) -> Self {
        Init {
            state,
            data,
            actions: Vec::new(),
        }
    }

    /// Insert `event` to be handled first, as [`Transition::next_event`].
    pub fn next_event(mut self, event: Event<M>) -> Self {
        self.actions.push(Action::NextEvent(event));
        self
    }
}

/// The actions every callback result can take: replies, hibernation and
/// the three kinds of timeouts.
macro_rules! actions {
    ($ty:ident) => {
        impl<M: GenStatem> $ty<M> {
            /// Answer a call with `value` (sent as the actions are done, in
            /// order).
            pub fn reply(mut self, reply: Reply<M::Reply>, value: M::Reply) -> Self {
                self.actions.push(Action::Reply(reply, value));
                self
            }

            /// Hibernate before waiting for the next message: the stack is
            /// given back and the next message is handled on a fresh one
            /// ([`smarm::hibernate`](smarm_core::hibernate)). No effect
            /// while events are queued.
            pub fn hibernate(mut self) -> Self {
                self.actions.push(Action::Hibernate);
                self
            }

            /// Start the event timeout: [`Event::EventTimeout`] with
            /// `content` after `after`, unless any event comes first (an
            /// inserted or retried one too). A zero time fires only if no
            /// event is queued.
            pub fn event_timeout(self, after: Duration, content: M::Timeout) -> Self {
                self.timer(TimerKey::Event, TimerOp::Start(when(after), content))
            }

            /// Call off an event timeout started by an earlier action of
            /// this transition (any event cancels a running one).
            pub fn cancel_event_timeout(self) -> Self {
                self.timer(TimerKey::Event, TimerOp::Cancel)
            }

            /// Start the state timeout: [`Event::StateTimeout`] with
            /// `content` after `after`, unless the state changes first.
            /// Started in a transition that changes the state, it runs in
            /// the new state. Restarting it replaces it.
            pub fn state_timeout(self, after: Duration, content: M::Timeout) -> Self {
                self.timer(TimerKey::State, TimerOp::Start(when(after), content))
            }

            /// [`state_timeout`](Self::state_timeout) at an instant (OTP's
            /// `{abs, true}`).
            pub fn state_timeout_at(self, at: Instant, content: M::Timeout) -> Self {
                self.timer(TimerKey::State, TimerOp::Start(When::At(at), content))
            }

            /// Cancel the state timeout.
            pub fn cancel_state_timeout(self) -> Self {
                self.timer(TimerKey::State, TimerOp::Cancel)
            }

            /// Give the running state timeout new content, keeping its
            /// time; if none runs, it fires at once (as a zero timeout).
            pub fn update_state_timeout(self, content: M::Timeout) -> Self {
                self.timer(TimerKey::State, TimerOp::Update(content))
            }

            /// Start the generic timeout `name`: [`Event::Timeout`] with
            /// `name` and `content` after `after`. It survives state
            /// changes; starting a running name again restarts it.
            pub fn timeout(self, name: &'static str, after: Duration, content: M::Timeout) -> Self {
                self.timer(TimerKey::Named(name), TimerOp::Start(when(after), content))
            }

            /// [`timeout`](Self::timeout) at an instant.
            pub fn timeout_at(self, name: &'static str, at: Instant, content: M::Timeout) -> Self {
                self.timer(TimerKey::Named(name), TimerOp::Start(When::At(at), content))
            }

            /// Cancel the generic timeout `name`.
            pub fn cancel_timeout(self, name: &'static str) -> Self {
                self.timer(TimerKey::Named(name), TimerOp::Cancel)
            }

            /// Give the running generic timeout `name` new content,
            /// keeping its time; if it does not run, it fires at once.
            pub fn update_timeout(self, name: &'static str, content: M::Timeout) -> Self {
                self.timer(TimerKey::Named(name), TimerOp::Update(content))
            }

            fn timer(mut self, key: TimerKey, op: TimerOp<M::Timeout>) -> Self {
                self.actions.push(Action::Timer(key, op));
                self
            }
        }
    };
}

actions!(Transition);
actions!(Enter);
actions!(Init);

/// A relative time: zero is the zero timeout.
fn when(after: Duration) -> When {
    if after.is_zero() {
        When::Zero
    } else {
        When::After(after)
    }
}
