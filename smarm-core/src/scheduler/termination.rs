//! A run's state and its end: the live count, the work in flight that
//! could still wake an actor (blocking jobs, fd waits, awaited futures),
//! the root actor, and the termination verdict and root-exit sweep that
//! idle schedulers reach through them (runtime (I1)-(I3)).

use super::{LiveCount, Shared};
use crate::loom::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use crate::slot::Pid;

/// What an idle scheduler should do (runtime (I2), (I3)).
pub(crate) enum Verdict {
    /// No actor is alive and no IO is in flight: leave the loop.
    AllDone,
    /// The root exited and every remaining actor is parked with no timer or
    /// IO that could wake it: stop them.
    Sweep,
    /// Park and wait for work.
    Idle,
}

/// A run's state: what the termination verdict reads.
pub(crate) struct RunState {
    /// Actors spawned and not yet finalised (runtime (I1), (I2)).
    live: LiveCount,
    /// `block_on_io` requests in flight (fed by the IO driver), and
    /// outside spawns in their window.
    io_outstanding: AtomicU32,
    /// Actors parked on fd readiness (fed by the IO driver).
    io_fd_waiters: AtomicU32,
    /// Actors awaiting a future (`block_on`; future (F6)).
    futures_awaited: AtomicU32,
    /// The root actor's pid bits for the current run.
    root: AtomicU64,
    root_exited: AtomicBool,
    root_swept: AtomicBool,
    /// A `run` is in progress.
    running: AtomicBool,
}

impl RunState {
    /// The state of a runtime with `regular` schedulers, before any run.
    pub(super) fn new(regular: usize) -> Self {
        RunState {
            live: LiveCount::new(regular),
            io_outstanding: AtomicU32::new(0),
            io_fd_waiters: AtomicU32::new(0),
            futures_awaited: AtomicU32::new(0),
            root: AtomicU64::new(0),
            root_exited: AtomicBool::new(false),
            root_swept: AtomicBool::new(false),
            running: AtomicBool::new(false),
        }
    }
}

impl Shared {
    pub(crate) fn is_root(&self, pid: Pid) -> bool {
        self.run.root.load(Ordering::Acquire) == pid.to_bits()
    }

    /// Count a spawn (before the new actor's first enqueue, runtime (I1)).
    pub(crate) fn count_spawn(&self) {
        self.run.live.spawned(self.local_scheduler_id());
    }

    /// A blocking-pool job was submitted: the termination verdict waits
    /// for it (runtime (I2)) until [`blocking_job_done`](Self::blocking_job_done).
    pub(crate) fn blocking_job_submitted(&self) {
        self.run.io_outstanding.fetch_add(1, Ordering::AcqRel);
    }

    /// A blocking-pool job ended (or was never started).
    pub(crate) fn blocking_job_done(&self) {
        self.run.io_outstanding.fetch_sub(1, Ordering::AcqRel);
    }

    /// An actor registered a wait on fd readiness (the root-exit sweep
    /// treats such waits as possibly endless), until
    /// [`fd_wait_ended`](Self::fd_wait_ended).
    pub(crate) fn fd_wait_registered(&self) {
        self.run.io_fd_waiters.fetch_add(1, Ordering::AcqRel);
    }

    /// An fd wait was consumed by a poll or cancelled.
    pub(crate) fn fd_wait_ended(&self) {
        self.run.io_fd_waiters.fetch_sub(1, Ordering::AcqRel);
    }

    /// An actor began awaiting a future: the root-exit sweep waits for it
    /// (future (F6)) until [`future_await_ended`](Self::future_await_ended).
    pub(crate) fn future_await_began(&self) {
        self.run.futures_awaited.fetch_add(1, Ordering::AcqRel);
    }

    /// An await ended (the future finished, or the actor unwound).
    pub(crate) fn future_await_ended(&self) {
        self.run.futures_awaited.fetch_sub(1, Ordering::AcqRel);
    }

    /// Run `spawn` for a spawner that is no actor of this runtime (a
    /// `RuntimeHandle` on another thread), only while a run is in progress
    /// and its root is alive; `None` otherwise. The window is counted as
    /// work in flight, so no scheduler can decide the run is over between
    /// the check and the spawn's own live count (runtime (I2)).
    pub(crate) fn spawn_from_outside<R>(&self, spawn: impl FnOnce() -> R) -> Option<R> {
        self.run.io_outstanding.fetch_add(1, Ordering::AcqRel);
        let alive = self.run.running.load(Ordering::Acquire)
            && !self.run.root_exited.load(Ordering::Acquire);
        let spawned = alive.then(spawn);
        self.run.io_outstanding.fetch_sub(1, Ordering::AcqRel);
        if spawned.is_none() {
            // The run may be ending: a scheduler that saw the window open
            // parked instead of leaving; it looks again. (A spawn that
            // happened is live, and its enqueue wakes a scheduler.)
            self.coord.wake_all();
        }
        spawned
    }

