//! Fd readiness: the epoll set the schedulers poll, waits, `FdArm`,
//! `read` and `write`.

use crate::channel::Selectable;
use crate::channel::select::sealed::Sealed;
use crate::lock::{LockClass, RawMutex};
use crate::scheduler::Shared;
use crate::scheduler::WaitingOn;
use crate::scheduler::netpoll::{PollEvents, PollSource};
use crate::scheduler::{self, Wait};
use crate::slot::{Pid, WaitId};
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The epoll token of the runtime's wake eventfd (netpoll (P2)).
const WAKE_TOKEN: u64 = u64::MAX;

/// One direction (read or write) of an fd in the set.
#[derive(Default, Clone, Copy)]
struct Direction {
    /// The actor parked waiting for it: at most one per direction, so one
    /// actor can read a socket while another writes it.
    waiter: Option<WaitId>,
    /// An edge came with nobody parked: the next wait through the fd's
    /// [`Registration`] returns at once (io (I5)).
    ready: bool,
    /// The peer closed its side, or the fd is in error: no edge may ever
    /// follow, so every such wait returns at once (the read then sees
    /// EOF, the write the error).
    closed: bool,
}

/// One fd's state in the set: its read and write directions.
#[derive(Default, Clone, Copy)]
struct FdWaiters([Direction; 2]);

impl Direction {
    /// Drop the marks (not the waiter): arming reports the fd afresh.
    fn forget_marks(&mut self) {
        (self.ready, self.closed) = (false, false);
    }
}

impl FdWaiters {
    fn dir(&mut self, readable: bool) -> &mut Direction {
        &mut self.0[usize::from(!readable)]
    }
}

/// The fds in the set, by number.
type Waiters = HashMap<RawFd, FdWaiters>;

/// Source of [`Epoll::id`]s (0: none).
static NEXT_EPOLL_ID: AtomicU64 = AtomicU64::new(1);

/// A socket's registration: which epoll set its fd is armed in, and
/// whether its last read drained it. A socket's own waits trust the set's
/// edges (io (I5)); raw-fd waits re-arm every time.
#[derive(Debug, Default)]
pub(crate) struct Registration {
    /// The [`Epoll::id`] the fd is armed in, 0 if none yet.
    epoll: AtomicU64,
    /// The last read returned less than asked: the fd was drained then, so
    /// the next read waits for an edge instead of failing first.
    drained: AtomicBool,
}

impl Registration {
    /// Take the drained mark.
    pub(crate) fn take_drained(&self) -> bool {
        self.drained.load(Ordering::Relaxed) && self.drained.swap(false, Ordering::Relaxed)
    }

    /// Mark whether the read just made drained the fd.
    pub(crate) fn set_drained(&self, drained: bool) {
        self.drained.store(drained, Ordering::Relaxed);
    }
}

pub(super) struct Epoll {
    epfd: OwnedFd,
    /// Distinguishes this set from a previous run's (a [`Registration`]
    /// armed there is not armed here).
    id: u64,
    waiters: RawMutex<Waiters>,
    /// The runtime's wake eventfd, in the set under [`WAKE_TOKEN`]; owned
    /// by the runtime (netpoll (P2)).
    wake_fd: RawFd,
}

