//! Distribution over TLS, as OTP's `inet_tls_dist` runs it: TLS directly
//! on the distribution port (EPMD stays plain), the distribution handshake
//! inside it with 4-byte lengths (`{packet, 4}` from the first message on),
//! then frames as over TCP.
//!
//! [`TlsConfig`] holds a node's certificate chain and key, the CA its
//! peers' certificates must chain to, and what is asked of a peer:
//!
//! - a node that connects checks the peer's certificate against the CA
//!   and against the host part of the peer's node name (sent as SNI), as
//!   `inet_tls_dist` does with `verify_peer`;
//! - a node that accepts asks for a client certificate and, unless
//!   [`TlsConfig::allow_clients_without_certificates`], refuses a client
//!   without one (OTP's `fail_if_no_peer_cert`);
//! - once the peer has named itself in the distribution handshake, its
//!   certificate must be valid for the host part of that name
//!   ([`TlsConfig::check_node_names`], on by default), as OTP checks a
//!   client's certificate against its allowed nodes' hosts.
//!
//! A refused certificate ends the connection before any distribution
//! message is read, with the reason on both sides (the TLS alert carries
//! it to the peer).
//!
//! # Invariants
//!
//! - (T1) Records leave in the order the session made them: a
//!   [`TlsStream`] encrypts and takes the session's output in one step
//!   under the session lock, and writes it to the socket under the
//!   connection's write lock, which every writer of a connection holds
//!   (`node::wire`), so no two writes interleave.
//! - (T2) No socket operation happens under the session lock: the reader
//!   reads ciphertext into a buffer of its own, then hands it to the
//!   session, so a writer parked on a full socket never stops the reader
//!   (which would deadlock two nodes writing to each other).

use crate::handshake::{HandshakeError, Transport};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection};
use smarm_core::Mutex;
use smarm_core::io::net::TcpStream;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Why a [`TlsConfig`] could not be made.
#[derive(Debug, Error)]
pub enum TlsConfigError {
    /// A PEM file could not be read.
    #[error("cannot read {path}: {error}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        error: io::Error,
    },
    /// The PEM holds no certificate (or a malformed one).
    #[error("no certificate in {what}: {why} (expected PEM `BEGIN CERTIFICATE` blocks)")]
    Certificate {
        /// The file, or "the certificate PEM".
        what: String,
        /// Why.
        why: String,
    },
    /// The PEM holds no private key (or a malformed one).
    #[error("no private key in {what}: {why} (expected a PEM `BEGIN PRIVATE KEY` block)")]
    Key {
        /// The file, or "the key PEM".
        what: String,
        /// Why.
        why: String,
    },
    /// rustls refused the configuration (say, a key that does not match
    /// the certificate, or a CA certificate it cannot parse).
    #[error("the TLS configuration was refused: {0}")]
    Refused(String),
}

/// The pieces a configuration is made from, kept to remake it when an
/// option changes.
#[derive(Clone)]
struct Parts {
    chain: Vec<CertificateDer<'static>>,
    key: Arc<PrivateKeyDer<'static>>,
    roots: Arc<RootCertStore>,
}

/// A node's TLS identity and what it asks of its peers (module docs).
/// Given to [`Builder::tls`](crate::Builder::tls).
///
/// ```no_run
/// use smarm::dist::{Node, TlsConfig};
///
/// smarm::run(|| {
///     // The node's certificate chain, its key, and the CA that signed
///     // every node's certificate (see the guide for making them).
///     let tls = TlsConfig::from_pem_files("node.pem", "node.key", "ca.pem").unwrap();
///     let node = Node::builder("shop@localhost")
///         .cookie("secret")
///         .tls(tls)
///         .start()
///         .unwrap();
///     // Erlang: erl -sname erl -proto_dist inet_tls -ssl_dist_optfile ssl.conf
///     node.stop();
/// });
/// ```
#[derive(Clone)]
pub struct TlsConfig {
    parts: Parts,
    require_client_certificates: bool,
    check_node_names: bool,
    pub(crate) client: Arc<ClientConfig>,
    pub(crate) server: Arc<ServerConfig>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("certificates", &self.parts.chain.len())
            .field(
                "require_client_certificates",
                &self.require_client_certificates,
            )
            .field("check_node_names", &self.check_node_names)
            .finish()
    }
}

