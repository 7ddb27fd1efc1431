//! An [`AapApi`] wrapper that counts the provider's calls per operation and per resource, and
//! records the calls of the running reconcile for the demo's timeline.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use provkit_aap::{
    AapApi, AapClient, CancelOutcome, Job, JobKind, KeyLookupMeter, LaunchRequest, Launched,
    Template, TemplateKind,
};

/// The provider-level operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Template lookup by name.
    GetTemplate,
    /// `POST …/launch/`.
    Launch,
    /// Job detail (a poll).
    GetJob,
    /// `POST …/cancel/`.
    Cancel,
    /// `unified_jobs/?id=` (job kind of an id this process did not launch).
    FindKind,
    /// Job list by template and creation time (idempotency lookup).
    ListJobs,
    /// `GET ping/` for AAP's clock (its `Date` header).
    Ping,
}

impl Op {
    /// Every operation, in report order.
    pub const ALL: [Op; 7] = [
        Op::GetTemplate,
        Op::Launch,
        Op::GetJob,
        Op::Cancel,
        Op::FindKind,
        Op::ListJobs,
        Op::Ping,
    ];

    fn index(self) -> usize {
        match self {
            Op::GetTemplate => 0,
            Op::Launch => 1,
            Op::GetJob => 2,
            Op::Cancel => 3,
            Op::FindKind => 4,
            Op::ListJobs => 5,
            Op::Ping => 6,
        }
    }

    /// A short label (`GET job`, `POST launch`, …).
    pub fn label(self) -> &'static str {
        match self {
            Op::GetTemplate => "GET template",
            Op::Launch => "POST launch",
            Op::GetJob => "GET job",
            Op::Cancel => "POST cancel",
            Op::FindKind => "GET unified_jobs",
            Op::ListJobs => "GET jobs?key",
            Op::Ping => "GET ping (clock)",
        }
    }
}

/// One provider call made during a reconcile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallRecord {
    /// The operation.
    pub op: Op,
    /// The job id involved (launched, polled or cancelled), if any.
    pub job: Option<u64>,
    /// `None` on success, else a short error description.
    pub error: Option<String>,
}

impl fmt::Display for CallRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.op.label())?;
        match (self.op, self.job) {
            (Op::Launch, Some(id)) => write!(f, " → {id}")?,
            (_, Some(id)) => write!(f, " {id}")?,
            _ => {}
        }
        if let Some(e) = &self.error {
            write!(f, " ✗{e}")?;
        }
        Ok(())
    }
}

tokio::task_local! {
    static CURRENT: (usize, RefCell<Vec<CallRecord>>);
}

/// Runs `fut` as the reconcile of resource `index`, returning its output and the calls it made.
pub async fn with_resource<F: std::future::Future>(
    index: usize,
    fut: F,
) -> (F::Output, Vec<CallRecord>) {
    CURRENT
        .scope((index, RefCell::new(Vec::new())), async move {
            let out = fut.await;
            let calls = CURRENT.with(|(_, c)| c.take());
            (out, calls)
        })
        .await
}

/// Per-operation counters, global and per resource.
#[derive(Debug)]
pub struct CallStats {
    total: [AtomicU64; Op::ALL.len()],
    errors: [AtomicU64; Op::ALL.len()],
    per_resource: Vec<[AtomicU32; Op::ALL.len()]>,
    /// The idempotency-lookup counters of every client wrapped.
    meters: Mutex<Vec<KeyLookupMeter>>,
}

impl CallStats {
    /// Counters for `resources` resources.
    pub fn new(resources: usize) -> Self {
        Self {
            total: Default::default(),
            errors: Default::default(),
            per_resource: (0..resources).map(|_| Default::default()).collect(),
            meters: Mutex::new(Vec::new()),
        }
    }

