//! [`RuntimeHandle`]: a runtime as code outside it holds it (a tokio task,
//! a plain thread), to spawn actors into it and reach its per-runtime
//! state; and [`Running`], a runtime started with [`Runtime::start`]
//! whose root can be joined from a thread or awaited.

use super::Runtime;
use super::local::RuntimeRef;
use crate::actor::{JoinHandle, SpawnError, SpawnOpts, spawn_in};
use crate::scheduler::Shared;
use std::any::Any;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};

/// A runtime, from anywhere: cheap to clone (one reference count), `Send`
/// and `Sync`. Get one from [`Runtime::handle`], [`Running::handle`] or,
/// inside an actor, [`current`]. The registry's `whereis_in` and
/// `send_in` and the gen_server's `whereis_server_in` take one, so code
/// outside the runtime reaches a supervised server by name across its
/// restarts.
///
/// ```
/// let rt = smarm::runtime::init(smarm::runtime::Config::exact(2));
/// let handle = rt.handle();
/// let running = rt.start(|| smarm::sleep(std::time::Duration::from_millis(20)));
/// // A plain thread spawns into the running runtime and joins the actor.
/// let child = handle.spawn(|| 6 * 7);
/// assert_eq!(smarm::future::block_on(child).unwrap(), 42);
/// running.join();
/// ```
#[derive(Clone)]
pub struct RuntimeHandle {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for RuntimeHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeHandle").finish_non_exhaustive()
    }
}

/// The runtime the calling actor runs in.
///
/// # Panics
///
/// Outside an actor.
pub fn current() -> RuntimeHandle {
    crate::scheduler::with_current_actor("smarm::runtime::current", |_, shared| RuntimeHandle {
        shared: shared.to_arc(),
    })
}

impl RuntimeHandle {
    pub(super) fn of(runtime: &Runtime) -> RuntimeHandle {
        RuntimeHandle {
            shared: runtime.shared.clone(),
        }
    }

    /// Spawn `f` as an actor of this runtime, from any thread: it has no
    /// parent (as a root). The runtime must be running, with its root
    /// alive. The handle can be joined from an actor of this runtime or
    /// awaited from anywhere.
    ///
    /// # Panics
    ///
    /// If the actor table is full or stack memory is exhausted; see
    /// [`try_spawn`](Self::try_spawn).
    pub fn spawn<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> JoinHandle<T> {
        match self.try_spawn(f) {
            Ok(handle) => handle,
            Err(e) => panic!("{e}"),
        }
    }

    /// [`spawn`](Self::spawn), with a full actor table, exhausted stack
    /// memory or a runtime that is not running
    /// ([`SpawnError::NotRunning`]) as an error.
    pub fn try_spawn<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<JoinHandle<T>, SpawnError> {
        let shared = &self.shared;
        let spawned = shared.spawn_from_outside(|| {
            spawn_in(shared, crate::slot::table::entry(f), SpawnOpts::default())
        });
        match spawned {
            Some(spawned) => spawned.map(JoinHandle::retype),
            None => Err(SpawnError::NotRunning),
        }
    }

    /// Send the exit signal `signal` to `pid` from any thread, as
    /// [`exit`](crate::exit) does from an actor. A trapping target's
    /// [`Exit`](crate::Exit) names the target itself as `from`: the signal
    /// comes from no actor.
    ///
    /// ```
    /// use smarm::{DownReason, ExitSignal};
    ///
    /// let runtime = smarm::runtime::init(smarm::runtime::Config::default());
    /// let handle = runtime.handle();
    /// let reason = runtime.run(move || {
    ///     let (_, m) = smarm::Builder::new()
    ///         .spawn_monitor(|| smarm::sleep(std::time::Duration::from_secs(60)))
    ///         .unwrap();
    ///     let target = m.target;
    ///     std::thread::spawn(move || handle.exit(target, ExitSignal::Kill));
    ///     m.rx.recv().unwrap().reason
    /// });
    /// assert_eq!(reason, DownReason::Killed);
    /// ```
    pub fn exit<A>(&self, pid: crate::Pid<A>, signal: crate::ExitSignal) {
        let pid = pid.erase();
        crate::signal::send_exit_signal(&self.shared, None, pid, signal);
    }

    /// Whether `pid` names a live actor of this runtime.
    pub fn is_alive<A>(&self, pid: crate::Pid<A>) -> bool {
        crate::actor::alive_in(&self.shared, pid.erase())
    }

    /// Run `f` on this runtime's instance of `T` (as
    /// [`with_runtime_local`](super::with_runtime_local)), from any
    /// thread: for libraries built on smarm that serve callers outside the
    /// runtime. Unlike `with_runtime_local`, `f` may run on a thread that
    /// is no scheduler, so it must not read values published for lock-free
    /// readers ([`defer_drop`](super::defer_drop) protects scheduler
    /// threads only): take the library's lock instead.
    pub fn with_local<T: Any + Send + Sync + Default, R>(
        &self,
        f: impl FnOnce(&T, RuntimeRef<'_>) -> R,
    ) -> R {
        f(
            self.shared.locals().get_or_default::<T>(),
            RuntimeRef::new(&self.shared),
        )
    }
}

/// What the root of a started runtime left: its value, or its panic.
struct RootState<R> {
    outcome: Mutex<RootOutcome<R>>,
    done: Condvar,
}

struct RootOutcome<R> {
    result: Option<std::thread::Result<R>>,
    waker: Option<Waker>,
}

/// A runtime started with [`Runtime::start`]: every scheduler on threads
/// of its own, the root running. [`join`](Self::join) blocks the calling
/// thread until the run ends; `.await` waits without blocking (the
/// future is `Send`, for `#[tokio::main]`). Either gives the root's value,
/// or re-raises its panic, as [`Runtime::run`] does. Dropping it leaves
/// the runtime running to its end.
#[must_use = "join or await the run, or it goes on unobserved"]
pub struct Running<R> {
    state: Arc<RootState<R>>,
    handle: RuntimeHandle,
}

impl<R> std::fmt::Debug for Running<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running").finish_non_exhaustive()
    }
}

