//! AAP 2.5+ gateway tokens over loopback: minting, automatic minting, renewal (mint new, then
//! revoke old), revocation, and AAP 2.7's "gateway tokens only" 401 at the controller.

use std::sync::Arc;
use std::time::Duration;

use provkit_aap::{AapClient, Error, GatewayTokenOptions, TokenScope};
use provkit_testing::fake_aap::{FakeAap, JobTemplateSpec, LoggedRequest, Mode};
use secrecy::ExposeSecret as _;

use crate::support::{fast_retry, requests_to, server};

fn bare(server: &provkit_testing::fake_aap::FakeAapServer) -> provkit_aap::AapClientBuilder {
    AapClient::builder(server.base_url())
        .retry(fast_retry())
        .timeout(Duration::from_secs(5))
        .proxy_from_env(false)
}

/// A plain HTTP client for setting up the fake (ring provider, no TLS in use).
fn http() -> reqwest::Client {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .build()
        .unwrap()
}

/// The client's mint and revoke calls (the tests' own listings left out).
fn token_calls(server: &provkit_testing::fake_aap::FakeAapServer) -> Vec<LoggedRequest> {
    requests_to(server, "/api/gateway/v1/tokens/")
        .into_iter()
        .filter(|r| r.method != "GET")
        .collect()
}

#[tokio::test]
async fn mints_uses_and_revokes_a_gateway_token() {
    let server = server(Mode::Gateway).await;
    let login = bare(&server).build().unwrap();
    let options = GatewayTokenOptions::new("osac-installer").scope(TokenScope::Write);
    let token = login
        .mint_gateway_token("admin", "password", &options)
        .await
        .unwrap();
    assert_eq!(token.scope(), "write");
    assert!(token.expires().is_some());
    assert!(!format!("{token:?}").contains(token.secret().expose_secret()));
    let posts = token_calls(&server);
    assert_eq!(posts.len(), 1);
    assert_eq!((posts[0].method.as_str(), posts[0].status), ("POST", 201));
    let body: serde_json::Value = serde_json::from_str(&posts[0].body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"description": "osac-installer", "application": null, "scope": "write"})
    );
    assert!(
        posts[0]
            .headers
            .iter()
            .any(|(k, v)| k == "authorization" && v.starts_with("Basic"))
    );

    let client = bare(&server)
        .token(token.secret().expose_secret())
        .build()
        .unwrap();
    assert_eq!(client.me().await.unwrap()["username"], "admin");
    client.revoke_gateway_token(token.id()).await.unwrap();
    let revoked = token_calls(&server).into_iter().last().unwrap();
    assert_eq!(
        (
            revoked.method.as_str(),
            revoked.path.clone(),
            revoked.status
        ),
        (
            "DELETE",
            format!("/api/gateway/v1/tokens/{}/", token.id()),
            204
        )
    );
    // The revoked token is refused at the controller behind the gateway.
    let err = client.me().await.unwrap_err();
    assert!(err.is_gateway_token_required() && err.is_auth(), "{err}");
    // A wrong password is a plain 401 at the gateway.
    let err = login
        .mint_gateway_token("admin", "wrong", &options)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unauthorized { .. }), "{err}");
}

