//! `Retry-After` (delta seconds and HTTP-date, on 429 and on 503) on every AAP call the engine
//! makes — launch, poll, cancel, lookups, deprovision — reaches the engine as a rate limit.

use std::time::{Duration, SystemTime};

use provkit_aap::{AapProvider, CircuitBreakerConfig};
use provkit_core::{JobState, JobStatus, JobType};
use provkit_lifecycle::{
    IdempotencyKey, LaunchCertainty, LaunchContext, ProviderError, ProvisioningProvider,
    ResourceMeta, ResourceView,
};
use provkit_testing::fake_aap::{
    FakeAapServer, Fault, FaultAction, JobScript, Mode, RetryAfter, Trigger,
};

use crate::support::{builder, requests_to, server, template_id};

fn resource() -> ResourceView {
    ResourceView::new(
        ResourceMeta {
            kind: "Subnet".into(),
            name: "ra".into(),
            namespace: Some("default".into()),
            uid: "uid-ra".into(),
            ..Default::default()
        },
        serde_json::json!({"kind": "Subnet", "metadata": {"name": "ra", "uid": "uid-ra"}, "spec": {}}),
    )
}

/// A provider whose client gives up at once on a long `Retry-After` (above `max_backoff`) and
/// has no circuit breaker, so each answer is seen as it is.
fn provider(server: &FakeAapServer) -> AapProvider {
    let client = builder(server)
        .circuit_breaker(CircuitBreakerConfig::disabled())
        .build()
        .unwrap();
    AapProvider::with_templates(client, "provision-job", "deprovision-job")
}

/// The AAP calls the engine makes, each with the route its fault goes on.
#[derive(Clone, Copy, Debug)]
enum Call {
    TemplateLookup,
    Launch,
    Poll,
    Lookup,
    Cancel,
    DeprovisionLaunch,
    DeprovisionPoll,
}

impl Call {
    fn route(self) -> (&'static str, &'static str) {
        match self {
            Self::TemplateLookup => ("GET", "*/unified_job_templates/"),
            Self::Launch | Self::DeprovisionLaunch => ("POST", "*/launch/"),
            Self::Poll | Self::DeprovisionPoll => ("GET", "*/jobs/*/"),
            Self::Lookup => ("GET", "*/jobs/"),
            Self::Cancel => ("POST", "*/cancel/"),
        }
    }
}

/// Runs `call` with the fault in place; returns the provider's error.
async fn failing(server: &FakeAapServer, call: Call, action: FaultAction) -> ProviderError {
    let p = provider(server);
    let r = resource();
    // Warm what the call needs but is not under test (template cache, a running job).
    let running = if matches!(call, Call::TemplateLookup) {
        None
    } else {
        let tid = template_id(server, "provision-job");
        server
            .aap()
            .set_template_script(tid, JobScript::run_until_canceled())
            .unwrap();
        let warm = provider(server);
        let id = warm
            .trigger_provision(&r, &LaunchContext::new())
            .await
            .unwrap()
            .job_id;
        // Same client state as the warmed provider: template cached, launch requirements checked.
        if matches!(call, Call::Launch | Call::DeprovisionLaunch) {
            let _ = p
                .trigger_provision(&r, &LaunchContext::new())
                .await
                .unwrap();
            let _ = p.trigger_deprovision(&r, &[], &LaunchContext::new()).await;
        }
        Some(id)
    };
    let (method, path) = call.route();
    server
        .aap()
        .add_fault(Fault::new(method, path, action.clone()).trigger(Trigger::Always));
    let key = IdempotencyKey::new("pk1-uid-ra-p-00000000000000aa");
    let running_job = || {
        vec![JobStatus::new(
            running.clone().unwrap_or_default(),
            JobType::Provision,
            JobState::Running,
            chrono::DateTime::UNIX_EPOCH,
        )]
    };
    let result = match call {
        Call::TemplateLookup | Call::Launch => p
            .trigger_provision(&r, &LaunchContext::new())
            .await
            .map(drop),
        Call::Poll => p
            .provision_status(&r, running.as_deref().unwrap_or_default())
            .await
            .map(drop),
        Call::DeprovisionPoll => p
            .deprovision_status(&r, running.as_deref().unwrap_or_default())
            .await
            .map(drop),
        Call::Lookup => p
            .find_job_by_idempotency_key(&r, &JobType::Provision, &key)
            .await
            .map(drop),
        Call::Cancel => p
            .trigger_deprovision(&r, &running_job(), &LaunchContext::new())
            .await
            .map(drop),
        Call::DeprovisionLaunch => p
            .trigger_deprovision(&r, &[], &LaunchContext::new())
            .await
            .map(drop),
    };
    result.expect_err("the fault makes the call fail")
}

