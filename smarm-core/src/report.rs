//! Reports: what the runtime and the behaviours above it say when an actor
//! crashes or a supervisor acts, in one place the user can redirect or
//! silence ([`set_handler`]), as Erlang's logger takes crash and
//! supervisor reports.
//!
//! # Design
//!
//! A panic inside an actor is reported once, when the actor is finalised:
//! a [`CrashReport`] naming the actor (pid, label, registered names, the
//! actor that spawned or supervises it), the panic message and where it
//! happened. The runtime's panic hook only *records* the location (and a
//! backtrace, when `RUST_BACKTRACE` asks for one) for the panicking actor,
//! and prints nothing; the report is built on the scheduler after the
//! actor's stack is gone, where no runtime lock is held. On threads that
//! run no actor the hook hands over to the hook installed before it, so
//! std's message for a plain thread's panic is unchanged. A panic an actor
//! catches itself (`catch_unwind`) is not reported, as an exception an
//! Erlang process catches is not.
//!
//! Supervisors report their decisions ([`SupervisorReport`]: a child
//! restarted, or the supervisor giving up) through [`emit`].
//!
//! The default handler writes each report to standard error (so a test
//! harness that captures a test's output captures the reports of actors
//! its runtime runs). On a runtime's thread it hands the report to the
//! runtime's reporter thread, started at its first report, which formats
//! and writes the reports in the order they were made: formatting a
//! backtrace resolves its symbols, tens of milliseconds the first time,
//! which would stall every actor queued behind the scheduler that made
//! the report. `run` returns only once the reporter has written every
//! report of the run. With the `tracing` feature, while a `tracing`
//! subscriber is the default where the report is made (a runtime's
//! schedulers take the one that was the default where it started), the
//! default handler makes each report a `tracing` event instead (target
//! `smarm::report`: a crash at ERROR, a supervisor giving up or failing to
//! restart at ERROR, a restart at WARN, a removal at INFO).
//!
//! # Invariants
//!
//! - (R1) The panic hook takes no lock and allocates only the record it
//!   keeps (in a thread-local), so it is safe wherever a panic starts
//!   (the first panic of a process reads `RUST_BACKTRACE` once, as std
//!   does). Its backtrace is the frames' addresses only ([`Backtrace`]),
//!   walked without a lock: std's `Backtrace` takes one process-wide lock
//!   to capture and to resolve, so a scheduler capturing a panic would
//!   wait for the reporter resolving the previous one.
//! - (R2) A crash report uses the recorded location only if it was
//!   recorded for the same actor (pid and generation) on the finalising
//!   thread; otherwise it goes without one. A stale record is overwritten
//!   by the next panic on that thread.
//! - (R3) A runtime's default-handler reports are written by one thread,
//!   in the order they reached [`emit`], all of them before that
//!   runtime's `run` returns (`finish_run`).

use crate::slot::{DownReason, Pid};
use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, Mutex, Once, RwLock, mpsc};

/// An actor ended by a panic, or stopped for crossing its heap limit.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CrashReport {
    /// The actor.
    pub pid: Pid,
    /// How it ended: [`DownReason::Panic`] or [`DownReason::HeapLimit`].
    pub reason: DownReason,
    /// The label it was spawned with ([`Builder::name`](crate::Builder::name)).
    pub label: Option<String>,
    /// Names it was registered under.
    pub names: Vec<&'static str>,
    /// The actor that spawned it (or the pid given to `spawn_under`: its
    /// supervisor); `None` for a run's root.
    pub parent: Option<Pid>,
    /// The panic message, or what limit the heap crossed.
    pub message: String,
    /// What it was handling, as the behaviour running it noted
    /// ([`note_last_message`]): for a gen_server, the callback and the
    /// message's type; `None` for a plain actor.
    pub last_message: Option<String>,
    /// Where it panicked (`file:line:column`), when the runtime saw it.
    pub location: Option<String>,
    /// A backtrace, when `RUST_BACKTRACE` (or `RUST_LIB_BACKTRACE`) asks
    /// for one (resolved to symbols only when it is printed).
    pub backtrace: Option<Arc<Backtrace>>,
}

