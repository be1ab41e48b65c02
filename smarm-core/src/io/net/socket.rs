//! The socket syscalls std does not offer in the form smarm needs:
//! non-blocking creation, options before `bind`, `listen` with a backlog,
//! `accept4` and a non-blocking `connect`. Each returns an `io::Result`;
//! an fd it creates is owned (`OwnedFd`) from the moment it exists.

use super::addr;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A new non-blocking, close-on-exec socket (N1).
pub(super) fn new(family: libc::c_int, ty: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; a negative return is an error.
    let fd = unsafe { libc::socket(family, ty | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(crate::errno::last_os_error());
    }
    // SAFETY: `fd` is a fresh socket nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The address family of `addr`.
pub(super) fn family(addr: &SocketAddr) -> libc::c_int {
    if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    }
}

/// Set `O_NONBLOCK` on an fd the caller owns (N1). `fcntl` fails only on
/// a closed fd (`EBADF`), which an owned socket is not; were it to fail,
/// the socket's next call reports the same error.
pub(super) fn set_nonblocking(fd: RawFd) {
    // SAFETY: F_GETFL/F_SETFL on an fd; an invalid one is an error return.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 && flags & libc::O_NONBLOCK == 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

/// Set an integer (or boolean) socket option.
pub(super) fn set_int(
    fd: &impl AsRawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `value` is a live c_int of the length passed.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&raw const value).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(crate::errno::last_os_error());
    }
    Ok(())
}

/// Read an integer (or boolean) socket option.
pub(super) fn get_int(
    fd: &impl AsRawFd,
    level: libc::c_int,
    name: libc::c_int,
) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` are live and sized for the option.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&raw mut value).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(crate::errno::last_os_error());
    }
    Ok(value)
}

/// `bind(2)` to an IP address.
pub(super) fn bind(fd: &OwnedFd, addr: &SocketAddr) -> io::Result<()> {
    let (raw, len) = addr::to_raw(addr);
    // SAFETY: `raw` is a valid sockaddr of `len` bytes for the call.
    if unsafe { libc::bind(fd.as_raw_fd(), (&raw const raw).cast(), len) } < 0 {
        return Err(crate::errno::last_os_error());
    }
    Ok(())
}

/// `listen(2)` with `backlog` (the kernel caps it at `somaxconn`).
pub(super) fn listen(fd: &OwnedFd, backlog: u32) -> io::Result<()> {
    let backlog = libc::c_int::try_from(backlog).unwrap_or(libc::c_int::MAX);
    // SAFETY: plain syscall on an owned fd.
    if unsafe { libc::listen(fd.as_raw_fd(), backlog) } < 0 {
        return Err(crate::errno::last_os_error());
    }
    Ok(())
}

/// One `accept4(2)`: the connection comes out non-blocking and
/// close-on-exec (N1), with the peer's address in C form.
pub(super) fn accept(
    listener: RawFd,
) -> io::Result<(OwnedFd, libc::sockaddr_storage, libc::socklen_t)> {
    // SAFETY: all-zero bytes are a valid sockaddr_storage.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `storage` and `len` are live and sized for any address.
    let fd = unsafe {
        libc::accept4(
            listener,
            (&raw mut storage).cast(),
            &mut len,
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(crate::errno::last_os_error());
    }
    // SAFETY: `fd` is a fresh connection nobody else owns.
    Ok((unsafe { OwnedFd::from_raw_fd(fd) }, storage, len))
}

/// Start a non-blocking `connect(2)` to the C address `raw`: `Ok(true)` if
/// it completed at once, `Ok(false)` if it is in progress (wait for
/// writability, then read `SO_ERROR`).
pub(super) fn start_connect(
    fd: &OwnedFd,
    raw: *const libc::sockaddr,
    len: libc::socklen_t,
) -> io::Result<bool> {
    // SAFETY: the caller passes a valid sockaddr of `len` bytes.
    if unsafe { libc::connect(fd.as_raw_fd(), raw, len) } == 0 {
        return Ok(true);
    }
    let e = crate::errno::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINPROGRESS) => Ok(false),
        _ => Err(e),
    }
}

/// The pending error of a socket (`SO_ERROR`), cleared by reading it.
pub(super) fn take_error(fd: &impl AsRawFd) -> io::Result<Option<io::Error>> {
    match get_int(fd, libc::SOL_SOCKET, libc::SO_ERROR)? {
        0 => Ok(None),
        e => Ok(Some(io::Error::from_raw_os_error(e))),
    }
}
