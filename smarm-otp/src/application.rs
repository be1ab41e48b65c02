//! Running a supervision tree as the program, as an OTP application runs
//! its top supervisor: [`Application::run`] starts the runtime and the top
//! supervisor, turns `SIGTERM` and `SIGINT` into an ordered shutdown of the
//! tree within a deadline, and returns an [`AppExit`] whose exit status
//! says how the program ended (`main` can return it).
//!
//! ```no_run
//! use smarm::application::{AppExit, Application};
//! use smarm::supervisor::{self, ChildSpec, Strategy, SupFlags};
//! use std::time::Duration;
//!
//! fn main() -> AppExit {
//!     Application::new()
//!         .shutdown_timeout(Duration::from_secs(10))
//!         .run(|| {
//!             supervisor::start(
//!                 SupFlags::new(Strategy::OneForOne),
//!                 vec![ChildSpec::actor("ticker", || loop {
//!                     smarm::sleep(Duration::from_secs(1));
//!                 })],
//!             )
//!         })
//! }
//! ```
//!
//! | What happens | The application does | Exit status |
//! |---|---|---|
//! | the start function fails | returns at once | 2 |
//! | `SIGTERM` or `SIGINT` | runs the [`before_stop`](Application::before_stop) hook if any (a drain), then stops the top supervisor (its children in reverse start order, each by its shutdown policy; with [`drain_on_stop`](Application::drain_on_stop), each server child handles its mailbox first) | 0 |
//! | the ordered stop outlasts the deadline, or a second signal comes | asks every actor left to stop, and ends the process if they have not after a grace period | 3 |
//! | the top supervisor gives up (restart intensity: [`AppExit::Failed`] with [`DownReason::Shutdown`], after its supervisor report) or fails | the runtime ends | 1 |
//! | the top supervisor is shut down from inside the program | the runtime ends | 0 |
//!
//! Signals are caught through [`OsSignals`]
//! (a handler and a self-pipe; smarm's own `SIGSEGV` handler is left as
//! it is) while the application runs, and the previous handlers come back
//! when it returns.

use crate::gen_server::StartError;
use crate::supervisor::SupervisorRef;
use smarm_core::DownReason;
use smarm_core::io::OsSignals;
use smarm_core::runtime::{self, Config, Runtime};
use std::process::{ExitCode, Termination};
use std::time::Duration;

/// How to run an application: the runtime's configuration and the
/// shutdown deadlines.
#[derive(Clone)]
pub struct Application {
    config: Config,
    /// A runtime handed in ([`Application::runtime`]); else one is made
    /// from `config`.
    runtime: Option<std::sync::Arc<Runtime>>,
    shutdown_timeout: Duration,
    kill_grace: Duration,
    signals: Vec<libc::c_int>,
    before_stop: Option<std::sync::Arc<dyn Fn() + Send + Sync>>,
    drain: bool,
}

impl std::fmt::Debug for Application {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Application")
            .field("config", &self.config)
            .field("runtime", &self.runtime)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("kill_grace", &self.kill_grace)
            .field("signals", &self.signals)
            .field("before_stop", &self.before_stop.is_some())
            .field("drain", &self.drain)
            .finish()
    }
}

impl Default for Application {
    fn default() -> Self {
        Application::new()
    }
}

/// How an application ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum AppExit {
    /// The top supervisor stopped in order after this signal. Status 0.
    Signal(libc::c_int),
    /// The top supervisor was shut down by the program itself. Status 0.
    Stopped,
    /// The top supervisor gave up ([`DownReason::Shutdown`]: more restarts
    /// than its intensity allows) or failed, for this reason. Status 1.
    Failed(DownReason),
    /// The start function failed. Status 2.
    StartFailed(StartError),
    /// The signals could not be caught. Status 2.
    Setup(std::io::Error),
    /// After this signal the ordered stop ran past its deadline (or a
    /// second signal came): the remaining actors were asked to stop.
    /// Status 3.
    ShutdownTimedOut(libc::c_int),
}

