//! HTTPS mode: the generated CA is trusted explicitly; without it the handshake fails; the
//! explicit skip-verification switch works.

use provkit_testing::fake_aap::FakeAap;

use crate::common::{Auth, client_with, send};

#[tokio::test]
async fn https_with_custom_ca_and_skip_verify() {
    let server = FakeAap::builder().https(true).start().await.unwrap();
    assert!(server.base_url().starts_with("https://127.0.0.1:"));
    let pem = server.ca_pem().unwrap().to_owned();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"));
    let url = format!("{}/api/v2/ping/", server.base_url());
    let trusted = client_with(Some(&pem), false);
    let r = send(&trusted, "GET", &url, Auth::None, None).await;
    assert_eq!(r.status, 200);
    let r = send(
        &trusted,
        "GET",
        &format!("{}/api/v2/me/", server.base_url()),
        Auth::Bearer(&server.token()),
        None,
    )
    .await;
    assert_eq!(r.json["count"], 1);
    // localhost is in the certificate too.
    let port = server.addr().port();
    let r = trusted
        .get(format!("https://localhost:{port}/api/v2/ping/"))
        .send()
        .await;
    assert!(
        r.is_ok() || r.as_ref().err().is_some_and(reqwest::Error::is_connect),
        "{r:?}"
    );
    let untrusted = client_with(None, false);
    let err = untrusted.get(&url).send().await.unwrap_err();
    assert!(err.is_connect() || err.is_request(), "{err}");
    let insecure = client_with(None, true);
    assert_eq!(insecure.get(&url).send().await.unwrap().status(), 200);
    server.shutdown().await;
}