fn read(path: &Path) -> Result<Vec<u8>, TlsConfigError> {
    std::fs::read(path).map_err(|error| TlsConfigError::Read {
        path: path.display().to_string(),
        error,
    })
}

/// ring's provider: it builds with the C compiler alone (aws-lc-rs needs
/// more). rustls marks it deprecated for lacking post-quantum key
/// exchange, which no OTP release's TLS distribution offers either.
#[allow(deprecated)]
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl TlsConfig {
    /// A configuration from PEM files: `certificate` (this node's
    /// certificate, then any intermediates), `key` (its private key) and
    /// `ca` (the certificates peers' chains must end in).
    pub fn from_pem_files(
        certificate: impl AsRef<Path>,
        key: impl AsRef<Path>,
        ca: impl AsRef<Path>,
    ) -> Result<TlsConfig, TlsConfigError> {
        let name = |p: &Path| p.display().to_string();
        let (certificate, key, ca) = (certificate.as_ref(), key.as_ref(), ca.as_ref());
        TlsConfig::parse(
            (&read(certificate)?, &name(certificate)),
            (&read(key)?, &name(key)),
            (&read(ca)?, &name(ca)),
        )
    }

    /// [`from_pem_files`](Self::from_pem_files) from PEM text in memory.
    pub fn from_pem(
        certificate: &[u8],
        key: &[u8],
        ca: &[u8],
    ) -> Result<TlsConfig, TlsConfigError> {
        TlsConfig::parse(
            (certificate, "the certificate PEM"),
            (key, "the key PEM"),
            (ca, "the CA PEM"),
        )
    }

    fn parse(
        (certificate, cert_what): (&[u8], &str),
        (key, key_what): (&[u8], &str),
        (ca, ca_what): (&[u8], &str),
    ) -> Result<TlsConfig, TlsConfigError> {
        let certificates = |pem: &[u8], what: &str| {
            let all = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| TlsConfigError::Certificate {
                    what: what.to_string(),
                    why: e.to_string(),
                })?;
            if all.is_empty() {
                return Err(TlsConfigError::Certificate {
                    what: what.to_string(),
                    why: "none found".into(),
                });
            }
            Ok(all)
        };
        let chain = certificates(certificate, cert_what)?;
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| TlsConfigError::Key {
            what: key_what.to_string(),
            why: e.to_string(),
        })?;
        let mut roots = RootCertStore::empty();
        for c in certificates(ca, ca_what)? {
            roots
                .add(c)
                .map_err(|e| TlsConfigError::Refused(format!("{ca_what}: {e}")))?;
        }
        let parts = Parts {
            chain,
            key: Arc::new(key),
            roots: Arc::new(roots),
        };
        TlsConfig::build(parts, true, true)
    }

    fn build(
        parts: Parts,
        require_client_certificates: bool,
        check_node_names: bool,
    ) -> Result<TlsConfig, TlsConfigError> {
        let refused = |e: rustls::Error| TlsConfigError::Refused(e.to_string());
        let versions = rustls::ALL_VERSIONS;
        let client = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(versions)
            .map_err(refused)?
            .with_root_certificates(parts.roots.clone())
            .with_client_auth_cert(parts.chain.clone(), parts.key.clone_key())
            .map_err(refused)?;
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            parts.roots.clone(),
            provider(),
        );
        let verifier = if require_client_certificates {
            verifier
        } else {
            verifier.allow_unauthenticated()
        }
        .build()
        .map_err(|e| TlsConfigError::Refused(e.to_string()))?;
        let mut server = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(versions)
            .map_err(refused)?
            .with_client_cert_verifier(verifier)
            .with_single_cert(parts.chain.clone(), parts.key.clone_key())
            .map_err(refused)?;
        // Distribution connections are long-lived and not resumed: no
        // tickets to write after the handshake.
        server.send_tls13_tickets = 0;
        Ok(TlsConfig {
            parts,
            require_client_certificates,
            check_node_names,
            client: Arc::new(client),
            server: Arc::new(server),
        })
    }

    /// Accept peers that present no certificate when they connect (their
    /// certificates are still checked when they do present one). By
    /// default one is required, as OTP's `fail_if_no_peer_cert`.
    pub fn allow_clients_without_certificates(self) -> TlsConfig {
        let check = self.check_node_names;
        self.rebuild(false, check)
    }

    /// Whether a peer's certificate must be valid for the host part of
    /// the node name it gives in the handshake (default on). Off, any
    /// certificate the CA signed serves any name.
    pub fn check_node_names(self, check: bool) -> TlsConfig {
        let require = self.require_client_certificates;
        self.rebuild(require, check)
    }

    fn rebuild(self, require: bool, check: bool) -> TlsConfig {
        match TlsConfig::build(self.parts.clone(), require, check) {
            Ok(c) => c,
            // The same parts built once already.
            Err(_) => self,
        }
    }
}

