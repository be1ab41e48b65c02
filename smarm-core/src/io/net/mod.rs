//! Networking that parks only the actor: [`TcpListener`], [`TcpStream`],
//! [`UdpSocket`].
//!
//! Every socket is non-blocking underneath. An operation that would block
//! waits for readiness with [`wait_readable`](super::wait_readable) /
//! [`wait_writable`](super::wait_writable) and retries, so the calling
//! actor parks and its scheduler thread runs others. The types mirror
//! `std::net` (and implement `std::io::Read`/`Write`), with timeouts that
//! bound each wait.
//!
//! Name resolution (`ToSocketAddrs` on a host name) runs `getaddrinfo`,
//! which blocks its thread: pass a `SocketAddr`, or resolve inside
//! [`block_on_io`](super::block_on_io) first.
//!
//! One actor may wait on a socket at a time (a second gets
//! `AlreadyExists`). To read in one actor and write in another, give the
//! second a [`TcpStream::try_clone`] (a `dup`ed fd, registered
//! independently).

mod addr;
mod tcp;
mod udp;

pub use tcp::{TcpListener, TcpStream};
pub use udp::UdpSocket;

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// Retry `op` until it stops reporting `WouldBlock`, waiting for `fd` to
/// become readable (or writable) in between, each wait bounded by
/// `timeout` (`TimedOut` when it passes).
fn retry<T>(
    fd: RawFd,
    readable: bool,
    timeout: Option<Duration>,
    mut op: impl FnMut() -> io::Result<T>,
) -> io::Result<T> {
    loop {
        match op() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
        let ready = match (timeout, readable) {
            (None, true) => super::wait_readable(fd).map(|()| true),
            (None, false) => super::wait_writable(fd).map(|()| true),
            (Some(t), true) => super::wait_readable_timeout(fd, t),
            (Some(t), false) => super::wait_writable_timeout(fd, t),
        }?;
        if !ready {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "smarm: socket operation timed out",
            ));
        }
    }
}
