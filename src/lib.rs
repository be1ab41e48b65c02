//! # smarm
//!
//! Erlang/OTP-style actors for Rust. Actors are stackful green threads:
//! ordinary blocking-style code (`recv`, `sleep`, `join`, `Mutex::lock`,
//! socket reads and writes) that parks only the actor, on a few scheduler
//! threads that sleep on per-thread futexes and are woken one at a time.
//! On that core sit the OTP behaviours: a typed registry, process groups,
//! gen_server, supervisors (static and dynamic), typed actors from
//! `#[derive(Actor)]`, and [`application`]: a supervision tree run as the
//! program, stopped in order on `SIGTERM`. [`net`] has TCP, UDP and Unix
//! sockets shaped like std's; `examples/kv` is a Redis-protocol server
//! built from all of it.
//!
//! ```
//! use std::time::Duration;
//!
//! smarm::run(|| {
//!     let children: Vec<_> = (0..3u64)
//!         .map(|i| smarm::spawn(move || smarm::sleep(Duration::from_millis(10 * i))))
//!         .collect();
//!     for child in children {
//!         child.join().unwrap();
//!     }
//! });
//! ```
//!
//! The guide (`guide/`, an mdBook) walks through the concepts; this crate
//! re-exports `smarm-core` (the runtime), `smarm-otp` (OTP behaviours) and
//! `smarm-macros`.

/// Run a closure inside a `tracing` span across blocking calls (feature
/// `tracing`; see the guide's "Observing a running system").
#[cfg(feature = "tracing")]
pub use smarm_core::actor::in_span;
pub use smarm_core::introspect::SNAPSHOT_FORMAT_VERSION;
pub use smarm_core::{
    ActorInfo, ActorState, RuntimeSnapshot, RuntimeTree, SchedulerStats, TreeNode, WaitingOn,
    actor_info, heap_accounting, snapshot, tree, tree_from,
};
pub use smarm_core::{
    Addressable, Down, DownReason, Ended, Exit, ExitReason, ExitSignal, LinkedExit, Monitor,
    MonitorId, MonitorRef, demonitor, exit, link, monitor, monitor_with, spawn_link, trap_exit,
    trap_exit_with, unlink,
};
pub use smarm_core::{
    BoundedReceiver, Builder, JoinError, JoinHandle, JoinTimeoutError, LockTimeout, Mutex,
    MutexGuard, ParsePidError, Pid, Receiver, RecvError, RecvTimeoutError, Selectable, SendError,
    SendTimeoutError, Sender, SpawnError, TrySendError, channel, exit_with, hibernate, in_actor,
    is_alive, panicking, request_stop, request_stop_all, require_actor, run, select,
    select_timeout, self_pid, sleep, spawn, spawn_under, try_select, try_select_timeout,
    try_self_pid, try_spawn, yield_now,
};

/// Runtime construction and configuration: [`init`](runtime::init),
/// [`Config`](runtime::Config), [`Runtime`](runtime::Runtime); a runtime
/// started beside other code ([`Runtime::start`](runtime::Runtime::start),
/// [`Running`](runtime::Running)) and reached from outside it
/// ([`RuntimeHandle`](runtime::RuntimeHandle)).
pub mod runtime {
    pub use smarm_core::config::{DEFAULT_STACK_SIZE, MAX_STACK_SIZE, MIN_STACK_SIZE};
    pub use smarm_core::runtime::{
        Config, ConfigError, Running, RunningFuture, Runtime, RuntimeHandle, current, init, run,
    };
}

/// IO that parks only the actor: the blocking pool
/// ([`block_on_io`](io::block_on_io)) and fd readiness
/// ([`wait_readable`](io::wait_readable), [`FdArm`](io::FdArm), ...).
pub mod io {
    pub use smarm_core::io::{
        BLOCKING_KEEP_ALIVE, FdArm, MAX_BLOCKING_THREADS, OsSignals, block_on_io,
        block_on_io_scoped, read, wait_readable, wait_readable_timeout, wait_writable,
        wait_writable_timeout, write,
    };
}

/// TCP, UDP and Unix domain sockets that park only the actor (and block a
/// plain thread), mirroring `std::net` and `std::os::unix::net`.
pub mod net {
    pub use smarm_core::io::net::{
        DEFAULT_BACKLOG, Incoming, TcpListener, TcpSocket, TcpStream, UdpSocket, UnixDatagram,
        UnixIncoming, UnixListener, UnixStream,
    };
}

/// Futures awaited from actors: [`block_on`](future::block_on) parks only
/// the actor while a future is pending; with the `tokio` feature, a tokio
/// runtime beside the schedulers makes tokio-based crates work there.
pub mod future {
    pub use smarm_core::future::*;
}

/// Time: `sleep`, message timers, and their wall-clock forms (which causal
/// profiling does not shift).
pub mod time {
    pub use smarm_core::time::{
        TimerId, cancel_timer, now, send_after_to, send_after_to_wall, sleep, sleep_wall,
        system_now,
    };
}

