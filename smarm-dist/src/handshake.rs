//! The distribution handshake, version 6 (OTP 23 and later), in both
//! directions: names and capability flags are exchanged, then each side
//! proves it knows the cookie by answering the other's challenge with
//! `MD5(cookie ++ decimal(challenge))`. The cookie never crosses the wire.
//!
//! Every handshake message is a 2-byte big-endian length and the message
//! (4 bytes over TLS, as `inet_tls_dist` frames it: [`Transport::length_prefix`]).
//! The initiator sends `send_name` (`'N'`, flags, creation, name), the
//! acceptor a status (`'s'` and `ok`, `ok_simultaneous`, `nok`,
//! `not_allowed` or `alive`) then `send_challenge` (`'N'`, flags,
//! challenge, creation, name); the initiator answers `'r'` (its own
//! challenge and the digest of the acceptor's), the acceptor `'a'` (the
//! digest of the initiator's). A wrong digest ends the handshake on both
//! sides with [`HandshakeError::BadCookie`], before any message passes.
//!
//! The handshake as a whole has a deadline (each read waits only for what
//! is left of it), so a peer that dribbles bytes, or stops, is cut off
//! on time. It runs over any [`Transport`]: a socket, or [`Replay`]'s
//! recorded bytes (tests and fuzzing).

use crate::flags::{self, Flags};
use md5::{Digest, Md5};
use smarm_core::io::net::TcpStream;
use std::io::{Read, Write};
use std::time::{Duration, Instant};
use thiserror::Error;

/// How long a whole handshake may take before the connection is dropped,
/// unless the node says otherwise (Erlang's `net_setuptime` is 7 s).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);

/// What a handshake runs over: a byte stream whose reads can be given a
/// timeout.
pub trait Transport: Read + Write {
    /// Make each read give up after `timeout` (`None`: wait for ever).
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> std::io::Result<()>;

    /// The bytes of each handshake message's length: 2 over TCP, 4 over
    /// TLS (OTP's `inet_tls_dist` runs its sockets with `{packet, 4}`
    /// from the handshake on).
    fn length_prefix(&self) -> usize {
        2
    }
}

impl Transport for TcpStream {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> std::io::Result<()> {
        TcpStream::set_read_timeout(self, timeout)
    }
}

/// A transport that replays recorded bytes and keeps what is written:
/// a handshake with a scripted peer, in tests and fuzzing. A read past
/// the end is an unexpected end of the stream.
#[derive(Debug, Clone, Default)]
pub struct Replay<'a> {
    input: &'a [u8],
    /// What the handshake wrote.
    pub written: Vec<u8>,
}

impl<'a> Replay<'a> {
    /// A peer that sends `input`, then closes.
    pub fn new(input: &'a [u8]) -> Replay<'a> {
        Replay {
            input,
            written: Vec::new(),
        }
    }
}

impl Read for Replay<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Replay<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.written.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Transport for Replay<'_> {
    fn set_read_timeout(&mut self, _: Option<Duration>) -> std::io::Result<()> {
        Ok(())
    }
}

/// The longest handshake message read (names are at most 255 bytes).
const MAX_MESSAGE: usize = 2048;

