//! Networking that parks only the actor: TCP ([`TcpListener`],
//! [`TcpStream`], [`TcpSocket`] for options before bind), UDP
//! ([`UdpSocket`]) and Unix domain sockets ([`UnixListener`],
//! [`UnixStream`], [`UnixDatagram`]).
//!
//! Every socket is non-blocking underneath. An operation that would block
//! waits for readiness with [`wait_readable`](super::wait_readable) /
//! [`wait_writable`](super::wait_writable) and retries, so the calling
//! actor parks and its scheduler thread runs others. Called from a plain
//! thread (outside the runtime), the same operation blocks that thread in
//! `poll(2)` instead, as [`Mutex::lock`](crate::Mutex::lock) does. The
//! types mirror `std::net` and `std::os::unix::net` (`Read`/`Write` for the
//! type and for `&` it, timeouts with std's signatures that bound each
//! wait, conversions from and into std sockets and raw fds).
//!
//! Name resolution (`ToSocketAddrs` on a host name) runs `getaddrinfo`,
//! which blocks its thread: pass a `SocketAddr`, or resolve inside
//! [`block_on_io`](super::block_on_io) first.
//!
//! One actor at a time may wait to read a socket, and one to write it (a
//! second in the same direction gets `AlreadyExists`), so a reader actor
//! and a writer actor can share a `&TcpStream`; for more, give each its own
//! [`TcpStream::try_clone`] (a `dup`ed fd, registered independently).
//!
//! # Invariants
//!
//! - (N1) Every fd a socket type holds is in non-blocking mode: set at
//!   creation (`SOCK_NONBLOCK`, `accept4`) or on conversion from a std
//!   socket or raw fd.
//! - (N2) A timeout is per socket, shared by its `try_clone`s as std's
//!   socket options are; zero is refused (`InvalidInput`), as std does.
//! - (N3) A socket's unbounded waits go through its own `Registration`:
//!   its fd stays armed edge-triggered in the runtime's epoll set, so a
//!   wait after `WouldBlock` costs no system call (io (I5)). A stream read
//!   that returns less than its buffer drained the socket (the kernel
//!   hands over all it has), so the next read waits for an edge first
//!   instead of failing a read. Datagram sockets never take that short
//!   cut (a short datagram says nothing of the next).

mod addr;
mod socket;
mod tcp;
mod udp;
mod unix;

pub use tcp::{Incoming, TcpListener, TcpSocket, TcpStream};
pub use udp::UdpSocket;
pub use unix::{UnixDatagram, UnixIncoming, UnixListener, UnixStream};

use super::Registration;
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The listen backlog of [`TcpListener::bind`] and [`UnixListener::bind`]
/// (std's is 128, short for a service under a connection burst; the kernel
/// caps it at `net.core.somaxconn`).
pub const DEFAULT_BACKLOG: u32 = 1024;

/// Retry `op` until it stops reporting `WouldBlock`, waiting for `fd` to
/// become readable (or writable) in between, each wait bounded by
/// `timeout` (`TimedOut` when it passes). `what` names the public call;
/// a socket's `registration` makes the unbounded waits edge waits (N3).
fn retry<T>(
    fd: RawFd,
    readable: bool,
    timeout: Option<Duration>,
    registration: Option<&Registration>,
    what: &'static str,
    mut op: impl FnMut() -> io::Result<T>,
) -> io::Result<T> {
    loop {
        match op() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
        if !wait(fd, readable, timeout, registration)? {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("smarm: {what} timed out"),
            ));
        }
    }
}

/// Wait until `fd` is ready in one direction, for at most `timeout`:
/// `Ok(false)` when it passed. Parks the actor, or blocks a plain thread
/// in `poll(2)`.
fn wait(
    fd: RawFd,
    readable: bool,
    timeout: Option<Duration>,
    registration: Option<&Registration>,
) -> io::Result<bool> {
    if !crate::scheduler::in_actor() {
        return poll_thread(fd, readable, timeout);
    }
    match (timeout, registration, readable) {
        (None, Some(r), _) => super::wait_registered(fd, readable, r).map(|()| true),
        (None, None, true) => super::wait_readable(fd).map(|()| true),
        (None, None, false) => super::wait_writable(fd).map(|()| true),
        (Some(t), _, true) => super::wait_readable_timeout(fd, t),
        (Some(t), _, false) => super::wait_writable_timeout(fd, t),
    }
}

