//! `SocketAddr` to and from `libc::sockaddr_storage`, for the syscalls
//! smarm makes itself (bind, connect, accept4).

use std::net::SocketAddr;

/// The C form of `addr` and its length.
pub(super) fn to_raw(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero bytes are a valid sockaddr_storage.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for
            // sockaddr_in.
            unsafe { std::ptr::write((&raw mut storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for
            // sockaddr_in6.
            unsafe { std::ptr::write((&raw mut storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// The inverse of `to_raw`; `None` for a family other than IPv4/IPv6.
pub(super) fn from_raw(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
    match i32::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says it holds a sockaddr_in.
            let sin: &libc::sockaddr_in =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast() };
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says it holds a sockaddr_in6.
            let sin6: &libc::sockaddr_in6 =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast() };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn round_trips_v4_and_v6() {
        for addr in ["127.0.0.1:8080", "[::1]:443", "10.1.2.3:1"] {
            let addr: SocketAddr = addr.parse().unwrap();
            let (raw, _) = to_raw(&addr);
            assert_eq!(from_raw(&raw), Some(addr));
        }
    }
}
