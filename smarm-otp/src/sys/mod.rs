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
//! | [`suspend`], [`resume`] | while suspended, keeps its requests queued (counted in its mailbox length) and answers only system requests (state, status, debug, shutdown, terminate); ends at a stop request, its parent's exit and the root-exit sweep as any waiting actor |
//! | [`statistics`] | counts the events it handles from now ([`Statistics`]) |
//! | [`log`] | keeps its last N events ([`SysEvent`], 10 by default); prints them ([`Log::Print`]) |
//! | [`log_to_file`] | writes each event it handles to a file, a `*DBG*` line each |
//! | [`trace`] | prints each event it handles to standard error, as `*DBG*` lines |
//! | [`install`], [`remove`] | calls a function of yours on each event |
//! | [`no_debug`] | turns all of that off |
//! | [`terminate`] | stops through its `terminate` callback with the reason given |
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
//! off. Every function takes the process as OTP's `sys` does: by its typed
//! address (`GenServerRef`, `StatemRef`, `SupervisorRef`, a typed actor's
//! `Pid<M>`), by pid ([`status_of`], which the observer uses), or by its
//! registered name (a `ServerName`, `StatemName` or any `Name<M>`, or the
//! name's text: `sys::get_status(&"code-lock")`), looked up when the
//! request is made.
//!
//! # Invariants
//!
//! - (D1) Only system requests are handled while suspended; everything
//!   else received meanwhile is kept, in order, and handled after
//!   [`resume`], before anything received later.
//! - (D2) An installed function that panics is removed (and reported
//!   once in the process's `*DBG*` output); the process goes on.

mod debug;
mod suspend;
mod table;

pub(crate) use debug::{About, Answered, Debug, itself};
pub use debug::{Log, Request, Statistics, Stats, Status, SysEvent};
pub(crate) use suspend::{Suspendable, WhileSuspended, suspend_loop};
pub(crate) use table::note;

use crate::behaviour::{CallError, ReplaceStateError, Reply};
use smarm_core::Pid;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A process that answers system requests: a behaviour's typed address
/// (or a pid, looked up among the runtime's behaviours).
pub trait System {
    /// Put `request` to the process and wait for its answer.
    #[doc(hidden)]
    fn system_call<R: Send + 'static>(
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

/// Write each event the process handles to the file at `path`, a
/// `*DBG*` line each (Erlang's `sys:log_to_file`), or stop (`None`). The
/// file is created, or truncated, here: an error opening it is returned
/// and the process is not asked; a later write error stops the logging
/// (reported once on the process's standard error).
///
/// ```
/// use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply};
/// use smarm::sys;
///
/// struct Echo;
/// impl GenServer for Echo {
///     type Args = ();
///     type Call = u32;
///     type Reply = u32;
///     type Cast = ();
///     type Info = ();
///     fn init(_: (), _: &mut Ctx<Self>) -> Result<Self, InitError> { Ok(Echo) }
///     fn handle_call(&mut self, n: u32, reply: Reply<u32>, _: &mut Ctx<Self>) -> Flow {
///         reply.reply(n);
///         Flow::Continue
///     }
/// }
///
/// let path = std::env::temp_dir().join(format!("smarm-sys-doc-{}.log", std::process::id()));
/// smarm::run({
///     let path = path.clone();
///     move || {
///         let echo = gen_server::start::<Echo>(()).unwrap();
///         sys::log_to_file(&echo, Some(&path)).unwrap();
///         echo.call(7).unwrap();
///         sys::log_to_file(&echo, None).unwrap();
///     }
/// });
/// let written = std::fs::read_to_string(&path).unwrap();
/// assert!(written.starts_with("*DBG* "), "{written}");
/// assert!(written.contains(" got call u32"), "{written}");
/// std::fs::remove_file(&path).unwrap();
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn log_to_file(
    process: &impl System,
    path: Option<&std::path::Path>,
) -> Result<(), LogToFileError> {
    let file = match path {
        None => None,
        Some(path) => {
            let file = std::fs::File::create(path).map_err(|source| LogToFileError::Open {
                path: path.to_path_buf(),
                source: std::sync::Arc::new(source),
            })?;
            Some((path.to_path_buf(), file))
        }
    };
    process.system_call("sys::log_to_file", |reply| Request::LogToFile(file, reply))?;
    Ok(())
}

/// [`log_to_file`] failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LogToFileError {
    /// The file could not be created.
    #[error("smarm: sys::log_to_file: cannot create {}: {source}", path.display())]
    Open {
        /// The file asked for.
        path: std::path::PathBuf,
        /// Why.
        source: std::sync::Arc<std::io::Error>,
    },
    /// The request did not reach the process, or it did not answer.
    #[error(transparent)]
    Call(#[from] CallError),
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
    let f: debug::EventFn = Box::new(f);
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

/// Stop the process with `reason` through its `terminate` callback, as
/// Erlang's `sys:terminate(Name, Reason)`: between two callbacks,
/// suspended or not; returns once `terminate` has run. A
/// [`StopReason::Error`](crate::behaviour::StopReason::Error) is a
/// failure (its supervisor restarts a transient child), `Normal` and
/// `Shutdown` are not.
///
/// ```
/// use smarm::gen_server::{self, Ctx, Flow, GenServer, InitError, Reply, StopReason};
/// use smarm::sys;
///
/// struct Worker(smarm::Sender<String>);
/// impl GenServer for Worker {
///     type Args = smarm::Sender<String>;
///     type Call = ();
///     type Reply = ();
///     type Cast = ();
///     type Info = ();
///     fn init(said: smarm::Sender<String>, _: &mut Ctx<Self>) -> Result<Self, InitError> {
///         Ok(Worker(said))
///     }
///     fn handle_call(&mut self, _: (), reply: Reply<()>, _: &mut Ctx<Self>) -> Flow {
///         reply.reply(());
///         Flow::Continue
///     }
///     fn terminate(&mut self, reason: &StopReason, _: &mut Ctx<Self>) {
///         let _ = self.0.send(format!("terminate: {reason}"));
///     }
/// }
///
/// smarm::run(|| {
///     let (said_tx, said) = smarm::channel();
///     let worker = gen_server::start::<Worker>(said_tx).unwrap();
///     sys::suspend(&worker).unwrap();
///     sys::terminate(&worker, StopReason::Shutdown).unwrap();
///     assert_eq!(said.recv().unwrap(), "terminate: shutdown");
///     assert!(!smarm::is_alive(worker.pid()));
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn terminate(
    process: &impl System,
    reason: crate::behaviour::StopReason,
) -> Result<(), CallError> {
    process.system_call("sys::terminate", |ack| Request::Terminate(reason, ack))
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