    /// Start a run: `false` if one is already in progress.
    pub(crate) fn begin_run(&self) -> bool {
        if self.run.running.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.run.root_exited.store(false, Ordering::Release);
        self.run.root_swept.store(false, Ordering::Release);
        true
    }

    /// The run's root actor is `root` (`None`: the run is over).
    pub(crate) fn set_root(&self, root: Option<Pid>) {
        self.run
            .root
            .store(root.map_or(0, Pid::to_bits), Ordering::Release);
    }

    /// The run's root actor, while a run is in progress.
    pub(crate) fn root(&self) -> Option<Pid> {
        match self.run.root.load(Ordering::Acquire) {
            0 => None,
            bits => Some(Pid::from_bits(bits)),
        }
    }

    /// End a run: give idle stack pages back and allow the next run.
    pub(crate) fn end_run(&self) {
        crate::stack::trim_pools();
        self.set_root(None);
        self.run.running.store(false, Ordering::Release);
    }

    /// Some actor waits on fd readiness: worth polling.
    pub(super) fn fd_waited(&self) -> bool {
        self.run.io_fd_waiters.load(Ordering::Relaxed) > 0
    }

    fn io_in_flight(&self) -> bool {
        self.run.io_outstanding.load(Ordering::Acquire)
            + self.run.io_fd_waiters.load(Ordering::Acquire)
            > 0
    }

    /// The idle scheduler `id`'s verdict.
    pub(crate) fn verdict(&self, id: usize) -> Verdict {
        if !self.io_in_flight() && self.run.live.is_zero() {
            return Verdict::AllDone;
        }
        if self.sweep_due(id) {
            return Verdict::Sweep;
        }
        Verdict::Idle
    }

    /// The mandatory re-check of an idle scheduler that has published its
    /// idle bit: is there anything it must not sleep through?
    pub(crate) fn work_visible(&self, id: usize) -> bool {
        self.sched.injector.len() > 0
            || self.sched.queues[id].pinned.len() > 0
            || self.present_queues().any(|q| q.local.len() > 0)
            || self.coord.deadline_due()
            || self.coord.timer_unkept()
            || (!self.io_in_flight() && self.run.live.is_zero())
            || self.sweep_due(id)
    }

    /// Root exited, nothing queued anywhere, no timer armed, no blocking
    /// call or awaited future in flight, and every other scheduler idle: every remaining
    /// actor is parked with no waker but, at most, an fd that may never
    /// become ready (runtime (I3)).
    fn sweep_due(&self, id: usize) -> bool {
        if !self.run.root_exited.load(Ordering::Acquire)
            || self.run.root_swept.load(Ordering::Acquire)
        {
            return false;
        }
        let present = self.sched.present.load(Ordering::Acquire);
        self.others_idle(id, present)
            && self.sched.injector.len() == 0
            && self
                .present_queues()
                .all(|q| q.local.len() == 0 && q.pinned.len() == 0)
            && self.run.io_outstanding.load(Ordering::Acquire) == 0
            && self.run.futures_awaited.load(Ordering::Acquire) == 0
            && self.timers.armed() == 0
            && !crate::timer::bounded::any_waiting(&self.slots)
    }

    /// Every present scheduler but `id` is idle. In a simulation the
    /// others are parked in the driver between actors, never on their
    /// futexes: idle there means an empty next slot (simulated (S1)).
    fn others_idle(&self, id: usize, present: u64) -> bool {
        #[cfg(feature = "sim")]
        if self.simulated {
            return self.present_queues().all(|q| !q.next.is_occupied());
        }
        (self.coord.idle_mask() | (1u64 << id)) & present == present
    }

    /// Stop every actor still alive (once per run).
    pub(crate) fn root_exit_sweep(&self) {
        if self
            .run
            .root_swept
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        self.request_stop_all(None);
    }

    /// A finalised actor stops counting as live (last, runtime (I2)); the
    /// root's end is noted for the sweep first.
    #[inline]
    pub(super) fn count_finished(&self, pid: Pid, worker_id: usize) {
        if self.is_root(pid) {
            self.run.root_exited.store(true, Ordering::Release);
        }
        self.run.live.finished(worker_id);
    }
}