    /// The idempotency-key lookups of every client wrapped, summed (the most pages of one
    /// call: the largest of any client).
    pub fn key_lookups(&self) -> provkit_aap::KeyLookupStats {
        let meters = self.meters.lock().unwrap_or_else(PoisonError::into_inner);
        meters
            .iter()
            .fold(provkit_aap::KeyLookupStats::default(), |mut sum, meter| {
                let s = meter.stats();
                sum.lookups += s.lookups;
                sum.pages += s.pages;
                sum.max_pages = sum.max_pages.max(s.max_pages);
                sum.unbounded_lookups += s.unbounded_lookups;
                sum.unbounded_pages += s.unbounded_pages;
                sum.unfinished += s.unfinished;
                sum.shared_reads += s.shared_reads;
                sum.shared_pages += s.shared_pages;
                sum.shared_answered += s.shared_answered;
                sum.found_lookups += s.found_lookups;
                sum.found_pages += s.found_pages;
                sum.tagged_lookups += s.tagged_lookups;
                sum.tagged_pages += s.tagged_pages;
                sum.tagged_found += s.tagged_found;
                sum
            })
    }

    fn record(&self, op: Op, job: Option<u64>, error: Option<String>) {
        let i = op.index();
        self.total[i].fetch_add(1, Ordering::Relaxed);
        if error.is_some() {
            self.errors[i].fetch_add(1, Ordering::Relaxed);
        }
        let _ = CURRENT.try_with(|(index, calls)| {
            if let Some(counters) = self.per_resource.get(*index) {
                counters[i].fetch_add(1, Ordering::Relaxed);
            }
            calls.borrow_mut().push(CallRecord { op, job, error });
        });
    }

    /// Calls of `op` made.
    pub fn total(&self, op: Op) -> u64 {
        self.total[op.index()].load(Ordering::Relaxed)
    }

    /// Calls of `op` that failed.
    pub fn errors(&self, op: Op) -> u64 {
        self.errors[op.index()].load(Ordering::Relaxed)
    }

    /// Calls of `op` made for resource `index`.
    pub fn for_resource(&self, index: usize, op: Op) -> u32 {
        self.per_resource
            .get(index)
            .map_or(0, |c| c[op.index()].load(Ordering::Relaxed))
    }

    /// All calls made for resource `index`.
    pub fn resource_total(&self, index: usize) -> u32 {
        Op::ALL.iter().map(|op| self.for_resource(index, *op)).sum()
    }
}

/// The counting [`AapApi`].
#[derive(Debug)]
pub struct CountingApi {
    inner: AapClient,
    stats: Arc<CallStats>,
    seen: Mutex<HashSet<String>>,
}

impl CountingApi {
    /// Wraps `client`.
    pub fn new(client: AapClient, stats: Arc<CallStats>) -> Self {
        stats
            .meters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(client.key_lookup_meter());
        Self {
            inner: client,
            stats,
            seen: Mutex::new(HashSet::new()),
        }
    }
}

fn short(e: &provkit_aap::Error) -> String {
    let text = e.to_string();
    let first = text.split(':').next().unwrap_or_default().trim();
    first.chars().take(40).collect()
}

#[async_trait::async_trait]
impl AapApi for CountingApi {
    async fn get_template(&self, name: &str) -> provkit_aap::Result<Template> {
        let r = self.inner.get_template(name).await;
        // The client caches successful lookups; count only the lookups that went to AAP (the first
        // success per name, and every failure).
        let first = r.is_ok()
            && self
                .seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(name.to_owned());
        if r.is_err() || first {
            self.stats
                .record(Op::GetTemplate, None, r.as_ref().err().map(short));
        }
        r
    }

    async fn launch_requirements(
        &self,
        template: &Template,
    ) -> provkit_aap::Result<provkit_aap::LaunchRequirements> {
        // Once per template and process (the provider caches the check); counted with the
        // template lookups.
        let r = self.inner.launch_requirements(template).await;
        self.stats
            .record(Op::GetTemplate, None, r.as_ref().err().map(short));
        r
    }

    async fn launch(
        &self,
        template: &Template,
        request: &LaunchRequest,
    ) -> provkit_aap::Result<Launched> {
        let r = self.inner.launch(template, request).await;
        self.stats.record(
            Op::Launch,
            r.as_ref().ok().map(|l| l.id),
            r.as_ref().err().map(short),
        );
        r
    }

    async fn get_unified(&self, kind: JobKind, id: u64) -> provkit_aap::Result<Job> {
        let r = self.inner.get_unified(kind, id).await;
        self.stats
            .record(Op::GetJob, Some(id), r.as_ref().err().map(short));
        r
    }

