//! TCP: a listener whose `accept` parks the actor, a stream whose reads,
//! writes and connect park the actor, and `TcpSocket` for the options that
//! must be set before `bind` or `connect`.

use super::{
    SocketIo, addr, delegate_methods, fd_conversions, retry, socket, stream_io, timeout_methods,
    wait,
};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A TCP listening socket; [`accept`](Self::accept) parks the calling
/// actor until a connection arrives.
///
/// ```
/// use smarm::net::{TcpListener, TcpStream};
/// use std::io::{Read, Write};
///
/// smarm::run(|| {
///     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
///     let addr = listener.local_addr().unwrap();
///     let server = smarm::spawn(move || {
///         let (mut conn, _) = listener.accept().unwrap();
///         let mut buf = [0u8; 5];
///         conn.read_exact(&mut buf).unwrap();
///         conn.write_all(&buf).unwrap();
///     });
///     let mut client = TcpStream::connect(addr).unwrap();
///     client.write_all(b"hello").unwrap();
///     let mut echo = [0u8; 5];
///     client.read_exact(&mut echo).unwrap();
///     assert_eq!(&echo, b"hello");
///     server.join().unwrap();
/// });
/// ```
///
/// An accept loop should survive running out of file descriptors: the
/// error (`EMFILE`, `ENFILE`) passes once connections close, so back off
/// and accept again rather than end the acceptor:
///
/// ```no_run
/// # use smarm::net::TcpListener;
/// # use std::time::Duration;
/// # fn serve(listener: TcpListener) {
/// for conn in listener.incoming() {
///     match conn {
///         Ok(stream) => drop(smarm::spawn(move || drop(stream))),
///         Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
///             smarm::sleep(Duration::from_millis(50));
///         }
///         Err(e) => panic!("accept failed: {e}"),
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct TcpListener {
    inner: std::net::TcpListener,
}

impl TcpListener {
    /// Bind to `addr` (port 0 picks a free port) and listen, with
    /// `SO_REUSEADDR` set (so a restarted server can bind a port whose old
    /// connections linger in `TIME_WAIT`) and a backlog of
    /// [`DEFAULT_BACKLOG`](super::DEFAULT_BACKLOG). For other options, see
    /// [`TcpSocket`]. Binding does not block.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        each_addr(addr, |a| {
            let socket = TcpSocket::new_for(a)?;
            socket.set_reuseaddr(true)?;
            socket.bind(*a)?;
            socket.listen(super::DEFAULT_BACKLOG)
        })
    }

    fn wrap(inner: std::net::TcpListener) -> TcpListener {
        TcpListener { inner }
    }

    /// Wait for the next connection (parking only the calling actor).
    ///
    /// Errors are std's; `EMFILE`/`ENFILE` (out of file descriptors) pass
    /// once connections close: back off and accept again.
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let fd = self.inner.as_raw_fd();
        let (conn, peer, _) = retry(fd, true, None, None, "TcpListener::accept", || {
            socket::accept(fd)
        })?;
        let peer = addr::from_raw(&peer).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, "smarm: accept: not an IP peer")
        })?;
        Ok((TcpStream::wrap(std::net::TcpStream::from(conn)), peer))
    }

    /// An endless iterator of accepted connections ([`accept`](Self::accept)
    /// without the peer address).
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { listener: self }
    }

    /// A second handle on the same listener (`dup`).
    pub fn try_clone(&self) -> io::Result<TcpListener> {
        Ok(TcpListener::wrap(self.inner.try_clone()?))
    }
}

fd_conversions!(TcpListener, std::net::TcpListener);
delegate_methods!(TcpListener: local_addr, set_ttl, ttl, take_error);

/// The iterator of [`TcpListener::incoming`].
#[derive(Debug)]
pub struct Incoming<'a> {
    listener: &'a TcpListener,
}

impl Iterator for Incoming<'_> {
    type Item = io::Result<TcpStream>;

    fn next(&mut self) -> Option<io::Result<TcpStream>> {
        Some(self.listener.accept().map(|(stream, _)| stream))
    }
}

/// A TCP connection. `Read` and `Write` (on the stream and on `&` it) park
/// only the calling actor; read and write timeouts bound each wait
/// (`TimedOut` when one passes).
#[derive(Debug)]
pub struct TcpStream {
    inner: std::net::TcpStream,
    io: SocketIo,
}

impl TcpStream {
    fn wrap(inner: std::net::TcpStream) -> TcpStream {
        TcpStream {
            inner,
            io: SocketIo::new(),
        }
    }

    /// Connect to `addr`, trying each resolved address in turn; the
    /// connect parks only the calling actor.
    pub fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        each_addr(addr, |a| TcpSocket::new_for(a)?.connect_inner(*a, None))
    }

    /// [`connect`](Self::connect) to one address, giving up after `timeout`
    /// (`TimedOut`).
    pub fn connect_timeout(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
        TcpSocket::new_for(addr)?.connect_inner(*addr, Some(timeout))
    }

    /// Read without removing the data from the socket's queue, waiting
    /// (parking the actor) until some arrives.
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.receiving("TcpStream::peek", || self.inner.peek(buf))
    }

    /// Disable (or re-enable) Nagle's algorithm.
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.inner.set_nodelay(nodelay)
    }

    /// Whether Nagle's algorithm is disabled.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.inner.nodelay()
    }
}

fd_conversions!(TcpStream, std::net::TcpStream);
delegate_methods!(TcpStream: shutdown, peer_addr, local_addr, set_ttl, ttl, take_error, try_clone);
timeout_methods!(TcpStream);
stream_io!(TcpStream, "TcpStream");

