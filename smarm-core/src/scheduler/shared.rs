//! `Shared`: the state every scheduler of one runtime shares, and the
//! enqueue and wake paths through it. Layers above keep per-runtime state
//! of their own in its [`RuntimeLocals`] instead of fields here.

use super::netpoll::NetPoll;
use super::next_slot::NextSlot;
use super::stats::{BlockedRecord, Counters};
use super::{with_worker, LiveCount, RunQueue, Worker};
use super::{STACK_BATCH, STACK_CACHE_MAX};
use crate::config::Config;
use crate::locals::RuntimeLocals;
use crate::loom::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use crate::park::Coordinator;
use crate::reclaim::Reclaimer;
use crate::slot::word::{State, Unpark};
use crate::slot::{Pid, Slot, SlotTable, WaitId};
use crate::stack::{Stack, StackError, StackPool};
use crate::timer::heap::{Entry, TimerAction, TimerId};
use crate::timer::timers::Timers;
use std::sync::Arc as StdArc;
use std::time::Instant;

/// How late a timer shard's deadline must be before a busy scheduler
/// fires it for the scheduler that owns it (`fire_due_timers`): a quarter
/// of the default timeslice, so a timer waits at most that long behind an
/// owner busy with one long run or blocked in a system call.
const FOREIGN_GRACE_NANOS: u64 = 250_000;

/// What the actor layer does when an actor has finished: record its
/// outcome, tell its joiner, monitors and links, recycle its slot. Run by
/// the scheduler during finalisation, with the actor's catch result.
pub(crate) type ExitHook = fn(&Shared, Pid, &Slot, std::thread::Result<crate::slot::table::Value>);

/// Process-unique runtime identities (timer ids carry them).
static NEXT_RUNTIME_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// One scheduler's queues, reachable by every scheduler. Aligned to cache
/// lines of its own (two: the adjacent-line prefetcher pairs them), so one
/// scheduler's queue traffic never invalidates a sibling's.
#[repr(align(128))]
pub(crate) struct SchedulerQueues {
    /// Stealable local queue.
    pub(crate) local: RunQueue,
    /// Actors only this scheduler may run (scheduler (I3)).
    pub(crate) pinned: RunQueue,
    /// Counters written only by this scheduler's thread.
    pub(crate) stats: Counters,
    /// The LIFO next slot: this scheduler's, but the system monitor may
    /// take its occupant while the scheduler is blocked (scheduler (I3)).
    pub(crate) next: NextSlot,
    /// What the system monitor has seen of this scheduler.
    pub(crate) blocked: BlockedRecord,
}

/// The next slot's previous occupant goes to the front of the local
/// queue, where others can steal it. Out of line: the wake's fast path is
/// an empty next slot.
#[inline(never)]
fn push_displaced(own: &SchedulerQueues, prev: Pid) {
    own.local.push_front(prev);
}