/// Where an actor panicked, as the stack's return addresses, captured by
/// the panic hook and resolved to functions, files and lines the first
/// time it is printed (`Display`, in std's backtrace format). Resolving
/// reads the program's debug information: tens of milliseconds the first
/// time in a process.
///
/// ```
/// use smarm::report::Report;
/// use std::sync::{Arc, Mutex};
///
/// // A crash report carries one when RUST_BACKTRACE (or
/// // RUST_LIB_BACKTRACE) asks for backtraces.
/// let traces = Arc::new(Mutex::new(Vec::new()));
/// let sink = traces.clone();
/// smarm::report::set_handler(move |r| {
///     if let Report::Crash(c) = r {
///         // Kept unresolved: resolved where it is printed.
///         sink.lock().unwrap().push(c.backtrace.clone());
///     }
/// });
/// smarm::run(|| assert!(smarm::spawn(|| panic!("boom")).join().is_err()));
/// for trace in traces.lock().unwrap().iter().flatten() {
///     println!("{trace}"); // "   0: ...\n             at src/...", one per frame
/// }
/// # smarm::report::reset_handler();
/// ```
pub struct Backtrace {
    frames: std::sync::Mutex<backtrace::Backtrace>,
}

/// Frames kept of a crash's backtrace (the innermost ones).
const MAX_FRAMES: usize = 256;

impl Backtrace {
    /// The calling thread's stack, unresolved, without taking a lock.
    fn capture() -> Backtrace {
        let mut frames = Vec::with_capacity(64);
        // SAFETY: the unsynchronized walk is unsafe only where the
        // platform's unwinder is not thread-safe; on Linux it is libgcc's
        // `_Unwind_Backtrace`, which serialises its own caches, so walking
        // here while another thread resolves or walks is sound.
        unsafe {
            backtrace::trace_unsynchronized(|frame| {
                frames.push(backtrace::BacktraceFrame::from(frame.clone()));
                frames.len() < MAX_FRAMES
            });
        }
        Backtrace {
            frames: std::sync::Mutex::new(backtrace::Backtrace::from(frames)),
        }
    }

    /// Whether `RUST_LIB_BACKTRACE`, or failing it `RUST_BACKTRACE`, asks
    /// for backtraces (as std's `Backtrace::capture` reads them: set and
    /// not `0`), read once per process.
    fn wanted() -> bool {
        use std::sync::atomic::{AtomicU8, Ordering};
        static WANTED: AtomicU8 = AtomicU8::new(0); // 0 unread, 1 no, 2 yes
        match WANTED.load(Ordering::Relaxed) {
            1 => false,
            2 => true,
            _ => {
                let asked = |var| std::env::var_os(var).map(|v| v != "0");
                let yes = asked("RUST_LIB_BACKTRACE")
                    .or_else(|| asked("RUST_BACKTRACE"))
                    .unwrap_or(false);
                WANTED.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
                yes
            }
        }
    }
}

impl fmt::Display for Backtrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut frames = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        frames.resolve();
        for (i, frame) in frames.frames().iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            let symbols = frame.symbols();
            if symbols.is_empty() {
                write!(f, "{i:4}: <unknown>")?;
            }
            for (k, symbol) in symbols.iter().enumerate() {
                if k > 0 {
                    writeln!(f)?;
                }
                match symbol.name() {
                    Some(name) => write!(f, "{i:4}: {name:#}")?,
                    None => write!(f, "{i:4}: <unknown>")?,
                }
                if let (Some(file), Some(line)) = (symbol.filename(), symbol.lineno()) {
                    write!(f, "\n             at {}:{line}", file.display())?;
                    if let Some(column) = symbol.colno() {
                        write!(f, ":{column}")?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Backtrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let frames = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        write!(f, "Backtrace {{ {} frames }}", frames.frames().len())
    }
}

/// What a supervisor did about a child that ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SupervisorAction {
    /// The child was started again (`restarts` counts them within the
    /// supervisor's intensity window).
    Restarted,
    /// The child ended for good (temporary, or transient with a normal
    /// exit) and is not restarted.
    Removed,
    /// Restarts exceeded the supervisor's intensity: it stops its children
    /// and exits.
    GaveUp,
    /// Starting the child again failed.
    RestartFailed(String),
    /// The child will be started again after this delay (its restart
    /// backs off while it keeps failing).
    RestartDelayed(std::time::Duration),
}

/// A supervisor's decision about one of its children.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SupervisorReport {
    /// The supervisor.
    pub supervisor: Pid,
    /// Its registered name, if it has one.
    pub supervisor_name: Option<&'static str>,
    /// The child's id in the supervisor's specs.
    pub child: String,
    /// The child's pid when it ended.
    pub child_pid: Pid,
    /// Why it ended.
    pub reason: DownReason,
    /// Restarts within the current intensity window, this one included.
    pub restarts: u32,
    /// What the supervisor did.
    pub action: SupervisorAction,
}

