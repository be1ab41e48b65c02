//! sys: inspecting and debugging a live process, as Erlang's `sys` module
//! does, for every behaviour (gen_server, gen_statem, supervisors, typed
//! actors: their own loops and those run as gen_servers).
//!
//! A behaviour's loop answers system requests between its callbacks:
//!
//! | You call | The process |
//! |---|---|
//! | [`get_state`], [`replace_state`] | reads (or changes, on a copy: a panicking function leaves it as it was) its state |
//! | [`get_state_of`], [`replace_state_of`] | the same, for any process by pid or address, the state asked for by its type |
//! | [`get_status`] | reports its [`Status`]: behaviour, type, state as its `format_status` shows it, mailbox, debug options |
//! | [`suspend`], [`resume`] | while suspended, keeps its requests queued and answers only system requests (state, status, debug, shutdown) |
//! | [`statistics`] | counts the events it handles from now ([`Statistics`]) |
//! | [`log`] | keeps its last N events ([`SysEvent`], 10 by default) |
//! | [`trace`] | prints each event it handles to standard error, as `*DBG*` lines |
//! | [`install`], [`remove`] | calls a function of yours on each event |
//! | [`no_debug`] | turns all of that off |
//!
//! ```
//! use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply};
//! use smarm::sys;
//!
//! #[derive(Clone)]
//! struct Counter(u64);
//! impl GenServer for Counter {
//!     type Args = ();
//!     type Call = ();
//!     type Reply = u64;
//!     type Cast = u64;
//!     type Info = ();
//!     fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> { Ok(Counter(0)) }
//!     fn handle_call(&mut self, _: (), reply: Reply<u64>, _: &mut Ctx<Self>) -> Flow {
//!         reply.reply(self.0);
//!         Flow::Continue
//!     }
//!     fn handle_cast(&mut self, n: u64, _: &mut Ctx<Self>) -> Flow {
//!         self.0 += n;
//!         Flow::Continue
//!     }
//! }
//!
//! smarm::run(|| {
//!     let counter = gen_server::start::<Counter>(()).unwrap();
//!     sys::log(&counter, sys::Log::On(10)).unwrap();
//!     counter.cast(2).unwrap();
//!     assert_eq!(counter.call(()), Ok(2));
//!     let events = sys::log(&counter, sys::Log::Get).unwrap();
//!     assert_eq!(events.len(), 2); // the cast, then the call
//!     sys::replace_state(&counter, |c| c.0 = 40).unwrap();
//!     assert_eq!(sys::get_state(&counter).unwrap().0, 40);
//! });
//! ```
//!
//! Debugging costs a handled message one check of a flag while it is
//! off. A process is reached by its typed address, or by pid
//! ([`status_of`], which the observer uses; a typed actor's `Pid<M>`).
//!
//! # Invariants
//!
//! - (D1) Only system requests are handled while suspended; everything
//!   else received meanwhile is kept, in order, and handled after
//!   [`resume`], before anything received later.
//! - (D2) An installed function that panics is removed (and reported
//!   once in the process's `*DBG*` output); the process goes on.

use crate::behaviour::{CallError, DEFAULT_CALL_TIMEOUT, ReplaceStateError, Reply};
use smarm_core::Pid;
use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// One event a process handled, as [`log`] keeps it and [`trace`] and
/// [`install`]ed functions see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysEvent {
    /// The process.
    pub pid: Pid,
    /// When it was handled.
    pub at: SystemTime,
    /// What kind of event: `call`, `cast`, `info`, `exit`, `down`, and
    /// for a gen_statem also `internal`, `timeout`, `state_timeout`,
    /// `{timeout, Name}`.
    pub kind: &'static str,
    /// The message's type (a typed actor's message: its variant).
    pub message: &'static str,
    /// For a gen_statem: the state it was handled in.
    pub state: Option<String>,
}

impl fmt::Display for SysEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "*DBG* {} got {} {}", self.pid, self.kind, self.message)?;
        if let Some(state) = &self.state {
            write!(f, " in state {state}")?;
        }
        Ok(())
    }
}

/// What [`get_status`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Status {
    /// The process.
    pub pid: Pid,
    /// `gen_server`, `gen_statem`, `supervisor`, or `actor` (a typed actor's own loop).
    pub behaviour: &'static str,
    /// Its callback type.
    pub module: &'static str,
    /// Its state, as the behaviour's `format_status` shows it.
    pub state: String,
    /// Whether it is suspended.
    pub suspended: bool,
    /// Messages waiting in its mailbox.
    pub mailbox_len: usize,
    /// Events logged ([`log`]), if logging.
    pub log_size: Option<usize>,
    /// Whether [`trace`] is on.
    pub trace: bool,
    /// Names of the [`install`]ed functions.
    pub installed: Vec<&'static str>,
}

