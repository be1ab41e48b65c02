//! Unix domain sockets: a listener, a stream and a datagram socket whose
//! blocking calls park the actor, mirroring `std::os::unix::net`.

use super::{
    SocketIo, delegate_methods, fd_conversions, retry, socket, stream_io, timeout_methods,
};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// The C address of a filesystem socket path.
fn sockaddr_un(path: &Path) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: all-zero bytes are a valid sockaddr_un.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    if bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "smarm: a Unix socket path must not contain a NUL byte",
        ));
    }
    // Room for the terminating NUL.
    if bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "smarm: Unix socket path is {} bytes; the limit is {}",
                bytes.len(),
                addr.sun_path.len() - 1
            ),
        ));
    }
    for (dst, src) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    Ok((addr, len as libc::socklen_t))
}

/// A Unix socket of type `ty` bound to `path`.
fn bound(path: &Path, ty: libc::c_int) -> io::Result<OwnedFd> {
    let fd = socket::new(libc::AF_UNIX, ty)?;
    let (addr, len) = sockaddr_un(path)?;
    // SAFETY: `addr` is a valid sockaddr_un of `len` bytes.
    if unsafe { libc::bind(fd.as_raw_fd(), (&raw const addr).cast(), len) } < 0 {
        return Err(crate::errno::last_os_error());
    }
    Ok(fd)
}

/// A Unix stream listener; [`accept`](Self::accept) parks the actor.
///
/// ```
/// use smarm::net::{UnixListener, UnixStream};
/// use std::io::{Read, Write};
///
/// let dir = std::env::temp_dir().join(format!("smarm-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("sock");
/// let p = path.clone();
/// smarm::run(move || {
///     let path = p;
///     let listener = UnixListener::bind(&path).unwrap();
///     let server = smarm::spawn(move || {
///         let (mut conn, _) = listener.accept().unwrap();
///         conn.write_all(b"hi").unwrap();
///     });
///     let mut client = UnixStream::connect(&path).unwrap();
///     let mut buf = [0u8; 2];
///     client.read_exact(&mut buf).unwrap();
///     assert_eq!(&buf, b"hi");
///     server.join().unwrap();
/// });
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug)]
pub struct UnixListener {
    inner: std::os::unix::net::UnixListener,
}

impl UnixListener {
    /// Bind to `path` (which must not exist) and listen with a backlog of
    /// [`DEFAULT_BACKLOG`](super::DEFAULT_BACKLOG).
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixListener> {
        let fd = bound(path.as_ref(), libc::SOCK_STREAM)?;
        socket::listen(&fd, super::DEFAULT_BACKLOG)?;
        Ok(UnixListener::wrap(fd.into()))
    }

    fn wrap(inner: std::os::unix::net::UnixListener) -> UnixListener {
        UnixListener { inner }
    }

    /// Wait for the next connection, parking only the calling actor.
    pub fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        let fd = self.inner.as_raw_fd();
        let (conn, _, _) = retry(fd, true, None, None, "UnixListener::accept", || {
            socket::accept(fd)
        })?;
        let stream = UnixStream::wrap(conn.into());
        let peer = stream.inner.peer_addr()?;
        Ok((stream, peer))
    }

    /// An endless iterator of accepted connections.
    pub fn incoming(&self) -> UnixIncoming<'_> {
        UnixIncoming { listener: self }
    }

    /// A second handle on the same listener (`dup`).
    pub fn try_clone(&self) -> io::Result<UnixListener> {
        Ok(UnixListener::wrap(self.inner.try_clone()?))
    }
}

fd_conversions!(UnixListener, std::os::unix::net::UnixListener);
delegate_methods!(UnixListener: local_addr, take_error);

/// The iterator of [`UnixListener::incoming`].
#[derive(Debug)]
pub struct UnixIncoming<'a> {
    listener: &'a UnixListener,
}

impl Iterator for UnixIncoming<'_> {
    type Item = io::Result<UnixStream>;

    fn next(&mut self) -> Option<io::Result<UnixStream>> {
        Some(self.listener.accept().map(|(stream, _)| stream))
    }
}

/// A Unix stream connection; `Read` and `Write` (on it and on `&` it) park
/// only the calling actor.
#[derive(Debug)]
pub struct UnixStream {
    inner: std::os::unix::net::UnixStream,
    io: SocketIo,
}