impl SupervisorReport {
    /// A report of `action` on `child` (id `child`, pid `child_pid`, ended
    /// for `reason`) by `supervisor`.
    pub fn new(
        supervisor: Pid,
        supervisor_name: Option<&'static str>,
        child: String,
        child_pid: Pid,
        reason: DownReason,
        restarts: u32,
        action: SupervisorAction,
    ) -> SupervisorReport {
        SupervisorReport {
            supervisor,
            supervisor_name,
            child,
            child_pid,
            reason,
            restarts,
            action,
        }
    }
}

/// Every scheduler of a runtime, spares included, is blocked inside one
/// actor's run (a sync call, a std lock) and no more spares can start:
/// the runtime serves nothing until one returns. Reported once per run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SparesExhaustedReport {
    /// Regular schedulers and spares running, all blocked.
    pub schedulers: usize,
    /// The blocked actors, and how long each had been running when seen.
    pub blocked: Vec<(Pid, std::time::Duration)>,
}

impl fmt::Display for SparesExhaustedReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "=SCHEDULERS BLOCKED REPORT==== all {} schedulers are blocked and no spare is left \
             (threads plus spares are capped at {}): the runtime serves nothing until one returns",
            self.schedulers,
            crate::config::MAX_THREADS
        )?;
        write!(
            f,
            "    blocked in (move blocking calls to smarm::io::block_on_io or async IO):"
        )?;
        for (pid, for_) in &self.blocked {
            write!(f, "\n      {pid} for {for_:?}")?;
        }
        Ok(())
    }
}

/// One report.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Report {
    /// An actor panicked, or crossed its heap limit.
    Crash(CrashReport),
    /// A supervisor acted on a child's end.
    Supervisor(SupervisorReport),
    /// Every scheduler is blocked and the spares are used up.
    SparesExhausted(SparesExhaustedReport),
}

impl fmt::Display for CrashReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "=CRASH REPORT==== actor {}", self.pid)?;
        if !self.names.is_empty() {
            write!(f, " [{}]", self.names.join(", "))?;
        }
        if let Some(label) = &self.label {
            write!(f, " ({label})")?;
        }
        writeln!(f, " {}", self.reason)?;
        match self.parent {
            Some(parent) => writeln!(f, "    parent: {parent}")?,
            None => writeln!(f, "    parent: none (the run's root)")?,
        }
        if let Some(last) = &self.last_message {
            writeln!(f, "    last message: {last}")?;
        }
        let what = match self.reason {
            DownReason::Panic => "panic",
            _ => "why",
        };
        write!(f, "    {what}: {}", self.message)?;
        if let Some(at) = &self.location {
            write!(f, "\n    at: {at}")?;
        }
        if let Some(bt) = &self.backtrace {
            write!(f, "\n    backtrace:\n{bt}")?;
        }
        Ok(())
    }
}

impl fmt::Display for SupervisorReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "=SUPERVISOR REPORT==== supervisor {}", self.supervisor)?;
        if let Some(name) = self.supervisor_name {
            write!(f, " [{name}]")?;
        }
        writeln!(f)?;
        writeln!(f, "    child: {} ({})", self.child, self.child_pid)?;
        writeln!(f, "    reason: {:?}", self.reason)?;
        writeln!(f, "    restarts: {}", self.restarts)?;
        match &self.action {
            SupervisorAction::Restarted => write!(f, "    action: restarted"),
            SupervisorAction::Removed => write!(f, "    action: removed, not restarted"),
            SupervisorAction::GaveUp => {
                write!(f, "    action: gave up (restart intensity reached)")
            }
            SupervisorAction::RestartFailed(e) => write!(f, "    action: restart failed: {e}"),
            SupervisorAction::RestartDelayed(d) => write!(f, "    action: restart in {d:?}"),
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Report::Crash(r) => r.fmt(f),
            Report::Supervisor(r) => r.fmt(f),
            Report::SparesExhausted(r) => r.fmt(f),
        }
    }
}

type Handler = Arc<dyn Fn(&Report) + Send + Sync>;

/// The process's report handler; `None` = the default (standard error).
static HANDLER: RwLock<Option<Handler>> = RwLock::new(None);

