//! UDP: a socket whose receives (and, rarely, sends) park the actor.

use super::retry;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// A UDP socket; receiving parks only the calling actor.
///
/// ```
/// use smarm::net::UdpSocket;
///
/// smarm::run(|| {
///     let a = UdpSocket::bind("127.0.0.1:0").unwrap();
///     let b = UdpSocket::bind("127.0.0.1:0").unwrap();
///     let b_addr = b.local_addr().unwrap();
///     let receiver = smarm::spawn(move || {
///         let mut buf = [0u8; 16];
///         let (n, _) = b.recv_from(&mut buf).unwrap();
///         assert_eq!(&buf[..n], b"datagram");
///     });
///     a.send_to(b"datagram", b_addr).unwrap();
///     receiver.join().unwrap();
/// });
/// ```
#[derive(Debug)]
pub struct UdpSocket {
    inner: std::net::UdpSocket,
    read_timeout: Option<Duration>,
}

impl UdpSocket {
    /// Bind to `addr` (port 0 picks a free port).
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        let inner = std::net::UdpSocket::bind(addr)?;
        inner.set_nonblocking(true)?;
        Ok(UdpSocket {
            inner,
            read_timeout: None,
        })
    }

    /// Bound each receive's wait (`TimedOut` when it passes).
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.read_timeout = timeout;
    }

    /// Send a datagram to `addr`.
    pub fn send_to(&self, buf: &[u8], addr: impl ToSocketAddrs) -> io::Result<usize> {
        let addr = addr
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to send to"))?;
        retry(self.as_raw_fd(), false, None, || {
            self.inner.send_to(buf, addr)
        })
    }

    /// Wait for a datagram; returns its length and sender.
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        retry(self.as_raw_fd(), true, self.read_timeout, || {
            self.inner.recv_from(buf)
        })
    }

    /// Set the default peer for [`send`](Self::send) and [`recv`](Self::recv).
    pub fn connect(&self, addr: impl ToSocketAddrs) -> io::Result<()> {
        self.inner.connect(addr)
    }

    /// Send to the connected peer.
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        retry(self.as_raw_fd(), false, None, || self.inner.send(buf))
    }

    /// Wait for a datagram from the connected peer.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        retry(self.as_raw_fd(), true, self.read_timeout, || {
            self.inner.recv(buf)
        })
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.as_raw_fd()
    }
}