impl Epoll {
    /// An epoll set watching `shared`'s wake eventfd.
    pub(super) fn new(shared: &Shared) -> io::Result<Epoll> {
        let wake_fd = shared.netpoll.wake_fd()?;
        // SAFETY: plain syscall; a negative return is an error.
        let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epfd < 0 {
            return Err(crate::errno::last_os_error());
        }
        // SAFETY: `epfd` was just opened and is owned by nothing else.
        let epfd = unsafe { OwnedFd::from_raw_fd(epfd) };
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: WAKE_TOKEN,
        };
        // SAFETY: valid epoll fd and eventfd; `ev` outlives the call.
        if unsafe { libc::epoll_ctl(epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, wake_fd, &mut ev) } < 0 {
            return Err(crate::errno::last_os_error());
        }
        Ok(Epoll {
            epfd,
            id: NEXT_EPOLL_ID.fetch_add(1, Ordering::Relaxed),
            waiters: RawMutex::new(LockClass::Io, HashMap::new()),
            wake_fd,
        })
    }

    /// Register `wait` as `fd`'s waiter in one direction (io (I1)). With
    /// the socket's `registration` armed here, an edge left unclaimed
    /// means ready now: `Ok(false)`, nothing registered. Otherwise (first
    /// wait, or a raw fd) the fd is armed again, which makes the kernel
    /// report it at once if it is ready (io (I5)); `Ok(true)`.
    fn register(
        &self,
        fd: RawFd,
        wait: WaitId,
        readable: bool,
        registration: Option<&Registration>,
    ) -> io::Result<bool> {
        if fd == self.epfd.as_raw_fd() || fd == self.wake_fd {
            // The number of an fd the caller closed, reused by the driver
            // it started: the caller's fd is not open.
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        let mut waiters = self.waiters.lock();
        let entry = waiters.entry(fd).or_default();
        if entry.dir(readable).waiter.is_some() {
            let dir = if readable { "read" } else { "write" };
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "smarm: another actor is already waiting to {dir} fd {fd}; one waiter per \
                     direction (give the second actor its own handle, e.g. try_clone)"
                ),
            ));
        }
        let armed = registration.is_some_and(|r| r.epoll.load(Ordering::Relaxed) == self.id);
        if armed {
            let d = entry.dir(readable);
            if std::mem::take(&mut d.ready) || d.closed {
                return Ok(false);
            }
        } else {
            // Arming reports the fd's state afresh, hang-ups included; a
            // new socket on this number does not inherit the old one's
            // marks in either direction.
            entry.dir(readable).forget_marks();
            if registration.is_some() {
                entry.dir(!readable).forget_marks(); // its waiter stays
            }
            arm(self.epfd.as_raw_fd(), fd)?;
            if let Some(r) = registration {
                r.epoll.store(self.id, Ordering::Relaxed);
            }
        }
        entry.dir(readable).waiter = Some(wait);
        Ok(true)
    }

    /// Remove `fd`'s waiter in one direction if it is still `wait` (io
    /// (I3)); `false` if a poll took it meanwhile. The fd stays armed.
    fn cancel(&self, fd: RawFd, wait: WaitId, readable: bool) -> bool {
        let mut waiters = self.waiters.lock();
        let Some(slot) = waiters
            .get_mut(&fd)
            .map(|entry| &mut entry.dir(readable).waiter)
        else {
            return false;
        };
        if *slot != Some(wait) {
            return false;
        }
        *slot = None;
        true
    }
}

/// Arm `fd` edge-triggered for both directions, for good: a MOD if it is
/// in the set (it stays there once added), an ADD on ENOENT (first wait,
/// or the number was closed and reused). Either way the kernel checks
/// the fd's readiness now and reports it if it is ready.
fn arm(epfd: RawFd, fd: RawFd) -> io::Result<()> {
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
        u64: fd as u64,
    };
    // SAFETY: `ev` outlives both calls; an invalid fd is an error return.
    let rc = unsafe {
        if libc::epoll_ctl(epfd, libc::EPOLL_CTL_MOD, fd, &mut ev) == 0 {
            0
        } else if crate::errno::last_os_error().raw_os_error() == Some(libc::ENOENT) {
            libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, &mut ev)
        } else {
            -1
        }
    };
    if rc < 0 {
        return Err(crate::errno::last_os_error());
    }
    Ok(())
}

impl PollSource for Epoll {
    fn wait(&self, events: &mut PollEvents, timeout: Option<Duration>) -> bool {
        events.clear();
        // `install` reserved the batch; never poll into no room.
        events.reserve(1);
        let room = events.capacity();
        // SAFETY: `events` has room for `room` entries, which the kernel
        // fills; `len` is set to the count it reports.
        let n = unsafe { epoll_wait(self.epfd.as_raw_fd(), events.as_mut_ptr(), room, timeout) };
        // SAFETY: the kernel initialised the first `n` entries.
        unsafe { events.set_len(n) };
        let before = events.len();
        events.retain(|ev| ev.u64 != WAKE_TOKEN);
        if events.len() != before {
            let mut count = 0u64;
            // SAFETY: reads 8 bytes into a live local from our eventfd
            // (non-blocking: EAGAIN if a racing read drained it).
            unsafe { libc::read(self.wake_fd, (&raw mut count).cast(), 8) };
        }
        !events.is_empty()
    }