/// Deterministic simulation (feature `sim`): actors, supervisors and
/// timers under a seeded scheduler on simulated time, replayable from the
/// seed ([`Sim`](sim::Sim)). The guide's "Testing actors
/// deterministically" shows it at work.
///
/// ```
/// fn replies_arrive() {
///     let (tx, rx) = smarm::channel::channel();
///     smarm::spawn(move || tx.send(7).unwrap());
///     assert_eq!(rx.recv().unwrap(), 7);
/// }
///
/// // In a test file: runs `replies_arrive` under 200 seeds.
/// #[smarm::sim::test(seeds = 200, schedulers = 4)]
/// fn replies_arrive_under_any_schedule() {
///     replies_arrive();
/// }
/// # smarm::sim::Sim::new(0).schedulers(4).test(0..200, replies_arrive);
/// ```
#[cfg(feature = "sim")]
pub mod sim {
    pub use smarm_core::sim::*;
    /// `#[smarm::sim::test(seeds = N, ...)]`: a test run under simulation
    /// once per seed ([`Sim::test`]).
    pub use smarm_macros::sim_test as test;
}

/// Erlang distribution (feature `dist`): nodes that join BEAM clusters
/// ([`Node::start`](dist::Node::start)).
#[cfg(feature = "dist")]
pub mod dist {
    pub use smarm_dist::*;
}

#[doc(hidden)]
pub use smarm_macros as macros;
/// `#[derive(Actor)]`: the typed actor API of a message enum.
pub use smarm_macros::Actor;

/// Typed actors: run a `#[derive(Actor)]` message enum's handler
/// ([`spawn`](actor::spawn), [`start`](actor::start)).
pub mod actor {
    pub use smarm_otp::typed::*;
}
pub use smarm_otp::{
    Name, RegisterError, install, lookup_as, register, send, send_after, send_after_named,
    send_after_named_wall, send_after_wall, send_dyn, send_to, spawn_addr, unregister, whereis,
};

/// Crash reports and supervisor reports, and where they go
/// ([`set_handler`](report::set_handler)).
pub mod report {
    pub use smarm_core::report::*;
}

/// Runtime trace events and their Chrome Trace export (feature `trace`):
/// [`start`](trace::start), [`stop`](trace::stop),
/// [`Trace::write_chrome`](trace::Trace::write_chrome).
#[cfg(feature = "trace")]
pub mod trace {
    pub use smarm_core::trace::*;
}

/// Causal profiling (feature `smarm-causal`): the counts of the progress
/// points that [`progress!`](crate::progress),
/// [`latency_begin!`](crate::latency_begin) and
/// [`latency_end!`](crate::latency_end) place, and the analysis and
/// exports of a profile's experiments ([`Profile`](causal::Profile)), the
/// regions a profile speeds up ([`region`](causal::region),
/// [`Region`](causal::Region)), and the profiling session
/// ([`profile`](causal::profile)).
#[cfg(feature = "smarm-causal")]
pub mod causal {
    pub use smarm_core::causal::*;
    pub use smarm_core::profiler::{Region, profile, profile_with, region};
}
/// Progress points for causal profiling; without the feature
/// `smarm-causal` they compile to nothing.
pub use smarm_core::{latency_begin, latency_end, progress};

/// The web and terminal observer (feature `observer`):
/// [`serve`](observer::serve) an HTTP endpoint with a live page and the
/// snapshot as JSON, or [`run_top`](observer::run_top) on a terminal.
#[cfg(feature = "observer")]
pub mod observer {
    pub use smarm_otp::observer::*;
}

/// Telling a cooperative stop from a panic after `catch_unwind`, and
/// setting the stop aside so cleanup can block.
pub mod stop {
    pub use smarm_core::stop::*;
}

/// Process groups: [`join`](pg::join), [`dispatch`](pg::dispatch) to one
/// member, [`broadcast`](pg::broadcast) to all.
pub mod pg {
    pub use smarm_otp::pg::*;
}

/// Servers: a state-owning actor serving calls and casts
/// (`GenServer`, `start`, `GenServerRef`).
pub mod gen_server {
    pub use smarm_otp::gen_server::*;
}

/// State machines: OTP's gen_statem (`GenStatem`, `start`, `StatemRef`,
/// `Transition`), with postponing, inserted events, enter calls and
/// event, state and generic timeouts.
pub mod gen_statem {
    pub use smarm_otp::gen_statem::*;
}

/// Inspecting and debugging a live process, as Erlang's `sys`: state,
/// status, suspend and resume, statistics, event logs and traces.
pub mod sys {
    pub use smarm_otp::sys::*;
}

/// A supervision tree as the program: signals become an ordered shutdown,
/// and the exit status says how it ended ([`Application`](application::Application)).
pub mod application {
    pub use smarm_otp::application::*;
}

/// Supervision trees: [`start`](supervisor::start) a supervisor with
/// [`ChildSpec`](supervisor::ChildSpec)s; it restarts them by strategy.
pub mod supervisor {
    pub use smarm_otp::supervisor::*;
}

pub use smarm_otp::gen_server::{CallError, GenServer, GenServerRef, Reply};

