//! `Shared`: the state every scheduler of one runtime shares, and the
//! enqueue and wake paths through it. Layers above keep per-runtime state
//! of their own in its [`RuntimeLocals`] instead of fields here.
//!
//! `Shared` is an assembly: each part is a struct owned by the module that
//! uses it, which also holds the `impl Shared` methods over that part:
//! the schedulers' queues here ([`Schedulers`]), the stack pool in
//! `stacks.rs`, timer dispatch in `timer_dispatch.rs`, the run's state and
//! termination in `termination.rs`, tracing and the trace recorder in
//! `diag.rs`.

use super::diag::Diagnostics;
use super::netpoll::NetPoll;
use super::next_slot::NextSlot;
use super::stacks::StackCache;
use super::stats::{BlockedRecord, Counters};
use super::termination::RunState;
use super::{RunQueue, Worker, with_worker};
use crate::config::Config;
use crate::locals::RuntimeLocals;
use crate::loom::{AtomicU64, Ordering};
use crate::park::Coordinator;
use crate::reclaim::Reclaimer;
use crate::slot::word::{State, Unpark};
use crate::slot::{Pid, Slot, SlotTable, WaitId};
use crate::stack::StackPool;
use crate::timer::timers::Timers;
use crossbeam_utils::CachePadded;
use std::sync::Arc as StdArc;

/// What the actor layer does when an actor has finished: record its
/// outcome, tell its joiner, monitors and links, recycle its slot. Run by
/// the scheduler during finalisation, with the actor's catch result.
pub(crate) type ExitHook = fn(&Shared, Pid, &Slot, std::thread::Result<crate::slot::table::Value>);

