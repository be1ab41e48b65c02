//! The tokio runtime beside a smarm runtime (feature `tokio`): handed in
//! when the runtime is built, or started by smarm when it first runs, and
//! kept for the runtime's life; every scheduler thread runs inside its
//! context.

use crate::scheduler::{Enter, Shared, ThreadContext};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::runtime::{Handle, Runtime};

/// Worker threads of a tokio runtime smarm starts itself, unless
/// [`Runtime::with_tokio_threads`](crate::runtime::Runtime::with_tokio_threads)
/// says otherwise: tokio's IO driver and timers run there, and the tasks
/// actors `tokio::spawn`; the actors' own work stays on the schedulers.
pub const DEFAULT_TOKIO_THREADS: usize = 1;

/// A smarm runtime's tokio runtime (a runtime local).
#[derive(Default)]
pub(crate) struct TokioSlot {
    /// Worker threads for one smarm starts; 0 for the default.
    threads: AtomicUsize,
    tokio: OnceLock<Tokio>,
}

enum Tokio {
    /// The user's: its owner shuts it down.
    Handed(Handle),
    /// Smarm's, shut down with the smarm runtime.
    Own(OwnRuntime),
}

/// A tokio runtime smarm started. Dropped without waiting for its tasks
/// (`shutdown_background`), which is allowed anywhere, a tokio thread
/// included: the last count of the smarm runtime may be given up there.
struct OwnRuntime {
    runtime: Option<Runtime>,
    handle: Handle,
}

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Why a tokio runtime could not be attached to a smarm runtime.
#[derive(Debug, thiserror::Error)]
pub enum TokioError {
    /// The smarm runtime already has one: handed in before, or started by
    /// an earlier run.
    #[error(
        "smarm: this runtime already has a tokio runtime (handed in before, or started by an \
         earlier run); hand one in right after Runtime::new, before the first run"
    )]
    AlreadySet,
}

impl TokioSlot {
    pub(crate) fn set_handle(&self, handle: Handle) -> Result<(), TokioError> {
        self.tokio
            .set(Tokio::Handed(handle))
            .map_err(|_| TokioError::AlreadySet)
    }

    pub(crate) fn set_threads(&self, threads: usize) -> Result<(), TokioError> {
        if self.tokio.get().is_some() {
            return Err(TokioError::AlreadySet);
        }
        self.threads.store(threads, Ordering::Relaxed);
        Ok(())
    }

    fn handle(&self) -> Handle {
        let tokio = self.tokio.get_or_init(|| {
            let threads = match self.threads.load(Ordering::Relaxed) {
                0 => DEFAULT_TOKIO_THREADS,
                n => n,
            };
            let built = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("smarm-tokio")
                .enable_all()
                .build();
            match built {
                Ok(runtime) => Tokio::Own(OwnRuntime {
                    handle: runtime.handle().clone(),
                    runtime: Some(runtime),
                }),
                Err(e) => panic!(
                    "smarm: Runtime::run could not start the tokio runtime beside smarm: {e}"
                ),
            }
        });
        match tokio {
            Tokio::Handed(handle) => handle.clone(),
            Tokio::Own(own) => own.handle.clone(),
        }
    }
}

/// Make sure `runtime` has its tokio runtime (starting smarm's own if
/// none was handed in) and that every scheduler thread runs inside its
/// context: called before a run's threads start.
pub(crate) fn prepare(runtime: &Shared) {
    let handle = runtime.locals().get_or_default::<TokioSlot>().handle();
    let enter: Enter = Box::new(move |run_scheduler: &mut dyn FnMut()| {
        let _entered = handle.enter();
        run_scheduler();
    });
    runtime
        .locals()
        .get_or_default::<ThreadContext>()
        .install(enter);
}
