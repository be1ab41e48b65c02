//! [`Runtime`]: assembling the schedulers' shared state, running the
//! root actor on them, and the end of a run.

use crate::actor::{Outcome, SpawnOpts, spawn_in};
use crate::config::{Config, ConfigError};
use crate::scheduler::Shared;
use crate::slot::{DownReason, Pid};
use std::sync::Arc;

/// A configured runtime: call [`run`](Runtime::run) to start it.
///
/// ```
/// use smarm::runtime::{self, Config};
///
/// let rt = runtime::init(Config::exact(2));
/// rt.run(|| println!("first run"));
/// rt.run(|| println!("a runtime can run again"));
/// ```
pub struct Runtime {
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", self.shared.config())
            .finish()
    }
}

/// Build a runtime from `config`.
///
/// # Panics
///
/// If `config` is out of range (see [`Config::validate`]); use
/// [`Runtime::new`] to get the error instead.
pub fn init(config: Config) -> Runtime {
    match Runtime::new(config) {
        Ok(rt) => rt,
        Err(e) => panic!("{e}"),
    }
}

/// Start a runtime with the default [`Config`] (one scheduler thread per
/// core), run `f` as the root actor, and return its value when it and
/// every actor it transitively spawned have finished. A panic in `f` is
/// re-raised here.
///
/// ```
/// let answer = smarm::run(|| {
///     let child = smarm::spawn(|| println!("hello from a child actor"));
///     child.join().unwrap();
///     42
/// });
/// assert_eq!(answer, 42);
/// ```
///
/// # Panics
///
/// As [`Runtime::run`].
pub fn run<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    init(Config::default()).run(f)
}

impl Runtime {
    /// Build a runtime, or say which limit `config` breaks.
    pub fn new(config: Config) -> Result<Runtime, ConfigError> {
        Runtime::build(config, |_| {})
    }

    /// Build a runtime, `prepare` seeing its shared state before anything
    /// else does.
    pub(super) fn build(
        config: Config,
        prepare: impl FnOnce(&mut Shared),
    ) -> Result<Runtime, ConfigError> {
        config.validate()?;
        crate::stack::install_overflow_handler(crate::scheduler::recover_overflow);
        crate::report::install_panic_hook();
        let stacks = crate::stack::pool_for(config.stack_size);
        let mut shared = Shared::new(config, stacks, crate::actor::exit_hook);
        prepare(&mut shared);
        Ok(Runtime {
            shared: Arc::new(shared),
        })
    }

    /// This runtime's configuration.
    pub fn config(&self) -> &Config {
        self.shared.config()
    }

    /// Use `handle`'s tokio runtime beside this runtime (feature `tokio`):
    /// every scheduler thread runs inside its context, so tokio calls in
    /// actors (a `tokio::time::sleep`, a `tokio::net` socket, a
    /// `tokio::spawn`) use it, and [`block_on`](crate::future::block_on)
    /// awaits them. Hand in a multi-thread runtime (a current-thread one
    /// runs its tasks only while its owner blocks on it); its owner shuts
    /// it down. Without this, smarm starts one of its own when it first
    /// runs.
    ///
    /// ```
    /// let tokio = tokio::runtime::Runtime::new().unwrap();
    /// let rt = smarm::runtime::Runtime::new(smarm::runtime::Config::default())
    ///     .unwrap()
    ///     .with_tokio(tokio.handle().clone())
    ///     .unwrap();
    /// rt.run(|| {
    ///     smarm::future::block_on(tokio::time::sleep(std::time::Duration::from_millis(1)));
    /// });
    /// ```
    ///
    /// # Errors
    ///
    /// [`TokioError::AlreadySet`](crate::future::TokioError) if this
    /// runtime already has a tokio runtime.
    #[cfg(feature = "tokio")]
    pub fn with_tokio(
        self,
        handle: tokio::runtime::Handle,
    ) -> Result<Runtime, crate::future::TokioError> {
        self.tokio_slot().set_handle(handle)?;
        Ok(self)
    }

