//! What introspection reports: an actor's [`ActorInfo`], a
//! [`RuntimeSnapshot`] of every actor and scheduler, the spawn forest as a
//! [`RuntimeTree`].

pub use crate::scheduler::WaitingOn;
use crate::slot::Pid;

/// The version of the [`RuntimeSnapshot`] / [`RuntimeTree`] shape; it
/// changes when their fields do.
pub const SNAPSHOT_FORMAT_VERSION: u16 = 6;

/// What an actor is doing, from the scheduler's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActorState {
    /// Runnable, waiting for a scheduler.
    Queued,
    /// Running on a scheduler thread.
    Running,
    /// Running, and woken for the wait it is about to start.
    Notified,
    /// Blocked: on a channel, a timer, a lock, IO, a join (which one:
    /// [`ActorInfo::waiting_on`]).
    Parked,
    /// Finished; kept until its `JoinHandle` is joined or dropped.
    Done,
}

/// One actor, as seen at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActorInfo {
    /// The actor.
    pub pid: Pid,
    /// The label it was spawned with ([`Builder::name`](crate::Builder::name)).
    pub label: Option<String>,
    /// Names it is registered under (from the registry's hook).
    pub names: Vec<&'static str>,
    /// What it is doing.
    pub state: ActorState,
    /// What it waits for, while [`ActorState::Parked`]; `None` otherwise.
    pub waiting_on: Option<WaitingOn>,
    /// Who spawned it (or the pid given to `spawn_under`); the root's is
    /// itself.
    pub supervisor: Pid,
    /// Whether it traps exits.
    pub trap_exit: bool,
    /// How many monitors watch it.
    pub monitors: u32,
    /// How many actors it is linked to.
    pub links: u32,
    /// How many actors are blocked joining it.
    pub joiners: u32,
    /// Messages queued on the channels it published through the registry.
    pub mailbox_depth: u32,
    /// Times a preempting safepoint (`check!()` or an allocation under
    /// [`PreemptingAlloc`](crate::PreemptingAlloc)) switched it out for
    /// overrunning its timeslice.
    pub overruns: u64,
    /// Messages it has taken from the channels it published through the
    /// registry.
    pub messages_received: u64,
    /// For a supervisor: how many times it has restarted a child (from
    /// the same hook).
    pub restarts: u64,
    /// For a supervisor waiting to restart a child (a restart backoff):
    /// how long until the first such restart is due (from the same hook).
    pub next_restart: Option<std::time::Duration>,
    /// Timeslice-clock ticks it has run for (CPU cycles where the cycle
    /// counter is invariant, else nanoseconds), with the
    /// `budget-accounting` feature; `None` without it.
    pub budget_cycles: Option<u64>,
    /// Bytes of its stack in use when it last switched out (Erlang's
    /// `stack_size`), with the `budget-accounting` feature; `None` without
    /// it, and 0 before its first run.
    pub stack_bytes: Option<u64>,
    /// Heap bytes charged to it and not yet freed (by it or by whoever it
    /// handed the memory to), with
    /// [`PreemptingAlloc::with_heap_accounting`](crate::PreemptingAlloc::with_heap_accounting)
    /// as the global allocator; `None` without.
    pub heap_bytes: Option<u64>,
    /// Its heap limit ([`Builder::max_heap_size`](crate::Builder::max_heap_size)),
    /// if it has one.
    pub heap_limit: Option<u64>,
    /// Pages of its stack resident in memory (0 while hibernating), with
    /// the accounting allocator; `None` without it, before its first run
    /// and once it has finished.
    pub stack_pages: Option<u64>,
}

/// Every actor of the runtime (see the module docs on consistency).
#[derive(Debug, Clone)]
pub struct RuntimeSnapshot {
    /// [`SNAPSHOT_FORMAT_VERSION`].
    pub format_version: u16,
    /// One entry per actor, in slot order.
    pub actors: Vec<ActorInfo>,
    /// One entry per regular scheduler, then one per spare that has run
    /// (is running, or was started before), in id order.
    pub schedulers: Vec<SchedulerStats>,
}

/// What one scheduler thread has done since the runtime was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerStats {
    /// Its index.
    pub id: usize,
    /// Actor resumes.
    pub actors_run: u64,
    /// Times it parked with nothing to do.
    pub parks: u64,
    /// Parks that ended with a wake (the rest reached a timer deadline).
    pub wakes: u64,
    /// Successful steals from other schedulers.
    pub steals: u64,
    /// Actors waiting in its queues (local and pinned) at the snapshot.
    pub run_queue: usize,
    /// Time it has spent with nothing to run (looking for work, spinning,
    /// parked), since the runtime was built: utilisation over an interval
    /// is one minus the growth of this over the interval's length.
    pub idle: std::time::Duration,
    /// The actor it has been stuck in (a blocking system call, a std lock,
    /// a loop with no safepoint) for longer than `Config::blocked_after`,
    /// as the system monitor last saw it; `None` if it is not blocked.
    pub blocked_in: Option<Pid>,
    /// How long it had been in that actor when the snapshot was taken
    /// (zero if not blocked).
    pub blocked_for: std::time::Duration,
    /// Actors the system monitor moved off it while it was blocked.
    pub moved_off: u64,
    /// A spare: a scheduler the system monitor starts only while every
    /// other is blocked ([`Config::spare_threads`](crate::runtime::Config::spare_threads)).
    pub spare: bool,
    /// Whether its thread is running (always, for a scheduler that is not
    /// a spare).
    pub active: bool,
    /// Times a spare's thread was started (0 for the others).
    pub spare_starts: u64,
}

/// One node of the spawn forest.
#[derive(Debug, Clone)]
pub struct TreeNode {
    /// The actor.
    pub info: ActorInfo,
    /// Its parent was not in the snapshot (it had finished), so the actor
    /// was placed at the top instead of being lost.
    pub orphaned: bool,
    /// The actors it spawned.
    pub children: Vec<TreeNode>,
}

/// The spawn forest: roots are actors without a parent in the snapshot.
#[derive(Debug, Clone)]
pub struct RuntimeTree {
    /// [`SNAPSHOT_FORMAT_VERSION`].
    pub format_version: u16,
    /// The top-level actors.
    pub roots: Vec<TreeNode>,
}