/// A distribution connection's TLS session over its socket (module docs).
/// Clones share the session; each keeps its own read buffer, and only one
/// of them (the connection's reader) reads.
pub(crate) struct TlsStream {
    sock: TcpStream,
    session: Mutex<rustls::Connection>,
    /// Ciphertext read from the socket and not yet handed to the session.
    inbox: Vec<u8>,
    taken: usize,
}

/// A TLS failure carried in an `io::Error`, so the handshake can report it
/// as [`HandshakeError::Tls`].
#[derive(Debug, Error)]
#[error("{0}")]
pub(crate) struct TlsFailure(String);

/// The TLS failure inside `e`, if it carries one.
pub(crate) fn failure(e: &io::Error) -> Option<String> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<TlsFailure>())
        .map(|f| f.0.clone())
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, TlsFailure(e.to_string()))
}

const INBOX: usize = 64 << 10;

impl TlsStream {
    /// Open TLS to the node `peer` (`name@host`) over `sock`, checking its
    /// certificate against the CA and `host`, before `deadline`.
    pub(crate) fn connect(
        mut sock: TcpStream,
        config: &TlsConfig,
        peer: &str,
        timeout: Duration,
        deadline: Instant,
    ) -> Result<TlsStream, HandshakeError> {
        let host = peer.split_once('@').map_or(peer, |(_, h)| h);
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| HandshakeError::Tls(format!("{host} is not a host name: {e}")))?;
        let session = ClientConnection::new(config.client.clone(), name)
            .map_err(|e| HandshakeError::Tls(e.to_string()))?;
        let mut session = rustls::Connection::from(session);
        drive(&mut session, &mut sock, timeout, deadline)?;
        Ok(TlsStream::new(sock, session))
    }

    /// Accept TLS from a peer over `sock` before `deadline`.
    pub(crate) fn accept(
        mut sock: TcpStream,
        config: &TlsConfig,
        timeout: Duration,
        deadline: Instant,
    ) -> Result<TlsStream, HandshakeError> {
        let session = ServerConnection::new(config.server.clone())
            .map_err(|e| HandshakeError::Tls(e.to_string()))?;
        let mut session = rustls::Connection::from(session);
        drive(&mut session, &mut sock, timeout, deadline)?;
        Ok(TlsStream::new(sock, session))
    }

    fn new(sock: TcpStream, session: rustls::Connection) -> TlsStream {
        TlsStream {
            sock,
            session: Mutex::new(session),
            inbox: Vec::new(),
            taken: 0,
        }
    }

    /// Another handle on the same socket and session.
    pub(crate) fn try_clone(&self) -> io::Result<TlsStream> {
        Ok(TlsStream {
            sock: self.sock.try_clone()?,
            session: self.session.clone(),
            inbox: Vec::new(),
            taken: 0,
        })
    }

    pub(crate) fn socket(&self) -> &TcpStream {
        &self.sock
    }

    fn session(&self) -> smarm_core::MutexGuard<'_, rustls::Connection> {
        lock(&self.session)
    }

    /// The peer's certificate (DER), if it gave one.
    pub(crate) fn peer_certificate(&self) -> Option<Vec<u8>> {
        let session = self.session();
        Some(session.peer_certificates()?.first()?.as_ref().to_vec())
    }
}