impl UnixStream {
    fn wrap(inner: std::os::unix::net::UnixStream) -> UnixStream {
        UnixStream {
            inner,
            io: SocketIo::new(),
        }
    }

    /// Connect to the socket at `path`. A listener whose backlog is full
    /// refuses at once on Linux (`EAGAIN`); the connect then retries,
    /// parking the actor a millisecond at a time.
    pub fn connect(path: impl AsRef<Path>) -> io::Result<UnixStream> {
        let fd = socket::new(libc::AF_UNIX, libc::SOCK_STREAM)?;
        let (addr, len) = sockaddr_un(path.as_ref())?;
        loop {
            match socket::start_connect(&fd, (&raw const addr).cast(), len) {
                Ok(true) => break,
                Ok(false) => {
                    super::wait(fd.as_raw_fd(), false, None, None)?;
                    if let Some(e) = socket::take_error(&fd)? {
                        return Err(e);
                    }
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if crate::scheduler::in_actor() {
                        crate::time::sleep(Duration::from_millis(1));
                    } else {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(UnixStream::wrap(fd.into()))
    }

    /// A connected pair of streams.
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = std::os::unix::net::UnixStream::pair()?;
        Ok((UnixStream::from(a), UnixStream::from(b)))
    }
}

fd_conversions!(UnixStream, std::os::unix::net::UnixStream);
delegate_methods!(UnixStream: local_addr, peer_addr, shutdown, take_error, try_clone);
timeout_methods!(UnixStream);
stream_io!(UnixStream, "UnixStream");

/// A Unix datagram socket; receiving parks only the calling actor.
///
/// ```
/// use smarm::net::UnixDatagram;
///
/// smarm::run(|| {
///     let (a, b) = UnixDatagram::pair().unwrap();
///     let receiver = smarm::spawn(move || {
///         let mut buf = [0u8; 8];
///         let n = b.recv(&mut buf).unwrap();
///         assert_eq!(&buf[..n], b"ping");
///     });
///     a.send(b"ping").unwrap();
///     receiver.join().unwrap();
/// });
/// ```
#[derive(Debug)]
pub struct UnixDatagram {
    inner: std::os::unix::net::UnixDatagram,
    io: SocketIo,
}

impl UnixDatagram {
    fn wrap(inner: std::os::unix::net::UnixDatagram) -> UnixDatagram {
        UnixDatagram {
            inner,
            io: SocketIo::new(),
        }
    }

    /// A socket bound to `path` (which must not exist).
    pub fn bind(path: impl AsRef<Path>) -> io::Result<UnixDatagram> {
        let fd = bound(path.as_ref(), libc::SOCK_DGRAM)?;
        Ok(UnixDatagram::wrap(fd.into()))
    }

    /// A socket bound to no address (it can send, and receive replies to
    /// an unnamed peer only through [`pair`](Self::pair)).
    pub fn unbound() -> io::Result<UnixDatagram> {
        let fd = socket::new(libc::AF_UNIX, libc::SOCK_DGRAM)?;
        Ok(UnixDatagram::wrap(fd.into()))
    }

    /// A connected pair of sockets.
    pub fn pair() -> io::Result<(UnixDatagram, UnixDatagram)> {
        let (a, b) = std::os::unix::net::UnixDatagram::pair()?;
        Ok((UnixDatagram::from(a), UnixDatagram::from(b)))
    }

    /// Set the default peer for [`send`](Self::send) and [`recv`](Self::recv).
    pub fn connect(&self, path: impl AsRef<Path>) -> io::Result<()> {
        self.inner.connect(path)
    }

    /// Send a datagram to the socket at `path`.
    pub fn send_to(&self, buf: &[u8], path: impl AsRef<Path>) -> io::Result<usize> {
        let path = path.as_ref();
        self.sending("UnixDatagram::send_to", || self.inner.send_to(buf, path))
    }

    /// Send to the connected peer.
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.sending("UnixDatagram::send", || self.inner.send(buf))
    }

    /// Wait for a datagram; its length and sender.
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.receiving("UnixDatagram::recv_from", || self.inner.recv_from(buf))
    }

    /// Wait for a datagram from the connected peer.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.receiving("UnixDatagram::recv", || self.inner.recv(buf))
    }
}

fd_conversions!(UnixDatagram, std::os::unix::net::UnixDatagram);
delegate_methods!(UnixDatagram: local_addr, peer_addr, shutdown, take_error, try_clone);
timeout_methods!(UnixDatagram);
