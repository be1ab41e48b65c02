//! TCP: a listener whose `accept` parks the actor, and a stream whose
//! reads, writes and connect park the actor.

use super::{addr, retry};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
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
#[derive(Debug)]
pub struct TcpListener {
    inner: std::net::TcpListener,
}

impl TcpListener {
    /// Bind to `addr` (port 0 picks a free port). Binding does not block.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        let inner = std::net::TcpListener::bind(addr)?;
        inner.set_nonblocking(true)?;
        Ok(TcpListener { inner })
    }

    /// Wait for the next connection (parking only the calling actor).
    ///
    /// # Panics
    ///
    /// Outside an actor, when no connection is pending.
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (stream, peer) = retry(self.inner.as_raw_fd(), true, None, || self.inner.accept())?;
        Ok((TcpStream::from_std(stream)?, peer))
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

impl AsRawFd for TcpListener {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.as_raw_fd()
    }
}

/// A TCP connection. `Read` and `Write` park only the calling actor; read
/// and write timeouts bound each wait (`TimedOut` when one passes).
#[derive(Debug)]
pub struct TcpStream {
    inner: std::net::TcpStream,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
}

impl TcpStream {
    fn from_std(inner: std::net::TcpStream) -> io::Result<TcpStream> {
        inner.set_nonblocking(true)?;
        Ok(TcpStream {
            inner,
            read_timeout: None,
            write_timeout: None,
        })
    }

    /// Connect to `addr`, trying each resolved address in turn; the
    /// connect parks only the calling actor.
    ///
    /// # Panics
    ///
    /// Outside an actor, when the connection is not established at once.
    pub fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        each_addr(addr, |a| connect_one(a, None))
    }

    /// [`connect`](Self::connect), giving up on each address after
    /// `timeout` (`TimedOut`).
    pub fn connect_timeout(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
        connect_one(addr, Some(timeout))
    }

    /// Bound each read's wait (`None`: wait as long as it takes).
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.read_timeout = timeout;
    }

    /// Bound each write's wait (`None`: wait as long as it takes).
    pub fn set_write_timeout(&mut self, timeout: Option<Duration>) {
        self.write_timeout = timeout;
    }

    /// Shut down the read half, the write half, or both.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.shutdown(how)
    }

    /// The remote address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.peer_addr()
    }

    /// The local address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// Disable (or re-enable) Nagle's algorithm.
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.inner.set_nodelay(nodelay)
    }

    /// A second handle on the same connection with its own fd (`dup`), so
    /// one actor can read while another writes.
    pub fn try_clone(&self) -> io::Result<TcpStream> {
        let mut clone = TcpStream::from_std(self.inner.try_clone()?)?;
        clone.read_timeout = self.read_timeout;
        clone.write_timeout = self.write_timeout;
        Ok(clone)
    }
}

impl Read for TcpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = self.inner.as_raw_fd();
        let inner = &mut self.inner;
        retry(fd, true, self.read_timeout, || inner.read(buf))
    }
}

impl Write for TcpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let fd = self.inner.as_raw_fd();
        let inner = &mut self.inner;
        retry(fd, false, self.write_timeout, || inner.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(()) // no user-space buffer
    }
}

impl AsRawFd for TcpStream {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.as_raw_fd()
    }
}

fn each_addr<T>(
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
    Err(last
        .unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to connect to")))
}

/// A non-blocking connect: start it, wait for writability, read the
/// outcome from `SO_ERROR`.
fn connect_one(addr: &SocketAddr, timeout: Option<Duration>) -> io::Result<TcpStream> {
    let family = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain syscall; a negative return is an error.
    let fd = unsafe {
        libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh socket we own; the std stream closes it on
    // every path from here on.
    let stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
    let (raw, len) = addr::to_raw(addr);
    // SAFETY: `raw` is a valid sockaddr of `len` bytes for the call.
    let rc = unsafe { libc::connect(fd, (&raw const raw).cast(), len) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
        let ready = match timeout {
            None => super::super::wait_writable(fd).map(|()| true),
            Some(t) => super::super::wait_writable_timeout(fd, t),
        }?;
        if !ready {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "smarm: connect timed out",
            ));
        }
        if let Some(e) = stream.take_error()? {
            return Err(e);
        }
    }
    TcpStream::from_std(stream)
}