/// What [`statistics`] counted, since it was turned on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Statistics {
    /// When counting started.
    pub since: SystemTime,
    /// How long ago that was.
    pub elapsed: Duration,
    /// Events handled since (calls, casts, infos, ...).
    pub messages_in: u64,
    /// Of those, calls.
    pub calls_in: u64,
    /// Timeslice-clock ticks the process has run for in all (feature
    /// `budget-accounting`), as introspection reports it.
    pub budget_cycles: Option<u64>,
}

/// What [`statistics`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stats {
    /// Start counting (from zero).
    On,
    /// Stop counting.
    Off,
    /// What was counted, if counting.
    Get,
}

/// What [`log`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Log {
    /// Keep the last `n` events (Erlang's default is 10).
    On(usize),
    /// Stop keeping them (and forget them).
    Off,
    /// The events kept, oldest first.
    Get,
}

/// A system request, as a behaviour's mailbox carries it (made by this
/// module's functions).
#[doc(hidden)]
pub enum Request {
    Suspend(Reply<()>),
    Resume(Reply<()>),
    Status(Reply<Status>),
    Statistics(Stats, Reply<Option<Statistics>>),
    Log(Log, Reply<Vec<SysEvent>>),
    Trace(bool, Reply<()>),
    Install(&'static str, EventFn, Reply<()>),
    Remove(&'static str, Reply<bool>),
    NoDebug(Reply<()>),
    State(StateFn),
}

/// A function [`install`]ed to see each event.
type EventFn = Box<dyn FnMut(&SysEvent) + Send>;

/// A request for the state by its type ([`get_state_of`]): called with
/// the state and the name of its type.
type StateFn = Box<dyn FnOnce(&mut dyn Any, &'static str) + Send>;

/// What a behaviour's status holds besides its debug options: for
/// [`Debug::handle`].
pub(crate) struct About {
    pub(crate) pid: Pid,
    pub(crate) behaviour: &'static str,
    pub(crate) module: &'static str,
    pub(crate) state: String,
    pub(crate) mailbox_len: usize,
}

/// A state as [`get_state_of`] reaches it: itself, by its own type.
pub(crate) fn itself<S: 'static>(state: &mut S) -> (&mut dyn Any, &'static str) {
    (state, std::any::type_name::<S>())
}

/// A behaviour's debug options and suspension: what its loop keeps for
/// sys.
#[derive(Default)]
pub(crate) struct Debug {
    /// Any event hook on (checked per message: one load).
    pub(crate) on: bool,
    /// `on` or `suspended`: what a typed actor's loop checks per message.
    pub(crate) attention: bool,
    pub(crate) suspended: bool,
    log: Option<(usize, VecDeque<SysEvent>)>,
    trace: bool,
    installed: Vec<(&'static str, EventFn)>,
    stats: Option<(SystemTime, Instant, u64, u64)>,
}

impl Debug {
    /// Note an event handled (only called while `on`).
    #[cold]
    pub(crate) fn event(&mut self, event: SysEvent) {
        if let Some((since, at, n, calls)) = &mut self.stats {
            let _ = (since, at);
            *n += 1;
            if event.kind == "call" {
                *calls += 1;
            }
        }
        if self.trace {
            eprintln!("{event}");
        }
        let mut panicked = Vec::new();
        for (name, f) in &mut self.installed {
            if catch_unwind(AssertUnwindSafe(|| f(&event))).is_err() {
                panicked.push(*name);
            }
        }
        for name in panicked {
            eprintln!(
                "*DBG* {} installed function {name:?} panicked: removed",
                event.pid
            );
            self.installed.retain(|(n, _)| *n != name); // (D2)
        }
        if let Some((size, events)) = &mut self.log {
            if events.len() == *size {
                events.pop_front();
            }
            events.push_back(event);
        }
        self.refresh();
    }

    fn refresh(&mut self) {
        self.on =
            self.log.is_some() || self.trace || !self.installed.is_empty() || self.stats.is_some();
        self.attention = self.on || self.suspended;
    }

    /// Handle a system request on the process whose state is `state`:
    /// `by_type` gives what [`get_state_of`] reaches of it (the state
    /// itself, [`itself`], or a part) and that type's name; `about` builds
    /// the status, if asked.
    #[cold]
    pub(crate) fn handle<S>(
        &mut self,
        request: Request,
        state: &mut S,
        by_type: impl FnOnce(&mut S) -> (&mut dyn Any, &'static str),
        about: impl FnOnce(&S) -> About,
    ) {
        match request {
            Request::Suspend(reply) => {
                self.suspended = true;
                let _ = reply.reply(());
            }
            Request::Resume(reply) => {
                self.suspended = false;
                let _ = reply.reply(());
            }
            Request::State(f) => {
                let (reached, type_name) = by_type(state);
                f(reached, type_name)
            }
            Request::Status(reply) => {
                let about = about(state);
                let _ = reply.reply(Status {
                    pid: about.pid,
                    behaviour: about.behaviour,
                    module: about.module,
                    state: about.state,
                    suspended: self.suspended,
                    mailbox_len: about.mailbox_len,
                    log_size: self.log.as_ref().map(|(n, _)| *n),
                    trace: self.trace,
                    installed: self.installed.iter().map(|(n, _)| *n).collect(),
                });
            }
            Request::Statistics(what, reply) => {
                let pid = about(state).pid;
                let counted = match what {
                    Stats::On => {
                        self.stats = Some((SystemTime::now(), Instant::now(), 0, 0));
                        None
                    }
                    Stats::Off => {
                        self.stats = None;
                        None
                    }
                    Stats::Get => self.stats.map(|(since, at, n, calls)| Statistics {
                        since,
                        elapsed: at.elapsed(),
                        messages_in: n,
                        calls_in: calls,
                        budget_cycles: smarm_core::introspect::actor_info(pid)
                            .and_then(|i| i.budget_cycles),
                    }),
                };
                let _ = reply.reply(counted);
            }
            Request::Log(what, reply) => {
                let events = match what {
                    Log::On(n) => {
                        self.log = Some((n.max(1), VecDeque::new()));
                        Vec::new()
                    }
                    Log::Off => self.log.take().map(|(_, e)| e.into()).unwrap_or_default(),
                    Log::Get => self
                        .log
                        .as_ref()
                        .map(|(_, e)| e.iter().cloned().collect())
                        .unwrap_or_default(),
                };
                let _ = reply.reply(events);
            }
            Request::Trace(on, reply) => {
                self.trace = on;
                let _ = reply.reply(());
            }
            Request::Install(name, f, reply) => {
                self.installed.retain(|(n, _)| *n != name);
                self.installed.push((name, f));
                let _ = reply.reply(());
            }
            Request::Remove(name, reply) => {
                let before = self.installed.len();
                self.installed.retain(|(n, _)| *n != name);
                let _ = reply.reply(self.installed.len() != before);
            }
            Request::NoDebug(reply) => {
                let suspended = self.suspended;
                *self = Debug {
                    suspended,
                    ..Debug::default()
                };
                let _ = reply.reply(());
            }
        }
        self.refresh();
    }
}

/// A process that answers system requests: a behaviour's typed address
/// (or a pid, looked up among the runtime's behaviours).
pub trait System {
    /// Put `request` to the process and wait for its answer.
    #[doc(hidden)]
    fn system_call<R: Send>(
        &self,
        what: &'static str,
        request: impl FnOnce(Reply<R>) -> Request,
    ) -> Result<R, CallError>;
}

/// A process whose state [`get_state`] and [`replace_state`] reach, as a
/// value of type `State`.
pub trait SystemState: System {
    /// Its state's type (a gen_statem's is its state and data).
    type State: Send + 'static;

    /// Run `f` on the state between two callbacks.
    #[doc(hidden)]
    fn with_state<T: Send + 'static>(
        &self,
        what: &'static str,
        f: impl FnOnce(&mut Self::State) -> T + Send + 'static,
    ) -> Result<T, CallError>;
}

/// Suspend the process: it keeps its requests queued, answering only
/// system requests, until [`resume`] (D1).
///
/// # Panics
///
/// Outside an actor.
pub fn suspend(process: &impl System) -> Result<(), CallError> {
    process.system_call("sys::suspend", Request::Suspend)
}

/// Resume a suspended process: it handles what was queued meanwhile, in
/// order, then goes on.
///
/// # Panics
///
/// Outside an actor.
pub fn resume(process: &impl System) -> Result<(), CallError> {
    process.system_call("sys::resume", Request::Resume)
}

/// The process's [`Status`].
///
/// # Panics
///
/// Outside an actor.
pub fn get_status(process: &impl System) -> Result<Status, CallError> {
    process.system_call("sys::get_status", Request::Status)
}

/// Count the events the process handles ([`Stats::On`]), stop
/// ([`Stats::Off`]), or read the counts ([`Stats::Get`]: `None` if not
/// counting).
///
/// # Panics
///
/// Outside an actor.
pub fn statistics(process: &impl System, what: Stats) -> Result<Option<Statistics>, CallError> {
    process.system_call("sys::statistics", |reply| Request::Statistics(what, reply))
}

/// Keep the process's last events ([`Log::On`]), stop and take them
/// ([`Log::Off`]), or read them ([`Log::Get`]), oldest first.
///
/// # Panics
///
/// Outside an actor.
pub fn log(process: &impl System, what: Log) -> Result<Vec<SysEvent>, CallError> {
    process.system_call("sys::log", |reply| Request::Log(what, reply))
}

/// Print each event the process handles to standard error (`on`), or
/// stop.
///
/// # Panics
///
/// Outside an actor.
pub fn trace(process: &impl System, on: bool) -> Result<(), CallError> {
    process.system_call("sys::trace", |reply| Request::Trace(on, reply))
}

/// Call `f` on each event the process handles, in the process, under
/// `name` (installing a name again replaces its function). A function
/// that panics is removed (D2).
///
/// # Panics
///
/// Outside an actor.
pub fn install(
    process: &impl System,
    name: &'static str,
    f: impl FnMut(&SysEvent) + Send + 'static,
) -> Result<(), CallError> {
    let f: EventFn = Box::new(f);
    process.system_call("sys::install", move |reply| {
        Request::Install(name, f, reply)
    })
}

/// Remove the function installed as `name`: `false` if there was none.
///
/// # Panics
///
/// Outside an actor.
pub fn remove(process: &impl System, name: &'static str) -> Result<bool, CallError> {
    process.system_call("sys::remove", |reply| Request::Remove(name, reply))
}

/// Turn every debug option off: log, trace, statistics, installed
/// functions (a suspended process stays suspended).
///
/// # Panics
///
/// Outside an actor.
pub fn no_debug(process: &impl System) -> Result<(), CallError> {
    process.system_call("sys::no_debug", Request::NoDebug)
}

/// A copy of the process's state (Erlang's `sys:get_state`); it works on
/// a suspended process too.
///
/// # Panics
///
/// Outside an actor.
pub fn get_state<P: SystemState>(process: &P) -> Result<P::State, CallError>
where
    P::State: Clone,
{
    process.with_state("sys::get_state", |state| state.clone())
}

/// Change the process's state with `f` and return the new state
/// (Erlang's `sys:replace_state`), between two callbacks, suspended or
/// not. `f` works on a copy: if it panics the process keeps its state as
/// it was, goes on, and this returns [`ReplaceStateError::Panicked`].
///
/// # Panics
///
/// Outside an actor.
pub fn replace_state<P: SystemState>(
    process: &P,
    f: impl FnOnce(&mut P::State) + Send + 'static,
) -> Result<P::State, ReplaceStateError>
where
    P::State: Clone,
{
    let replaced = process.with_state("sys::replace_state", move |state| replace(state, f))?;
    replaced.map_err(ReplaceStateError::Panicked)
}

/// [`get_state_of`] or [`replace_state_of`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The request did not reach the process, or it did not answer.
    #[error(transparent)]
    Call(#[from] CallError),
    /// The process's state is of another type than the one asked for.
    #[error("smarm: sys: the process's state is a {holds}, not a {asked}: ask for that type")]
    NotItsType {
        /// The type asked for.
        asked: &'static str,
        /// The type of the process's state.
        holds: &'static str,
    },
    /// The replacing function panicked; the process kept its state as it
    /// was and goes on.
    #[error("smarm: sys::replace_state_of: the function panicked ({0}); the state is unchanged")]
    Panicked(String),
}

/// A copy of the state of a process known by pid or any address, asked
/// for by its type `S`: a typed actor's handler (however it runs, as a
/// `Served` gen_server too), a gen_server's `G`, a gen_statem's data
/// (its state is in [`get_status`]). Works on a suspended process too.
///
/// ```
/// use smarm::actor::{self, Handler};
/// use smarm::gen_server::Flow;
/// use smarm::sys;
///
/// #[derive(smarm::Actor)]
/// enum Counter {
///     Add(u64),
/// }
/// #[derive(Clone, Debug, PartialEq)]
/// struct Count(u64);
/// impl Handler<Counter> for Count {
///     fn handle(&mut self, Counter::Add(n): Counter) -> Flow {
///         self.0 += n;
///         Flow::Continue
///     }
/// }
///
/// smarm::run(|| {
///     let counter = actor::spawn(Count(0));
///     smarm::send_to(counter, Counter::Add(2)).unwrap();
///     assert_eq!(sys::get_state_of::<Count>(&counter), Ok(Count(2)));
///     assert!(matches!(
///         sys::get_state_of::<u64>(&counter),
///         Err(sys::StateError::NotItsType { .. })
///     ));
///     smarm::request_stop(counter);
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn get_state_of<S: Clone + Send + 'static>(process: &impl System) -> Result<S, StateError> {
    process
        .system_call(
            "sys::get_state_of",
            |reply: Reply<Result<S, &'static str>>| {
                Request::State(Box::new(move |state, holds| {
                    let _ = reply.reply(state.downcast_ref::<S>().cloned().ok_or(holds));
                }))
            },
        )?
        .map_err(|holds| StateError::NotItsType {
            asked: std::any::type_name::<S>(),
            holds,
        })
}

/// [`replace_state`] for a process known by pid or any address, its state
/// asked for by its type `S` (as [`get_state_of`]): `f` works on a copy,
/// and a panic in it leaves the state as it was.
///
/// # Panics
///
/// Outside an actor.
pub fn replace_state_of<S: Clone + Send + 'static>(
    process: &impl System,
    f: impl FnOnce(&mut S) + Send + 'static,
) -> Result<S, StateError> {
    type Answer<S> = Result<Result<S, String>, &'static str>;
    let answer = process.system_call("sys::replace_state_of", |reply: Reply<Answer<S>>| {
        Request::State(Box::new(move |state, holds| {
            let _ = reply.reply(match state.downcast_mut::<S>() {
                Some(state) => Ok(replace(state, f)),
                None => Err(holds),
            });
        }))
    })?;
    match answer {
        Ok(Ok(state)) => Ok(state),
        Ok(Err(panicked)) => Err(StateError::Panicked(panicked)),
        Err(holds) => Err(StateError::NotItsType {
            asked: std::any::type_name::<S>(),
            holds,
        }),
    }
}