/// A TCP socket before it is a listener or a connection, for the options
/// that must be set first (as tokio's `TcpSocket`): `SO_REUSEADDR`,
/// `SO_REUSEPORT` (several listeners sharing a port, the kernel spreading
/// connections over them), buffer sizes, the listen backlog, a fixed local
/// address for an outgoing connection.
///
/// ```
/// use smarm::net::{TcpSocket, TcpStream};
///
/// smarm::run(|| {
///     let socket = TcpSocket::new_v4().unwrap();
///     socket.set_reuseaddr(true).unwrap();
///     socket.set_reuseport(true).unwrap();
///     socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
///     let listener = socket.listen(4096).unwrap();
///     let addr = listener.local_addr().unwrap();
///     let _client = TcpStream::connect(addr).unwrap();
///     let (_conn, _) = listener.accept().unwrap();
/// });
/// ```
#[derive(Debug)]
pub struct TcpSocket {
    fd: OwnedFd,
}

impl TcpSocket {
    /// A new IPv4 TCP socket.
    pub fn new_v4() -> io::Result<TcpSocket> {
        Ok(TcpSocket {
            fd: socket::new(libc::AF_INET, libc::SOCK_STREAM)?,
        })
    }

    /// A new IPv6 TCP socket.
    pub fn new_v6() -> io::Result<TcpSocket> {
        Ok(TcpSocket {
            fd: socket::new(libc::AF_INET6, libc::SOCK_STREAM)?,
        })
    }

    fn new_for(addr: &SocketAddr) -> io::Result<TcpSocket> {
        Ok(TcpSocket {
            fd: socket::new(socket::family(addr), libc::SOCK_STREAM)?,
        })
    }

    /// Allow binding an address whose previous connections linger in
    /// `TIME_WAIT` (`SO_REUSEADDR`).
    pub fn set_reuseaddr(&self, reuse: bool) -> io::Result<()> {
        socket::set_int(&self.fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, reuse.into())
    }

    /// Whether `SO_REUSEADDR` is set.
    pub fn reuseaddr(&self) -> io::Result<bool> {
        Ok(socket::get_int(&self.fd, libc::SOL_SOCKET, libc::SO_REUSEADDR)? != 0)
    }

    /// Allow several sockets to bind the same address and port
    /// (`SO_REUSEPORT`); the kernel balances connections over listeners.
    pub fn set_reuseport(&self, reuse: bool) -> io::Result<()> {
        socket::set_int(&self.fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, reuse.into())
    }

    /// Whether `SO_REUSEPORT` is set.
    pub fn reuseport(&self) -> io::Result<bool> {
        Ok(socket::get_int(&self.fd, libc::SOL_SOCKET, libc::SO_REUSEPORT)? != 0)
    }

    /// Set the kernel's send buffer size (`SO_SNDBUF`).
    pub fn set_send_buffer_size(&self, size: u32) -> io::Result<()> {
        let size = libc::c_int::try_from(size).unwrap_or(libc::c_int::MAX);
        socket::set_int(&self.fd, libc::SOL_SOCKET, libc::SO_SNDBUF, size)
    }

    /// Set the kernel's receive buffer size (`SO_RCVBUF`).
    pub fn set_recv_buffer_size(&self, size: u32) -> io::Result<()> {
        let size = libc::c_int::try_from(size).unwrap_or(libc::c_int::MAX);
        socket::set_int(&self.fd, libc::SOL_SOCKET, libc::SO_RCVBUF, size)
    }

    /// Bind to a local address.
    pub fn bind(&self, addr: SocketAddr) -> io::Result<()> {
        socket::bind(&self.fd, &addr)
    }

    /// Listen, with a backlog of at most `backlog` pending connections
    /// (capped by the kernel's `net.core.somaxconn`).
    pub fn listen(self, backlog: u32) -> io::Result<TcpListener> {
        socket::listen(&self.fd, backlog)?;
        Ok(TcpListener::wrap(std::net::TcpListener::from(self.fd)))
    }

    /// Connect to `addr`, parking only the calling actor.
    pub fn connect(self, addr: SocketAddr) -> io::Result<TcpStream> {
        self.connect_inner(addr, None)
    }

    /// A non-blocking connect: start it, wait for writability, read the
    /// outcome from `SO_ERROR`.
    fn connect_inner(self, addr: SocketAddr, timeout: Option<Duration>) -> io::Result<TcpStream> {
        let (raw, len) = addr::to_raw(&addr);
        if !socket::start_connect(&self.fd, (&raw const raw).cast(), len)? {
            if !wait(self.fd.as_raw_fd(), false, timeout, None)? {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "smarm: TcpStream::connect timed out",
                ));
            }
            if let Some(e) = socket::take_error(&self.fd)? {
                return Err(e);
            }
        }
        Ok(TcpStream::wrap(std::net::TcpStream::from(self.fd)))
    }
}

impl AsRawFd for TcpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl IntoRawFd for TcpSocket {
    fn into_raw_fd(self) -> RawFd {
        self.fd.into_raw_fd()
    }
}

impl FromRawFd for TcpSocket {
    /// Take ownership of `fd`, an open TCP socket, switching it to
    /// non-blocking mode.
    unsafe fn from_raw_fd(fd: RawFd) -> TcpSocket {
        socket::set_nonblocking(fd);
        // SAFETY: the caller passes an open socket it owns (FromRawFd's
        // contract).
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        TcpSocket { fd }
    }
}

/// Try `f` on each address `addr` resolves to; the last error if none
/// works.
pub(super) fn each_addr<T>(
    addr: impl ToSocketAddrs,
    mut f: impl FnMut(&SocketAddr) -> io::Result<T>,
) -> io::Result<T> {
    let mut last = None;
    for a in addr.to_socket_addrs()? {
        match f(&a) {
            Ok(v) => return Ok(v),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "smarm: the address resolved to nothing",
        )
    }))
}