/// Process-unique runtime identities (timer ids carry them).
static NEXT_RUNTIME_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// One scheduler's queues, reachable by every scheduler. Kept in a
/// `CachePadded` (two cache lines: the adjacent-line prefetcher pairs
/// them), so one scheduler's queue traffic never invalidates a sibling's;
/// its counters and next slot are padded apart from the queues too.
pub(crate) struct SchedulerQueues {
    /// Stealable local queue.
    pub(crate) local: RunQueue,
    /// Actors only this scheduler may run (scheduler (I3)).
    pub(crate) pinned: RunQueue,
    /// Counters written only by this scheduler's thread.
    pub(crate) stats: CachePadded<Counters>,
    /// The LIFO next slot: this scheduler's, but the system monitor may
    /// take its occupant while the scheduler is blocked (scheduler (I3)).
    pub(crate) next: CachePadded<NextSlot>,
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
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// The schedulers' queues: one entry per scheduler (spares included), which
/// of them run, the injector, and the timeslice they keep.
pub(crate) struct Schedulers {
    /// One per scheduler: the `config.threads` regular ones, then the
    /// spares the system monitor may start (`sysmon` (M3)).
    pub(super) queues: Box<[CachePadded<SchedulerQueues>]>,
    /// Schedulers whose thread is running: every regular one, and the
    /// spares from their start by the monitor to their thread's exit.
    pub(super) present: AtomicU64,
    /// Work from threads that are not schedulers of this runtime.
    pub(super) injector: RunQueue,
    /// `config.timeslice` in timeslice-clock ticks.
    pub(super) slice_ticks: u64,
}

/// What the layers above keep in the runtime: their per-runtime values, the
/// actor layer's part of every finalisation, and the monitor-id source.
struct Upper {
    /// Per-runtime state of the layers above (the IO driver, the OTP
    /// registry), one value per type, read lock-free.
    locals: RuntimeLocals,
    /// The actor layer's part of every actor's finalisation.
    exit_hook: ExitHook,
    /// Source of `MonitorId`s; never reused.
    next_monitor_id: std::sync::atomic::AtomicU64,
}

pub(crate) struct Shared {
    config: Config,
    pub(crate) slots: SlotTable,
    pub(crate) coord: Coordinator,
    pub(super) sched: Schedulers,
    /// The timer shards, driven from `timer_dispatch.rs`.
    pub(super) timers: Timers,
    pub(super) stacks: StackCache,
    pub(super) run: RunState,
    /// Who polls the IO driver's readiness, and when.
    pub(crate) netpoll: NetPoll,
    /// A heap account per slot, when the accounting allocator is
    /// installed and the account table had room (heap module docs).
    pub(crate) accounts: Option<crate::heap::Accounts>,
    /// Deferred drops for the lock-free readers of upper layers.
    pub(super) reclaim: Reclaimer,
    upper: Upper,
    #[cfg_attr(not(any(feature = "trace", feature = "tracing")), allow(dead_code))]
    pub(super) diag: Diagnostics,
    /// Run by a simulation, on one OS thread (`simulated.rs`).
    #[cfg(feature = "sim")]
    pub(crate) simulated: bool,
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
            sched: Schedulers {
                queues: (0..threads)
                    .map(|_| {
                        CachePadded::new(SchedulerQueues {
                            local: RunQueue::new(),
                            pinned: RunQueue::new(),
                            stats: CachePadded::default(),
                            next: CachePadded::new(NextSlot::new()),
                            blocked: BlockedRecord::default(),
                        })
                    })
                    .collect(),
                present: AtomicU64::new(low_bits(regular)),
                injector: RunQueue::new(),
                slice_ticks: crate::clock::ticks_for(config.timeslice),
            },
            coord: Coordinator::with_timer_shards(threads, regular),
            timers: Timers::new(id, regular),
            stacks: StackCache::new(stacks),
            run: RunState::new(regular),
            netpoll: NetPoll::new(),
            reclaim: Reclaimer::new(threads),
            upper: Upper {
                locals: RuntimeLocals::new(),
                exit_hook,
                next_monitor_id: std::sync::atomic::AtomicU64::new(1),
            },
            diag: Diagnostics::default(),
            #[cfg(feature = "sim")]
            simulated: false,
            config,
        }
    }

    /// The per-runtime values of the layers above.
    pub(crate) fn locals(&self) -> &RuntimeLocals {
        &self.upper.locals
    }

    /// The actor layer's part of `pid`'s finalisation.
    #[inline]
    pub(super) fn run_exit_hook(
        &self,
        pid: Pid,
        slot: &Slot,
        result: std::thread::Result<crate::slot::table::Value>,
    ) {
        (self.upper.exit_hook)(self, pid, slot, result);
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

    /// How many schedulers the runtime has (spares included).
    #[cfg_attr(not(feature = "trace"), allow(dead_code))]
    pub(crate) fn scheduler_count(&self) -> usize {
        self.sched.queues.len()
    }

    /// The id of this runtime's scheduler running on this thread, if any.
    pub(crate) fn local_scheduler_id(&self) -> Option<usize> {
        self.local_worker(|w| w.id)
    }

    /// The worker of *this* runtime running on this thread, if any.
    pub(super) fn local_worker<R>(&self, f: impl FnOnce(&Worker) -> R) -> Option<R> {
        with_worker(|w, shared| std::ptr::eq(shared, self).then(|| f(w))).flatten()
    }

    /// [`local_worker`](Self::local_worker) without opening a `with_worker`
    /// span (for a trace event or a causal credit: `f` neither switches
    /// nor allocates).
    #[cfg(any(feature = "trace", feature = "smarm-causal"))]
    pub(super) fn local_worker_unspanned<R>(&self, f: impl FnOnce(&Worker) -> R) -> Option<R> {
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

    /// Whether a simulation runs this runtime (feature `sim`, simulated
    /// (S1)); always `false` without the feature.
    #[inline(always)]
    pub(crate) fn is_simulated(&self) -> bool {
        #[cfg(feature = "sim")]
        {
            self.simulated
        }
        #[cfg(not(feature = "sim"))]
        {
            false
        }
    }

    /// This runtime's configuration.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// How many actors wait in scheduler `id`'s stealable queue.
    pub(crate) fn local_backlog(&self, id: usize) -> usize {
        self.sched.queues[id].local.len()
    }

    /// Each scheduler's activity counters, in id order.
    pub(crate) fn scheduler_counters(
        &self,
    ) -> impl Iterator<Item = (&Counters, &BlockedRecord, usize)> {
        self.sched
            .queues
            .iter()
            .map(|q| (&*q.stats, &q.blocked, q.local.len() + q.pinned.len()))
    }

    /// Drop `value` once no scheduler can still be reading it (the
    /// reclaimer's quiescent states).
    pub(crate) fn defer_drop(&self, value: Box<dyn std::any::Any + Send>) {
        self.reclaim.retire(value);
    }

    /// The injector, for models that check where a wake enqueued.
    #[cfg(all(test, loom))]
    pub(crate) fn injector(&self) -> &RunQueue {
        &self.sched.injector
    }

    /// A fresh monitor id; never reused.
    pub(crate) fn next_monitor_id(&self) -> u64 {
        self.upper
            .next_monitor_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
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
                self.sched.injector.push_back(pid);
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
        self.sched.queues[w.id].local.push_back(pid);
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
        let id = crate::slot::table::pinned_scheduler(pin) as usize - 1;
        self.sched.queues[id].pinned.push_back(pid);
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
        if let Some(slot) = self.slots.get(pid.index())
            && slot.word.unpark_at(pid.generation(), epoch) == Unpark::Enqueue
        {
            #[cfg(feature = "smarm-causal")]
            super::causal::credit_wake(self, slot);
            trace_event!(self, Wake, pid.to_bits(), self.running_pid_bits());
            self.enqueue_woken(pid, slot);
        }
    }

    /// The queues of the schedulers whose threads run. An absent spare's
    /// are empty and nothing enqueues to them (sysmon (M3)), so scans skip
    /// them: a runtime provides for dozens of spares and runs a few.
    pub(super) fn present_queues(&self) -> impl Iterator<Item = &SchedulerQueues> {
        let present = self.sched.present.load(Ordering::Acquire);
        self.sched
            .queues
            .iter()
            .enumerate()
            .filter(move |(id, _)| present & (1u64 << id) != 0)
            .map(|(_, q)| &**q)
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
