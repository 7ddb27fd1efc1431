//! rustls configuration with the **ring** provider, passed to this client explicitly.
//!
//! No process-level `CryptoProvider` is ever installed: the provider travels inside the
//! `ClientConfig` handed to reqwest, so building an `AapClient` before or after a
//! `kube::Client` makes no difference, and aws-lc-rs is not in the dependency graph.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::error::{Error, Result};

/// TLS settings collected by the builder.
#[derive(Clone, Debug, Default)]
pub(crate) struct TlsSettings {
    pub(crate) extra_ca_pem: Vec<Vec<u8>>,
    pub(crate) system_roots: bool,
    pub(crate) insecure_skip_verify: bool,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn config_error(
    message: impl Into<String>,
    source: impl std::error::Error + Send + Sync + 'static,
) -> Error {
    Error::Config {
        message: message.into(),
        source: Some(Box::new(source)),
    }
}

/// Parses every certificate of a PEM bundle.
pub(crate) fn parse_pem_certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| config_error("invalid CA certificate PEM", e))?;
    if certs.is_empty() {
        return Err(Error::Config {
            message: "the CA PEM contains no certificate".into(),
            source: None,
        });
    }
    Ok(certs)
}

/// Builds the rustls client configuration.
pub(crate) fn client_config(settings: &TlsSettings) -> Result<rustls::ClientConfig> {
    let provider = provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| config_error("TLS protocol versions", e))?;
    if settings.insecure_skip_verify {
        tracing::warn!(
            "TLS certificate verification is disabled for the AAP client (insecure_skip_verify)"
        );
        let verifier = NoVerification {
            algorithms: provider.signature_verification_algorithms,
        };
        return Ok(builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth());
    }
    let mut roots = RootCertStore::empty();
    for pem in &settings.extra_ca_pem {
        for cert in parse_pem_certificates(pem)? {
            roots
                .add(cert)
                .map_err(|e| config_error("unusable CA certificate", e))?;
        }
    }
    if settings.system_roots {
        let native = rustls_native_certs::load_native_certs();
        let (added, ignored) = roots.add_parsable_certificates(native.certs);
        tracing::debug!(added, ignored, "loaded system CA certificates");
    }
    if roots.is_empty() {
        tracing::warn!(
            "no CA certificates available: HTTPS connections to AAP will fail verification"
        );
    }
    Ok(builder.with_root_certificates(roots).with_no_client_auth())
}

/// Accepts any server certificate (explicit opt-in only), still checking handshake signatures.
#[derive(Debug)]
struct NoVerification {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn building_never_installs_a_process_provider() {
        let before = CryptoProvider::get_default().is_some();
        client_config(&TlsSettings {
            system_roots: true,
            ..TlsSettings::default()
        })
        .unwrap();
        client_config(&TlsSettings {
            insecure_skip_verify: true,
            ..TlsSettings::default()
        })
        .unwrap();
        assert_eq!(CryptoProvider::get_default().is_some(), before);
    }

    #[test]
    fn bad_pem_is_a_config_error() {
        assert!(matches!(
            parse_pem_certificates(b"not a pem"),
            Err(Error::Config { .. })
        ));
        let settings = TlsSettings {
            extra_ca_pem: vec![b"garbage".to_vec()],
            ..TlsSettings::default()
        };
        assert!(client_config(&settings).is_err());
    }
}