    async fn cancel(&self, kind: JobKind, id: u64) -> provkit_aap::Result<CancelOutcome> {
        let r = self.inner.cancel(kind, id).await;
        self.stats
            .record(Op::Cancel, Some(id), r.as_ref().err().map(short));
        r
    }

    async fn find_job_kind(&self, id: u64) -> provkit_aap::Result<Option<JobKind>> {
        let r = self.inner.find_job_kind(id).await;
        self.stats
            .record(Op::FindKind, Some(id), r.as_ref().err().map(short));
        r
    }

    // The status enrichment's list requests (a workflow's node jobs, a failed job's events) count
    // as job lists.
    async fn failed_job_events(
        &self,
        id: u64,
        limit: usize,
    ) -> provkit_aap::Result<Vec<provkit_aap::AapJobEvent>> {
        let r = self.inner.failed_job_events(id, limit).await;
        self.stats
            .record(Op::ListJobs, Some(id), r.as_ref().err().map(short));
        r
    }

    async fn workflow_node_jobs(&self, id: u64) -> provkit_aap::Result<Vec<Job>> {
        let r = self.inner.workflow_node_jobs(id).await;
        self.stats
            .record(Op::ListJobs, Some(id), r.as_ref().err().map(short));
        r
    }

    async fn job_with_skip_tag(
        &self,
        template_id: u64,
        tag: &str,
    ) -> provkit_aap::Result<provkit_aap::TagLookup> {
        let r = AapApi::job_with_skip_tag(&self.inner, template_id, tag).await;
        self.stats
            .record(Op::ListJobs, None, r.as_ref().err().map(short));
        r
    }

    async fn jobs_created_since(
        &self,
        kind: JobKind,
        template_kind: TemplateKind,
        template_id: u64,
        since: DateTime<Utc>,
    ) -> provkit_aap::Result<Vec<Job>> {
        let r = self
            .inner
            .jobs_created_since(kind, template_kind, template_id, since)
            .await;
        self.stats
            .record(Op::ListJobs, None, r.as_ref().err().map(short));
        r
    }

    async fn newest_job_with_key(
        &self,
        kind: JobKind,
        template_kind: TemplateKind,
        template_id: u64,
        since: DateTime<Utc>,
        key: &str,
    ) -> provkit_aap::Result<Option<Job>> {
        let r = self
            .inner
            .newest_job_with_key(kind, template_kind, template_id, since, key)
            .await;
        self.stats
            .record(Op::ListJobs, None, r.as_ref().err().map(short));
        r
    }

    #[allow(clippy::too_many_arguments)]
    async fn first_job_with_key_between(
        &self,
        kind: JobKind,
        template_kind: TemplateKind,
        template_id: u64,
        since: DateTime<Utc>,
        until: DateTime<Utc>,
        from_end: bool,
        key: &str,
    ) -> provkit_aap::Result<Option<Job>> {
        let r = self
            .inner
            .first_job_with_key_between(
                kind,
                template_kind,
                template_id,
                since,
                until,
                from_end,
                key,
            )
            .await;
        self.stats
            .record(Op::ListJobs, None, r.as_ref().err().map(short));
        r
    }

    async fn jobs_between(
        &self,
        window: &provkit_aap::JobWindow,
        after: Option<u64>,
        keys: &[String],
    ) -> provkit_aap::Result<provkit_aap::WindowJobs> {
        let r = self.inner.jobs_between(window, after, keys).await;
        let failed = match &r {
            Err(e) => Some(short(e)),
            Ok(read) => match &read.end {
                provkit_aap::WindowEnd::Failed(e) => Some(short(e)),
                _ => None,
            },
        };
        self.stats.record(Op::ListJobs, None, failed);
        r
    }

    async fn server_time(&self) -> provkit_aap::Result<Option<DateTime<Utc>>> {
        let r = self.inner.server_time().await;
        self.stats
            .record(Op::Ping, None, r.as_ref().err().map(short));
        r
    }

    fn launch_refused_for(&self) -> Option<std::time::Duration> {
        self.inner.launch_refused_for()
    }
}