/// Why a handshake failed.
#[derive(Debug, Error)]
pub enum HandshakeError {
    /// The peer's digest did not match: its cookie differs from ours.
    #[error(
        "the node {peer} answered the cookie challenge wrongly: the two nodes' cookies differ (set the same cookie on both)"
    )]
    BadCookie {
        /// The peer's name, as it gave it.
        peer: String,
    },
    /// The peer refused the connection with this status.
    #[error("the node {peer} refused the connection: {status}")]
    Refused {
        /// The peer.
        peer: String,
        /// Its status (`nok`, `not_allowed`, `alive`).
        status: String,
    },
    /// The peer lacks capabilities every supported OTP release has.
    #[error(
        "the node {peer} lacks distribution capabilities smarm needs (flags {missing:#x}): it is older than OTP 23"
    )]
    MissingFlags {
        /// The peer.
        peer: String,
        /// The mandatory flags it did not set.
        missing: u64,
    },
    /// The peer sent something that is not this protocol.
    #[error("malformed handshake message: {0}")]
    Malformed(&'static str),
    /// The handshake did not finish in time.
    #[error("the handshake did not finish within {0:?}")]
    TimedOut(Duration),
    /// The connection failed or timed out.
    #[error("handshake connection failed: {0}")]
    Io(#[from] std::io::Error),
    /// TLS refused the peer, or the peer refused us (its alert says why):
    /// an untrusted or expired certificate, a host name the certificate
    /// does not name, no client certificate where one is required.
    #[error("TLS handshake failed: {0}")]
    Tls(String),
    /// The peer's certificate is not valid for the host in the node name
    /// it gave.
    #[error("the certificate of {peer} does not belong to that node: {why}")]
    CertificateName {
        /// The name the peer gave.
        peer: String,
        /// Why the certificate does not fit it.
        why: String,
    },
}

/// This node, as the handshake presents it.
#[derive(Debug, Clone)]
pub struct Local {
    /// Full name, `name@host`.
    pub name: String,
    /// The cookie.
    pub cookie: String,
    /// The flags offered.
    pub flags: Flags,
    /// This node's creation.
    pub creation: u32,
}

/// What the handshake learned of the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// Its full name.
    pub name: String,
    /// The flags both sides have.
    pub flags: Flags,
    /// Its creation.
    pub creation: u32,
}

/// The acceptor's answer to a `send_name` (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Go on.
    Ok,
    /// Go on; our own attempt to connect to the peer is abandoned.
    OkSimultaneous,
    /// Refused: our own attempt to the peer wins.
    Nok,
    /// Already connected to the peer: the initiator says whether to go on.
    Alive,
    /// Refused: this node does not accept the peer (under TLS, its
    /// certificate does not fit the name it gave).
    NotAllowed,
}

impl Status {
    fn text(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::OkSimultaneous => "ok_simultaneous",
            Status::Nok => "nok",
            Status::Alive => "alive",
            Status::NotAllowed => "not_allowed",
        }
    }
}

/// A handshake's stream and its deadline.
struct Io<'s, S: Transport> {
    stream: &'s mut S,
    deadline: Instant,
    timeout: Duration,
}

impl<'s, S: Transport> Io<'s, S> {
    fn new(stream: &'s mut S, timeout: Duration) -> Io<'s, S> {
        Io {
            stream,
            deadline: smarm_core::time::now() + timeout,
            timeout,
        }
    }

    fn write_message(&mut self, body: &[u8]) -> Result<(), HandshakeError> {
        let mut framed = Vec::with_capacity(body.len() + 4);
        if self.stream.length_prefix() == 4 {
            framed.extend_from_slice(&(body.len() as u32).to_be_bytes());
        } else {
            framed.extend_from_slice(&(body.len() as u16).to_be_bytes());
        }
        framed.extend_from_slice(body);
        Ok(self.stream.write_all(&framed)?)
    }

    /// Read exactly `buf.len()` bytes before the deadline.
    fn read_exact(&mut self, mut buf: &mut [u8]) -> Result<(), HandshakeError> {
        while !buf.is_empty() {
            let left = self
                .deadline
                .saturating_duration_since(smarm_core::time::now());
            if left.is_zero() {
                return Err(HandshakeError::TimedOut(self.timeout));
            }
            self.stream.set_read_timeout(Some(left))?;
            match self.stream.read(buf) {
                Ok(0) => return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into()),
                Ok(n) => buf = &mut buf[n..],
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(HandshakeError::TimedOut(self.timeout));
                }
                Err(e) => return Err(io_error(e)),
            }
        }
        Ok(())
    }

    fn read_message(&mut self) -> Result<Vec<u8>, HandshakeError> {
        let len = if self.stream.length_prefix() == 4 {
            let mut len = [0u8; 4];
            self.read_exact(&mut len)?;
            u32::from_be_bytes(len) as usize
        } else {
            let mut len = [0u8; 2];
            self.read_exact(&mut len)?;
            u16::from_be_bytes(len) as usize
        };
        if len == 0 || len > MAX_MESSAGE {
            return Err(HandshakeError::Malformed(
                "handshake message length out of range",
            ));
        }
        let mut body = vec![0u8; len];
        self.read_exact(&mut body)?;
        Ok(body)
    }

    /// The handshake is over: reads wait for ever again.
    fn finish(self) -> Result<(), HandshakeError> {
        Ok(self.stream.set_read_timeout(None)?)
    }
}