/// `wait` for a plain thread: `poll(2)` until ready or the deadline.
fn poll_thread(fd: RawFd, readable: bool, timeout: Option<Duration>) -> io::Result<bool> {
    let deadline = timeout.map(|t| crate::clock::instant() + t);
    let events = if readable {
        libc::POLLIN
    } else {
        libc::POLLOUT
    };
    loop {
        let ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(crate::clock::instant());
                if left.is_zero() {
                    return Ok(false);
                }
                // Round up, so a sub-millisecond rest does not spin.
                left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32
            }
        };
        let mut p = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the call.
        let n = unsafe { libc::poll(&mut p, 1, ms) };
        if n < 0 {
            let e = crate::errno::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if p.revents & libc::POLLNVAL != 0 {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        if n > 0 {
            return Ok(true);
        }
    }
}

/// A socket's read and write timeouts (N2): nanoseconds, 0 for none.
#[derive(Debug, Default)]
struct Timeouts {
    read: AtomicU64,
    write: AtomicU64,
}

/// Shared by a socket and its clones (N2).
type SharedTimeouts = Arc<Timeouts>;

/// What a socket keeps for its waits: the timeouts, shared with its
/// clones (N2), and its fd's own registration (N3).
#[derive(Debug)]
struct SocketIo {
    timeouts: SharedTimeouts,
    registration: Registration,
}

impl SocketIo {
    fn new() -> SocketIo {
        SocketIo {
            timeouts: Timeouts::shared(),
            registration: Registration::default(),
        }
    }

    /// For a clone: the same timeouts, a registration of its own (its fd
    /// is another).
    fn cloned(&self) -> SocketIo {
        SocketIo {
            timeouts: self.timeouts.clone(),
            registration: Registration::default(),
        }
    }
}

impl Timeouts {
    fn shared() -> SharedTimeouts {
        Arc::new(Timeouts::default())
    }

    fn get(&self, readable: bool) -> Option<Duration> {
        let cell = if readable { &self.read } else { &self.write };
        match cell.load(Ordering::Relaxed) {
            0 => None,
            n => Some(Duration::from_nanos(n)),
        }
    }

    /// Set one direction's timeout; std's rules: `Some(ZERO)` is refused.
    fn set(&self, readable: bool, timeout: Option<Duration>) -> io::Result<()> {
        let nanos = match timeout {
            None => 0,
            Some(t) if t.is_zero() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "smarm: cannot set a zero timeout (use None for no timeout)",
                ));
            }
            Some(t) => u64::try_from(t.as_nanos()).unwrap_or(u64::MAX),
        };
        let cell = if readable { &self.read } else { &self.write };
        cell.store(nanos, Ordering::Relaxed);
        Ok(())
    }
}

