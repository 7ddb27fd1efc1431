//! Tagged attempts (`AapProviderBuilder::tag_attempts`): a launch carries its idempotency key
//! as a skip tag next to the template's own, and the lookup of an intent that recorded the tag
//! is one exact query (`jobs/?job_template=<id>&skip_tags__contains=<key>`) once the attempt's
//! launch window has closed, whatever the template's launch rate; an empty answer is trusted
//! only when a read of the template after the window closed shows it still prompting.

use std::time::Duration;

use provkit_aap::provider::TemplateNames;
use provkit_aap::{AapClient, AapProvider, LaunchRequest};
use provkit_core::{Clock, JobType, SystemClock};
use provkit_lifecycle::{IdempotencyKey, LaunchCertainty, LaunchContext, ProvisioningProvider};
use provkit_testing::fake_aap::{
    AskFlags, FakeAapServer, Fault, FaultAction, JobTemplateSpec, Mode, Trigger,
};

use crate::support::{
    builder, client, marked_lookup_until_answered, requests_to, server_with, subnet, template_id,
};

const TEMPLATE: &str = "tagged-provision";

/// A job template prompting for variables and skip tags, with a skip tag of its own.
async fn tagged_server() -> FakeAapServer {
    let mut spec = JobTemplateSpec::new(TEMPLATE, "osac");
    spec.ask.skip_tags = true;
    spec.skip_tags = "slow".into();
    spec.allow_simultaneous = true;
    server_with(Mode::Awx, |b| b.job_template(spec)).await
}

fn provider(client: AapClient) -> AapProvider {
    AapProvider::builder(client)
        .templates(TemplateNames::explicit(TEMPLATE, "deprovision-job"))
        .clock_skew(Duration::from_secs(2))
        .launch_deadline(Duration::from_millis(1_500))
        .max_launch_processing(Duration::from_millis(1_000))
        .tag_attempts(true)
        .build()
}

/// The launch context of attempt `key` whose intent was written at `at` with `marker`.
fn attempt(key: &IdempotencyKey, at: chrono::DateTime<chrono::Utc>, marker: &str) -> LaunchContext {
    LaunchContext::new()
        .with_idempotency_key(key.clone())
        .with_attempt_started(Some(at))
        .with_attempt_marker(Some(marker.to_owned()))
}

/// Job lists whose query holds `needle`.
fn job_lists_with(server: &FakeAapServer, needle: &str) -> usize {
    requests_to(server, "/jobs/")
        .iter()
        .filter(|r| r.method == "GET" && r.query.contains(needle))
        .count()
}

/// An admin turns "Prompt on launch" for skip tags off on template `tid` (variables stay).
fn stop_prompting_for_skip_tags(server: &FakeAapServer, tid: u64) {
    server
        .aap()
        .set_job_template_ask(
            tid,
            AskFlags {
                variables: true,
                ..AskFlags::default()
            },
        )
        .unwrap();
}

fn tag_queries(server: &FakeAapServer) -> usize {
    job_lists_with(server, "skip_tags__contains")
}

fn window_reads(server: &FakeAapServer) -> usize {
    job_lists_with(server, "created__gt")
}

fn launch_requirement_reads(server: &FakeAapServer) -> usize {
    requests_to(server, "/launch/")
        .iter()
        .filter(|r| r.method == "GET")
        .count()
}

#[tokio::test]
async fn a_tagged_attempt_is_found_by_one_query_among_hundreds_of_jobs() {
    let server = tagged_server().await;
    let a_client = client(&server);
    let a = provider(a_client.clone());
    let r = subnet("tagged-a");
    let key = IdempotencyKey::new("pk1-uid-tagged-a-p-0123456789abcdef");
    let marker = a
        .launch_marker(&r, &JobType::Provision, &key)
        .await
        .expect("the template prompts for skip tags: the key is the tag");
    assert_eq!(marker, key.as_str());

    let at = SystemClock.now();
    let id = a
        .trigger_provision(&r, &attempt(&key, at, &marker))
        .await
        .unwrap()
        .job_id;
    let job = a_client.get_job(id.parse().unwrap()).await.unwrap();
    assert_eq!(
        job.skip_tags,
        format!("slow,{key}"),
        "the template's own skip tags are kept"
    );
    // Many jobs of the template in the attempt's window and after it.
    let template = a_client.get_template(TEMPLATE).await.unwrap();
    for _ in 0..250 {
        a_client
            .launch(&template, &LaunchRequest::default())
            .await
            .unwrap();
    }

    // Another process inherits the intent.
    server.aap().clear_requests();
    let b_client = client(&server);
    let b = provider(b_client.clone());
    let (found, _) = marked_lookup_until_answered(&b, &r, &key, at, &marker).await;
    assert_eq!(found.expect("found").job_id, id);
    assert_eq!(tag_queries(&server), 1, "one query");
    assert_eq!(window_reads(&server), 0, "no window was read");
    let stats = b_client.key_lookup_stats();
    assert_eq!(
        (stats.tagged_lookups, stats.tagged_pages, stats.tagged_found),
        (1, 1, 1)
    );
}

