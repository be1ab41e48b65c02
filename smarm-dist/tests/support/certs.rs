//! Certificates for the TLS tests, made with rcgen and written as PEM
//! files: a CA, node certificates it signs (for a host name), and a
//! second CA that nobody trusts, for the certificates that must be
//! refused.

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use std::path::{Path, PathBuf};

/// A certificate authority that signs node certificates.
pub struct Ca {
    cert: Certificate,
    key: KeyPair,
}

/// A node's certificate and key, and the CA file it trusts, on disk.
pub struct Identity {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).unwrap();
        Ca { cert, key }
    }

    /// A certificate for `host` (both server and client use), signed by
    /// this CA, written under `dir` as `<file>.pem` and `<file>.key`,
    /// trusting `trusts` (written as `<file>-ca.pem`).
    pub fn identity(&self, dir: &Path, file: &str, host: &str, trusts: &Ca) -> Identity {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec![host.to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, file);
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        let id = Identity {
            cert: dir.join(format!("{file}.pem")),
            key: dir.join(format!("{file}.key")),
            ca: dir.join(format!("{file}-ca.pem")),
        };
        std::fs::write(&id.cert, cert.pem()).unwrap();
        std::fs::write(&id.key, key.serialize_pem()).unwrap();
        std::fs::write(&id.ca, trusts.cert.pem()).unwrap();
        id
    }
}

/// A fresh directory for one test's files.
pub fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("smarm-tls-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

impl Identity {
    pub fn config(&self) -> smarm::dist::TlsConfig {
        smarm::dist::TlsConfig::from_pem_files(&self.cert, &self.key, &self.ca).unwrap()
    }

    /// An `-ssl_dist_optfile` for an Erlang node with this identity,
    /// verifying its peers both ways, as OTP's guide sets it up.
    pub fn erlang_optfile(&self, dir: &Path, file: &str) -> PathBuf {
        let opts = format!(
            "[{{server, [{{certfile, \"{c}\"}}, {{keyfile, \"{k}\"}}, {{cacertfile, \"{a}\"}}, \
             {{verify, verify_peer}}, {{fail_if_no_peer_cert, true}}]}}, \
             {{client, [{{certfile, \"{c}\"}}, {{keyfile, \"{k}\"}}, {{cacertfile, \"{a}\"}}, \
             {{verify, verify_peer}}]}}].\n",
            c = self.cert.display(),
            k = self.key.display(),
            a = self.ca.display(),
        );
        let path = dir.join(file);
        std::fs::write(&path, opts).unwrap();
        path
    }
}