impl AppExit {
    /// The process exit status: 0 for an ordered end, 1 when the tree
    /// failed, 2 when it did not start, 3 when a shutdown ran out of time.
    pub fn code(&self) -> u8 {
        match self {
            AppExit::Signal(_) | AppExit::Stopped => 0,
            AppExit::Failed(_) => 1,
            AppExit::StartFailed(_) | AppExit::Setup(_) => 2,
            AppExit::ShutdownTimedOut(_) => 3,
        }
    }

    /// Whether the application ended in order.
    pub fn is_success(&self) -> bool {
        self.code() == 0
    }
}

impl std::fmt::Display for AppExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppExit::Signal(sig) => write!(f, "smarm: stopped in order on signal {sig}"),
            AppExit::Stopped => write!(f, "smarm: the top supervisor was shut down"),
            AppExit::Failed(DownReason::Shutdown) => write!(
                f,
                "smarm: the top supervisor gave up: more restarts than its intensity allows \
                 (see its supervisor report)"
            ),
            AppExit::Failed(reason) => write!(f, "smarm: the top supervisor failed: {reason}"),
            AppExit::StartFailed(e) => write!(f, "smarm: the application did not start: {e}"),
            AppExit::Setup(e) => write!(f, "smarm: could not catch SIGTERM/SIGINT: {e}"),
            AppExit::ShutdownTimedOut(sig) => write!(
                f,
                "smarm: the shutdown after signal {sig} ran past its deadline; the remaining \
                 actors were stopped"
            ),
        }
    }
}

impl Termination for AppExit {
    /// The exit status of [`code`](AppExit::code); anything but an ordered
    /// end is reported on stderr first.
    fn report(self) -> ExitCode {
        if !self.is_success() {
            eprintln!("{self}");
        }
        ExitCode::from(self.code())
    }
}

impl Application {
    /// The default runtime ([`Config::default`]), a 30 s shutdown deadline
    /// and a 5 s grace after it, catching `SIGTERM` and `SIGINT`.
    pub fn new() -> Self {
        Application {
            config: Config::default(),
            runtime: None,
            shutdown_timeout: Duration::from_secs(30),
            kill_grace: Duration::from_secs(5),
            signals: vec![libc::SIGTERM, libc::SIGINT],
            before_stop: None,
            drain: false,
        }
    }