#[tokio::test]
async fn aap_2_7_refuses_basic_and_controller_tokens_with_a_typed_error() {
    let server = server(Mode::Aap27).await;
    // Basic auth at the controller behind the gateway.
    let basic = bare(&server)
        .basic_auth("admin", "password")
        .build()
        .unwrap();
    let err = basic.get_template("provision-job").await.unwrap_err();
    assert!(err.is_gateway_token_required(), "{err}");
    assert!(err.is_auth());
    assert_eq!(err.status().map(|s| s.as_u16()), Some(401));
    assert!(err.to_string().contains("gateway"), "{err}");
    // A controller-issued token (minted at the controller's own tokens endpoint).
    let http = http();
    let minted: serde_json::Value = http
        .post(format!("{}tokens/", server.api_base()))
        .bearer_auth(server.token())
        .json(&serde_json::json!({"description": "ctl", "application": null, "scope": "write"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let controller_token = minted["token"].as_str().unwrap().to_owned();
    let ctl = bare(&server).token(controller_token).build().unwrap();
    assert!(ctl.me().await.unwrap_err().is_gateway_token_required());
    // A gateway token works.
    let gw = bare(&server).token(server.token()).build().unwrap();
    assert!(gw.get_template("provision-job").await.is_ok());
    // Plain AWX: the same wrong credentials are an ordinary 401.
    let awx = server_awx().await;
    let err = bare(&awx)
        .basic_auth("admin", "wrong")
        .build()
        .unwrap()
        .me()
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Unauthorized { .. }) && err.is_auth(),
        "{err}"
    );
}

async fn server_awx() -> provkit_testing::fake_aap::FakeAapServer {
    server(Mode::Awx).await
}

#[tokio::test]
async fn automatic_minting_on_2_7_and_basic_on_awx() {
    let server = server(Mode::Aap27).await;
    let client = bare(&server)
        .basic_auth("admin", "password")
        .mint_gateway_token(GatewayTokenOptions::new("provkit-test"))
        .build()
        .unwrap();
    let template = client.get_template("provision-job").await.unwrap();
    let launched = client
        .launch(&template, &provkit_aap::LaunchRequest::default())
        .await
        .unwrap();
    client
        .get_unified(launched.kind, launched.id)
        .await
        .unwrap();
    let mints: Vec<_> = token_calls(&server)
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(mints.len(), 1, "one token for all calls");
    let controller_calls = requests_to(&server, "/api/controller/v2/");
    assert!(!controller_calls.is_empty());
    for call in controller_calls {
        let auth = call.headers.iter().find(|(k, _)| k == "authorization");
        assert!(
            auth.is_some_and(|(_, v)| v.starts_with("Bearer")),
            "{call:?}"
        );
    }
    // The token revoked behind the client's back: one re-mint, the call succeeds.
    server.aap().clear_requests();
    let revoke_all = http();
    let list: serde_json::Value = revoke_all
        .get(format!("{}/api/gateway/v1/tokens/", server.base_url()))
        .basic_auth("admin", Some("password"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for t in list["results"].as_array().unwrap() {
        if t["description"] == "provkit-test" {
            let status = revoke_all
                .delete(format!(
                    "{}/api/gateway/v1/tokens/{}/",
                    server.base_url(),
                    t["id"]
                ))
                .basic_auth("admin", Some("password"))
                .send()
                .await
                .unwrap()
                .status();
            assert_eq!(status, 204);
        }
    }
    server.aap().clear_requests();
    client
        .get_unified(launched.kind, launched.id)
        .await
        .unwrap();
    let posts = token_calls(&server)
        .into_iter()
        .filter(|r| r.method == "POST")
        .count();
    assert_eq!(posts, 1, "re-minted once after the 401");

    // Plain AWX: no gateway, so Basic auth is kept and nothing is minted.
    let awx = server_awx().await;
    let client = bare(&awx)
        .basic_auth("admin", "password")
        .mint_gateway_token(GatewayTokenOptions::default())
        .build()
        .unwrap();
    client.get_template("provision-job").await.unwrap();
    assert!(token_calls(&awx).is_empty());
    // Minting needs username/password.
    assert!(matches!(
        bare(&awx)
            .token("t")
            .mint_gateway_token(GatewayTokenOptions::default())
            .build(),
        Err(Error::Config { .. })
    ));
}

#[tokio::test]
async fn renewal_mints_the_new_token_then_revokes_the_old_one() {
    let clock =
        provkit_core::ManualClock::new(chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap());
    let server = FakeAap::builder()
        .mode(Mode::Aap27)
        .organization("osac")
        .job_template(JobTemplateSpec::new("provision-job", "osac"))
        .gateway_token_lifetime(Duration::from_secs(3600))
        .clock(Arc::new(clock.clone()))
        .start()
        .await
        .unwrap();
    let client = bare(&server)
        .basic_auth("admin", "password")
        .mint_gateway_token(
            GatewayTokenOptions::new("renewing").renew_before(Duration::from_secs(600)),
        )
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap();
    client.me().await.unwrap();
    clock.advance(Duration::from_secs(2000)); // before the renewal point (50 min)
    client.me().await.unwrap();
    assert_eq!(token_calls(&server).len(), 1, "no renewal yet");
    clock.advance(Duration::from_secs(1100)); // 51 min 40 s: inside the 10-minute lead
    client.me().await.unwrap();
    let calls = token_calls(&server);
    let summary: Vec<(&str, u16)> = calls
        .iter()
        .map(|r| (r.method.as_str(), r.status))
        .collect();
    assert_eq!(summary, [("POST", 201), ("POST", 201), ("DELETE", 204)]);
    // The old token (the first one minted) is the one revoked, after the new one was minted.
    let tokens: serde_json::Value = http()
        .get(format!("{}/api/gateway/v1/tokens/", server.base_url()))
        .basic_auth("admin", Some("password"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let renewing: Vec<u64> = tokens["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["description"] == "renewing")
        .filter_map(|t| t["id"].as_u64())
        .collect();
    assert_eq!(renewing.len(), 1);
    assert_eq!(
        calls[2].path,
        format!("/api/gateway/v1/tokens/{}/", renewing[0] - 1)
    );
    // The renewed token is in use.
    client.me().await.unwrap();
    assert_eq!(token_calls(&server).len(), 3);
}