    fn dispatch(&self, shared: &Shared, events: &PollEvents) {
        for ev in events {
            for wait in consume(&self.waiters, ev.u64 as RawFd, ev.events)
                .into_iter()
                .flatten()
            {
                shared.fd_wait_ended();
                shared.wake(wait);
            }
        }
    }
}

/// `epoll_pwait2` (nanosecond timeout), or `epoll_wait` with the timeout
/// rounded up to a millisecond where the kernel lacks it. Returns the
/// number of events written (0 on a timeout or EINTR).
///
/// # Safety
///
/// `events` must have room for `max` entries.
unsafe fn epoll_wait(
    epfd: RawFd,
    events: *mut libc::epoll_event,
    max: usize,
    timeout: Option<Duration>,
) -> usize {
    static NO_PWAIT2: AtomicBool = AtomicBool::new(false);
    let max = max.min(i32::MAX as usize) as i32;
    let n = if NO_PWAIT2.load(Ordering::Relaxed) {
        -1
    } else {
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: libc::time_t::try_from(d.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |ts| ts as *const _);
        // SAFETY: the caller's room for `max` events; `ts_ptr` is null or
        // points to `ts`, which outlives the call; no signal mask.
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                epfd,
                events,
                max,
                ts_ptr,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if n < 0 && crate::errno::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            NO_PWAIT2.store(true, Ordering::Relaxed);
        }
        n as i32
    };
    let n = if n < 0 && NO_PWAIT2.load(Ordering::Relaxed) {
        let ms = timeout.map_or(-1, |d| {
            i32::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX)
        });
        // SAFETY: the caller's room for `max` events.
        unsafe { libc::epoll_wait(epfd, events, max, ms) }
    } else {
        n
    };
    n.max(0) as usize
}

/// Take the waiters `events` on `fd` wake, under the waiters lock (io
/// (I1)): an error or hang-up wakes both directions, and a peer's close
/// the reader. A direction with nobody parked keeps the edge for its next
/// wait; a close or error is kept for every later one (io (I5)).
fn consume(waiters: &RawMutex<Waiters>, fd: RawFd, events: u32) -> [Option<WaitId>; 2] {
    let both = (libc::EPOLLERR | libc::EPOLLHUP) as u32;
    let mut waiters = waiters.lock();
    let Some(entry) = waiters.get_mut(&fd) else {
        return [None, None];
    };
    let mut take = |readable: bool, mask: u32, closing: u32| {
        if events & (mask | closing) == 0 {
            return None;
        }
        let d = entry.dir(readable);
        d.closed |= events & closing != 0;
        let waiter = d.waiter.take();
        d.ready |= waiter.is_none();
        waiter
    };
    [
        take(true, libc::EPOLLIN as u32, both | libc::EPOLLRDHUP as u32),
        take(false, libc::EPOLLOUT as u32, both),
    ]
}

/// Register the running actor's `wait` on `fd`, counted in
/// `io_fd_waiters` (io (I2)) while it is registered. `Ok(false)`: ready
/// now, nothing registered.
fn register_current(
    fd: RawFd,
    readable: bool,
    wait: WaitId,
    registration: Option<&Registration>,
) -> io::Result<bool> {
    scheduler::with_current_actor(wait_name(readable), |_, shared| {
        let driver = super::driver(shared)?;
        shared.fd_wait_registered();
        let registered = driver.epoll.register(fd, wait, readable, registration);
        if registered.as_ref().map_or(true, |parked| !parked) {
            shared.fd_wait_ended();
        }
        registered
    })
}