    /// The runtime's configuration (replacing a runtime handed in with
    /// [`runtime`](Self::runtime) before).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self.runtime = None;
        self
    }

    /// Run on `runtime` rather than on one made from a [`Config`]: a
    /// runtime given more than a configuration, such as its tokio runtime
    /// (feature `tokio`: `Runtime::with_tokio_threads` for a tokio-heavy
    /// service, or `Runtime::with_tokio` to share one), so that the
    /// application owns `main` and the signals while async crates run
    /// beside it.
    ///
    /// ```no_run
    /// use smarm::application::{AppExit, Application};
    /// use smarm::runtime::{self, Config};
    /// use smarm::supervisor::{self, SupFlags, Strategy};
    ///
    /// fn main() -> AppExit {
    ///     let runtime = runtime::init(Config::exact(2));
    ///     Application::new()
    ///         .runtime(runtime)
    ///         .run(|| supervisor::start(SupFlags::new(Strategy::OneForOne), vec![]))
    /// }
    /// ```
    pub fn runtime(mut self, runtime: Runtime) -> Self {
        self.runtime = Some(std::sync::Arc::new(runtime));
        self
    }

    /// How long the ordered stop of the tree may take after a signal
    /// (Erlang's `shutdown_time`).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// How long actors asked to stop after the deadline get before the
    /// process ends without them.
    pub fn kill_grace(mut self, grace: Duration) -> Self {
        self.kill_grace = grace;
        self
    }

    /// Run `hook` when a shutdown signal comes, before the tree is
    /// stopped: to drain what the tree serves (tell an HTTP front to stop
    /// accepting and wait for its in-flight requests) while the servers
    /// behind it still answer. It runs in an actor of its own, may block,
    /// and counts against the [`shutdown_timeout`](Self::shutdown_timeout);
    /// the ordered stop of the tree follows when it returns (or panics),
    /// with the time left.
    ///
    /// ```no_run
    /// use smarm::application::{AppExit, Application};
    /// use smarm::supervisor::{self, SupFlags, Strategy};
    ///
    /// fn main() -> AppExit {
    ///     Application::new()
    ///         .before_stop(|| println!("draining the front"))
    ///         .run(|| supervisor::start(SupFlags::new(Strategy::OneForOne), vec![]))
    /// }
    /// ```
    pub fn before_stop(mut self, hook: impl Fn() + Send + Sync + 'static) -> Self {
        self.before_stop = Some(std::sync::Arc::new(hook));
        self
    }

    /// Stop the tree on a signal by draining it
    /// ([`SupervisorRef::drain`]): each gen_server, gen_statem and
    /// supervisor in it handles what is already in its mailbox before its
    /// `terminate`, leaves first; within the
    /// [`shutdown_timeout`](Self::shutdown_timeout). By default the tree
    /// is stopped without draining (queued requests fail at once).
    pub fn drain_on_stop(mut self) -> Self {
        self.drain = true;
        self
    }

    /// The signals that start a shutdown (default `SIGTERM` and `SIGINT`).
    pub fn signals(mut self, signals: &[libc::c_int]) -> Self {
        self.signals = signals.to_vec();
        self
    }

    /// Run the application: start the runtime, call `start` in the root
    /// actor to start the top supervisor, and serve until it ends or a
    /// signal stops it. Returns how it ended.
    ///
    /// # Panics
    ///
    /// From inside an actor, or if `config` is out of range (as
    /// [`runtime::init`]).
    pub fn run(
        self,
        start: impl FnOnce() -> Result<SupervisorRef, StartError> + Send + 'static,
    ) -> AppExit {
        let Application {
            config,
            runtime,
            shutdown_timeout,
            kill_grace,
            signals,
            before_stop,
            drain,
        } = self;
        // The watchdog ends the process if actors outlive the grace after a
        // timed-out shutdown (the runtime cannot return while they run).
        let (forced_tx, forced) = std::sync::mpsc::channel::<u8>();
        let (finished_tx, finished) = std::sync::mpsc::channel::<()>();
        let watchdog = std::thread::Builder::new()
            .name("smarm-app-watchdog".into())
            .spawn(move || {
                if let Ok(code) = forced.recv()
                    && finished.recv_timeout(kill_grace)
                        == Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                {
                    eprintln!(
                        "smarm: actors still running {kill_grace:?} after the shutdown \
                             deadline; exiting"
                    );
                    std::process::exit(i32::from(code));
                }
            });
        let runtime = runtime.unwrap_or_else(|| std::sync::Arc::new(runtime::init(config)));
        let exit = runtime.run(move || {
            let stop = Shutdown {
                signals: &signals,
                timeout: shutdown_timeout,
                before_stop,
                drain,
                forced: forced_tx,
            };
            serve(start, stop)
        });
        let _ = finished_tx.send(());
        drop(finished_tx);
        if let Ok(w) = watchdog {
            let _ = w.join();
        }
        exit
    }
}

/// How an application's root stops it.
struct Shutdown<'a> {
    signals: &'a [libc::c_int],
    timeout: Duration,
    before_stop: Option<std::sync::Arc<dyn Fn() + Send + Sync>>,
    drain: bool,
    forced: std::sync::mpsc::Sender<u8>,
}