/// The conversions every socket type has: raw fds (`AsRawFd`, `AsFd`,
/// `IntoRawFd`, `FromRawFd`, `OwnedFd` both ways) and the std type (`From`
/// it, and `into_std`). An fd or std socket taken in is made non-blocking
/// (N1).
macro_rules! fd_conversions {
    ($ty:ident, $std:ty) => {
        impl std::os::fd::AsRawFd for $ty {
            fn as_raw_fd(&self) -> std::os::fd::RawFd {
                std::os::fd::AsRawFd::as_raw_fd(&self.inner)
            }
        }

        impl std::os::fd::AsFd for $ty {
            fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
                std::os::fd::AsFd::as_fd(&self.inner)
            }
        }

        impl std::os::fd::IntoRawFd for $ty {
            fn into_raw_fd(self) -> std::os::fd::RawFd {
                std::os::fd::IntoRawFd::into_raw_fd(self.inner)
            }
        }

        impl std::os::fd::FromRawFd for $ty {
            /// Take ownership of `fd`, an open socket of this type; it is
            /// switched to non-blocking mode.
            unsafe fn from_raw_fd(fd: std::os::fd::RawFd) -> Self {
                // SAFETY: the caller passes an open, owned socket of this
                // type (FromRawFd's contract).
                <$ty>::from(unsafe { <$std as std::os::fd::FromRawFd>::from_raw_fd(fd) })
            }
        }

        impl From<std::os::fd::OwnedFd> for $ty {
            /// Take ownership of `fd`, which must be a socket of this type;
            /// it is switched to non-blocking mode.
            fn from(fd: std::os::fd::OwnedFd) -> Self {
                <$ty>::from(<$std>::from(fd))
            }
        }

        impl From<$ty> for std::os::fd::OwnedFd {
            fn from(socket: $ty) -> Self {
                std::os::fd::OwnedFd::from(socket.inner)
            }
        }

        impl From<$std> for $ty {
            /// Wrap a std socket, switching it to non-blocking mode.
            fn from(inner: $std) -> Self {
                super::socket::set_nonblocking(std::os::fd::AsRawFd::as_raw_fd(&inner));
                <$ty>::wrap(inner)
            }
        }

        impl $ty {
            /// The std socket underneath, still in non-blocking mode (its
            /// calls return `WouldBlock` instead of waiting; call
            /// `set_nonblocking(false)` on it for std's blocking calls).
            pub fn into_std(self) -> $std {
                self.inner
            }
        }
    };
}
use fd_conversions;

/// Methods a smarm socket passes straight to the std socket in its `inner`
/// field, with std's signatures and meaning; `try_clone` also shares the
/// timeouts of the `io` field (N2).
macro_rules! delegate_methods {
    ($ty:ident: $($method:ident),+ $(,)?) => {
        impl $ty {
            $(delegate_methods!(@ $ty $method);)+
        }
    };
    (@ $ty:ident local_addr) => {
        /// The local address.
        pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
            self.inner.local_addr()
        }
    };
    (@ $ty:ident peer_addr) => {
        /// The connected peer's address.
        pub fn peer_addr(&self) -> std::io::Result<SocketAddr> {
            self.inner.peer_addr()
        }
    };
    (@ $ty:ident shutdown) => {
        /// Shut down the read half, the write half, or both.
        pub fn shutdown(&self, how: std::net::Shutdown) -> std::io::Result<()> {
            self.inner.shutdown(how)
        }
    };
    (@ $ty:ident set_ttl) => {
        /// Set the IP time-to-live (a listener's: that of the connections
        /// it accepts).
        pub fn set_ttl(&self, ttl: u32) -> std::io::Result<()> {
            self.inner.set_ttl(ttl)
        }
    };
    (@ $ty:ident ttl) => {
        /// The IP time-to-live.
        pub fn ttl(&self) -> std::io::Result<u32> {
            self.inner.ttl()
        }
    };
    (@ $ty:ident take_error) => {
        /// The pending socket error (`SO_ERROR`), cleared by reading it.
        pub fn take_error(&self) -> std::io::Result<Option<std::io::Error>> {
            self.inner.take_error()
        }
    };
    (@ $ty:ident try_clone) => {
        /// A second handle on the same socket with its own fd (`dup`), so
        /// more actors can use it; it shares the timeouts (N2).
        pub fn try_clone(&self) -> std::io::Result<$ty> {
            Ok($ty {
                inner: self.inner.try_clone()?,
                io: self.io.cloned(),
            })
        }
    };
}
use delegate_methods;