/// Undo `register_current` if the registration is still ours.
fn cancel_current(fd: RawFd, wait: WaitId, readable: bool) {
    scheduler::with_worker(|_, shared| {
        if let Some(driver) = super::running_driver(shared)
            && driver.epoll.cancel(fd, wait, readable)
        {
            shared.fd_wait_ended();
        }
    });
}

/// Removes a wait's registration when the wait unwinds (io (I3)).
struct Registered {
    fd: RawFd,
    wait: WaitId,
    readable: bool,
}

impl Drop for Registered {
    fn drop(&mut self) {
        cancel_current(self.fd, self.wait, self.readable);
    }
}

/// Park until `fd` is ready in one direction: a raw fd's wait (re-armed,
/// so readiness already there counts) or, with the socket's
/// `registration`, a wait for an edge since its last drain (io (I5)).
fn wait_fd(fd: RawFd, readable: bool, registration: Option<&Registration>) -> io::Result<()> {
    // From registering to being woken: a section (an actor ended in between
    // would leave its registration counted forever).
    let _section = crate::scheduler::Section::enter();
    let wait = Wait::open(wait_name(readable), WaitingOn::Fd);
    match register_current(fd, readable, wait.id(), registration) {
        Ok(true) => {}
        other => {
            wait.retire();
            return other.map(|_| ());
        }
    }
    let registered = Registered {
        fd,
        wait: wait.id(),
        readable,
    };
    wait.park();
    if std::thread::panicking() {
        // A park inside a destructor of an actor being stopped does not
        // unwind, so a stop's wake (a second stop, the root-exit sweep)
        // also ends it: the registration may still be ours (io (I3)).
        drop(registered);
    } else {
        // Only a poll wakes this wait without unwinding it, and the poll
        // consumed the registration: nothing to cancel.
        std::mem::forget(registered);
    }
    Ok(())
}

/// A socket's wait for `fd` to become ready in one direction, through its
/// `registration` (see [`wait_fd`]).
pub(crate) fn wait_registered(
    fd: RawFd,
    readable: bool,
    registration: &Registration,
) -> io::Result<()> {
    wait_fd(fd, readable, Some(registration))
}

/// The public call a wait in this direction is, for the outside-an-actor
/// panic.
fn wait_name(readable: bool) -> &'static str {
    if readable {
        "io::wait_readable"
    } else {
        "io::wait_writable"
    }
}

/// Park the calling actor until `fd` is readable (or hung up, or in
/// error: the following `read` reports it). Other actors run meanwhile.
///
/// Errors: `EBADF` for an fd that is not open, `AlreadyExists` if another
/// actor is already waiting for `fd` to become readable (one reader and one
/// writer may wait at once), and whatever `epoll_ctl` reports (a
/// full epoll set, an fd epoll cannot watch, such as a regular file).
///
/// ```
/// smarm::run(|| {
///     let mut fds = [0; 2];
///     assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
///     let [r, w] = fds;
///     let reader = smarm::spawn(move || {
///         smarm::io::wait_readable(r).unwrap();
///         let mut buf = [0u8; 8];
///         assert_eq!(smarm::io::read(r, &mut buf).unwrap(), 2);
///     });
///     smarm::sleep(std::time::Duration::from_millis(5));
///     assert_eq!(smarm::io::write(w, b"hi").unwrap(), 2);
///     reader.join().unwrap();
///     unsafe { libc::close(r); libc::close(w) };
/// });
/// ```
///
/// # Panics
///
/// Outside an actor.
pub fn wait_readable(fd: RawFd) -> io::Result<()> {
    wait_fd(fd, true, None)
}

/// Park the calling actor until `fd` is writable. As [`wait_readable`].
///
/// # Panics
///
/// Outside an actor.
pub fn wait_writable(fd: RawFd) -> io::Result<()> {
    wait_fd(fd, false, None)
}

/// [`wait_readable`] with a deadline: `Ok(true)` if the fd became
/// readable, `Ok(false)` if `timeout` passed first.
///
/// # Panics
///
/// Outside an actor.
pub fn wait_readable_timeout(fd: RawFd, timeout: Duration) -> io::Result<bool> {
    Ok(crate::channel::try_select_timeout(&[&FdArm::readable(fd)], timeout)?.is_some())
}

