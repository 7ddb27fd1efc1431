//! The fake's AAP 2.7 mode over loopback: the controller API refuses basic auth and
//! controller-issued tokens (401, body assumed), gateway tokens are minted, used and revoked.

use provkit_testing::fake_aap::Mode;
use serde_json::json;

use crate::common::{ADMIN, Auth, client, observed_fixtures, send, start};

const UNAUTH: &str = "Authentication credentials were not provided. To establish a login session, visit /api/login/.";

#[tokio::test]
async fn component_api_takes_gateway_tokens_only() {
    let (server, _) = start(observed_fixtures(Mode::Aap27)).await;
    let (c, b) = (client(), server.base_url());
    let me = format!("{b}/api/controller/v2/me/");
    // Discovery is the gateway's, anonymous ping still answers.
    let root = send(&c, "GET", &format!("{b}/api/"), Auth::None, None).await;
    assert_eq!(root.json["apis"]["controller"], "/api/controller/");
    assert_eq!(
        send(
            &c,
            "GET",
            &format!("{b}/api/controller/v2/ping/"),
            Auth::None,
            None
        )
        .await
        .status,
        200
    );
    // Basic auth at the controller: 401 with AWX's body and challenge (assumed for 2.7).
    let r = send(&c, "GET", &me, Auth::Basic("admin", "secret"), None).await;
    assert_eq!((r.status, r.json.clone()), (401, json!({"detail": UNAUTH})));
    assert!(r.header("www-authenticate").is_some());
    // A fixture (gateway) token works.
    assert_eq!(
        send(&c, "GET", &me, Auth::Bearer(ADMIN), None).await.status,
        200
    );
    // A controller-issued token is refused.
    let minted = send(
        &c,
        "POST",
        &format!("{b}/api/controller/v2/tokens/"),
        Auth::Bearer(ADMIN),
        Some(r#"{"description":"ctl","application":null,"scope":"write"}"#),
    )
    .await;
    assert_eq!(minted.status, 201, "{}", minted.text);
    let ctl = minted.json["token"].as_str().unwrap().to_owned();
    assert_eq!(
        send(&c, "GET", &me, Auth::Bearer(&ctl), None).await.status,
        401
    );
    // The gateway mints with Basic auth; its token works at the controller until revoked.
    let gw = send(
        &c,
        "POST",
        &format!("{b}/api/gateway/v1/tokens/"),
        Auth::Basic("admin", "secret"),
        Some(r#"{"description":"osac","application":null,"scope":"write"}"#),
    )
    .await;
    assert_eq!(gw.status, 201, "{}", gw.text);
    assert_eq!(gw.json["refresh_token"], serde_json::Value::Null);
    let token = gw.json["token"].as_str().unwrap().to_owned();
    let id = gw.json["id"].as_u64().unwrap();
    assert_eq!(
        send(&c, "GET", &me, Auth::Bearer(&token), None)
            .await
            .status,
        200
    );
    let del = send(
        &c,
        "DELETE",
        &format!("{b}/api/gateway/v1/tokens/{id}/"),
        Auth::Basic("admin", "secret"),
        None,
    )
    .await;
    assert_eq!(del.status, 204);
    assert_eq!(
        send(&c, "GET", &me, Auth::Bearer(&token), None)
            .await
            .status,
        401
    );
}
