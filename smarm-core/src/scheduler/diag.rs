//! What a runtime keeps for observing it: its trace recorder (feature
//! `trace`) and the `tracing` dispatcher its schedulers run under (feature
//! `tracing`). Without either feature this holds nothing.

use super::Shared;
#[cfg(feature = "trace")]
use crate::slot::Pid;

/// A runtime's trace recorder and `tracing` dispatcher.
#[derive(Default)]
pub(crate) struct Diagnostics {
    /// Runtime trace events (feature `trace`).
    #[cfg(feature = "trace")]
    trace: crate::recorder::Recorder,
    /// The `tracing` dispatcher the current run was started under
    /// (feature `tracing`), made every scheduler thread's default.
    #[cfg(feature = "tracing")]
    dispatch: std::sync::Mutex<Option<tracing::Dispatch>>,
}

impl Shared {
    /// This runtime's trace recorder.
    #[cfg(feature = "trace")]
    pub(crate) fn recorder(&self) -> &crate::recorder::Recorder {
        &self.diag.trace
    }

    /// Record a trace event if this runtime is recording (the
    /// `trace_event!` macro calls this only while some runtime of the
    /// process is): into this thread's scheduler ring, or the shared one.
    #[cfg(feature = "trace")]
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_record(
        &self,
        kind: crate::recorder::Kind,
        operands: impl FnOnce() -> (u64, u64),
    ) {
        if !self.diag.trace.active() {
            return; // another runtime's trace is running
        }
        let (a, b) = operands();
        self.diag.trace.record(
            self.local_worker_unspanned(|w| w.id),
            [crate::clock::now(), kind as u64, a, b],
        );
    }

    /// The pid bits of the actor running on this thread in this runtime, or
    /// 0 (for a trace event's waker).
    #[cfg(feature = "trace")]
    pub(super) fn running_pid_bits(&self) -> u64 {
        self.local_worker_unspanned(|w| w.actor.current.get().map_or(0, Pid::to_bits))
            .unwrap_or(0)
    }

    /// Remember the caller's default `tracing` dispatcher for this run's
    /// scheduler threads.
    #[cfg(feature = "tracing")]
    pub(crate) fn capture_dispatch(&self) {
        let current = tracing::dispatcher::get_default(Clone::clone);
        *self.diag.dispatch.lock().unwrap_or_else(|e| e.into_inner()) = Some(current);
    }

    /// The dispatcher [`capture_dispatch`](Self::capture_dispatch) kept.
    #[cfg(feature = "tracing")]
    pub(super) fn dispatch(&self) -> Option<tracing::Dispatch> {
        self.diag
            .dispatch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
