//! A launch leaves the client only within its send window (`launch_deadline −
//! max_launch_processing` after its intent), checked where the request is written: a launch
//! that waited in the client (rate limiter, circuit breaker) past it is not sent, so no job of
//! the attempt can be created after the window a lookup reads (failure mode 3 of docs/aap.md).

use std::time::Duration;

use provkit_aap::provider::TemplateNames;
use provkit_aap::{AapProvider, Error, LaunchRequest, RateLimit};
use provkit_core::{Clock, SystemClock};
use provkit_lifecycle::{IdempotencyKey, LaunchCertainty, LaunchContext, ProvisioningProvider};
use provkit_testing::fake_aap::{Fault, FaultAction, Mode, Trigger};

use crate::support::{builder, client, lookup_until_answered, requests_to, server, subnet};

fn launches(server: &provkit_testing::fake_aap::FakeAapServer) -> usize {
    requests_to(server, "/launch/")
        .iter()
        .filter(|q| q.method == "POST")
        .count()
}

/// The client checks a launch's send-by time after its rate limiter: a request that waited
/// past it fails with `SendByPassed` (certainly not sent, no POST reaches AAP); one whose
/// time has not passed is sent.
#[tokio::test]
async fn a_launch_whose_send_by_passes_in_the_rate_limiter_is_not_sent() {
    let server = server(Mode::Awx).await;
    let client = builder(&server)
        .rate_limit(RateLimit::new(2.0, 1))
        .build()
        .unwrap();
    // Takes the limiter's one token: the next request waits about 500 ms.
    let template = client.get_template("provision-job").await.unwrap();
    let request =
        LaunchRequest::default().send_by(tokio::time::Instant::now() + Duration::from_millis(100));
    let err = client.launch(&template, &request).await.unwrap_err();
    assert!(matches!(err, Error::SendByPassed { .. }), "{err:?}");
    assert!(!err.is_outcome_unknown(), "certainly not sent");
    assert_eq!(err.brief(), "not sent: its send-by time passed");
    assert_eq!(launches(&server), 0, "no launch reached AAP");
    assert!(server.aap().jobs().is_empty());

    let request =
        LaunchRequest::default().send_by(tokio::time::Instant::now() + Duration::from_secs(5));
    let launched = client.launch(&template, &request).await.unwrap();
    assert_eq!(launches(&server), 1);
    assert_eq!(server.aap().jobs()[0].id, launched.id);
}

/// Replica A writes an intent; its launch, started at once, waits in A's rate limiter past
/// the send window (0.5 s), and AWX is slow (it acts 3.4 s after a request arrives, within
/// the 3.5 s processing allowance). The client refuses to write the request
/// (`SendByPassed`, nothing sent), so replica B, taking over, proves a true absence and no
/// job of the attempt ever appears. On the provider before the send window the POST left
/// about 1 s after the intent (within the 4 s deadline; the deadline was checked before the
/// rate limiter) and AWX acted on it about 4.4 s after the intent, past the window's end: A's
/// outcome was unknown, and B found the job only because its read of an inherited window
/// waits about two deadlines (the hand-over's hold). The send window makes the job exist by
/// the window's end instead.
#[tokio::test]
async fn a_launch_delayed_in_the_client_past_its_send_window_is_refused_so_a_takeover_is_right() {
    let server = server(Mode::Awx).await;
    let configure = |client| {
        AapProvider::builder(client)
            .templates(TemplateNames::explicit("provision-job", "deprovision-job"))
            .clock_skew(Duration::from_secs(2))
            .launch_deadline(Duration::from_millis(4_000))
            .max_launch_processing(Duration::from_millis(3_500))
            .build()
    };
    // A: one request a second. Warmed up with another object's launch (discovery, template,
    // launch requirements, launch), then a clock probe takes the limiter's token right
    // before the intent: the launch waits about 1 s in the limiter.
    let a_client = builder(&server)
        .rate_limit(RateLimit::new(1.0, 1))
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let a = configure(a_client.clone());
    a.trigger_provision(&subnet("warm-up"), &LaunchContext::new())
        .await
        .unwrap();
    // AWX acts on a launch 3.4 s after receiving it (below the 3.5 s processing allowance).
    server.aap().add_fault(
        Fault::new(
            "POST",
            "/api/v2/job_templates/*/launch/",
            FaultAction::Latency(Duration::from_millis(3_400)),
        )
        .trigger(Trigger::Always),
    );
    a_client.server_time().await.unwrap();
    let r = subnet("late-send");
    let key = IdempotencyKey::new("pk1-uid-late-send-p-00000000000000ab");
    let intent = SystemClock.now();
    let ctx = LaunchContext::new()
        .with_idempotency_key(key.clone())
        .with_attempt_started(Some(intent));
    let err = a.trigger_provision(&r, &ctx).await.unwrap_err();
    assert_eq!(err.launch_certainty(), LaunchCertainty::NotMade, "{err}");
    assert!(
        err.to_string().contains("send-by time passed"),
        "refused where the request is written: {err}"
    );
    assert_eq!(launches(&server), 1, "only the warm-up launch was sent");

    // B takes over: it reads the intent's window once closed.
    let b = configure(client(&server));
    let (found, _) = lookup_until_answered(&b, &r, &key, intent).await;
    assert!(found.is_none(), "A sent nothing, so there is no job");
    // Past every launch's processing: still no job of the attempt.
    tokio::time::sleep(Duration::from_millis(3_600)).await;
    let jobs = server.aap().jobs();
    assert_eq!(jobs.len(), 1, "the warm-up's job only: {jobs:?}");
    assert!(!jobs[0].extra_vars.contains(key.as_str()));
}

/// A processing allowance not below the deadline leaves no time to send: every launch is
/// refused, nothing sent, with the reason in the error.
#[tokio::test]
async fn a_processing_allowance_not_below_the_deadline_refuses_every_launch() {
    let server = server(Mode::Awx).await;
    let p = AapProvider::builder(client(&server))
        .templates(TemplateNames::explicit("provision-job", "deprovision-job"))
        .launch_deadline(Duration::from_secs(10))
        .max_launch_processing(Duration::from_secs(10))
        .build();
    let r = subnet("no-window");
    let ctx = LaunchContext::new()
        .with_idempotency_key(IdempotencyKey::new("pk1-uid-no-window-p-00000000000000ac"))
        .with_attempt_started(Some(SystemClock.now()));
    let err = p.trigger_provision(&r, &ctx).await.unwrap_err();
    assert_eq!(err.launch_certainty(), LaunchCertainty::NotMade, "{err}");
    assert!(err.to_string().contains("send window (0ns"), "{err}");
    assert_eq!(launches(&server), 0);
}
