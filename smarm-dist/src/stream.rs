//! A distribution connection's byte stream: a TCP socket, or TLS over one
//! (feature `tls`). The handshake, a connection's reader and its writer
//! use it alike; each holds a handle of its own on the same connection.

use crate::handshake::Transport;
use smarm_core::io::net::TcpStream;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::time::Duration;

/// A connection's stream (module docs).
pub(crate) enum DistStream {
    Tcp(TcpStream),
    #[cfg(feature = "tls")]
    Tls(crate::tls::TlsStream),
}

impl DistStream {
    fn socket(&self) -> &TcpStream {
        match self {
            DistStream::Tcp(s) => s,
            #[cfg(feature = "tls")]
            DistStream::Tls(s) => s.socket(),
        }
    }

    /// Another handle on the same connection.
    pub(crate) fn try_clone(&self) -> io::Result<DistStream> {
        Ok(match self {
            DistStream::Tcp(s) => DistStream::Tcp(s.try_clone()?),
            #[cfg(feature = "tls")]
            DistStream::Tls(s) => DistStream::Tls(s.try_clone()?),
        })
    }

    /// Shut the socket down (every handle sees it).
    pub(crate) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.socket().shutdown(how)
    }

    /// The peer's TLS certificate (DER), if it gave one.
    pub(crate) fn peer_certificate(&self) -> Option<Vec<u8>> {
        match self {
            DistStream::Tcp(_) => None,
            #[cfg(feature = "tls")]
            DistStream::Tls(s) => s.peer_certificate(),
        }
    }
}

impl Read for DistStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            DistStream::Tcp(s) => s.read(buf),
            #[cfg(feature = "tls")]
            DistStream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for DistStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            DistStream::Tcp(s) => s.write(buf),
            #[cfg(feature = "tls")]
            DistStream::Tls(s) => s.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            DistStream::Tcp(s) => s.write_all(buf),
            #[cfg(feature = "tls")]
            DistStream::Tls(s) => s.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Transport for DistStream {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.socket().set_read_timeout(timeout)
    }

    fn length_prefix(&self) -> usize {
        match self {
            DistStream::Tcp(s) => s.length_prefix(),
            #[cfg(feature = "tls")]
            DistStream::Tls(s) => s.length_prefix(),
        }
    }
}
