//! A launch attempt's window read from both ends in turn (`first_job_with_key_between`): a job
//! at either end is on the first two pages, absence costs the window's pages once, and a walk
//! cut short continues between its two cursors.

use provkit_aap::{AapClient, CircuitBreakerConfig, LaunchRequest, RetryConfig};
use provkit_aap::{JobKind, TemplateKind};
use provkit_core::{Clock, SystemClock};
use provkit_testing::fake_aap::{FakeAapServer, Fault, FaultAction, Mode, Trigger};

use crate::support::{builder, client, requests_to, server, template_id};

/// A busy window: the job of key `first`, then `others` jobs of other objects, then the job of
/// key `last`, all of `provision-job`, inside `(since, until)`.
struct Window {
    server: FakeAapServer,
    template: u64,
    since: chrono::DateTime<chrono::Utc>,
    until: chrono::DateTime<chrono::Utc>,
}

async fn keyed(launcher: &AapClient, key: &str) {
    let template = launcher.get_template("provision-job").await.unwrap();
    let vars = serde_json::json!({ "provkit_idempotency_key": key });
    let serde_json::Value::Object(vars) = vars else {
        unreachable!()
    };
    launcher
        .launch(&template, &LaunchRequest::new(vars))
        .await
        .unwrap();
}

async fn busy_window(others: usize) -> Window {
    let server = server(Mode::Awx).await;
    let launcher = client(&server);
    let since = SystemClock.now() - chrono::Duration::seconds(1);
    keyed(&launcher, "first").await;
    let template = launcher.get_template("provision-job").await.unwrap();
    for _ in 0..others {
        launcher
            .launch(&template, &LaunchRequest::default())
            .await
            .unwrap();
    }
    keyed(&launcher, "last").await;
    let until = SystemClock.now() + chrono::Duration::seconds(1);
    let template = template_id(&server, "provision-job");
    Window {
        server,
        template,
        since,
        until,
    }
}

impl Window {
    async fn find(
        &self,
        client: &AapClient,
        key: &str,
        from_end: bool,
    ) -> provkit_aap::Result<Option<provkit_aap::Job>> {
        client
            .first_job_with_key_between(
                JobKind::Job,
                TemplateKind::JobTemplate,
                self.template,
                self.since,
                self.until,
                from_end,
                key,
            )
            .await
    }

    /// The job-list requests so far.
    fn lists(&self) -> Vec<String> {
        requests_to(&self.server, "/jobs/")
            .into_iter()
            .filter(|q| q.method == "GET" && q.query.contains("job_template="))
            .map(|q| q.query)
            .collect()
    }
}

/// The id a query's `term` (`id__gt`, `id__lt`) names.
fn cursor(query: &str, term: &str) -> Option<u64> {
    query
        .split('&')
        .find_map(|p| p.strip_prefix(&format!("{term}=")))
        .map(|v| v.parse().unwrap())
}

/// 700 jobs between the two keyed ones (702 in the window, four pages of 200). Read from the
/// end, the last job is on the first page and the first job on the second (read from the start
/// between the window's start and the lowest id the first page read); before, a read from one
/// end reached the job at the other end on its fourth page. From the start, the first job is on
/// the first page.
#[tokio::test]
async fn a_job_at_either_end_of_a_busy_window_is_on_the_first_two_pages() {
    let w = busy_window(700).await;
    let c = client(&w.server);
    let job = w.find(&c, "last", true).await.unwrap().expect("found");
    assert_eq!(w.lists().len(), 1, "{:?}", w.lists());
    let last = job.id;
    let job = w.find(&c, "first", true).await.unwrap().expect("found");
    let lists = w.lists();
    assert_eq!(lists.len(), 3, "{lists:?}");
    assert!(lists[1].contains("order_by=-id"), "{}", lists[1]);
    assert_eq!(cursor(&lists[1], "id__lt"), None, "{}", lists[1]);
    assert!(lists[2].contains("order_by=id"), "{}", lists[2]);
    let lowest_read = cursor(&lists[2], "id__lt").expect("between the cursors");
    assert!(lowest_read > job.id && lowest_read < last, "{}", lists[2]);
    w.find(&c, "first", false).await.unwrap().expect("found");
    assert_eq!(w.lists().len(), 4, "oldest first: one page");
    let stats = c.key_lookup_stats();
    assert_eq!((stats.lookups, stats.pages, stats.max_pages), (3, 4, 2));
}

/// Proving absence reads each of the window's 702 jobs once: four pages, alternating ends, each
/// after the first between the cursors the earlier ones left, the last one holding the rest.
#[tokio::test]
async fn an_absence_proof_reads_every_job_of_the_window_once() {
    let w = busy_window(700).await;
    let c = client(&w.server);
    assert_eq!(w.find(&c, "neither", true).await.unwrap(), None);
    let lists = w.lists();
    assert_eq!(lists.len(), 4, "{lists:?}");
    let orders: Vec<bool> = lists.iter().map(|q| q.contains("order_by=-id")).collect();
    assert_eq!(orders, [true, false, true, false], "{lists:?}");
    // Each page narrows the range the next reads: the cursors only move inwards.
    let (mut low, mut high) = (0, u64::MAX);
    for q in &lists[1..] {
        let (gt, lt) = (cursor(q, "id__gt"), cursor(q, "id__lt").expect("{q}"));
        assert!(lt <= high, "{q}");
        high = lt;
        if let Some(gt) = gt {
            assert!(gt >= low && gt < high, "{q}");
            low = gt;
        }
    }
    assert!(low > 0, "the start was read: {lists:?}");
}

/// A page that fails (a proxy's 502; no retries, no breaker) ends the call; the next call reads
/// only between the cursors of the pages read whole, so the window still costs its four pages,
/// plus the one that failed.
#[tokio::test]
async fn a_walk_cut_short_continues_between_its_cursors() {
    let w = busy_window(700).await;
    let c = builder(&w.server)
        .retry(RetryConfig::disabled())
        .circuit_breaker(CircuitBreakerConfig::disabled())
        .build()
        .unwrap();
    w.server.aap().add_fault(
        Fault::new("GET", "*/jobs/", FaultAction::gateway_html(502)).trigger(Trigger::Nth(3)),
    );
    let err = w.find(&c, "neither", true).await.unwrap_err();
    assert!(err.to_string().contains("502"), "{err}");
    assert_eq!(w.find(&c, "neither", true).await.unwrap(), None);
    let lists = w.lists();
    assert_eq!(lists.len(), 5, "{lists:?}");
    assert_eq!(
        lists[2], lists[3],
        "the failed page is asked again, between the same cursors"
    );
    let stats = c.key_lookup_stats();
    assert_eq!((stats.lookups, stats.pages), (2, 5));
}

/// A page budget of one: each call reads one page, from the end the walk is at, so a job at the
/// start is met on the second call.
#[tokio::test]
async fn the_ends_alternate_across_calls() {
    let w = busy_window(700).await;
    let c = builder(&w.server).lookup_pages_per_call(1).build().unwrap();
    let err = w.find(&c, "first", true).await.unwrap_err();
    assert!(
        matches!(err, provkit_aap::Error::LookupUnfinished { pages: 1, .. }),
        "{err}"
    );
    w.find(&c, "first", true).await.unwrap().expect("found");
    let lists = w.lists();
    assert_eq!(lists.len(), 2, "{lists:?}");
    assert!(lists[1].contains("order_by=id"), "{}", lists[1]);
}
