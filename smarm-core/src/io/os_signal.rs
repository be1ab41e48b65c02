//! Unix signals as readable events: [`OsSignals`] installs a handler for
//! each signal asked for that writes the signal's number to a self-pipe,
//! and an actor receives them by waiting on the pipe (parking only the
//! actor; `FdArm` puts it beside channels in a `select`).
//!
//! A handler, not `signalfd`: `signalfd` needs the signal blocked in every
//! thread of the process, including threads the program started before
//! smarm, where an unblocked copy would take the default action (end the
//! process). A handler works whichever thread the kernel picks.
//!
//! # Invariants
//!
//! - (G1) The handler calls only async-signal-safe functions (`write`) and
//!   preserves `errno`; it writes to the pipe `WRITE_FDS` names for its
//!   signal, non-blocking (a full pipe drops the byte: the reader is
//!   already due to wake).
//! - (G2) One live `OsSignals` per signal: a second is refused
//!   (`AlreadyExists`), so every signal has one reader.
//! - (G3) Dropping restores the previous disposition before forgetting the
//!   pipe; the write end stays open for the life of the process, so a
//!   handler still running on another thread never writes to an fd number
//!   that was closed and reused.
//! - (G4) The signals the runtime or the kernel own (`SIGSEGV`, `SIGBUS`,
//!   `SIGILL`, `SIGFPE`: smarm's overflow handler and crash reports;
//!   `SIGKILL`, `SIGSTOP`: not catchable) are refused (`InvalidInput`).

use super::FdArm;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

/// Highest signal number handled (Linux's `SIGRTMAX` is 64).
const MAX_SIGNAL: usize = 64;

/// The pipe write end of each signal's live `OsSignals`, or -1 (G1, G2).
static WRITE_FDS: [AtomicI32; MAX_SIGNAL + 1] = [const { AtomicI32::new(-1) }; MAX_SIGNAL + 1];

/// Serialises installing and restoring handlers.
static INSTALL: Mutex<()> = Mutex::new(());

extern "C" fn on_signal(signal: libc::c_int) {
    // SAFETY: errno is this thread's; reading and restoring it around the
    // write keeps the interrupted code's errno intact (G1).
    let saved = unsafe { *libc::__errno_location() };
    if let Some(slot) = usize::try_from(signal).ok().and_then(|s| WRITE_FDS.get(s)) {
        let fd = slot.load(Ordering::Acquire);
        if fd >= 0 {
            let byte = signal as u8;
            // SAFETY: write(2) is async-signal-safe; `byte` is live for the
            // call; a full pipe or a bad fd is an error return, ignored.
            unsafe { libc::write(fd, (&raw const byte).cast(), 1) };
        }
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
}

/// A listener for Unix signals (`SIGTERM`, `SIGINT`, `SIGHUP`, `SIGUSR1`,
/// ...): while it lives, those signals no longer take their default
/// action; each delivery queues the signal's number for
/// [`recv`](Self::recv). Dropping it restores the previous handlers.
///
/// ```
/// use smarm::io::OsSignals;
///
/// smarm::run(|| {
///     let signals = OsSignals::new(&[libc::SIGUSR1]).unwrap();
///     unsafe { libc::raise(libc::SIGUSR1) };
///     assert_eq!(signals.recv().unwrap(), libc::SIGUSR1);
/// });
/// ```
#[derive(Debug)]
pub struct OsSignals {
    read: OwnedFd,
    /// The pipe's write end, kept open forever after drop (G3).
    write: RawFd,
    signals: Vec<(libc::c_int, libc::sigaction)>,
}

impl OsSignals {
    /// Catch `signals` from now on. Errors: `InvalidInput` for a signal
    /// the runtime or the kernel owns (G4) or out of range,
    /// `AlreadyExists` if another live `OsSignals` catches one of them
    /// (G2), or the error of creating the pipe or installing a handler.
    pub fn new(signals: &[libc::c_int]) -> io::Result<OsSignals> {
        #[cfg(feature = "sim")]
        if crate::scheduler::simulated::active() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "smarm: OsSignals::new inside a simulation (smarm::sim): OS signals arrive \
                 outside the simulation's order; send the actor the message the signal \
                 would have caused instead",
            ));
        }
        for &sig in signals {
            let owned = [
                libc::SIGSEGV,
                libc::SIGBUS,
                libc::SIGILL,
                libc::SIGFPE,
                libc::SIGKILL,
                libc::SIGSTOP,
            ];
            if sig <= 0 || sig as usize > MAX_SIGNAL || owned.contains(&sig) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "smarm: OsSignals cannot catch signal {sig}: it is out of range or owned \
                         by the runtime or the kernel"
                    ),
                ));
            }
        }
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` has room for the two fds pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } < 0 {
            return Err(crate::errno::last_os_error());
        }
        // SAFETY: a fresh fd nobody else owns.
        let read = unsafe { OwnedFd::from_raw_fd(fds[0]) };
        let mut listener = OsSignals {
            read,
            write: fds[1],
            signals: Vec::new(),
        };
        let _serial = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
        for &sig in signals {
            let slot = &WRITE_FDS[sig as usize];
            if slot
                .compare_exchange(-1, listener.write, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("smarm: signal {sig} already has a live OsSignals listener"),
                )); // drop restores the ones installed so far
            }
            // SAFETY: all-zero is a valid sigaction to fill in.
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            // SAFETY: the mask is a live sigset_t.
            unsafe { libc::sigemptyset(&mut action.sa_mask) };
            // SAFETY: all-zero is a valid sigaction for the old one.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: both sigactions are live; the handler is an
            // `extern "C" fn(c_int)` that keeps (G1).
            if unsafe { libc::sigaction(sig, &action, &mut old) } < 0 {
                let e = crate::errno::last_os_error();
                slot.store(-1, Ordering::Release);
                return Err(e);
            }
            listener.signals.push((sig, old));
        }
        Ok(listener)
    }

    /// Wait for the next signal and return its number (parking only the
    /// calling actor; blocking a plain thread).
    pub fn recv(&self) -> io::Result<libc::c_int> {
        loop {
            if let Some(sig) = self.try_recv()? {
                return Ok(sig);
            }
            if crate::scheduler::in_actor() {
                super::wait_readable(self.read.as_raw_fd())?;
            } else {
                let mut p = libc::pollfd {
                    fd: self.read.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one live pollfd; EINTR only sends us round again.
                unsafe { libc::poll(&mut p, 1, -1) };
            }
        }
    }

    /// The next queued signal, if any, without waiting.
    pub fn try_recv(&self) -> io::Result<Option<libc::c_int>> {
        let mut byte = 0u8;
        // SAFETY: reading one byte into a live local from our own pipe.
        let n = unsafe { libc::read(self.read.as_raw_fd(), (&raw mut byte).cast(), 1) };
        if n == 1 {
            return Ok(Some(libc::c_int::from(byte)));
        }
        let e = crate::errno::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
            _ => Err(e),
        }
    }

    /// A `select` arm that is ready when a signal is queued (then call
    /// [`try_recv`](Self::try_recv)).
    pub fn arm(&self) -> FdArm {
        FdArm::readable(self.read.as_raw_fd())
    }
}

impl Drop for OsSignals {
    fn drop(&mut self) {
        let _serial = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
        for (sig, old) in self.signals.drain(..) {
            // SAFETY: restoring the disposition this listener replaced.
            unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
            WRITE_FDS[sig as usize].store(-1, Ordering::Release);
        }
        // The write end stays open (G3); the read end closes with `read`.
    }
}