    /// Start the tokio runtime smarm makes itself (when this runtime first
    /// runs) with `threads` worker threads (feature `tokio`; default
    /// [`DEFAULT_TOKIO_THREADS`](crate::future::DEFAULT_TOKIO_THREADS)).
    ///
    /// # Errors
    ///
    /// [`TokioError::AlreadySet`](crate::future::TokioError) if this
    /// runtime already has a tokio runtime.
    ///
    /// # Panics
    ///
    /// If `threads` is 0.
    #[cfg(feature = "tokio")]
    pub fn with_tokio_threads(self, threads: usize) -> Result<Runtime, crate::future::TokioError> {
        assert!(
            threads > 0,
            "smarm: Runtime::with_tokio_threads(0): tokio needs at least one worker thread"
        );
        self.tokio_slot().set_threads(threads)?;
        Ok(self)
    }

    #[cfg(feature = "tokio")]
    fn tokio_slot(&self) -> &crate::future::TokioSlot {
        self.shared.locals().get_or_default()
    }

    /// Run `f` as the root actor on this runtime's schedulers and return
    /// its value when every actor has finished (see the module docs for the
    /// verdict and the root-exit sweep). A panic in `f` is re-raised here.
    ///
    /// # Panics
    ///
    /// If called from inside an actor (spawn an actor instead), if this
    /// runtime is already running, if a scheduler thread cannot start, or
    /// if the root was stopped ([`request_stop`](crate::request_stop))
    /// before returning a value other than `()`.
    pub fn run<R: Send + 'static>(&self, f: impl FnOnce() -> R + Send + 'static) -> R {
        self.run_then(f, || {})
    }

    /// [`run`](Self::run), calling `started` once the root is spawned (and
    /// the run is in progress), before any scheduler runs.
    pub(super) fn run_then<R: Send + 'static>(
        &self,
        f: impl FnOnce() -> R + Send + 'static,
        started: impl FnOnce(),
    ) -> R {
        let value = Arc::new(std::sync::Mutex::new(None));
        let slot = value.clone();
        self.run_root(
            move || {
                let v = f();
                *crate::lock::lock_std(&slot) = Some(v);
            },
            started,
        );
        let taken = crate::lock::lock_std(&value).take();
        match taken {
            Some(v) => v,
            None => unit_or_stopped(),
        }
    }

    fn run_root<F: FnOnce() + Send + 'static>(&self, f: F, started: impl FnOnce()) {
        let root = self.begin_root(f, started);
        let shared = &self.shared;
        #[cfg(feature = "smarm-causal")]
        let profiler = whole_run::start(shared);
        let (joinable, mut start_error) = start_schedulers(shared);
        let monitor_done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let monitor = match start_monitor(shared, &monitor_done) {
            Ok(t) => t,
            Err(e) => {
                start_error = Some(e);
                None
            }
        };
        crate::scheduler::run_worker(shared, 0);
        let mut scheduler_panic = None;
        for t in joinable {
            if let Err(p) = t.join() {
                scheduler_panic = Some(p);
            }
        }
        monitor_done.store(true, std::sync::atomic::Ordering::Release);
        if let Some(t) = monitor {
            t.thread().unpark();
            if let Err(p) = t.join() {
                scheduler_panic = Some(p);
            }
        }
        #[cfg(feature = "smarm-causal")]
        whole_run::finish(shared, profiler);
        let outcome = self.end_root(root);
        if let Some(p) = scheduler_panic {
            std::panic::resume_unwind(p);
        }
        if let Some(e) = start_error {
            panic!("smarm: could not start a scheduler thread: {e}");
        }
        match outcome {
            Some(Outcome::Panic(payload)) => std::panic::resume_unwind(payload),
            Some(Outcome::Ended(reason)) => panic!("{}", root_ended(&reason)),
            Some(Outcome::Exit(_) | Outcome::Stopped) | None => {}
        }
    }

    /// A run's start: refuse a nested or concurrent run, spawn the root
    /// and call `started`.
    pub(super) fn begin_root<F: FnOnce() + Send + 'static>(
        &self,
        f: F,
        started: impl FnOnce(),
    ) -> crate::actor::JoinHandle<()> {
        if !crate::scheduler::current_worker().is_null() {
            panic!(
                "smarm: Runtime::run called from inside an actor; spawn an actor instead of \
                 starting a nested runtime"
            );
        }
        let shared = &self.shared;
        if !shared.begin_run() {
            panic!("smarm: Runtime::run called while this runtime is already running");
        }
        // A simulation has no tokio runtime beside it: its threads are
        // outside the simulation's order (runtime simulated (R1)).
        #[cfg(feature = "tokio")]
        if !shared.is_simulated() {
            crate::future::prepare_tokio(shared);
        }
        let root = match spawn_in(shared, crate::slot::table::entry(f), SpawnOpts::default()) {
            Ok(handle) => handle,
            Err(e) => {
                shared.end_run();
                panic!("{e}");
            }
        };
        shared.set_root(Some(root.pid()));
        started();
        #[cfg(feature = "tracing")]
        shared.capture_dispatch();
        root
    }

    /// A run's end, once every scheduler has stopped: how the root ended.
    pub(super) fn end_root(&self, root: crate::actor::JoinHandle<()>) -> Option<Outcome> {
        let shared = &self.shared;
        crate::io::stop(shared);
        crate::report::finish_run(shared);
        shared.end_run();
        root.take_outcome_now()
    }

    /// The root actor's pid, while `run` is in progress.
    pub fn root(&self) -> Option<Pid> {
        self.shared.root()
    }
}