/// The timeout accessors of a socket with an `io: SocketIo` field (std's
/// signatures, N2), and its `receiving` / `sending` retries bounded by
/// them.
macro_rules! timeout_methods {
    ($ty:ident) => {
        impl $ty {
            /// Bound each receive's (read's) wait; `None` waits as long as
            /// it takes. Shared with the socket's clones;
            /// `Some(Duration::ZERO)` is `InvalidInput`, as in std.
            pub fn set_read_timeout(
                &self,
                timeout: Option<std::time::Duration>,
            ) -> std::io::Result<()> {
                self.io.timeouts.set(true, timeout)
            }

            /// Bound each send's (write's) wait. As `set_read_timeout`.
            pub fn set_write_timeout(
                &self,
                timeout: Option<std::time::Duration>,
            ) -> std::io::Result<()> {
                self.io.timeouts.set(false, timeout)
            }

            /// The read timeout.
            pub fn read_timeout(&self) -> std::io::Result<Option<std::time::Duration>> {
                Ok(self.io.timeouts.get(true))
            }

            /// The write timeout.
            pub fn write_timeout(&self) -> std::io::Result<Option<std::time::Duration>> {
                Ok(self.io.timeouts.get(false))
            }

            fn receiving<T>(
                &self,
                what: &'static str,
                op: impl FnMut() -> std::io::Result<T>,
            ) -> std::io::Result<T> {
                let fd = std::os::fd::AsRawFd::as_raw_fd(&self.inner);
                let timeout = self.io.timeouts.get(true);
                super::retry(fd, true, timeout, Some(&self.io.registration), what, op)
            }

            fn sending<T>(
                &self,
                what: &'static str,
                op: impl FnMut() -> std::io::Result<T>,
            ) -> std::io::Result<T> {
                let fd = std::os::fd::AsRawFd::as_raw_fd(&self.inner);
                let timeout = self.io.timeouts.get(false);
                super::retry(fd, false, timeout, Some(&self.io.registration), what, op)
            }
        }
    };
}
use timeout_methods;

/// `Read` and `Write` for a stream type and for `&` it, each call a
/// `receiving` / `sending` retry named `$name::read` and so on.
macro_rules! stream_io {
    ($ty:ident, $name:literal) => {
        impl std::io::Read for &$ty {
            /// A read that returns less than `buf` drained the stream, so
            /// the next one waits for new data before trying (N3).
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let registration = &self.io.registration;
                if registration.take_drained()
                    && self.io.timeouts.get(true).is_none()
                    && $crate::scheduler::in_actor()
                {
                    let fd = std::os::fd::AsRawFd::as_raw_fd(&self.inner);
                    $crate::io::wait_registered(fd, true, registration)?;
                }
                let mut inner = &self.inner;
                let n = self.receiving(concat!($name, "::read"), || inner.read(buf))?;
                registration.set_drained(n > 0 && n < buf.len());
                Ok(n)
            }

            fn read_vectored(
                &mut self,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::io::Result<usize> {
                let mut inner = &self.inner;
                self.receiving(concat!($name, "::read_vectored"), || {
                    inner.read_vectored(bufs)
                })
            }
        }

        impl std::io::Write for &$ty {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                let buf = match buf.len() {
                    2.. if $crate::fault_site("a socket write writes half its buffer") => {
                        &buf[..buf.len() / 2]
                    }
                    _ => buf,
                };
                let mut inner = &self.inner;
                self.sending(concat!($name, "::write"), || inner.write(buf))
            }

            fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
                let mut inner = &self.inner;
                self.sending(concat!($name, "::write_vectored"), || {
                    inner.write_vectored(bufs)
                })
            }

            fn flush(&mut self) -> std::io::Result<()> {
                Ok(()) // no user-space buffer
            }
        }

        impl std::io::Read for $ty {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                (&*self).read(buf)
            }

            fn read_vectored(
                &mut self,
                bufs: &mut [std::io::IoSliceMut<'_>],
            ) -> std::io::Result<usize> {
                (&*self).read_vectored(bufs)
            }
        }

        impl std::io::Write for $ty {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                (&*self).write(buf)
            }

            fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
                (&*self).write_vectored(bufs)
            }

            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
    };
}
use stream_io;
