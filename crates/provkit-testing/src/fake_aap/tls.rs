//! Self-signed TLS for HTTPS mode: a throw-away CA and a leaf certificate for
//! `127.0.0.1`/`localhost`, served with rustls' ring provider (no process-default provider).

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::FakeAapError;

/// Generated TLS material.
#[derive(Debug)]
pub(crate) struct TlsMaterial {
    pub ca_pem: String,
    pub server_config: Arc<rustls::ServerConfig>,
}

fn cert_err(source: rcgen::Error) -> FakeAapError {
    FakeAapError::Certificate { source }
}

/// Generates a CA and a server certificate for `127.0.0.1`, `::1` and `localhost`.
pub(crate) fn generate() -> Result<TlsMaterial, FakeAapError> {
    let ca_key = KeyPair::generate().map_err(cert_err)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(cert_err)?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "fake-aap test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(cert_err)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let leaf_key = KeyPair::generate().map_err(cert_err)?;
    let mut leaf_params = CertificateParams::new(vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ])
    .map_err(cert_err)?;
    leaf_params
        .distinguished_name
        .push(DnType::CommonName, "fake-aap");
    let leaf_cert = leaf_params
        .signed_by(&leaf_key, &issuer)
        .map_err(cert_err)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let chain: Vec<CertificateDer<'static>> = vec![leaf_cert.der().clone(), ca_cert.der().clone()];
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|source| FakeAapError::Tls { source })?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|source| FakeAapError::Tls { source })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsMaterial {
        ca_pem: ca_cert.pem(),
        server_config: Arc::new(config),
    })
}