/// What `run` says of a root that ended for `reason` instead of
/// returning: which actor ended it, by its registered names, and why.
fn root_ended(reason: &DownReason) -> String {
    let mut text = String::from("smarm::run: the root actor ");
    match reason {
        DownReason::Linked(link) => {
            let (by, reason) = (link.by, &link.reason);
            let names = crate::actor::extras::names_of(by);
            let named = match names.as_slice() {
                [] => String::new(),
                names => format!(" ({})", names.join(", ")),
            };
            text.push_str(&format!(
                "was stopped by the exit of linked actor {by}{named}, which {reason}"
            ));
            text.push_str(
                "; a root that should outlive what it links to traps exits (smarm::trap_exit)",
            );
        }
        other => text.push_str(&other.to_string()),
    }
    text
}

type Thread = std::thread::JoinHandle<()>;

/// Start the threads of schedulers `1..threads` (the caller's thread is
/// scheduler 0): the ones that started, and the last start error.
fn start_schedulers(shared: &Arc<Shared>) -> (Vec<Thread>, Option<std::io::Error>) {
    let mut started = Vec::new();
    let mut start_error = None;
    for id in 1..shared.config().threads {
        let shared = shared.clone();
        match std::thread::Builder::new()
            .name(format!("smarm-sched-{id}"))
            .spawn(move || crate::scheduler::run_worker(&shared, id))
        {
            Ok(t) => started.push(t),
            Err(e) => start_error = Some(e),
        }
    }
    (started, start_error)
}

/// Start the system monitor's thread, unless it is turned off; it runs
/// until `done`, reporting through the crash-report sink when the spares
/// run out (sysmon (M4)).
fn start_monitor(
    shared: &Arc<Shared>,
    done: &Arc<std::sync::atomic::AtomicBool>,
) -> std::io::Result<Option<Thread>> {
    let Some(after) = shared.config().blocked_after else {
        return Ok(None);
    };
    let (shared, done) = (shared.clone(), done.clone());
    std::thread::Builder::new()
        .name("smarm-sysmon".to_string())
        .spawn(move || {
            crate::scheduler::sysmon::monitor(
                &shared,
                after,
                || done.load(std::sync::atomic::Ordering::Acquire),
                |schedulers, blocked| {
                    crate::report::emit(crate::report::Report::SparesExhausted(
                        crate::report::SparesExhaustedReport {
                            schedulers,
                            blocked,
                        },
                    ))
                },
            )
        })
        .map(Some)
}