/// An I/O error, or the TLS failure it carries (a peer's alert).
fn io_error(e: std::io::Error) -> HandshakeError {
    #[cfg(feature = "tls")]
    if let Some(why) = crate::tls::failure(&e) {
        return HandshakeError::Tls(why);
    }
    HandshakeError::Io(e)
}

/// `MD5(cookie ++ decimal(challenge))`, as `dist_util:gen_digest/2`.
pub fn digest(challenge: u32, cookie: &str) -> [u8; 16] {
    let mut md5 = Md5::new();
    md5.update(cookie.as_bytes());
    md5.update(challenge.to_string().as_bytes());
    md5.finalize().into()
}

/// A random challenge.
fn challenge() -> u32 {
    (crate::random::random_u64() >> 32) as u32
}

/// A `send_name` / `send_challenge` body: `'N'`, flags, [challenge,]
/// creation, name.
fn name_message(local: &Local, challenge: Option<u32>) -> Vec<u8> {
    let mut body = vec![b'N'];
    body.extend_from_slice(&local.flags.bits().to_be_bytes());
    if let Some(c) = challenge {
        body.extend_from_slice(&c.to_be_bytes());
    }
    body.extend_from_slice(&local.creation.to_be_bytes());
    body.extend_from_slice(&(local.name.len() as u16).to_be_bytes());
    body.extend_from_slice(local.name.as_bytes());
    body
}

/// Parse a `'N'` message; `with_challenge` for `send_challenge`.
fn parse_name(
    body: &[u8],
    with_challenge: bool,
) -> Result<(Flags, Option<u32>, u32, String), HandshakeError> {
    let fixed = if with_challenge { 19 } else { 15 };
    if body.len() < fixed || body[0] != b'N' {
        return Err(HandshakeError::Malformed(
            "expected a version 6 name message ('N')",
        ));
    }
    let u32_at = |i: usize| u32::from_be_bytes([body[i], body[i + 1], body[i + 2], body[i + 3]]);
    let mut flag_bytes = [0u8; 8];
    flag_bytes.copy_from_slice(&body[1..9]);
    let flags = Flags::from_bits(u64::from_be_bytes(flag_bytes));
    let (challenge, at) = if with_challenge {
        (Some(u32_at(9)), 13)
    } else {
        (None, 9)
    };
    let creation = u32_at(at);
    let nlen = u16::from_be_bytes([body[at + 4], body[at + 5]]) as usize;
    let name = body
        .get(at + 6..at + 6 + nlen)
        .ok_or(HandshakeError::Malformed("node name runs past the message"))?;
    let name = String::from_utf8(name.to_vec())
        .map_err(|_| HandshakeError::Malformed("node name is not UTF-8"))?;
    if !name.contains('@') {
        return Err(HandshakeError::Malformed("node name has no '@host'"));
    }
    Ok((flags, challenge, creation, name))
}

fn check_flags(peer: &str, theirs: Flags) -> Result<(), HandshakeError> {
    let missing = flags::MANDATORY & !theirs.bits();
    if missing != 0 {
        return Err(HandshakeError::MissingFlags {
            peer: peer.to_string(),
            missing,
        });
    }
    Ok(())
}