/// The root actor of an application.
fn serve(start: impl FnOnce() -> Result<SupervisorRef, StartError>, stop: Shutdown<'_>) -> AppExit {
    let Shutdown {
        signals,
        timeout: shutdown_timeout,
        before_stop,
        drain,
        forced,
    } = stop;
    let caught = match OsSignals::new(signals) {
        Ok(caught) => caught,
        Err(e) => return AppExit::Setup(e),
    };
    // A top supervisor started with `start_link` is linked to this root:
    // its end is seen here, as for `start`, instead of stopping the root
    // before it can say how the application ended; and the link's exit
    // carries its reason even when it ended before the monitor below.
    let (exits_tx, exits) = smarm_core::channel::<smarm_core::Exit>();
    smarm_core::trap_exit_with(move |exit| drop(exits_tx.send(exit)));
    let top = match start() {
        Ok(top) => top,
        Err(e) => return AppExit::StartFailed(e),
    };
    let down = smarm_core::monitor(top.pid());
    let signal = match smarm_core::select(&[&down.rx, &caught.arm()]) {
        0 => return ended(down.rx.recv().map(|d| d.reason), &exits),
        _ => match caught.try_recv() {
            Ok(Some(sig)) => sig,
            Ok(None) | Err(_) => libc::SIGTERM,
        },
    };
    let deadline = smarm_core::time::now() + shutdown_timeout;
    // The drain, while the tree still serves: in an actor of its own, so
    // a second signal or the deadline is seen meanwhile.
    if let Some(hook) = before_stop {
        let drain = smarm_core::spawn(move || hook());
        let drained = smarm_core::monitor(drain.pid());
        drop(drain);
        loop {
            let left = deadline.saturating_duration_since(smarm_core::time::now());
            match smarm_core::select_timeout(&[&drained.rx, &down.rx, &caught.arm()], left) {
                Some(0) => break, // drained (or the hook panicked: stop anyway)
                Some(1) => return ended(down.rx.recv().map(|d| d.reason), &exits),
                Some(_) if matches!(caught.try_recv(), Ok(None)) => continue, // spurious
                _ => {
                    // A second signal, or the deadline: no time to drain.
                    let exit = AppExit::ShutdownTimedOut(signal);
                    let _ = forced.send(exit.code());
                    smarm_core::request_stop_all();
                    return exit;
                }
            }
        }
    }
    // The ordered stop: a stop request makes the supervisor stop its
    // children in reverse start order, each by its shutdown policy; a drain
    // lets each server handle its mailbox first.
    if drain {
        let (top, left) = (
            top.clone(),
            deadline.saturating_duration_since(smarm_core::time::now()),
        );
        drop(smarm_core::spawn(move || top.drain(left)));
    } else {
        smarm_core::request_stop(top.pid());
    }
    loop {
        let left = deadline.saturating_duration_since(smarm_core::time::now());
        match smarm_core::select_timeout(&[&down.rx, &caught.arm()], left) {
            Some(0) => return AppExit::Signal(signal),
            Some(_) if matches!(caught.try_recv(), Ok(None)) => continue, // spurious
            _ => break, // a second signal, or the deadline
        }
    }
    let exit = AppExit::ShutdownTimedOut(signal);
    let _ = forced.send(exit.code());
    smarm_core::request_stop_all();
    exit
}

/// The exit for a top supervisor that went down by itself.
fn ended(
    reason: Result<DownReason, smarm_core::RecvError>,
    exits: &smarm_core::Receiver<smarm_core::Exit>,
) -> AppExit {
    // Ended before it was monitored: a linked top supervisor's exit still
    // says why.
    let reason = match reason {
        Ok(DownReason::NoProc) => match exits.try_recv() {
            Ok(Some(exit)) => Ok(exit.reason),
            _ => Ok(DownReason::NoProc),
        },
        other => other,
    };
    match reason {
        Ok(DownReason::Exit | DownReason::Stopped) => AppExit::Stopped,
        Ok(reason) => AppExit::Failed(reason),
        Err(_) => AppExit::Failed(DownReason::NoProc),
    }
}