impl TlsConfig {
    /// Whether `certificate` (the peer's, DER; `None` if it gave none) is
    /// valid for the host part of `node`, the name it gave in the
    /// distribution handshake.
    pub(crate) fn check_name(
        &self,
        certificate: Option<&[u8]>,
        node: &str,
    ) -> Result<(), HandshakeError> {
        let Some(certificate) = certificate.filter(|_| self.check_node_names) else {
            return Ok(()); // unchecked, or none asked of it
        };
        let host = node.split_once('@').map_or(node, |(_, h)| h);
        let wrong = |why: String| HandshakeError::CertificateName {
            peer: node.to_string(),
            why,
        };
        let name = ServerName::try_from(host.to_string()).map_err(|e| wrong(e.to_string()))?;
        let der = CertificateDer::from(certificate);
        let cert = webpki::EndEntityCert::try_from(&der).map_err(|e| wrong(e.to_string()))?;
        cert.verify_is_valid_for_subject_name(&name)
            .map_err(|e| wrong(format!("it is not valid for {host}: {e}")))
    }
}

/// The session, waiting as long as another handle holds it (never across
/// a socket operation, T2).
fn lock(session: &Mutex<rustls::Connection>) -> smarm_core::MutexGuard<'_, rustls::Connection> {
    loop {
        if let Ok(guard) = session.lock() {
            return guard;
        }
    }
}

/// Run the TLS handshake on `sock` to its end or the deadline; a refusal
/// sends its alert to the peer first.
fn drive(
    session: &mut rustls::Connection,
    sock: &mut TcpStream,
    timeout: Duration,
    deadline: Instant,
) -> Result<(), HandshakeError> {
    let flush = |session: &mut rustls::Connection, sock: &mut TcpStream| -> io::Result<()> {
        while session.wants_write() {
            session.write_tls(sock)?;
        }
        Ok(())
    };
    while session.is_handshaking() {
        flush(session, sock)?;
        if !session.is_handshaking() {
            break;
        }
        let left = deadline.saturating_duration_since(smarm_core::time::now());
        if left.is_zero() {
            return Err(HandshakeError::TimedOut(timeout));
        }
        sock.set_read_timeout(Some(left))?;
        match session.read_tls(sock) {
            Ok(0) => {
                return Err(HandshakeError::Tls(
                    "the peer closed the connection during the TLS handshake".into(),
                ));
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(HandshakeError::TimedOut(timeout));
            }
            Err(e) => return Err(e.into()),
        }
        if let Err(e) = session.process_new_packets() {
            let _ = flush(session, sock);
            return Err(HandshakeError::Tls(e.to_string()));
        }
    }
    flush(session, sock)?;
    sock.set_read_timeout(None)?;
    Ok(())
}

impl Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            {
                let mut session = lock(&self.session);
                match session.reader().read(buf) {
                    Ok(n) => return Ok(n), // 0: the peer's close_notify
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                if self.taken < self.inbox.len() {
                    let n = session.read_tls(&mut &self.inbox[self.taken..])?;
                    self.taken += n;
                    session.process_new_packets().map_err(tls_error)?;
                    continue;
                }
            }
            // (T2) Outside the session lock. Everything before was taken:
            // the buffer starts again, empty whatever the read gives (a
            // read timeout, the reader's idle tick, must leave no stale
            // bytes to feed the session).
            self.inbox.resize(INBOX, 0);
            let got = self.sock.read(&mut self.inbox);
            let n = *got.as_ref().unwrap_or(&0);
            self.inbox.truncate(n);
            self.taken = 0;
            if got? == 0 {
                return Ok(0);
            }
        }
    }
}

/// Plaintext is handed to the session in pieces no larger than a record,
/// its output taken after each, so its buffers stay small.
const CHUNK: usize = 16 << 10;

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let mut out = Vec::with_capacity(buf.len() + 64);
        {
            let mut session = lock(&self.session);
            for chunk in buf.chunks(CHUNK) {
                session.writer().write_all(chunk)?;
                while session.wants_write() {
                    session.write_tls(&mut out)?;
                }
            }
        }
        // (T1) The caller holds the connection's write lock.
        self.sock.write_all(&out)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Transport for TlsStream {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.sock.set_read_timeout(timeout)
    }

    fn length_prefix(&self) -> usize {
        4
    }
}
