//! `Config`: how many scheduler threads, how many actors, how big a stack.

use thiserror::Error;

/// Most scheduler threads one runtime may have: the idle mask is one `u64`.
pub const MAX_THREADS: usize = 64;
/// Most actors one runtime may hold at once: a pid's index is 32 bits and
/// the slot table is segmented in 4,096-slot pages.
pub const MAX_ACTORS_LIMIT: usize = 1 << 26;
/// Spare scheduler threads a runtime may start by default (see
/// [`Config::spare_threads`]): as many as the scheduler cap leaves room
/// for, so a runtime whose schedulers are all blocked in sync calls keeps
/// serving up to that many at once.
pub const DEFAULT_SPARE_THREADS: usize = MAX_THREADS;
/// Smallest stack an actor may be given (the entry frames and a panic need
/// room of their own).
pub const MIN_STACK_SIZE: usize = 16 * 1024;
/// Largest stack an actor may be given.
pub const MAX_STACK_SIZE: usize = 1 << 30;
/// The default actor stack: 252 KiB, with the guard page a 256 KiB
/// reservation: a 128 KiB local array or recursion a thousand frames deep
/// runs in an actor; an actor that needs a thread's room (a 1 MiB local,
/// a deep parser) gets it from [`Builder::stack_size`](crate::Builder::stack_size)
/// or [`Config::stack_size`]. The stack is virtual: an actor pays for the
/// pages it touches (usually one) and its share of the page-table page
/// that maps its stack beside its neighbours', one per 2 MiB of address
/// space: an eighth of a 4 KiB page here. At 1 MiB + 60 KiB (the default
/// before) that share was half a page: a parked actor cost 4,598 bytes of
/// RSS and 2,180 of page tables (5,112 in all now), and a million actors
/// took 4.9 s to spawn against 1.75 s now, mostly the kernel's page-table
/// faults (the memory and spawn_1m workloads). 2 MiB stacks, a
/// `std::thread`'s default, would cost a whole page-table page each.
pub const DEFAULT_STACK_SIZE: usize = 252 << 10;

/// Runtime configuration, passed to [`init`](crate::runtime::init).
///
/// ```
/// use smarm::runtime::{self, Config};
///
/// let rt = runtime::init(Config::default().threads(2).max_actors(10_000));
/// rt.run(|| {
///     smarm::spawn(|| println!("hello")).join().unwrap();
/// });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub(crate) threads: usize,
    pub(crate) max_actors: usize,
    pub(crate) stack_size: usize,
    pub(crate) timeslice: std::time::Duration,
    pub(crate) blocked_after: Option<std::time::Duration>,
    pub(crate) spare_threads: usize,
    pub(crate) contain_stack_overflow: bool,
    /// Where a causal profile of each whole run goes (feature
    /// `smarm-causal`).
    #[cfg(feature = "smarm-causal")]
    pub(crate) causal_profile: Option<std::path::PathBuf>,
}

impl Default for Config {
    /// One scheduler thread per available core, 1,048,576 actors, stacks
    /// of 252 KiB ([`DEFAULT_STACK_SIZE`]: virtual, an actor pays
    /// only for the pages it touches), 1 ms timeslices.
    fn default() -> Self {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(MAX_THREADS);
        Config {
            threads,
            max_actors: 1 << 20,
            stack_size: DEFAULT_STACK_SIZE,
            timeslice: std::time::Duration::from_millis(1),
            blocked_after: Some(std::time::Duration::from_millis(10)),
            spare_threads: DEFAULT_SPARE_THREADS,
            contain_stack_overflow: true,
            #[cfg(feature = "smarm-causal")]
            causal_profile: None,
        }
    }
}

impl Config {
    /// The default configuration with exactly `threads` scheduler threads.
    pub fn exact(threads: usize) -> Self {
        Config::default().threads(threads)
    }

    /// Number of scheduler threads (1..=64).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Most actors alive (or finished but not yet joined) at once. A spawn
    /// past it fails with [`SpawnError::AtCapacity`](crate::SpawnError).
    pub fn max_actors(mut self, max_actors: usize) -> Self {
        self.max_actors = max_actors;
        self
    }

    /// Usable stack size of every actor, in bytes (rounded up to whole
    /// pages; 16 KiB to 1 GiB; [`DEFAULT_STACK_SIZE`] unless set). A guard
    /// page below it catches overflow. One actor can ask for another size
    /// with [`Builder::stack_size`](crate::actor::Builder::stack_size).
    /// A population of small actors spends less on page tables with
    /// smaller stacks: 256 KiB stacks share one page-table page per eight.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }

    /// How long an actor may run before a preempting safepoint
    /// ([`check!`](crate::check_timeslice), or an allocation under
    /// [`PreemptingAlloc`](crate::PreemptingAlloc)) switches it out for
    /// others (default 1 ms).
    pub fn timeslice(mut self, slice: std::time::Duration) -> Self {
        self.timeslice = slice;
        self
    }