/// The value of a root that was stopped before returning one: `()` for a
/// root that returns nothing (as before values were returned), else a
/// panic that says so.
fn unit_or_stopped<R: 'static>() -> R {
    let unit: Box<dyn std::any::Any> = Box::new(());
    match unit.downcast::<R>() {
        Ok(unit) => *unit,
        Err(_) => panic!(
            "smarm: run: the root actor was stopped (request_stop) before it returned its value"
        ),
    }
}

/// A causal profile of a whole run (feature `smarm-causal`,
/// `Config::causal_profile`): a session on a thread of its own from the
/// run's start to its end, written out when the run is over.
#[cfg(feature = "smarm-causal")]
#[allow(clippy::disallowed_methods)] // the profiler's own thread paces itself on real time
mod whole_run {
    use crate::causal::Settings;
    use crate::causal::session::{self, Runner};
    use crate::scheduler::Shared;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    /// The session's thread and how to end it.
    pub(super) struct Profiler {
        done: Arc<AtomicBool>,
        thread: std::thread::JoinHandle<crate::causal::Profile>,
    }

    /// Start profiling the run of `shared`, if its configuration asks.
    pub(super) fn start(shared: &Arc<Shared>) -> Option<Profiler> {
        shared.config().causal_profile.as_ref()?;
        if !shared.coord.causal.try_begin() {
            return None; // a session already runs (P1)
        }
        let done = Arc::new(AtomicBool::new(false));
        let (profiled, flag) = (shared.clone(), done.clone());
        let thread = std::thread::Builder::new()
            .name("smarm-causal".into())
            .spawn(move || {
                let (sleep_flag, stop_flag) = (flag.clone(), flag);
                let runner = Runner {
                    delays: &profiled.coord.causal,
                    // In short steps, so the run's end ends the session
                    // at once (P2: a thread's sleep is on the wall clock).
                    sleep: &move |d: Duration| {
                        let end = std::time::Instant::now() + d;
                        while !sleep_flag.load(Ordering::Acquire) {
                            let left = end.saturating_duration_since(std::time::Instant::now());
                            if left.is_zero() {
                                break;
                            }
                            std::thread::sleep(left.min(Duration::from_millis(10)));
                        }
                    },
                    now: &|| profiled.coord.now_nanos(),
                    stop: &move || stop_flag.load(Ordering::Acquire),
                };
                session::run(&runner, &Settings::new(Duration::MAX))
            });
        match thread {
            Ok(thread) => Some(Profiler { done, thread }),
            Err(e) => {
                shared.coord.causal.set_active(false);
                eprintln!("smarm: causal profile: could not start its thread: {e}");
                None
            }
        }
    }

    /// End the session and write its profile where the configuration
    /// says (a failure to write is reported, not raised: the run itself
    /// succeeded).
    pub(super) fn finish(shared: &Shared, profiler: Option<Profiler>) {
        let Some(Profiler { done, thread }) = profiler else {
            return;
        };
        done.store(true, Ordering::Release);
        let profile = thread.join();
        shared.coord.causal.set_active(false);
        let (Ok(profile), Some(path)) = (profile, shared.config().causal_profile.as_ref()) else {
            return;
        };
        let text = match path.extension().and_then(|e| e.to_str()) {
            Some("svg") => profile.to_svg(),
            Some("json") => profile.to_json(),
            _ => profile.to_coz(),
        };
        if let Err(e) = std::fs::write(path, text) {
            eprintln!(
                "smarm: causal profile: could not write {}: {e}",
                path.display()
            );
        }
    }
}