/// Send every report of this process to `handler` instead of standard
/// error: to a logger, to a test's collector, or nowhere (`|_| {}`).
/// Process-wide, like a panic hook; the last call wins. The handler runs
/// where the report is made, mostly on a scheduler thread outside any
/// actor, before the crashed actor's monitors and joiners hear of its
/// end: it must not block for long. Formatting a report that carries a
/// backtrace resolves its symbols (tens of milliseconds the first time):
/// a handler that prints such reports should hand them to a thread of its
/// own, as the default handler does.
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = seen.clone();
/// smarm::report::set_handler(move |r| sink.lock().unwrap().push(r.to_string()));
/// smarm::run(|| {
///     let h = smarm::Builder::new().name("worker").spawn(|| panic!("boom")).unwrap();
///     assert!(h.join().is_err());
/// });
/// let seen = seen.lock().unwrap();
/// assert!(seen[0].contains("(worker) panicked"));
/// assert!(seen[0].contains("panic: boom"));
/// # drop(seen);
/// # smarm::report::reset_handler();
/// ```
pub fn set_handler(handler: impl Fn(&Report) + Send + Sync + 'static) {
    *HANDLER.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(handler));
}

/// Back to the default handler (standard error).
pub fn reset_handler() {
    *HANDLER.write().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Hand `report` to the process's handler (the behaviours above the
/// runtime report through here too).
pub fn emit(report: Report) {
    let handler = HANDLER.read().unwrap_or_else(|e| e.into_inner()).clone();
    match handler {
        Some(h) => h(&report),
        #[cfg(feature = "tracing")]
        None if subscribed() => to_tracing(&report),
        None => write_to_stderr(report),
    }
}

/// The default handler: on a runtime's thread, through its reporter
/// (R3); elsewhere (or when the reporter cannot start), here.
fn write_to_stderr(report: Report) {
    let mut report = Some(report);
    crate::scheduler::with_worker(|_, shared| {
        shared
            .locals()
            .get_or_default::<Reporter>()
            .send(&mut report);
    });
    if let Some(report) = report {
        eprintln!("{report}");
    }
}

/// A runtime's reporter thread, started at its first default-handler
/// report and ended by [`finish_run`] (R3).
#[derive(Default)]
struct Reporter(Mutex<Option<ReporterThread>>);

struct ReporterThread {
    tx: mpsc::Sender<Report>,
    thread: std::thread::JoinHandle<()>,
}

impl Reporter {
    /// Take `report` and queue it for the reporter thread, starting the
    /// thread if it is not running; leaves it in place if that fails.
    fn send(&self, report: &mut Option<Report>) {
        let mut running = crate::lock::lock_std(&self.0);
        if running.is_none() {
            let (tx, rx) = mpsc::channel::<Report>();
            // Spawned from a scheduler thread, it inherits the output
            // capture a test harness gave the runtime's threads.
            let started = std::thread::Builder::new()
                .name("smarm-reporter".to_string())
                .spawn(move || {
                    for report in rx {
                        eprintln!("{report}");
                    }
                });
            if let Ok(thread) = started {
                *running = Some(ReporterThread { tx, thread });
            }
        }
        if let (Some(r), Some(queued)) = (running.as_ref(), report.take()) {
            // The receiver lives until `finish_run` drops the sender.
            if let Err(mpsc::SendError(back)) = r.tx.send(queued) {
                *report = Some(back);
            }
        }
    }
}

/// The end of a runtime's run, once its schedulers have stopped: wait
/// until the reporter has written every report (R3).
pub(crate) fn finish_run(shared: &crate::scheduler::Shared) {
    let running = crate::lock::lock_std(&shared.locals().get_or_default::<Reporter>().0).take();
    if let Some(ReporterThread { tx, thread }) = running {
        drop(tx);
        // A reporter that panicked (a report's `Display` did) has lost
        // nothing more than that report; the run's outcome stands.
        let _ = thread.join();
    }
}

/// Whether a `tracing` subscriber is this thread's default.
#[cfg(feature = "tracing")]
fn subscribed() -> bool {
    tracing::dispatcher::get_default(|d| !d.is::<tracing::subscriber::NoSubscriber>())
}

/// `report` as a `tracing` event (target `smarm::report`).
#[cfg(feature = "tracing")]
fn to_tracing(report: &Report) {
    match report {
        Report::Crash(c) => tracing::error!(
            target: "smarm::report",
            pid = %c.pid,
            label = c.label.as_deref(),
            names = ?c.names,
            parent = c.parent.map(tracing::field::display),
            location = c.location.as_deref(),
            last_message = c.last_message.as_deref(),
            "actor {} {}: {}",
            c.pid,
            c.reason,
            c.message
        ),
        Report::SparesExhausted(r) => tracing::error!(
            target: "smarm::report",
            schedulers = r.schedulers,
            blocked = ?r.blocked,
            "every scheduler is blocked and no spare is left"
        ),
        Report::Supervisor(s) => {
            let child_pid = tracing::field::display(s.child_pid);
            let supervisor = tracing::field::display(s.supervisor);
            match &s.action {
                SupervisorAction::Restarted => tracing::warn!(
                    target: "smarm::report", %supervisor, child = %s.child, %child_pid,
                    reason = ?s.reason, restarts = s.restarts, "child restarted"
                ),
                SupervisorAction::Removed => tracing::info!(
                    target: "smarm::report", %supervisor, child = %s.child, %child_pid,
                    reason = ?s.reason, "child removed, not restarted"
                ),
                SupervisorAction::GaveUp => tracing::error!(
                    target: "smarm::report", %supervisor, child = %s.child, %child_pid,
                    reason = ?s.reason, restarts = s.restarts,
                    "supervisor gave up: restart intensity reached"
                ),
                SupervisorAction::RestartFailed(e) => tracing::error!(
                    target: "smarm::report", %supervisor, child = %s.child, %child_pid,
                    reason = ?s.reason, error = %e, "child restart failed"
                ),
                SupervisorAction::RestartDelayed(d) => tracing::warn!(
                    target: "smarm::report", %supervisor, child = %s.child, %child_pid,
                    reason = ?s.reason, restarts = s.restarts, delay = ?d,
                    "child restart delayed (backoff)"
                ),
            }
        }
    }
}

/// Where the last actor panic on this thread happened (R1, R2).
struct Recorded {
    pid: Pid,
    location: Option<String>,
    backtrace: Option<Arc<Backtrace>>,
}

thread_local! {
    static RECORDED: RefCell<Option<Recorded>> = const { RefCell::new(None) };
}

/// Install the runtime's panic hook, once per process (chained to the
/// hook installed before it).
pub(crate) fn install_panic_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let Some(pid) = crate::scheduler::current_pid() else {
                return previous(info);
            };
            let location = info.location().map(|l| l.to_string());
            let backtrace = Backtrace::wanted().then(|| Arc::new(Backtrace::capture()));
            let record = Recorded {
                pid,
                location,
                backtrace,
            };
            // A panic while the cell is borrowed (a panic inside this
            // hook's own bookkeeping) keeps the older record.
            RECORDED.with(|r| {
                if let Ok(mut r) = r.try_borrow_mut() {
                    *r = Some(record);
                }
            });
        }));
    });
}

