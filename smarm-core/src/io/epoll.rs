//! Fd readiness: the epoll thread, waits, `FdArm`, `read` and `write`.

use crate::channel::select::sealed::Sealed;
use crate::channel::Selectable;
use crate::scheduler::Shared;
use crate::scheduler::WaitingOn;
use crate::scheduler::{self, Wait};
use crate::slot::{Pid, WaitId};
use crate::sync::{LockClass, RawMutex};
use std::collections::HashMap;
use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The epoll token of the shutdown pipe.
const SHUTDOWN_TOKEN: u64 = u64::MAX;

/// The parked waiters of one fd: at most one per direction, so one actor
/// can read a socket while another writes it.
#[derive(Default, Clone, Copy)]
struct FdWaiters {
    reader: Option<WaitId>,
    writer: Option<WaitId>,
}

impl FdWaiters {
    fn slot(&mut self, readable: bool) -> &mut Option<WaitId> {
        if readable {
            &mut self.reader
        } else {
            &mut self.writer
        }
    }

    /// The epoll interest of the waiters present (0: none).
    fn events(&self) -> u32 {
        let mut events = 0;
        if self.reader.is_some() {
            events |= libc::EPOLLIN as u32;
        }
        if self.writer.is_some() {
            events |= libc::EPOLLOUT as u32;
        }
        events
    }
}

/// The parked waiters, by fd.
type Waiters = HashMap<RawFd, FdWaiters>;

