//! The IO poller: which thread waits for fd readiness, and when. The IO
//! driver (`crate::io`) owns the epoll set and installs it here as a
//! [`PollSource`]; the schedulers poll it, as Go's runtime polls its
//! netpoller, so an event is taken by the thread that then runs the actor
//! it readies (no hand-off from an IO thread to a scheduler).
//!
//! # Design
//!
//! - **Idle scheduler**: when actors wait on fds, the first idle scheduler
//!   to take the poller role parks *in* the poll instead of its futex
//!   (park (I6)); a wake writes the runtime's wake eventfd, which ends the
//!   poll. On return it dispatches the events (the actors land in its own
//!   queues), releases the role and runs them. Other idle schedulers park
//!   on their futexes, and `wake_one` prefers them to the poller.
//! - **Busy schedulers**: nobody holds the role while every scheduler
//!   runs actors, so each polls without blocking every [`POLL_TICK`] runs
//!   if no poll happened for [`POLL_GAP`].
//! - **System monitor**: polls without blocking at each tick if no poll
//!   happened for a tick, for schedulers all stuck in blocking calls.
//!
//! # Invariants
//!
//! - (P1) At most one thread polls at a time: the role is the `poller`
//!   lock, taken with `try_lock` and held until the events are dispatched.
//! - (P2) The wake eventfd lives as long as the runtime (closed when
//!   `NetPoll` drops), so an unpark that saw a polling parker writes an
//!   open fd.
//! - (P3) No readiness is lost while nobody polls: epoll keeps it in the
//!   kernel until the next poll, which the next idle or busy-tick
//!   scheduler makes.

use super::Shared;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, TryLockError};
use std::time::{Duration, Instant};

/// A busy scheduler polls every this many actor runs (if [`POLL_GAP`]
/// passed since the last poll).
pub(super) const POLL_TICK: u32 = 61;
/// The least time since the last poll for a busy scheduler's poll.
pub(super) const POLL_GAP: Duration = Duration::from_micros(200);
/// Events taken per poll.
const POLL_BATCH: usize = 256;

/// Events filled by [`PollSource::wait`].
pub(crate) type PollEvents = Vec<libc::epoll_event>;

/// The readiness source the IO driver installs.
pub(crate) trait PollSource: Send + Sync {
    /// Wait at most `timeout` (`None`: until something happens) and fill
    /// `events` (cleared first, room reserved by the caller) with fd
    /// events, leaving the wake eventfd's out (it is drained). Returns
    /// whether there are any.
    fn wait(&self, events: &mut PollEvents, timeout: Option<Duration>) -> bool;
    /// Make the actors waiting on `events` runnable.
    fn dispatch(&self, shared: &Shared, events: &PollEvents);
}

/// The poller role: the installed source and the event buffer.
struct Poller {
    source: Option<Arc<dyn PollSource>>,
    events: PollEvents,
}

pub(crate) struct NetPoll {
    /// The role (P1).
    poller: Mutex<Poller>,
    /// The wake eventfd (P2), made on the first install.
    wake: OnceLock<OwnedFd>,
    /// When a poll last ended (coordinator nanos).
    last_poll: AtomicU64,
}

impl NetPoll {
    pub(super) fn new() -> Self {
        NetPoll {
            poller: Mutex::new(Poller {
                source: None,
                events: Vec::new(),
            }),
            wake: OnceLock::new(),
            last_poll: AtomicU64::new(0),
        }
    }

    /// The runtime's wake eventfd (made on first use, P2): the source
    /// must watch it.
    pub(crate) fn wake_fd(&self) -> std::io::Result<RawFd> {
        if let Some(fd) = self.wake.get() {
            return Ok(fd.as_raw_fd());
        }
        // SAFETY: plain syscall; a negative return is an error.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(crate::errno::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        // A racing first use may have won: ours is then dropped (closed).
        Ok(self.wake.get_or_init(|| owned).as_raw_fd())
    }

    /// Start polling `source` (the IO driver's start).
    pub(crate) fn install(&self, source: Arc<dyn PollSource>) {
        let mut poller = crate::lock::lock_std(&self.poller);
        poller.source = Some(source);
        poller.events.reserve(POLL_BATCH);
    }

    /// Stop polling (the IO driver's stop, once no scheduler runs).
    pub(crate) fn uninstall(&self) {
        crate::lock::lock_std(&self.poller).source = None;
    }

    /// The role, unless another thread holds it (P1). The lock guards no
    /// invariant a panic could break, so poisoning is ignored.
    fn take_role(&self) -> Option<MutexGuard<'_, Poller>> {
        match self.poller.try_lock() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// The idle park: if fds are waited on and the role is free, park
    /// scheduler `id` in the poll and dispatch what it found; else `None`
    /// (park on the futex).
    pub(super) fn park(
        &self,
        shared: &Shared,
        id: usize,
        deadline: Option<Instant>,
    ) -> Option<crate::park::ParkResult> {
        if !shared.fd_waited() {
            return None;
        }
        let wake_fd = self.wake.get()?.as_raw_fd();
        let mut guard = self.take_role()?;
        let poller = &mut *guard;
        let source = poller.source.clone()?;
        let events = &mut poller.events;
        let result = shared.coord.park_polling(
            id,
            deadline,
            || shared.work_visible(id),
            wake_fd,
            |timeout| source.wait(events, timeout),
        );
        source.dispatch(shared, events);
        events.clear();
        self.last_poll
            .store(shared.coord.now_nanos(), Ordering::Relaxed);
        Some(result)
    }

    /// A simulation's look at the real sockets its actors wait on, when
    /// nothing else can run: wait up to `wait` (real time) for readiness
    /// and wake the waiters; whether any fd was ready.
    #[cfg(feature = "sim")]
    pub(crate) fn poll_simulated(&self, shared: &Shared, wait: Duration) -> bool {
        if !shared.fd_waited() {
            return false;
        }
        let Some(mut guard) = self.take_role() else {
            return false;
        };
        let poller = &mut *guard;
        let Some(source) = poller.source.clone() else {
            return false;
        };
        let ready = source.wait(&mut poller.events, Some(wait));
        if ready {
            source.dispatch(shared, &poller.events);
            poller.events.clear();
        }
        ready
    }

    /// The busy poll: without blocking, if fds are waited on, nobody
    /// polls and the last poll is `gap` old ([`POLL_GAP`] for a busy
    /// scheduler; the system monitor's tick for the monitor, which so
    /// polls only once the schedulers stopped polling).
    pub(crate) fn poll_now(&self, shared: &Shared, gap: Duration) {
        if !shared.fd_waited() {
            return;
        }
        let now = shared.coord.now_nanos();
        let gap = u64::try_from(gap.as_nanos()).unwrap_or(u64::MAX);
        if now.saturating_sub(self.last_poll.load(Ordering::Relaxed)) < gap {
            return;
        }
        let Some(mut guard) = self.take_role() else {
            return;
        };
        let poller = &mut *guard;
        let Some(source) = poller.source.clone() else {
            return;
        };
        if source.wait(&mut poller.events, Some(Duration::ZERO)) {
            source.dispatch(shared, &poller.events);
            poller.events.clear();
        }
        self.last_poll.store(now, Ordering::Relaxed);
    }
}