    /// How long a scheduler may stay inside one actor's run (a blocking
    /// system call, a std lock, a loop with no safepoint) before the system
    /// monitor treats it as blocked: it moves the actor that scheduler was
    /// to run next to the others, wakes an idle one to take its queue, and
    /// reports the blocked scheduler in [`snapshot`](crate::snapshot).
    /// Default 10 ms; `None` runs no monitor thread.
    pub fn blocked_after(mut self, after: Option<std::time::Duration>) -> Self {
        self.blocked_after = after;
        self
    }

    /// Most spare scheduler threads the system monitor may start, one at a
    /// time, while every scheduler is blocked (default: up to the cap of 64
    /// schedulers in all; 0 turns them off). Reaching the cap is reported
    /// once per run ([`Report::SparesExhausted`](crate::report::Report)),
    /// naming the blocked actors. A spare runs actors like any scheduler (timers that fall due,
    /// IO wakes, the work the blocked schedulers left) and stops once it
    /// finds nothing to do while some scheduler is no longer blocked. With
    /// them, even a one-scheduler runtime whose thread is stuck in a
    /// blocking call keeps serving timers and IO. Spares need the monitor
    /// ([`blocked_after`](Config::blocked_after) not `None`); threads plus
    /// spares are capped at 64 (fewer spares are started if need be).
    pub fn spare_threads(mut self, spares: usize) -> Self {
        self.spare_threads = spares;
        self
    }

    /// Whether an actor that overflows its stack is ended alone, its links
    /// and monitors told `DownReason::StackOverflow` (the default), where
    /// that is sound: in the actor's own code, outside every runtime call,
    /// lock and `NoPreempt` section. Elsewhere, or with this off, the
    /// process aborts with a message naming the actor. Turn it off when the
    /// program's global allocator is compiled into it (a jemalloc or
    /// mimalloc crate): an overflow inside such an allocator cannot be told
    /// from one in the program's own code.
    pub fn contain_stack_overflow(mut self, contain: bool) -> Self {
        self.contain_stack_overflow = contain;
        self
    }

    /// Profile each whole run causally (feature `smarm-causal`) and write
    /// the profile to `path` when the run ends: an SVG plot if the path
    /// ends in `.svg`, JSON if in `.json`, else Coz's `profile.coz` format.
    /// The experiments run from the run's start to its end, on a thread of
    /// their own, with the default [`Settings`](crate::causal::Settings)
    /// windows; a run shorter than a window or two records little.
    ///
    /// ```no_run
    /// use smarm::runtime::{self, Config};
    ///
    /// runtime::init(Config::default().causal_profile("profile.coz")).run(|| {
    ///     // ... the service, with progress points ...
    /// });
    /// ```
    #[cfg(feature = "smarm-causal")]
    pub fn causal_profile(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.causal_profile = Some(path.into());
        self
    }

    /// The configured scheduler thread count.
    pub fn thread_count(&self) -> usize {
        self.threads
    }

    /// Spare schedulers this configuration provides for: the configured
    /// count within the 64-scheduler cap, none without the monitor.
    pub(crate) fn spares(&self) -> usize {
        if self.blocked_after.is_none() {
            return 0;
        }
        self.spare_threads
            .min(MAX_THREADS.saturating_sub(self.threads))
    }

    /// Check every limit; [`init`](crate::runtime::init) calls this.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=MAX_THREADS).contains(&self.threads) {
            return Err(ConfigError::Threads(self.threads));
        }
        if !(1..=MAX_ACTORS_LIMIT).contains(&self.max_actors) {
            return Err(ConfigError::MaxActors(self.max_actors));
        }
        if !(MIN_STACK_SIZE..=MAX_STACK_SIZE).contains(&self.stack_size) {
            return Err(ConfigError::StackSize(self.stack_size));
        }
        if let Some(after) = self.blocked_after
            && after < std::time::Duration::from_millis(1)
        {
            return Err(ConfigError::BlockedAfter(after));
        }
        Ok(())
    }
}

/// A [`Config`] value out of range.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// The thread count is outside 1..=64.
    #[error("smarm: scheduler threads must be in 1..={MAX_THREADS}, got {0}")]
    Threads(usize),
    /// `max_actors` is zero or above the table limit.
    #[error("smarm: max_actors must be in 1..={MAX_ACTORS_LIMIT}, got {0}")]
    MaxActors(usize),
    /// The stack size is below 16 KiB or above 1 GiB.
    #[error("smarm: stack_size must be between 16 KiB and 1 GiB, got {0} bytes")]
    StackSize(usize),
    /// `blocked_after` is below 1 ms (the monitor would poll too often).
    #[error(
        "smarm: blocked_after must be at least 1 ms (or None to turn the monitor off), got {0:?}"
    )]
    BlockedAfter(std::time::Duration),
}