/// What the actor layer knows of a crashed actor at its finalisation.
pub(crate) struct Crashed {
    pub(crate) reason: DownReason,
    pub(crate) pid: Pid,
    pub(crate) label: Option<String>,
    pub(crate) names: Vec<&'static str>,
    pub(crate) parent: Option<Pid>,
    pub(crate) message: String,
    pub(crate) last_message: Option<String>,
}

/// Report a crash (a panic, a heap limit crossed), at the actor's
/// finalisation on this scheduler thread.
pub(crate) fn actor_crashed(c: Crashed) {
    let recorded = RECORDED
        .with(|r| r.try_borrow_mut().ok().and_then(|mut r| r.take()))
        .filter(|r| r.pid == c.pid);
    let (location, backtrace) = recorded.map_or((None, None), |r| (r.location, r.backtrace));
    emit(Report::Crash(CrashReport {
        pid: c.pid,
        reason: c.reason,
        label: c.label,
        names: c.names,
        parent: c.parent,
        message: c.message,
        last_message: c.last_message,
        location,
        backtrace,
    }));
}

/// Note, for the running actor's crash report, what it was handling when
/// it panicked (OTP's "last message in"): a behaviour that catches its
/// callback's panic calls this before letting the panic end the actor.
/// Takes the actor's record lock: for the crash path, not per message.
/// Outside an actor it does nothing.
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// let seen = Arc::new(Mutex::new(String::new()));
/// let sink = seen.clone();
/// smarm::report::set_handler(move |r| *sink.lock().unwrap() = r.to_string());
/// smarm::run(|| {
///     let h = smarm::spawn(|| {
///         let caught = std::panic::catch_unwind(|| panic!("bad order"));
///         smarm::report::note_last_message("handle_cast: Order(17)");
///         std::panic::resume_unwind(caught.unwrap_err());
///     });
///     assert!(h.join().is_err());
/// });
/// assert!(seen.lock().unwrap().contains("last message: handle_cast: Order(17)"));
/// # smarm::report::reset_handler();
/// ```
pub fn note_last_message(what: impl Into<String>) {
    let what = what.into();
    crate::scheduler::with_worker(|w, shared| {
        if let Some(me) = w.actor.current.get() {
            crate::signal::with_live_signals(shared, me, |signals, _| {
                signals.last_message = Some(what);
            });
        }
    });
}