/// The typed registry: names, typed addresses, name- and pid-addressed
/// sends (its [`SendError`](registry::SendError) hands the message back).
pub mod registry {
    pub use smarm_otp::registry::*;
}

#[doc(inline)]
pub use smarm_core::{NoPreempt, PreemptingAlloc, check_timeslice};

/// A timeslice safepoint for loops that never block: yields to other
/// actors once the running actor has used its timeslice
/// ([`Config::timeslice`](runtime::Config::timeslice), 1 ms by default),
/// counting an overrun, and observes [`request_stop`]. The actor resumes
/// on the same OS thread, so a thread-local borrow held across `check!()`
/// stays sound. Cheap: a thread-local countdown, and a clock read every
/// 16th call. A no-op outside an actor.
///
/// ```
/// smarm::run(|| {
///     let spinner = smarm::spawn(|| {
///         let mut x = 0u64;
///         for i in 0..5_000_000u64 {
///             x = x.wrapping_add(i);
///             smarm::check!(); // other actors get their turns
///         }
///         std::hint::black_box(x);
///     });
///     spinner.join().unwrap();
/// });
/// ```
#[macro_export]
macro_rules! check {
    () => {
        $crate::check_timeslice()
    };
}

/// A fault site: `true` now and then inside a deterministic simulation
/// (feature `sim`) whose seed turned this site on, `false` everywhere
/// else (and always, without the feature). Put it where a rare outcome
/// should be exercised (a reply that comes late, a write that comes back
/// short, a cache that misses), as FoundationDB's BUGGIFY: each run of a
/// simulation turns each site on or off (one in four on), and an enabled
/// site fires once in 20 times.
///
/// ```
/// fn fetch(cache: &std::collections::BTreeMap<u32, String>, key: u32) -> Option<String> {
///     if smarm::buggify!() {
///         return None; // under simulation, sometimes: a cache miss
///     }
///     cache.get(&key).cloned()
/// }
/// let cache = std::collections::BTreeMap::from([(1, "one".to_string())]);
/// assert_eq!(fetch(&cache, 1).as_deref(), Some("one")); // never fires outside a simulation
/// ```
#[macro_export]
macro_rules! buggify {
    () => {
        $crate::__buggify(concat!(file!(), ":", line!(), ":", column!()))
    };
}

#[doc(hidden)]
#[inline(always)]
pub fn __buggify(site: &'static str) -> bool {
    #[cfg(feature = "sim")]
    {
        smarm_core::sim::buggify_at(site)
    }
    #[cfg(not(feature = "sim"))]
    {
        let _ = site;
        false
    }
}

/// The guide's chapters, compiled and run as doctests by `cargo test`.
#[cfg(doctest)]
pub mod guide {
    #[doc = include_str!("../README.md")]
    pub struct Readme;
    #[doc = include_str!("../guide/src/getting-started.md")]
    pub struct GettingStarted;
    #[doc = include_str!("../guide/src/actors.md")]
    pub struct Actors;
    #[doc = include_str!("../guide/src/channels.md")]
    pub struct Channels;
    #[doc = include_str!("../guide/src/select.md")]
    pub struct Select;
    #[doc = include_str!("../guide/src/links.md")]
    pub struct Links;
    #[doc = include_str!("../guide/src/timers-io.md")]
    pub struct TimersIo;
    #[doc = include_str!("../guide/src/registry.md")]
    pub struct Registry;
    #[doc = include_str!("../guide/src/gen-server.md")]
    pub struct GenServer;
    #[doc = include_str!("../guide/src/gen-statem.md")]
    pub struct GenStatem;
    #[doc = include_str!("../guide/src/supervisors.md")]
    pub struct Supervisors;
    #[doc = include_str!("../guide/src/sys.md")]
    pub struct Sys;
    #[doc = include_str!("../guide/src/derive-actor.md")]
    pub struct DeriveActor;
    #[doc = include_str!("../guide/src/fairness.md")]
    pub struct Fairness;
    #[doc = include_str!("../guide/src/memory.md")]
    pub struct Memory;
    #[doc = include_str!("../guide/src/service.md")]
    pub struct Service;
    #[doc = include_str!("../guide/src/observing.md")]
    pub struct Observing;
    #[cfg(feature = "tokio")]
    #[doc = include_str!("../guide/src/async.md")]
    pub struct Async;
    #[cfg(feature = "tracing")]
    #[doc = include_str!("../guide/src/observing-tracing.md")]
    pub struct ObservingTracing;
    #[cfg(feature = "trace")]
    #[doc = include_str!("../guide/src/observing-trace.md")]
    pub struct ObservingTrace;
    #[cfg(feature = "observer")]
    #[doc = include_str!("../guide/src/observing-observer.md")]
    pub struct ObservingObserver;
    #[cfg(feature = "smarm-causal")]
    #[doc = include_str!("../guide/src/causal-profiling.md")]
    pub struct CausalProfiling;
    #[cfg(feature = "sim")]
    #[doc = include_str!("../guide/src/testing-deterministically.md")]
    pub struct TestingDeterministically;
}