/// Run `f` on a copy of `state` and keep the copy unless `f` panics (the
/// panic's message then); a stop request's unwind goes on.
fn replace<S: Clone>(state: &mut S, f: impl FnOnce(&mut S)) -> Result<S, String> {
    let mut copy = state.clone();
    match catch_unwind(AssertUnwindSafe(|| f(&mut copy))) {
        Ok(()) => {
            *state = copy.clone();
            Ok(copy)
        }
        // A stop request stays a stop.
        Err(payload) if smarm_core::stop::is_stop(&*payload) => std::panic::resume_unwind(payload),
        Err(payload) => Err(crate::behaviour::termination::panic_message(&*payload)),
    }
}

/// The [`Status`] of the behaviour running as `pid`, if one does: for
/// tools that know only pids (the observer).
///
/// # Panics
///
/// Outside an actor.
pub fn status_of(pid: Pid) -> Result<Status, CallError> {
    get_status(&pid)
}

/// How each running behaviour of a runtime is reached by pid.
#[derive(Default)]
struct Table(Mutex<HashMap<Pid, Deliver>>);

/// Puts a request in a behaviour's mailbox. A request that cannot be put
/// there is dropped, and with it its reply slot: the caller sees the
/// process down.
pub(crate) type Deliver = std::sync::Arc<dyn Fn(Request) + Send + Sync>;

