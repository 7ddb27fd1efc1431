//! aap-api.md test cases 6–8: credentials, 401 and 403.

use provkit_aap::{AapClient, Error, LaunchRequest};
use provkit_testing::fake_aap::{Mode, Scope};

use crate::support::{builder, client, requests_to, server, server_with};

#[tokio::test]
async fn case6_bearer_and_basic_credentials_work_and_never_leak() {
    let server = server_with(Mode::Awx, |b| b.user("alice", "s3cr3t-pw", true)).await;
    let bearer = client(&server);
    assert_eq!(bearer.me().await.unwrap()["username"], "admin");
    let auth = requests_to(&server, "/me/").pop().unwrap();
    let header = auth
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        .unwrap();
    assert!(header.1.starts_with("Bearer "), "{header:?}");

    let basic = AapClient::builder(server.base_url())
        .basic_auth("alice", "s3cr3t-pw")
        .build()
        .unwrap();
    assert_eq!(basic.me().await.unwrap()["username"], "alice");
    let auth = requests_to(&server, "/me/").pop().unwrap();
    let header = auth
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        .unwrap();
    assert!(header.1.starts_with("Basic "), "{header:?}");

    for r in server.aap().requests() {
        assert!(
            !r.path.contains("s3cr3t")
                && !r.query.contains("s3cr3t")
                && !r.query.contains(&server.token())
        );
    }
    assert!(!format!("{basic:?}").contains("s3cr3t-pw"));
    assert!(!format!("{bearer:?}").contains(&server.token()));
    let bad = AapClient::builder(server.base_url())
        .basic_auth("alice", "wrong-pw")
        .build()
        .unwrap();
    let err = bad.me().await.unwrap_err();
    assert!(!format!("{err} {err:?}").contains("wrong-pw"));
}

#[tokio::test]
async fn case7_unauthorized_is_distinct_mentions_expiry_and_is_not_retried() {
    // On plain AWX a 401 is `Unauthorized`; at the controller behind the platform gateway it is
    // `GatewayTokenRequired` (AAP 2.7 takes gateway tokens only), which mentions expiry too.
    for mode in [Mode::Awx, Mode::Gateway] {
        case7_in(mode).await;
    }
}

async fn case7_in(mode: Mode) {
    let is_401_for_mode = |err: &Error| match mode {
        Mode::Gateway => matches!(err, Error::GatewayTokenRequired { .. }),
        _ => matches!(err, Error::Unauthorized { .. }),
    };
    let server = server(mode).await;
    let client = builder(&server).token("not-a-real-token").build().unwrap();
    let err = client
        .get_template("osac-create-virtual-network")
        .await
        .unwrap_err();
    assert!(is_401_for_mode(&err), "{err:?}");
    assert!(err.is_auth() && !err.is_not_found() && !err.is_retryable());
    assert!(err.to_string().contains("expired"), "{err}");
    assert_eq!(err.status().map(|s| s.as_u16()), Some(401));
    assert_eq!(
        requests_to(&server, "unified_job_templates").len(),
        1,
        "no retry loop"
    );

    // An expired token behaves the same.
    let good = crate::support::client(&server);
    good.get_template("osac-create-virtual-network")
        .await
        .unwrap();
    server.aap().set_token_expiry(
        &server.token(),
        server.aap().now() - chrono::Duration::seconds(1),
    );
    good.clear_template_cache();
    let err = good
        .get_template("osac-create-virtual-network")
        .await
        .unwrap_err();
    assert!(is_401_for_mode(&err), "{err:?}");
}

#[tokio::test]
async fn case8_forbidden_launch_is_a_permission_error_not_not_found() {
    let server = server_with(Mode::Awx, |b| {
        b.token("read-only-token", "admin", Scope::Read)
    })
    .await;
    let client = builder(&server).token("read-only-token").build().unwrap();
    let template = client
        .get_template("osac-create-virtual-network")
        .await
        .unwrap();
    let err = client
        .launch(&template, &LaunchRequest::default())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden { .. }), "{err:?}");
    assert!(!err.is_not_found() && !err.is_outcome_unknown());
    assert_eq!(server.aap().launch_count(template.id), 0);
}

#[tokio::test]
async fn token_file_rotation_recovers_from_401_without_restart() {
    let server = server(Mode::Awx).await;
    let dir = std::env::temp_dir().join(format!("provkit-aap-it-{}", fastrand_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("token");
    std::fs::write(&path, "stale-token\n").unwrap();
    let client = builder(&server)
        .token_file(&path)
        .token_reload_interval(std::time::Duration::from_secs(3600))
        .build()
        .unwrap();
    assert!(matches!(client.me().await, Err(Error::Unauthorized { .. })));
    std::fs::write(&path, format!("{}\n", server.token())).unwrap();
    // The 401 forces a re-read even though the reload interval has not elapsed.
    assert_eq!(client.me().await.unwrap()["username"], "admin");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn fastrand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}
