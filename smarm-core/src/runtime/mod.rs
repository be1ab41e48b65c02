//! `run(f)`, `Runtime`, and the termination verdict.
//!
//! # Design
//!
//! [`init`] builds a [`Runtime`] from a [`Config`]: the schedulers' shared
//! state (slot table, run queues, coordination layer, timer heap, stack
//! pool, termination counters; `scheduler::Shared`), which the runtime
//! assembles and the layers above reach through the running scheduler.
//! [`Runtime::run`] spawns `f` as the root actor, starts `threads - 1`
//! scheduler threads, runs scheduler 0 on the calling thread, and returns
//! when the verdict says every actor is done. A runtime can `run` again
//! after that; separate runtimes on separate OS threads share nothing but
//! the process-wide stack pools.
//!
//! # Invariants
//!
//! - (I1) `live_actors` counts actors from spawn (before their first
//!   enqueue) to the very end of finalisation.
//! - (I2) Termination: `live_actors == 0` and no IO in flight means no
//!   work can ever appear again. Every enqueue targets a live actor, a
//!   spawner is itself live, and finalisation decrements only after every
//!   wake it produces; so once the count reads 0, nothing can raise it.
//!   The deciding scheduler `wake_all`s its siblings, which re-run the
//!   verdict and leave too.
//! - (I3) Root-exit sweep: once the root has finished, if every scheduler
//!   is idle, no queue holds work, no timer is armed and no blocking call
//!   is in flight, no remaining actor can be woken except, perhaps, by an
//!   fd that may never become ready. They are stopped (a
//!   cooperative unwind: destructors run), so a forgotten server cannot
//!   hang `run`. An actor that is sleeping or waiting on a timeout is not
//!   swept: it will wake. One waiting on an fd is: an fd may never become
//!   ready.
//!
//! # Memory ordering
//!
//! `live_actors` is AcqRel on both sides; a scheduler reading 0 has seen
//! every finalisation's effects. The idle path's re-check reads the queue
//! lengths and counters after the coordination layer's SeqCst fence (park
//! (I2)).

use crate::actor::{spawn_in, Outcome};
mod local;

pub use crate::config::{Config, ConfigError};
use crate::loom::Ordering;
use crate::scheduler::Shared;
use crate::slot::Pid;
use crate::stack::StackPool;
pub use local::{defer_drop, with_runtime_local, RuntimeRef};
use std::sync::Arc;
use std::sync::Arc as StdArc;
use std::sync::Mutex as StdMutex;

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
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.shared.config)
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
/// core), run `f` as the root actor, and return when it and every actor it
/// transitively spawned have finished. A panic in `f` is re-raised here.
///
/// ```
/// smarm::run(|| {
///     let child = smarm::spawn(|| println!("hello from a child actor"));
///     child.join().unwrap();
/// });
/// ```
pub fn run<F: FnOnce() + Send + 'static>(f: F) {
    init(Config::default()).run(f)
}

/// Process-wide stack pools, one per stack size.
static POOLS: StdMutex<Vec<StdArc<StackPool>>> = StdMutex::new(Vec::new());

fn pool_for(stack_size: usize) -> StdArc<StackPool> {
    let mut pools = crate::sync::lock_std(&POOLS);
    let probe = StackPool::new(stack_size);
    if let Some(p) = pools.iter().find(|p| p.stack_size() == probe.stack_size()) {
        return p.clone();
    }
    let pool = StdArc::new(probe);
    pools.push(pool.clone());
    pool
}

impl Runtime {
    /// Build a runtime, or say which limit `config` breaks.
    pub fn new(config: Config) -> Result<Runtime, ConfigError> {
        config.validate()?;
        crate::stack::install_overflow_handler();
        let stacks = pool_for(config.stack_size);
        Ok(Runtime {
            shared: Arc::new(Shared::new(config, stacks, crate::actor::exit_hook)),
        })
    }

    /// This runtime's configuration.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// Run `f` as the root actor on this runtime's schedulers and return
    /// when every actor has finished (see the module docs for the verdict
    /// and the root-exit sweep). A panic in `f` is re-raised here.
    ///
    /// # Panics
    ///
    /// If called from inside an actor (spawn an actor instead), if this
    /// runtime is already running, or if a scheduler thread cannot start.
    pub fn run<F: FnOnce() + Send + 'static>(&self, f: F) {
        if !crate::scheduler::current_worker().is_null() {
            panic!(
                "smarm: Runtime::run called from inside an actor; spawn an actor instead of \
                 starting a nested runtime"
            );
        }
        let shared = &self.shared;
        if shared.running.swap(true, Ordering::AcqRel) {
            panic!("smarm: Runtime::run called while this runtime is already running");
        }
        shared.root_exited.store(false, Ordering::Release);
        shared.root_swept.store(false, Ordering::Release);
        let root = match spawn_in(shared, None, Box::new(f), None) {
            Ok(handle) => handle,
            Err(e) => {
                shared.running.store(false, Ordering::Release);
                panic!("{e}");
            }
        };
        shared.root.store(root.pid().to_bits(), Ordering::Release);
        let threads: Vec<_> = (1..shared.config.threads)
            .map(|id| {
                let shared = shared.clone();
                std::thread::Builder::new()
                    .name(format!("smarm-sched-{id}"))
                    .spawn(move || crate::scheduler::run_worker(&shared, id))
            })
            .collect();
        let mut start_error = None;
        let mut joinable = Vec::new();
        for t in threads {
            match t {
                Ok(t) => joinable.push(t),
                Err(e) => start_error = Some(e),
            }
        }
        crate::scheduler::run_worker(shared, 0);
        let mut scheduler_panic = None;
        for t in joinable {
            if let Err(p) = t.join() {
                scheduler_panic = Some(p);
            }
        }
        crate::io::stop(shared);
        shared.stacks.trim();
        shared.root.store(0, Ordering::Release);
        shared.running.store(false, Ordering::Release);
        if let Some(p) = scheduler_panic {
            std::panic::resume_unwind(p);
        }
        if let Some(e) = start_error {
            panic!("smarm: could not start a scheduler thread: {e}");
        }
        match root.take_outcome_now() {
            Some(Outcome::Panic(payload)) => std::panic::resume_unwind(payload),
            Some(Outcome::Killed(reason)) => {
                std::panic::resume_unwind(Box::new(crate::signal::Killed { reason }))
            }
            Some(Outcome::Exit | Outcome::Stopped) | None => {}
        }
    }

    /// The root actor's pid, while `run` is in progress.
    pub fn root(&self) -> Option<Pid> {
        match self.shared.root.load(Ordering::Acquire) {
            0 => None,
            bits => Some(Pid::from_bits(bits)),
        }
    }
}