impl Runtime {
    /// A handle to this runtime for code outside it.
    pub fn handle(&self) -> RuntimeHandle {
        RuntimeHandle::of(self)
    }

    /// Start `f` as the root actor and return as soon as the run is in
    /// progress: every scheduler runs on a thread of its own (scheduler 0
    /// too, unlike [`run`](Self::run)), so a smarm runtime can live beside
    /// another event loop, inside `#[tokio::main]`. The run ends as
    /// `run`'s does; [`Running`] collects its outcome.
    ///
    /// ```
    /// let rt = smarm::runtime::init(smarm::runtime::Config::exact(2));
    /// let running = rt.start(|| smarm::spawn(|| 21 * 2).join().unwrap());
    /// assert_eq!(smarm::future::block_on(running), 42); // or running.join()
    /// ```
    ///
    /// # Panics
    ///
    /// If the thread for scheduler 0 cannot be started, or the run cannot
    /// begin (this runtime already runs). The root's panic comes from
    /// [`Running::join`] or the await.
    pub fn start<R: Send + 'static>(&self, f: impl FnOnce() -> R + Send + 'static) -> Running<R> {
        let state = Arc::new(RootState {
            outcome: Mutex::new(RootOutcome {
                result: None,
                waker: None,
            }),
            done: Condvar::new(),
        });
        let runtime = Runtime {
            shared: self.shared.clone(),
        };
        let s = state.clone();
        let (began_tx, began) = std::sync::mpsc::channel::<()>();
        let started = std::thread::Builder::new()
            .name("smarm-sched-0".into())
            .spawn(move || {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    runtime.run_then(f, move || {
                        let _ = began_tx.send(());
                    })
                }));
                let waker = {
                    let mut outcome = crate::lock::lock_std(&s.outcome);
                    outcome.result = Some(result);
                    outcome.waker.take()
                };
                s.done.notify_all();
                if let Some(waker) = waker {
                    waker.wake();
                }
            });
        let thread = match started {
            Ok(thread) => thread,
            Err(e) => panic!("smarm: Runtime::start could not start a scheduler thread: {e}"),
        };
        let running = Running {
            state,
            handle: self.handle(),
        };
        // Back once the run is in progress (its root spawned), so a
        // `RuntimeHandle` can spawn into it at once; a run that could not
        // begin (already running, say) re-raises its panic here.
        if began.recv().is_err() {
            drop(thread.join()); // it caught the panic and left it in the state
            let result = crate::lock::lock_std(&running.state.outcome).result.take();
            if let Some(Err(panic)) = result {
                std::panic::resume_unwind(panic);
            }
            unreachable!("a run that never began ends with a panic");
        }
        running
    }
}

impl<R> Running<R> {
    /// A handle to the running runtime.
    pub fn handle(&self) -> RuntimeHandle {
        self.handle.clone()
    }

    /// Whether the run has ended (so `join` will not block).
    pub fn is_finished(&self) -> bool {
        crate::lock::lock_std(&self.state.outcome).result.is_some()
    }

    /// Block the calling thread until the run ends; the root's value.
    ///
    /// # Panics
    ///
    /// Inside an actor (it would block a scheduler: await it instead, with
    /// [`block_on`](crate::future::block_on)), and with the root's panic,
    /// as [`Runtime::run`].
    pub fn join(self) -> R {
        if crate::scheduler::in_actor() {
            panic!(
                "smarm: Running::join inside an actor would block its scheduler: \
                 smarm::future::block_on(running) waits parking only the actor"
            );
        }
        let mut outcome = self.state.outcome.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(result) = outcome.result.take() {
                return unwrap_root(result);
            }
            outcome = self
                .state
                .done
                .wait(outcome)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

fn unwrap_root<R>(result: std::thread::Result<R>) -> R {
    match result {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// The future of an awaited [`Running`].
#[must_use = "a future does nothing until awaited"]
pub struct RunningFuture<R> {
    state: Arc<RootState<R>>,
}

impl<R> std::fmt::Debug for RunningFuture<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningFuture").finish_non_exhaustive()
    }
}

impl<R> IntoFuture for Running<R> {
    type Output = R;
    type IntoFuture = RunningFuture<R>;

    fn into_future(self) -> RunningFuture<R> {
        RunningFuture { state: self.state }
    }
}

impl<R> Future for RunningFuture<R> {
    type Output = R;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        let mut outcome = crate::lock::lock_std(&self.state.outcome);
        match outcome.result.take() {
            Some(result) => {
                drop(outcome);
                Poll::Ready(unwrap_root(result))
            }
            None => {
                outcome.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
