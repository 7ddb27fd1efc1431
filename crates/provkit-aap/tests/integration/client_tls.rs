//! HTTPS with a custom CA and with skip-verify.

use provkit_aap::{AapClient, Error};
use provkit_testing::fake_aap::{FakeAap, Mode};

#[tokio::test]
async fn https_with_custom_ca_and_with_skip_verify() {
    let server = FakeAap::builder()
        .mode(Mode::Gateway)
        .https(true)
        .start()
        .await
        .unwrap();
    let ca = server.ca_pem().expect("https mode has a CA").to_owned();
    assert!(server.base_url().starts_with("https://"));

    let trusted = AapClient::builder(server.base_url())
        .token(server.token())
        .ca_certificate_pem(ca)
        .system_roots(false)
        .build()
        .unwrap();
    assert_eq!(trusted.api_base().await.unwrap(), "/api/controller/v2/");
    trusted.me().await.unwrap();

    let untrusted = AapClient::builder(server.base_url())
        .token(server.token())
        .build()
        .unwrap();
    let err = untrusted.api_base().await.unwrap_err();
    assert!(matches!(err, Error::Discovery { .. }), "{err:?}");

    let insecure = AapClient::builder(server.base_url())
        .token(server.token())
        .danger_accept_invalid_certs(true)
        .build()
        .unwrap();
    insecure.me().await.unwrap();
}

#[test]
fn building_clients_never_installs_a_process_crypto_provider() {
    let before = rustls::crypto::CryptoProvider::get_default().is_some();
    AapClient::builder("https://aap.example.com")
        .build()
        .unwrap();
    AapClient::builder("https://aap.example.com")
        .danger_accept_invalid_certs(true)
        .build()
        .unwrap();
    assert_eq!(
        rustls::crypto::CryptoProvider::get_default().is_some(),
        before
    );
}