/// Connect as the initiator over `stream` to the node expected to be
/// `peer_name`. If the peer answers that it is connected to us already
/// (`alive`), `still_needed` says whether to go on (our side has no
/// connection to it, so the peer's is stale) or to give up (we have one:
/// [`HandshakeError::Refused`] with status `alive`). The whole handshake
/// must finish within `timeout`.
pub fn initiate<S: Transport>(
    stream: &mut S,
    local: &Local,
    peer_name: &str,
    timeout: Duration,
    still_needed: impl FnOnce() -> bool,
) -> Result<Peer, HandshakeError> {
    let mut io = Io::new(stream, timeout);
    io.write_message(&name_message(local, None))?;
    let status = io.read_message()?;
    let status = status
        .strip_prefix(b"s")
        .ok_or(HandshakeError::Malformed("expected a status message ('s')"))?;
    match status {
        b"ok" | b"ok_simultaneous" => {}
        b"alive" if still_needed() => io.write_message(b"strue")?, // its one is stale
        b"alive" => {
            let _ = io.write_message(b"sfalse");
            return Err(HandshakeError::Refused {
                peer: peer_name.to_string(),
                status: "alive".into(),
            });
        }
        other => {
            return Err(HandshakeError::Refused {
                peer: peer_name.to_string(),
                status: String::from_utf8_lossy(other).into_owned(),
            });
        }
    }
    let (their_flags, their_challenge, creation, name) = parse_name(&io.read_message()?, true)?;
    check_flags(&name, their_flags)?;
    let their_challenge = their_challenge.ok_or(HandshakeError::Malformed("challenge missing"))?;
    let ours = challenge();
    let mut reply = vec![b'r'];
    reply.extend_from_slice(&ours.to_be_bytes());
    reply.extend_from_slice(&digest(their_challenge, &local.cookie));
    io.write_message(&reply)?;
    let ack = match io.read_message() {
        Ok(ack) => ack,
        // The acceptor closes the connection on a wrong digest.
        Err(HandshakeError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            return Err(HandshakeError::BadCookie { peer: name });
        }
        Err(e) => return Err(e),
    };
    if ack.len() != 17 || ack[0] != b'a' {
        return Err(HandshakeError::Malformed("expected a challenge ack ('a')"));
    }
    if ack[1..] != digest(ours, &local.cookie) {
        return Err(HandshakeError::BadCookie { peer: name });
    }
    io.finish()?;
    Ok(Peer {
        name,
        flags: their_flags.common(local.flags),
        creation,
    })
}

/// Accept a handshake over `stream`; `decide` answers the initiator's
/// name with a status (connected already, or connecting to it ourselves).
/// The whole handshake must finish within `timeout`.
pub fn accept<S: Transport>(
    stream: &mut S,
    local: &Local,
    timeout: Duration,
    decide: impl FnOnce(&str) -> Status,
) -> Result<Peer, HandshakeError> {
    let mut io = Io::new(stream, timeout);
    let (their_flags, _, creation, name) = parse_name(&io.read_message()?, false)?;
    if let Err(e) = check_flags(&name, their_flags) {
        let _ = io.write_message(b"snot_allowed");
        return Err(e);
    }
    let status = decide(&name);
    let mut body = vec![b's'];
    body.extend_from_slice(status.text().as_bytes());
    io.write_message(&body)?;
    match status {
        Status::Ok | Status::OkSimultaneous => {}
        Status::Nok | Status::NotAllowed => {
            return Err(HandshakeError::Refused {
                peer: name,
                status: status.text().into(),
            });
        }
        Status::Alive => {
            if io.read_message()?.as_slice() != b"strue" {
                return Err(HandshakeError::Refused {
                    peer: name,
                    status: "alive".into(),
                });
            }
        }
    }
    let ours = challenge();
    io.write_message(&name_message(local, Some(ours)))?;
    let reply = io.read_message()?;
    if reply.len() != 21 || reply[0] != b'r' {
        return Err(HandshakeError::Malformed(
            "expected a challenge reply ('r')",
        ));
    }
    if reply[5..] != digest(ours, &local.cookie) {
        return Err(HandshakeError::BadCookie { peer: name });
    }
    let theirs = u32::from_be_bytes([reply[1], reply[2], reply[3], reply[4]]);
    let mut ack = vec![b'a'];
    ack.extend_from_slice(&digest(theirs, &local.cookie));
    io.write_message(&ack)?;
    io.finish()?;
    Ok(Peer {
        name,
        flags: their_flags.common(local.flags),
        creation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_md5_of_the_cookie_then_the_decimal_challenge() {
        // md5("secret1234") computed independently (coreutils md5sum).
        let expected = [
            0xbd, 0xfc, 0x2d, 0xb0, 0xaa, 0x59, 0x9f, 0x59, 0x19, 0xe5, 0x65, 0xc3, 0x28, 0x21,
            0x6a, 0x51,
        ];
        assert_eq!(digest(1234, "secret"), expected);
    }
}