/// The mask of schedulers `0..n`.
pub(super) fn low_bits(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

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

pub(crate) struct Shared {
    config: Config,
    /// Deferred drops for the lock-free readers of upper layers.
    pub(super) reclaim: Reclaimer,
    /// `config.timeslice` in timeslice-clock ticks.
    pub(super) slice_ticks: u64,
    pub(crate) slots: SlotTable,
    /// A heap account per slot, when the accounting allocator is
    /// installed and the account table had room (heap module docs).
    pub(crate) accounts: Option<crate::heap::Accounts>,
    /// One per scheduler: the `config.threads` regular ones, then the
    /// spares the system monitor may start (`sysmon` (M3)).
    pub(super) queues: Box<[SchedulerQueues]>,
    /// Schedulers whose thread is running: every regular one, and the
    /// spares from their start by the monitor to their thread's exit.
    pub(super) present: AtomicU64,
    pub(super) injector: RunQueue,
    pub(crate) coord: Coordinator,
    pub(super) timers: Timers,
    pub(super) stacks: StdArc<StackPool>,
    /// Actors spawned and not yet finalised (runtime (I1), (I2)).
    pub(super) live: LiveCount,
    /// `block_on_io` requests in flight (fed by the IO driver).
    io_outstanding: AtomicU32,
    /// Actors parked on fd readiness (fed by the IO driver).
    io_fd_waiters: AtomicU32,
    /// Actors awaiting a future (`block_on`; future (F6)).
    futures_awaited: AtomicU32,
    /// Who polls the IO driver's readiness, and when.
    pub(crate) netpoll: NetPoll,
    /// The root actor's pid bits for the current run.
    root: AtomicU64,
    pub(super) root_exited: AtomicBool,
    root_swept: AtomicBool,
    /// A `run` is in progress.
    running: AtomicBool,
    /// Per-runtime state of the layers above (the IO driver, the OTP
    /// registry), one value per type, read lock-free.
    pub(crate) locals: RuntimeLocals,
    /// The actor layer's part of every actor's finalisation.
    pub(super) exit_hook: ExitHook,
    /// Source of `MonitorId`s; never reused.
    next_monitor_id: std::sync::atomic::AtomicU64,
    /// Runtime trace events (feature `trace`).
    #[cfg(feature = "trace")]
    pub(crate) trace: crate::recorder::Recorder,
    /// The `tracing` dispatcher the current run was started under
    /// (feature `tracing`), made every scheduler thread's default.
    #[cfg(feature = "tracing")]
    dispatch: std::sync::Mutex<Option<tracing::Dispatch>>,
}

impl Shared {
    pub(crate) fn new(config: Config, stacks: StdArc<StackPool>, exit_hook: ExitHook) -> Self {
        let regular = config.threads;
        let threads = regular + config.spares();
        let id = NEXT_RUNTIME_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Shared {
            slots: SlotTable::new(config.max_actors),
            accounts: crate::heap::installed()
                .then(|| crate::heap::Accounts::reserve(config.max_actors))
                .flatten(),
            queues: (0..threads)
                .map(|_| SchedulerQueues {
                    local: RunQueue::new(),
                    pinned: RunQueue::new(),
                    stats: Counters::default(),
                    next: NextSlot::new(),
                    blocked: BlockedRecord::default(),
                })
                .collect(),
            present: AtomicU64::new(low_bits(regular)),
            injector: RunQueue::new(),
            coord: Coordinator::with_timer_shards(threads, regular),
            timers: Timers::new(id, regular),
            stacks,
            live: LiveCount::new(regular),
            io_outstanding: AtomicU32::new(0),
            io_fd_waiters: AtomicU32::new(0),
            futures_awaited: AtomicU32::new(0),
            netpoll: NetPoll::new(),
            root: AtomicU64::new(0),
            root_exited: AtomicBool::new(false),
            root_swept: AtomicBool::new(false),
            running: AtomicBool::new(false),
            next_monitor_id: std::sync::atomic::AtomicU64::new(1),
            locals: RuntimeLocals::new(),
            exit_hook,
            reclaim: Reclaimer::new(threads),
            slice_ticks: crate::clock::ticks_for(config.timeslice),
            #[cfg(feature = "trace")]
            trace: crate::recorder::Recorder::new(),
            #[cfg(feature = "tracing")]
            dispatch: std::sync::Mutex::new(None),
            config,
        }
    }

    /// A stack for a new actor: from this scheduler's cache (refilled from
    /// the pool in batches), or straight from the pool off-scheduler.
    pub(crate) fn take_stack(&self) -> Result<Stack, StackError> {
        let cached = self.local_worker(|w| {
            let mut cache = w.stack_cache.borrow_mut();
            if cache.is_empty() {
                self.stacks.take_batch(STACK_BATCH, &mut cache)?;
            }
            cache.pop().ok_or(StackError::OutOfMemory {
                stack_size: self.stacks.stack_size(),
            })
        });
        match cached {
            Some(r) => r,
            None => self.stacks.take(),
        }
    }

    /// A stack of `size` usable bytes for an actor spawned with a size of
    /// its own: from the runtime's pool if that is the size, else from the
    /// process's pool of that size.
    #[cold]
    #[inline(never)]
    pub(crate) fn take_stack_sized(&self, size: usize) -> Result<Stack, StackError> {
        if crate::stack::round_to_pages(size) == self.stacks.stack_size() {
            return self.stacks.take(); // off the hot path: the pool directly
        }
        crate::stack::pool_for(size).take()
    }

    /// The usable size of this runtime's stacks.
    pub(crate) fn stack_size(&self) -> usize {
        self.stacks.stack_size()
    }

    /// A stack for a hibernated actor that wakes (scheduler hibernate
    /// (H1)): this scheduler's cache, else the pool. Its own copy of
    /// `take_stack`'s first step, so the spawn path's stays inlined.
    #[cold]
    #[inline(never)]
    pub(crate) fn take_stack_for_wake(&self) -> Option<Stack> {
        let cached = self.local_worker(|w| w.stack_cache.borrow_mut().pop());
        match cached.flatten() {
            Some(stack) => Some(stack),
            None => self.stacks.take().ok(),
        }
    }

    /// Return a finished actor's stack to this scheduler's cache (spilling
    /// a batch to the pool when it is full), or to the pool; a stack of
    /// another size than the runtime's goes back to its own pool.
    pub(crate) fn release_stack(&self, stack: Stack) {
        if stack.size() != self.stacks.stack_size() {
            crate::stack::pool_for(stack.size()).give_back(stack);
            return;
        }
        let mut stack = Some(stack);
        self.local_worker(|w| {
            let mut cache = w.stack_cache.borrow_mut();
            cache.extend(stack.take());
            if cache.len() > STACK_CACHE_MAX {
                let keep = cache.len() - STACK_BATCH;
                self.stacks.give_back_batch(cache.drain(keep..));
            }
        });
        if let Some(stack) = stack {
            self.stacks.give_back(stack);
        }
    }

    /// A new strong reference to this runtime's state.
    pub(crate) fn to_arc(&self) -> StdArc<Shared> {
        let ptr: *const Shared = self;
        // SAFETY: every `Shared` lives in the `Arc` its `Runtime` holds
        // (`Runtime::new` is the only constructor), so `ptr` points into an
        // `Arc` allocation that is alive while `&self` is; the increment
        // pairs with the `from_raw` that hands that count to the caller.
        unsafe {
            StdArc::increment_strong_count(ptr);
            StdArc::from_raw(ptr)
        }
    }

    pub(crate) fn is_root(&self, pid: Pid) -> bool {
        self.root.load(Ordering::Acquire) == pid.to_bits()
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
        if !self.trace.active() {
            return; // another runtime's trace is running
        }
        let (a, b) = operands();
        self.trace.record(
            self.local_worker_unspanned(|w| w.id),
            [crate::clock::now(), kind as u64, a, b],
        );
    }

    /// The pid bits of the actor running on this thread in this runtime, or
    /// 0 (for a trace event's waker).
    #[cfg(feature = "trace")]
    fn running_pid_bits(&self) -> u64 {
        self.local_worker_unspanned(|w| w.current.get().map_or(0, Pid::to_bits))
            .unwrap_or(0)
    }

    /// Remember the caller's default `tracing` dispatcher for this run's
    /// scheduler threads.
    #[cfg(feature = "tracing")]
    pub(crate) fn capture_dispatch(&self) {
        let current = tracing::dispatcher::get_default(Clone::clone);
        *self.dispatch.lock().unwrap_or_else(|e| e.into_inner()) = Some(current);
    }

    /// The dispatcher [`capture_dispatch`](Self::capture_dispatch) kept.
    #[cfg(feature = "tracing")]
    pub(super) fn dispatch(&self) -> Option<tracing::Dispatch> {
        self.dispatch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How many schedulers the runtime has (spares included).
    #[cfg_attr(not(feature = "trace"), allow(dead_code))]
    pub(crate) fn scheduler_count(&self) -> usize {
        self.queues.len()
    }

    /// The id of this runtime's scheduler running on this thread, if any.
    pub(crate) fn local_scheduler_id(&self) -> Option<usize> {
        self.local_worker(|w| w.id)
    }

    /// The worker of *this* runtime running on this thread, if any.
    fn local_worker<R>(&self, f: impl FnOnce(&Worker) -> R) -> Option<R> {
        with_worker(|w, shared| std::ptr::eq(shared, self).then(|| f(w))).flatten()
    }

    /// [`local_worker`](Self::local_worker) without opening a `with_worker`
    /// span (for a trace event: `f` neither switches nor allocates).
    #[cfg(feature = "trace")]
    fn local_worker_unspanned<R>(&self, f: impl FnOnce(&Worker) -> R) -> Option<R> {
        let w = super::current_worker();
        if w.is_null() {
            return None;
        }
        // SAFETY: as in `local_queues`.
        let w = unsafe { &*w };
        std::ptr::eq(w.shared, self).then(|| f(w))
    }

    /// The queues of *this* runtime's scheduler running on this thread, if
    /// any, without opening a `with_worker` span: for a step that does not
    /// switch and allocates only under a queue lock (which holds off
    /// preemption itself, sync (I3)).
    #[inline]
    fn local_queues<R>(&self, f: impl FnOnce(&SchedulerQueues) -> R) -> Option<R> {
        let w = super::current_worker();
        if w.is_null() {
            return None;
        }
        // SAFETY: as in `with_worker`: a non-null CURRENT is this thread's
        // live Worker; `f` neither switches nor keeps the reference.
        let w = unsafe { &*w };
        std::ptr::eq(w.shared, self).then(|| f(w.own()))
    }

    // ----- the narrow interface of the layers above -----

    /// This runtime's configuration.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// Count a spawn (before the new actor's first enqueue, runtime (I1)).
    pub(crate) fn count_spawn(&self) {
        self.live.spawned(self.local_scheduler_id());
    }

    /// How many actors wait in scheduler `id`'s stealable queue.
    pub(crate) fn local_backlog(&self, id: usize) -> usize {
        self.queues[id].local.len()
    }

    /// Each scheduler's activity counters, in id order.
    pub(crate) fn scheduler_counters(
        &self,
    ) -> impl Iterator<Item = (&Counters, &BlockedRecord, usize)> {
        self.queues
            .iter()
            .map(|q| (&q.stats, &q.blocked, q.local.len() + q.pinned.len()))
    }

    /// Arm a timer running `f` on a scheduler at `deadline`, for `owner`.
    pub(crate) fn insert_timer(
        &self,
        deadline: Instant,
        owner: Pid,
        f: Box<dyn FnOnce() + Send>,
    ) -> TimerId {
        self.timers.insert(
            &self.coord,
            self.local_timer_shard(),
            deadline,
            owner,
            TimerAction::Send(f),
        )
    }

    /// The timer shard of this thread's scheduler (shard 0 off-scheduler).
    fn local_timer_shard(&self) -> usize {
        self.local_scheduler_id()
            .map_or(0, |id| self.coord.shard_of(id))
    }

    /// Arm the running actor's bounded-wait timer for `wait`, due at `at`
    /// (coordinator nanos; time bounded (B1)), in the timer shard of the
    /// scheduler `scheduler` it runs on.
    pub(crate) fn arm_wait_timer(&self, scheduler: usize, slot: &Slot, wait: WaitId, at: u64) {
        self.timers
            .arm_wait(&self.coord, self.coord.shard_of(scheduler), slot, wait, at);
    }

    /// Drop `value` once no scheduler can still be reading it (the
    /// reclaimer's quiescent states).
    pub(crate) fn defer_drop(&self, value: Box<dyn std::any::Any + Send>) {
        self.reclaim.retire(value);
    }

    /// The injector, for models that check where a wake enqueued.
    #[cfg(all(test, loom))]
    pub(crate) fn injector(&self) -> &RunQueue {
        &self.injector
    }

    /// A fresh monitor id; never reused.
    pub(crate) fn next_monitor_id(&self) -> u64 {
        self.next_monitor_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// A blocking-pool job was submitted: the termination verdict waits
    /// for it (runtime (I2)) until [`blocking_job_done`](Self::blocking_job_done).
    pub(crate) fn blocking_job_submitted(&self) {
        self.io_outstanding.fetch_add(1, Ordering::AcqRel);
    }

    /// A blocking-pool job ended (or was never started).
    pub(crate) fn blocking_job_done(&self) {
        self.io_outstanding.fetch_sub(1, Ordering::AcqRel);
    }

    /// An actor registered a wait on fd readiness (the root-exit sweep
    /// treats such waits as possibly endless), until
    /// [`fd_wait_ended`](Self::fd_wait_ended).
    pub(crate) fn fd_wait_registered(&self) {
        self.io_fd_waiters.fetch_add(1, Ordering::AcqRel);
    }

    /// An fd wait was consumed by a poll or cancelled.
    pub(crate) fn fd_wait_ended(&self) {
        self.io_fd_waiters.fetch_sub(1, Ordering::AcqRel);
    }

    /// An actor began awaiting a future: the root-exit sweep waits for it
    /// (future (F6)) until [`future_await_ended`](Self::future_await_ended).
    pub(crate) fn future_await_began(&self) {
        self.futures_awaited.fetch_add(1, Ordering::AcqRel);
    }

    /// An await ended (the future finished, or the actor unwound).
    pub(crate) fn future_await_ended(&self) {
        self.futures_awaited.fetch_sub(1, Ordering::AcqRel);
    }

    /// Run `spawn` for a spawner that is no actor of this runtime (a
    /// `RuntimeHandle` on another thread), only while a run is in progress
    /// and its root is alive; `None` otherwise. The window is counted as
    /// work in flight, so no scheduler can decide the run is over between
    /// the check and the spawn's own live count (runtime (I2)).
    pub(crate) fn spawn_from_outside<R>(&self, spawn: impl FnOnce() -> R) -> Option<R> {
        self.io_outstanding.fetch_add(1, Ordering::AcqRel);
        let alive =
            self.running.load(Ordering::Acquire) && !self.root_exited.load(Ordering::Acquire);
        let spawned = alive.then(spawn);
        self.io_outstanding.fetch_sub(1, Ordering::AcqRel);
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
        if self.running.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.root_exited.store(false, Ordering::Release);
        self.root_swept.store(false, Ordering::Release);
        true
    }

    /// The run's root actor is `root` (`None`: the run is over).
    pub(crate) fn set_root(&self, root: Option<Pid>) {
        self.root
            .store(root.map_or(0, Pid::to_bits), Ordering::Release);
    }

    /// The run's root actor, while a run is in progress.
    pub(crate) fn root(&self) -> Option<Pid> {
        match self.root.load(Ordering::Acquire) {
            0 => None,
            bits => Some(Pid::from_bits(bits)),
        }
    }

    /// End a run: give idle stack pages back and allow the next run.
    pub(crate) fn end_run(&self) {
        crate::stack::trim_pools();
        self.set_root(None);
        self.running.store(false, Ordering::Release);
    }

    // ----- enqueue paths: each ends with the wake tail (park (I2)) -----

    /// Make a woken or freshly spawned actor runnable: the next slot of the
    /// current scheduler (displacing its previous occupant to the local
    /// queue front), its pinned scheduler, or the injector.
    pub(crate) fn enqueue_woken(&self, pid: Pid, slot: &Slot) {
        if self.route_pinned(pid, slot) {
            return;
        }
        // The next slot's own protocol keeps it consistent; this needs no
        // `with_worker` span (nothing here allocates outside a queue lock).
        let placed = self.local_queues(|own| {
            let prev = own.next.replace(pid, || {
                // Nothing ahead of it: no wake, and its stack can start
                // coming into cache now.
                slot.prefetch_context();
            });
            prev.map(|prev| push_displaced(own, prev)).is_some()
        });
        match placed {
            Some(false) => {}
            Some(true) => {
                self.coord.wake_one_if_idle();
            }
            None => {
                self.injector.push_back(pid);
                self.coord.wake_one_if_idle();
            }
        }
        // Last: an event point in tail position costs the common path
        // least (no registers kept across it).
        trace_event!(self, Enqueue, pid.to_bits(), {
            use crate::recorder::Queue;
            (if placed.is_some() {
                Queue::Next
            } else {
                Queue::Injector
            }) as u64
        });
    }

    /// Queue an actor that yielded (or whose park found a wake already
    /// landed) at the back of the current scheduler's local queue.
    pub(crate) fn enqueue_yielded(&self, w: &Worker, pid: Pid, slot: &Slot) {
        if self.route_pinned(pid, slot) {
            return;
        }
        self.queues[w.id].local.push_back(pid);
        trace_event!(self, Enqueue, pid.to_bits(), {
            crate::recorder::Queue::Local as u64
        });
        self.coord.wake_one_if_idle();
    }

    #[inline]
    fn route_pinned(&self, pid: Pid, slot: &Slot) -> bool {
        let pin = slot.pinned.load(Ordering::Relaxed);
        if pin == 0 {
            return false;
        }
        self.enqueue_pinned(pid, pin);
        true
    }

    /// Queue `pid` on the pinned queue of scheduler `pin - 1` (out of
    /// line: the enqueue paths' common case is an unpinned actor).
    #[inline(never)]
    fn enqueue_pinned(&self, pid: Pid, pin: u32) {
        let id = pin as usize - 1;
        self.queues[id].pinned.push_back(pid);
        trace_event!(self, Enqueue, pid.to_bits(), {
            crate::recorder::Queue::Pinned as u64
        });
        // That scheduler, specifically, must look (it may be parked).
        self.coord.unpark(id);
    }

    /// Set `pid`'s stop flag (if it is still that incarnation) and wake it
    /// from whatever it waits on; it unwinds at its next safepoint.
    pub(crate) fn request_stop(&self, pid: Pid) {
        let Some(slot) = self.slots.get(pid.index()) else {
            return;
        };
        {
            // Under the cold lock so a recycle cannot slip between the
            // check and the store. A store that lands while the actor is
            // finishing (not yet Done) is left for the slot's next tenant
            // to clear: `spawn_in` resets the flag before publishing it.
            let _cold = slot.cold.lock();
            let s = slot.word.load();
            if s.generation() != pid.generation()
                || matches!(s.state(), State::Vacant | State::Done)
            {
                return;
            }
            slot.stop.store(true, Ordering::Release);
        }
        self.unpark(pid, None);
    }

    /// Wake the wait `wait`, if it is still its actor's current one (slot
    /// (I3)).
    #[inline]
    pub(crate) fn wake(&self, wait: WaitId) {
        self.unpark(wait.pid, Some(wait.epoch));
    }

    /// Wake `pid` from its wait `epoch`, or (`None`, a stop request) from
    /// whatever it waits for.
    fn unpark(&self, pid: Pid, epoch: Option<u32>) {
        if let Some(slot) = self.slots.get(pid.index()) {
            if slot.word.unpark_at(pid.generation(), epoch) == Unpark::Enqueue {
                trace_event!(self, Wake, pid.to_bits(), self.running_pid_bits());
                self.enqueue_woken(pid, slot);
            }
        }
    }

    // ----- timers -----

    /// Pop and dispatch every due timer. `try_only` (the busy path) skips
    /// a shard whose lock another scheduler holds (its deadline stays due,
    /// so the check fires again next loop), and leaves another scheduler's
    /// shard to that scheduler until it is `FOREIGN_GRACE_NANOS` late: its
    /// owner is usually a few pops from its own check, and firing there
    /// keeps the shard's lines and the woken actors on its core (time
    /// (I4)).
    pub(crate) fn fire_due_timers(&self, try_only: bool) {
        let mut due: Vec<Entry> = Vec::new();
        // From an `Instant`, as the deadlines of message timers are: the
        // raw clock runs a hair ahead of those (coordinator `origin`), and
        // no timer fires early (time (I2)).
        let now = self.coord.deadline_nanos(Instant::now());
        let own = self.local_timer_shard();
        for shard in 0..self.coord.timer_shards() {
            let at = self.coord.shard_deadline(shard);
            if at > now || (try_only && shard != own && now - at < FOREIGN_GRACE_NANOS) {
                continue;
            }
            self.timers
                .take_due(&self.coord, shard, now, try_only, &mut due);
        }
        for entry in due {
            trace_event!(self, TimerFire, entry.pid.to_bits(), 0);
            match entry.action {
                TimerAction::Send(fire) => fire(),
                TimerAction::WakeBounded => {
                    if let Some(wait) =
                        crate::timer::bounded::fire(&self.slots, entry.pid, entry.seq)
                    {
                        self.wake(wait);
                    }
                }
            }
        }
    }

    /// Cancel timer `id` (`true` if it was still armed).
    pub(crate) fn cancel_timer(&self, id: TimerId) -> bool {
        self.timers.cancel(&self.coord, id)
    }

    /// Retire every timer (the runtime is finishing).
    pub(crate) fn clear_timers(&self) {
        self.timers.clear(&self.coord);
    }

    // ----- termination (runtime (I2), (I3)) -----

    /// The queues of the schedulers whose threads run. An absent spare's
    /// are empty and nothing enqueues to them (sysmon (M3)), so scans skip
    /// them: a runtime provides for dozens of spares and runs a few.
    pub(super) fn present_queues(&self) -> impl Iterator<Item = &SchedulerQueues> {
        let present = self.present.load(Ordering::Acquire);
        self.queues
            .iter()
            .enumerate()
            .filter(move |(id, _)| present & (1u64 << id) != 0)
            .map(|(_, q)| q)
    }

    /// Some actor waits on fd readiness: worth polling.
    pub(super) fn fd_waited(&self) -> bool {
        self.io_fd_waiters.load(Ordering::Relaxed) > 0
    }

    fn io_in_flight(&self) -> bool {
        self.io_outstanding.load(Ordering::Acquire) + self.io_fd_waiters.load(Ordering::Acquire) > 0
    }

    /// The idle scheduler `id`'s verdict.
    pub(crate) fn verdict(&self, id: usize) -> Verdict {
        if !self.io_in_flight() && self.live.is_zero() {
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
        self.injector.len() > 0
            || self.queues[id].pinned.len() > 0
            || self.present_queues().any(|q| q.local.len() > 0)
            || self.coord.deadline_due()
            || self.coord.timer_unkept()
            || (!self.io_in_flight() && self.live.is_zero())
            || self.sweep_due(id)
    }

    /// Root exited, nothing queued anywhere, no timer armed, no blocking
    /// call or awaited future in flight, and every other scheduler idle: every remaining
    /// actor is parked with no waker but, at most, an fd that may never
    /// become ready (runtime (I3)).
    fn sweep_due(&self, id: usize) -> bool {
        if !self.root_exited.load(Ordering::Acquire) || self.root_swept.load(Ordering::Acquire) {
            return false;
        }
        let present = self.present.load(Ordering::Acquire);
        (self.coord.idle_mask() | (1u64 << id)) & present == present
            && self.injector.len() == 0
            && self
                .present_queues()
                .all(|q| q.local.len() == 0 && q.pinned.len() == 0)
            && self.io_outstanding.load(Ordering::Acquire) == 0
            && self.futures_awaited.load(Ordering::Acquire) == 0
            && self.timers.armed() == 0
            && !crate::timer::bounded::any_waiting(&self.slots)
    }

    /// Stop every actor still alive (once per run).
    pub(crate) fn root_exit_sweep(&self) {
        if self
            .root_swept
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        self.request_stop_all(None);
    }

    /// Request a stop of every live actor but `except`.
    pub(crate) fn request_stop_all(&self, except: Option<Pid>) {
        for index in 0..self.slots.high_water() {
            let Some(slot) = self.slots.get(index as u32) else {
                continue;
            };
            let s = slot.word.load();
            if matches!(s.state(), State::Vacant | State::Done) {
                continue;
            }
            let pid = Pid::from_parts(index as u32, s.generation());
            if Some(pid) != except {
                self.request_stop(pid);
            }
        }
    }
}
