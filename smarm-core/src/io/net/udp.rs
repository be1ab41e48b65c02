//! UDP: a socket whose receives (and, rarely, sends) park the actor.

use super::{SocketIo, delegate_methods, fd_conversions, tcp::each_addr, timeout_methods};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

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
    io: SocketIo,
}

impl UdpSocket {
    /// Bind to `addr` (port 0 picks a free port).
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        each_addr(addr, |a| Ok(UdpSocket::from(std::net::UdpSocket::bind(a)?)))
    }

    fn wrap(inner: std::net::UdpSocket) -> UdpSocket {
        UdpSocket {
            inner,
            io: SocketIo::new(),
        }
    }

    /// Send a datagram to `addr` (its first resolved address).
    pub fn send_to(&self, buf: &[u8], addr: impl ToSocketAddrs) -> io::Result<usize> {
        let addr = addr.to_socket_addrs()?.next().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "smarm: no address to send to")
        })?;
        self.sending("UdpSocket::send_to", || self.inner.send_to(buf, addr))
    }

    /// Wait for a datagram; returns its length and sender.
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.receiving("UdpSocket::recv_from", || self.inner.recv_from(buf))
    }

    /// [`recv_from`](Self::recv_from), leaving the datagram queued.
    pub fn peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.receiving("UdpSocket::peek_from", || self.inner.peek_from(buf))
    }

    /// Set the default peer for [`send`](Self::send) and [`recv`](Self::recv).
    pub fn connect(&self, addr: impl ToSocketAddrs) -> io::Result<()> {
        self.inner.connect(addr)
    }

    /// Send to the connected peer.
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.sending("UdpSocket::send", || self.inner.send(buf))
    }

    /// Wait for a datagram from the connected peer.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.receiving("UdpSocket::recv", || self.inner.recv(buf))
    }

    /// [`recv`](Self::recv), leaving the datagram queued.
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.receiving("UdpSocket::peek", || self.inner.peek(buf))
    }

    /// Allow (or forbid) sending to broadcast addresses.
    pub fn set_broadcast(&self, on: bool) -> io::Result<()> {
        self.inner.set_broadcast(on)
    }

    /// Whether broadcast is allowed.
    pub fn broadcast(&self) -> io::Result<bool> {
        self.inner.broadcast()
    }

    /// Join an IPv4 multicast group on `interface`.
    pub fn join_multicast_v4(&self, group: &Ipv4Addr, interface: &Ipv4Addr) -> io::Result<()> {
        self.inner.join_multicast_v4(group, interface)
    }

    /// Join an IPv6 multicast group on interface number `interface`.
    pub fn join_multicast_v6(&self, group: &Ipv6Addr, interface: u32) -> io::Result<()> {
        self.inner.join_multicast_v6(group, interface)
    }
}

fd_conversions!(UdpSocket, std::net::UdpSocket);
delegate_methods!(UdpSocket: local_addr, peer_addr, set_ttl, ttl, take_error, try_clone);
timeout_methods!(UdpSocket);