fn with_table<R>(f: impl FnOnce(&mut HashMap<Pid, Deliver>) -> R) -> R {
    smarm_core::runtime::with_runtime_local::<Table, R>(|table, _| {
        f(&mut table.0.lock().unwrap_or_else(|e| e.into_inner()))
    })
}

/// A behaviour serves as `pid` (the calling actor, or one it just
/// spawned): reachable by pid through `deliver` until it exits, however it
/// exits.
pub(crate) fn note(pid: Pid, deliver: Deliver) {
    with_table(|t| t.insert(pid, deliver));
    let hooked = smarm_core::signal::on_exit(pid, move |pid, _| {
        with_table(|t| t.remove(&pid));
    });
    if !hooked {
        // It exited already: no hook would ever remove the entry.
        let gone = with_table(|t| t.remove(&pid));
        drop(gone); // outside the table's lock
    }
}

/// Any process by its pid, typed or not (a typed actor's `Pid<M>`).
impl<A> System for Pid<A> {
    fn system_call<R: Send>(
        &self,
        what: &'static str,
        request: impl FnOnce(Reply<R>) -> Request,
    ) -> Result<R, CallError> {
        let pid = self.erase();
        crate::behaviour::call_to(
            what,
            || Some(pid),
            request,
            |req| {
                // Sent outside the table's lock.
                match with_table(|t| t.get(&pid).cloned()) {
                    Some(deliver) => {
                        deliver(req);
                        Ok(())
                    }
                    None => Err(req),
                }
            },
            DEFAULT_CALL_TIMEOUT,
        )
    }
}