pub(super) struct Epoll {
    epfd: RawFd,
    waiters: Arc<RawMutex<Waiters>>,
    shutdown_write: RawFd,
    shutdown_read: RawFd,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Epoll {
    pub(super) fn start(rt: Weak<Shared>) -> io::Result<Epoll> {
        // SAFETY: plain syscall; a negative return is an error.
        let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epfd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut pipe = [0 as RawFd; 2];
        // SAFETY: `pipe` has room for the two fds pipe2 writes.
        if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } < 0 {
            let e = io::Error::last_os_error();
            // SAFETY: closing the epoll fd we just created.
            unsafe { libc::close(epfd) };
            return Err(e);
        }
        let [shutdown_read, shutdown_write] = pipe;
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: SHUTDOWN_TOKEN,
        };
        // SAFETY: valid epoll fd and pipe fd; `ev` outlives the call.
        unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, shutdown_read, &mut ev) };
        let waiters = Arc::new(RawMutex::new(LockClass::Io, HashMap::new()));
        let thread_waiters = waiters.clone();
        let thread = std::thread::Builder::new()
            .name("smarm-io-epoll".into())
            .spawn(move || epoll_loop(epfd, thread_waiters, rt));
        match thread {
            Ok(thread) => Ok(Epoll {
                epfd,
                waiters,
                shutdown_write,
                shutdown_read,
                thread: Some(thread),
            }),
            Err(e) => {
                // SAFETY: closing the fds we just created; no thread uses them.
                unsafe {
                    libc::close(epfd);
                    libc::close(shutdown_read);
                    libc::close(shutdown_write);
                }
                Err(e)
            }
        }
    }

    /// Register `wait` as `fd`'s waiter in one direction (io (I1)).
    fn register(&self, fd: RawFd, wait: WaitId, readable: bool) -> io::Result<()> {
        let mut waiters = self.waiters.lock();
        let mut entry = waiters.get(&fd).copied().unwrap_or_default();
        if entry.slot(readable).is_some() {
            let dir = if readable { "read" } else { "write" };
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "smarm: another actor is already waiting to {dir} fd {fd}; one waiter per \
                     direction (give the second actor its own handle, e.g. try_clone)"
                ),
            ));
        }
        *entry.slot(readable) = Some(wait);
        arm(self.epfd, fd, entry.events())?;
        waiters.insert(fd, entry);
        Ok(())
    }

    /// Remove `fd`'s waiter in one direction if it is still `wait`,
    /// re-arming for the other direction's waiter or DELing the fd (io
    /// (I3)). `None` if it was not ours any more; else the other
    /// direction's waiter if re-arming failed (the fd was closed under it):
    /// the caller wakes it, so its retry reports the error.
    fn cancel(&self, fd: RawFd, wait: WaitId, readable: bool) -> Option<Option<WaitId>> {
        let mut waiters = self.waiters.lock();
        let entry = waiters.get_mut(&fd)?;
        if *entry.slot(readable) != Some(wait) {
            return None;
        }
        *entry.slot(readable) = None;
        let events = entry.events();
        if events == 0 {
            waiters.remove(&fd);
            // SAFETY: DEL of a registered fd; ENOENT (already closed) is fine.
            unsafe { libc::epoll_ctl(self.epfd, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
        } else if arm(self.epfd, fd, events).is_err() {
            let other = entry.slot(!readable).take();
            waiters.remove(&fd);
            return Some(other);
        }
        Some(None)
    }
}

/// Arm `fd` for `events`, once. A fd that was waited on before is still in
/// the epoll set, disarmed by EPOLLONESHOT: re-arm it with one MOD. ENOENT
/// means it is not (first wait, or it was closed and its number reused):
/// ADD.
fn arm(epfd: RawFd, fd: RawFd, events: u32) -> io::Result<()> {
    let mut ev = libc::epoll_event {
        events: events | libc::EPOLLONESHOT as u32,
        u64: fd as u64,
    };
    // SAFETY: `ev` outlives both calls; an invalid fd is an error return.
    let rc = unsafe {
        if libc::epoll_ctl(epfd, libc::EPOLL_CTL_MOD, fd, &mut ev) == 0 {
            0
        } else if io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) {
            libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, &mut ev)
        } else {
            -1
        }
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Drop for Epoll {
    fn drop(&mut self) {
        let byte = 1u8;
        // SAFETY: writing one byte from a live local to our own pipe.
        unsafe { libc::write(self.shutdown_write, (&raw const byte).cast(), 1) };
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // SAFETY: the epoll thread has exited; these fds are ours (io (I4)).
        unsafe {
            libc::close(self.epfd);
            libc::close(self.shutdown_read);
            libc::close(self.shutdown_write);
        }
    }
}

fn epoll_loop(epfd: RawFd, waiters: Arc<RawMutex<Waiters>>, rt: Weak<Shared>) {
    const MAX_EVENTS: usize = 64;
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; MAX_EVENTS];
    loop {
        // SAFETY: `events` has room for MAX_EVENTS entries.
        let n = unsafe { libc::epoll_wait(epfd, events.as_mut_ptr(), MAX_EVENTS as i32, -1) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        for ev in &events[..n as usize] {
            let token = ev.u64;
            if token == SHUTDOWN_TOKEN {
                return;
            }
            let fd = token as RawFd;
            let woken = consume(epfd, &waiters, fd, ev.events);
            if let Some(shared) = rt.upgrade() {
                for wait in woken.into_iter().flatten() {
                    shared.fd_wait_ended();
                    shared.wake(wait);
                }
            }
        }
    }
}

/// Consume the registrations `events` on `fd` satisfy, under the waiters
/// lock (io (I1)): an error or hang-up wakes both directions. EPOLLONESHOT
/// has disarmed the fd (it stays in the set for the next wait's MOD); a
/// waiter left in the other direction is re-armed.
fn consume(
    epfd: RawFd,
    waiters: &RawMutex<Waiters>,
    fd: RawFd,
    events: u32,
) -> [Option<WaitId>; 2] {
    let both = (libc::EPOLLERR | libc::EPOLLHUP) as u32;
    let mut waiters = waiters.lock();
    let Some(entry) = waiters.get_mut(&fd) else {
        return [None, None];
    };
    let reader = if events & (libc::EPOLLIN as u32 | libc::EPOLLRDHUP as u32 | both) != 0 {
        entry.reader.take()
    } else {
        None
    };
    let writer = if events & (libc::EPOLLOUT as u32 | both) != 0 {
        entry.writer.take()
    } else {
        None
    };
    let left = entry.events();
    if left == 0 {
        waiters.remove(&fd);
    } else if arm(epfd, fd, left).is_err() {
        // Closed under the remaining waiter: wake it too, its retry reports
        // the error.
        let rest = *entry;
        waiters.remove(&fd);
        return [reader.or(rest.reader), writer.or(rest.writer)];
    }
    [reader, writer]
}

/// Register the running actor's `wait` on `fd`, counted in
/// `io_fd_waiters` (io (I2)).
fn register_current(fd: RawFd, readable: bool, wait: WaitId) -> io::Result<()> {
    scheduler::with_current_actor(wait_name(readable), |_, shared| {
        let driver = super::driver(shared)?;
        shared.fd_wait_registered();
        driver.epoll.register(fd, wait, readable).inspect_err(|_| {
            shared.fd_wait_ended();
        })
    })
}

/// Undo `register_current` if the registration is still ours.
fn cancel_current(fd: RawFd, wait: WaitId, readable: bool) {
    scheduler::with_worker(|_, shared| {
        let driver = super::running_driver(shared);
        if let Some(driver) = driver {
            if let Some(other) = driver.epoll.cancel(fd, wait, readable) {
                shared.fd_wait_ended();
                if let Some(other) = other {
                    shared.fd_wait_ended();
                    shared.wake(other);
                }
            }
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

fn wait_fd(fd: RawFd, readable: bool) -> io::Result<()> {
    check_fd(fd)?;
    // From registering to being woken: a section (an actor ended in between
    // would leave its registration counted forever).
    let _section = crate::scheduler::Section::enter();
    let wait = Wait::open(wait_name(readable), WaitingOn::Fd);
    if let Err(e) = register_current(fd, readable, wait.id()) {
        wait.retire();
        return Err(e);
    }
    let registered = Registered {
        fd,
        wait: wait.id(),
        readable,
    };
    wait.park();
    // Woken by the epoll thread, which consumed the registration: nothing
    // to cancel.
    std::mem::forget(registered);
    Ok(())
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

/// An fd the process does not have open is `EBADF`, at once.
fn check_fd(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFD reads the fd's flags; an invalid fd is EBADF.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
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
    wait_fd(fd, true)
}

/// Park the calling actor until `fd` is writable. As [`wait_readable`].
///
/// # Panics
///
/// Outside an actor.
pub fn wait_writable(fd: RawFd) -> io::Result<()> {
    wait_fd(fd, false)
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
        wait_fd(fd, readable)?;
        let n = syscall();
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
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
        register_current(self.fd, self.readable, WaitId { pid, epoch })?;
        Ok(true)
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
        return Err(io::Error::last_os_error());
    }
    if p.revents & libc::POLLNVAL != 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    Ok(p.revents & (events | libc::POLLERR | libc::POLLHUP) != 0)
}
