//! IO without blocking a scheduler thread: a blocking pool for calls that
//! must block (`block_on_io`), and an epoll set the schedulers poll for fd
//! readiness (`wait_readable`, `wait_writable`, `FdArm` select arms,
//! `read`, `write`), on which the sockets (`net`) and Unix signals
//! (`OsSignals`) are built.
//!
//! # Design
//!
//! Each runtime starts an `IoDriver` on the first IO call of a `run` and
//! stops it when the run ends. It owns two producers, each behind the
//! runtime's two-call contract (make the actor runnable with
//! `Shared::wake`, whose enqueue tail wakes a parked scheduler; nothing
//! else):
//!
//! - the **blocking pool** (`blocking.rs`): threads that run submitted
//!   closures, hand the result back through a slot the waiting actor owns,
//!   decrement `io_outstanding` and wake the actor. Threads are started on
//!   demand up to [`MAX_BLOCKING_THREADS`] and leave after
//!   [`BLOCKING_KEEP_ALIVE`] idle;
//! - the **epoll set** (`epoll.rs`), installed as the schedulers' poll
//!   source (`scheduler::netpoll`): an idle scheduler parks in
//!   `epoll_pwait2`, busy ones and the system monitor poll it without
//!   blocking now and then. A poll removes a ready fd's waiters under the
//!   waiters lock, decrements `io_fd_waiters` and wakes the actors, which
//!   land in the polling scheduler's own queues. An fd has at most one
//!   waiter per direction (a reader and a writer). An fd is armed
//!   edge-triggered for both directions (`EPOLLET`) and stays in the set;
//!   an edge with nobody parked in its direction is kept as a ready mark.
//!   A raw-fd wait (`wait_readable`, `FdArm`) re-arms with one
//!   `EPOLL_CTL_MOD` (an `ADD` the first time, or after the number was
//!   closed and reused), which makes the kernel report readiness that is
//!   already there; a socket of `net` arms once per epoll set, and its
//!   later waits only look at the ready mark or park (I5).
//!
//! The pool reaches the runtime through a `Weak` (the driver lives in the
//! runtime: no reference cycle). `io_outstanding + io_fd_waiters` feed the
//! termination verdict: a run does not end while a blocking call is in
//! flight or an actor waits on an fd. The root-exit sweep does stop actors
//! waiting on fds (an fd may never become ready), but waits for blocking
//! calls, which always finish.
//!
//! # Invariants
//!
//! - (I1) The waiters lock serialises every arm (ADD/MOD) of an fd and
//!   every look at its ready marks with a poll's consumption of its
//!   events: they never interleave.
//!   A poll takes no other lock of the runtime while it holds it.
//! - (I2) Each counter increment happens before the registration or
//!   submission it counts and is undone exactly once: by the producer that
//!   consumes it, or by the waiter that cancels it.
//! - (I3) A waiter that unwinds (a stop), or whose park ends without a
//!   poll (a stop's wake, while a destructor waits in an actor already
//!   unwinding), removes its registration if it is still its own, so the
//!   fd is registrable again and no longer counted; one consumed by a poll
//!   meanwhile is left alone.
//! - (I4) Teardown uninstalls the poll source once no scheduler runs,
//!   joins the pool and closes every fd the driver opened (the wake
//!   eventfd is the runtime's).
//! - (I5) A wait through a socket's `Registration` that finds no ready
//!   mark parks only when an edge will follow: its caller saw `WouldBlock`
//!   or a draining read, and any readiness after that is an edge, which
//!   wakes it or, before it parked, left the mark it checks under the
//!   waiters lock. A stale mark costs one failed retry, never a lost wake.
//!
//! # Safety
//!
//! `epoll.rs` wraps `epoll_create1`, `epoll_ctl`, `epoll_pwait2`/`epoll_wait`,
//! `poll`, `read` and `write` on fds the caller names; invalid fds are
//! errors from the kernel, never memory unsafety.

mod blocking;
mod epoll;
pub mod net;
mod os_signal;

pub use blocking::{BLOCKING_KEEP_ALIVE, MAX_BLOCKING_THREADS, block_on_io, block_on_io_scoped};
pub use epoll::{
    FdArm, read, wait_readable, wait_readable_timeout, wait_writable, wait_writable_timeout, write,
};
pub use os_signal::OsSignals;

pub(crate) use epoll::{Registration, wait_registered};

use crate::scheduler::Shared;
use std::sync::Arc;

/// The IO producers of one run of one runtime.
pub(crate) struct IoDriver {
    pool: blocking::Pool,
    epoll: Arc<epoll::Epoll>,
}

impl IoDriver {
    /// Start the pool and make the epoll set, installed as the schedulers'
    /// poll source.
    fn start(shared: &Shared) -> std::io::Result<IoDriver> {
        let epoll = Arc::new(epoll::Epoll::new(shared)?);
        shared.netpoll.install(epoll.clone());
        Ok(IoDriver {
            pool: blocking::Pool::new(Arc::downgrade(&shared.to_arc())),
            epoll,
        })
    }
}

/// This run's IO driver, kept as a runtime local (started on first use,
/// stopped when the run ends).
#[derive(Default)]
struct IoState(std::sync::Mutex<Option<Arc<IoDriver>>>);

/// `shared`'s IO driver for this run, started on first use.
pub(crate) fn driver(shared: &Shared) -> std::io::Result<Arc<IoDriver>> {
    let mut io = crate::lock::lock_std(&shared.locals().get_or_default::<IoState>().0);
    if let Some(driver) = io.as_ref() {
        return Ok(driver.clone());
    }
    let driver = Arc::new(IoDriver::start(shared)?);
    *io = Some(driver.clone());
    Ok(driver)
}

/// `shared`'s IO driver, if this run started one.
pub(crate) fn running_driver(shared: &Shared) -> Option<Arc<IoDriver>> {
    crate::lock::lock_std(&shared.locals().get_or_default::<IoState>().0).clone()
}

/// Stop `shared`'s IO driver for this run (joins its threads, closes its
/// fds). No scheduler runs by then, so none polls.
pub(crate) fn stop(shared: &Shared) {
    shared.netpoll.uninstall();
    let driver = crate::lock::lock_std(&shared.locals().get_or_default::<IoState>().0).take();
    drop(driver);
}