/// [`wait_writable`] with a deadline: `Ok(true)` if the fd became
/// writable, `Ok(false)` if `timeout` passed first.
///
/// # Panics
///
/// Outside an actor.
pub fn wait_writable_timeout(fd: RawFd, timeout: Duration) -> io::Result<bool> {
    Ok(crate::channel::try_select_timeout(&[&FdArm::writable(fd)], timeout)?.is_some())
}

/// Wait until `fd` is readable, then `read(2)` into `buf`. Waiting first
/// keeps a blocking fd from blocking the scheduler thread.
///
/// # Panics
///
/// Outside an actor.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    when_ready(fd, true, || {
        // SAFETY: `buf` is valid for `buf.len()` writable bytes.
        unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) }
    })
}

/// Wait until `fd` is writable, then `write(2)` from `buf`.
///
/// # Panics
///
/// Outside an actor.
pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    when_ready(fd, false, || {
        // SAFETY: `buf` is valid for `buf.len()` readable bytes.
        unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) }
    })
}

/// Wait for the direction, then run the syscall; again on a spurious
/// `EAGAIN` or `EINTR`.
fn when_ready(fd: RawFd, readable: bool, mut syscall: impl FnMut() -> isize) -> io::Result<usize> {
    loop {
        wait_fd(fd, readable, None)?;
        let n = syscall();
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = crate::errno::last_os_error();
        if e.kind() != io::ErrorKind::WouldBlock && e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Fd readiness as a [`select`](crate::select) arm, beside channel arms.
/// One arm watches one direction; one actor at a time may wait on each
/// direction of an fd.
///
/// ```
/// use smarm::io::FdArm;
///
/// smarm::run(|| {
///     let mut fds = [0; 2];
///     assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
///     let (_tx, rx) = smarm::channel::<()>();
///     assert_eq!(smarm::io::write(fds[1], b"x").unwrap(), 1);
///     assert_eq!(smarm::select(&[&rx, &FdArm::readable(fds[0])]), 1);
///     unsafe { libc::close(fds[0]); libc::close(fds[1]) };
/// });
/// ```
#[derive(Debug, Clone, Copy)]
pub struct FdArm {
    fd: RawFd,
    readable: bool,
}

impl FdArm {
    /// Ready when `fd` is readable (or hung up, or in error).
    pub fn readable(fd: RawFd) -> FdArm {
        FdArm { fd, readable: true }
    }

    /// Ready when `fd` is writable (or in error).
    pub fn writable(fd: RawFd) -> FdArm {
        FdArm {
            fd,
            readable: false,
        }
    }
}

impl Sealed for FdArm {}

impl Selectable for FdArm {
    fn sel_register(&self, pid: Pid, epoch: u32) -> io::Result<bool> {
        if poll_ready(self.fd, self.readable)? {
            return Ok(false);
        }
        register_current(self.fd, self.readable, WaitId { pid, epoch }, None)
    }

    /// A fresh zero-timeout poll; an error (the fd closed meanwhile)
    /// counts as ready, so the caller's read reports it instead of hanging.
    fn sel_ready(&self) -> bool {
        poll_ready(self.fd, self.readable).unwrap_or(true)
    }

    fn sel_unregister(&self, pid: Pid, epoch: u32) {
        cancel_current(self.fd, WaitId { pid, epoch }, self.readable);
    }

    fn sel_eager_cleanup(&self) -> bool {
        true
    }
}

/// Zero-timeout `poll(2)`: is the direction (or an error/hang-up) pending?
/// `POLLNVAL` is `EBADF`.
fn poll_ready(fd: RawFd, readable: bool) -> io::Result<bool> {
    let events = if readable {
        libc::POLLIN
    } else {
        libc::POLLOUT
    };
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd, zero timeout.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    if n < 0 {
        return Err(crate::errno::last_os_error());
    }
    if p.revents & libc::POLLNVAL != 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    Ok(p.revents & (events | libc::POLLERR | libc::POLLHUP) != 0)
}