#[tokio::test]
async fn retry_after_on_429_and_503_reaches_the_engine_from_every_call() {
    let calls = [
        Call::TemplateLookup,
        Call::Launch,
        Call::Poll,
        Call::Lookup,
        Call::Cancel,
        Call::DeprovisionLaunch,
        Call::DeprovisionPoll,
    ];
    // Delta seconds exactly; an HTTP-date to the second (it has no sub-second part).
    let in_90s = || SystemTime::now() + Duration::from_secs(90);
    type Form = (&'static str, fn(RetryAfter) -> FaultAction, bool);
    let forms: [Form; 2] = [
        ("429", FaultAction::too_many_requests, false),
        ("503", FaultAction::service_unavailable, true),
    ];
    for call in calls {
        for (status, action, is_503) in forms {
            for date in [false, true] {
                let server = server(Mode::Awx).await;
                let retry_after = if date {
                    RetryAfter::Date(in_90s())
                } else {
                    RetryAfter::Seconds(120)
                };
                let err = failing(&server, call, action(retry_after)).await;
                let wait = err.retry_after();
                let ok = if date {
                    wait.is_some_and(|w| {
                        w > Duration::from_secs(80) && w <= Duration::from_secs(90)
                    })
                } else {
                    wait == Some(Duration::from_secs(120))
                };
                assert!(ok, "{call:?} {status} date={date}: {wait:?} from {err}");
                assert!(!err.is_not_found(), "{call:?} {status}");
                assert_eq!(
                    err.launch_certainty(),
                    LaunchCertainty::NotMade,
                    "{call:?} {status}"
                );
                // The client gave up at once (the wait is above its max backoff): one request.
                let (method, _) = call.route();
                let throttled = server
                    .aap()
                    .requests()
                    .into_iter()
                    .filter(|q| q.method == method && (q.status == 429 || q.status == 503))
                    .count();
                assert_eq!(throttled, 1, "{call:?} {status} 503={is_503}");
            }
        }
    }
}

#[tokio::test]
async fn a_503_without_retry_after_stays_a_server_error() {
    let server = server(Mode::Awx).await;
    let err = failing(&server, Call::Poll, FaultAction::gateway_html(503)).await;
    assert_eq!(err.retry_after(), None, "{err}");
    server.aap().clear_faults();
    let err = failing(&server, Call::Launch, FaultAction::gateway_html(503)).await;
    assert_eq!(err.retry_after(), None, "{err}");
    assert_eq!(err.launch_certainty(), LaunchCertainty::Unknown);
}

#[tokio::test]
async fn a_short_503_retry_after_is_waited_for_inside_the_client() {
    let server = server(Mode::Awx).await;
    let client = builder(&server)
        .retry(crate::support::fast_retry().max_backoff(Duration::from_secs(5)))
        .build()
        .unwrap();
    let t = client.get_template("provision-job").await.unwrap();
    let id = client
        .launch(&t, &provkit_aap::LaunchRequest::default())
        .await
        .unwrap()
        .id;
    server.aap().add_fault(
        Fault::new(
            "GET",
            "*/jobs/*",
            FaultAction::service_unavailable(RetryAfter::Seconds(1)),
        )
        .trigger(Trigger::Nth(1)),
    );
    assert_eq!(client.get_job(id).await.unwrap().id, id);
    let hits = requests_to(&server, &format!("/jobs/{id}/"));
    assert_eq!(hits.len(), 2);
    // A lower bound only: the retry did not go before the server's `Retry-After`.
    assert!(hits[1].at - hits[0].at >= chrono::Duration::milliseconds(900));
}