#[tokio::test]
async fn a_tagged_attempt_without_a_job_is_proven_absent_once_its_window_closed() {
    let server = tagged_server().await;
    let b = provider(client(&server));
    let r = subnet("tagged-absent");
    let key = IdempotencyKey::new("pk1-uid-tagged-absent-p-0123456789abcdef");
    let at = SystemClock.now();

    // While the window is open: deferrals without a request (its launch may yet create a job).
    for _ in 0..3 {
        let err = b
            .find_job_by_marker(&r, &JobType::Provision, &key, at, key.as_str())
            .await
            .unwrap_err();
        let wait = provkit_lifecycle::find_retry_later(&err).unwrap_or_else(|| panic!("{err}"));
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(4),
            "{wait:?}"
        );
    }
    assert_eq!(tag_queries(&server), 0);
    assert_eq!(launch_requirement_reads(&server), 0);

    let (found, _) = marked_lookup_until_answered(&b, &r, &key, at, key.as_str()).await;
    assert!(found.is_none());
    assert_eq!(tag_queries(&server), 1, "one query once the window closed");
    assert_eq!(
        launch_requirement_reads(&server),
        1,
        "the template's prompt was read after the window closed"
    );
    assert_eq!(window_reads(&server), 0);
}

/// The intent recorded the tag; the template's "Prompt on launch" for skip tags was turned off
/// before the launch reached AWX, which then launched without the tag (`ignored_fields`) while
/// the answer was lost. The tag query finds nothing; the lookup reads the template again,
/// sees the prompt gone and reads the attempt's window: the job is found, not launched twice.
/// (Trusting the empty tag query would answer "absent".)
#[tokio::test]
async fn a_tagged_launch_ignored_by_a_template_that_stopped_prompting_is_found_by_its_window() {
    let server = tagged_server().await;
    let a_client = builder(&server)
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let a = provider(a_client);
    let r = subnet("tagged-ignored");
    let key = IdempotencyKey::new("pk1-uid-tagged-ignored-p-0123456789abcdef");
    let marker = a
        .launch_marker(&r, &JobType::Provision, &key)
        .await
        .unwrap();
    let tid = template_id(&server, TEMPLATE);
    stop_prompting_for_skip_tags(&server, tid);
    // AWX creates the job, and its answer comes after the launch deadline.
    server.aap().add_fault(
        Fault::new(
            "POST",
            "*/launch/",
            FaultAction::Latency(Duration::from_secs(3)),
        )
        .after()
        .trigger(Trigger::FirstN(1)),
    );
    let at = SystemClock.now();
    let err = a
        .trigger_provision(&r, &attempt(&key, at, &marker))
        .await
        .unwrap_err();
    assert_eq!(err.launch_certainty(), LaunchCertainty::Unknown, "{err}");
    let jobs: Vec<u64> = server
        .aap()
        .jobs()
        .iter()
        .filter(|j| j.template == Some(tid))
        .map(|j| j.id)
        .collect();
    let launched = *jobs.iter().max().unwrap();

    let b = provider(client(&server));
    let (found, _) = marked_lookup_until_answered(&b, &r, &key, at, &marker).await;
    assert_eq!(
        found.map(|f| f.job_id),
        Some(launched.to_string()),
        "the untagged job of the attempt"
    );
    assert!(window_reads(&server) > 0, "the window was read");
}

/// An intent that recorded the tag is launched only with it: a template that no longer
/// prompts for skip tags refuses the launch unsent (the next attempt records no tag).
#[tokio::test]
async fn a_launch_promised_a_tag_is_not_sent_when_the_template_no_longer_prompts() {
    let server = tagged_server().await;
    let tid = template_id(&server, TEMPLATE);
    stop_prompting_for_skip_tags(&server, tid);
    let a = provider(client(&server));
    let r = subnet("tagged-refused");
    let key = IdempotencyKey::new("pk1-uid-tagged-refused-p-0123456789abcdef");
    let err = a
        .trigger_provision(&r, &attempt(&key, SystemClock.now(), key.as_str()))
        .await
        .unwrap_err();
    assert_eq!(err.launch_certainty(), LaunchCertainty::NotMade, "{err}");
    assert!(err.to_string().contains("ask_skip_tags_on_launch"), "{err}");
    assert_eq!(server.aap().launch_count(tid), 0);
    // The next attempt is promised no tag.
    assert_eq!(a.launch_marker(&r, &JobType::Provision, &key).await, None);
}

/// A marker that is not this provider's own (a routed provider's `"<len>:<route><key>"`, read
/// back after the operator dropped dual dispatch) is no tag this provider launched with: its
/// lookup reads the window, and a launch promised it is refused unsent.
#[tokio::test]
async fn a_marker_that_is_not_the_providers_own_is_not_trusted() {
    let server = tagged_server().await;
    let a = provider(client(&server));
    let r = subnet("tagged-foreign");
    let key = IdempotencyKey::new("pk1-uid-tagged-foreign-p-0123456789abcdef");
    let foreign = format!("3:aap{key}");
    let err = a
        .trigger_provision(&r, &attempt(&key, SystemClock.now(), &foreign))
        .await
        .unwrap_err();
    assert_eq!(err.launch_certainty(), LaunchCertainty::NotMade, "{err}");
    assert_eq!(server.aap().launch_count(template_id(&server, TEMPLATE)), 0);

    // The attempt launched with its own tag; the intent read back holds the routed marker.
    let at = SystemClock.now();
    let id = a
        .trigger_provision(&r, &attempt(&key, at, key.as_str()))
        .await
        .unwrap()
        .job_id;
    let b = provider(client(&server));
    let (found, _) = marked_lookup_until_answered(&b, &r, &key, at, &foreign).await;
    assert_eq!(found.map(|f| f.job_id), Some(id));
    assert_eq!(
        tag_queries(&server),
        0,
        "the foreign marker was not queried"
    );
    assert!(window_reads(&server) > 0, "the window was read");
}
