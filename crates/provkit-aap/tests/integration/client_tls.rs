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

/// A CONNECT proxy on loopback for the proxy test: answers each `CONNECT host:port` with 200,
/// then copies bytes both ways; records the targets it was asked for. (Test code: a real
/// proxy's one job that matters here is the tunnel, and this is all of it.)
async fn connect_proxy() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let mut words = head.split_whitespace();
                let (Some("CONNECT"), Some(target)) = (words.next(), words.next()) else {
                    let _ = client
                        .write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
                        .await;
                    return;
                };
                log.lock().unwrap().push(target.to_owned());
                let Ok(mut upstream) = tokio::net::TcpStream::connect(target).await else {
                    let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
                    return;
                };
                if client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .is_ok()
                {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                }
            });
        }
    });
    (addr, seen)
}

/// Issue 27 (7): `proxy(url)` sends every request through that proxy; for an HTTPS AAP that is a
/// CONNECT tunnel, with the TLS session (and the custom CA) end to end through it. Without the
/// setting nothing reaches the proxy.
#[tokio::test]
async fn requests_go_through_a_connect_proxy_when_one_is_set() {
    let server = FakeAap::builder().https(true).start().await.unwrap();
    let ca = server.ca_pem().expect("https mode has a CA").to_owned();
    let (proxy, seen) = connect_proxy().await;
    let client = AapClient::builder(server.base_url())
        .token(server.token())
        .ca_certificate_pem(ca.clone())
        .system_roots(false)
        .proxy_from_env(false)
        .proxy(format!("http://{proxy}"))
        .build()
        .unwrap();
    client.me().await.unwrap();
    let target = format!("127.0.0.1:{}", server.addr().port());
    let tunnels = seen.lock().unwrap().clone();
    assert!(!tunnels.is_empty(), "no request went through the proxy");
    assert!(tunnels.iter().all(|t| *t == target), "{tunnels:?}");
    assert!(
        server.requests().iter().any(|r| r.path == "/api/v2/me/"),
        "the request reached AAP through the tunnel"
    );

    let direct = AapClient::builder(server.base_url())
        .token(server.token())
        .ca_certificate_pem(ca)
        .system_roots(false)
        .proxy_from_env(false)
        .build()
        .unwrap();
    let before = seen.lock().unwrap().len();
    direct.me().await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), before, "no proxy, no tunnel");
}

/// A proxy URL reqwest cannot use is a typed configuration error at build time.
#[test]
fn an_invalid_proxy_url_is_a_config_error() {
    let err = AapClient::builder("https://aap.example.com")
        .proxy("::not a url::")
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::Config { .. }), "{err:?}");
}
