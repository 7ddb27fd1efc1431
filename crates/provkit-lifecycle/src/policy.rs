//! The engine's tunables, with Go's values as defaults.

use std::num::NonZeroUsize;
use std::time::Duration;

use crate::decide::{Backoff, DEFAULT_STATUS_POLL_INTERVAL, LegacyJobs};

/// Random variation of requeue durations (provkit-core's, re-exported): the engine uses
/// [`Jitter::Proportional`], which only ever delays, so a retry never comes before its backoff.
pub use provkit_core::backoff::Jitter;

/// When the engine asks the provider to find a job by idempotency key before launching **when no
/// launch intent is pending**.
///
/// With an [`IntentStore`](crate::IntentStore) hook (provkit-kube always passes one), every launch
/// is preceded by a persisted intent and a pending intent is always resolved by a lookup first,
/// whatever this setting says; that is what makes launches exactly-once across crashes and refused
/// status writes for providers with lookups. This setting only adds lookups for attempts without a
/// pending intent, and matters mostly for engines run **without** an intent store (with one, the
/// "after an unknown outcome" part adds nothing — the outcome's intent was resolved in its window
/// — and is skipped; `Always` and `CheapLookup` still look up):
///
/// | Setting | Lookups (no intent pending) | Guarantee without an intent store |
/// |---|---|---|
/// | `ProviderDefault` | every launch if the provider reports `CheapLookup`; else after an unknown outcome this engine saw | exactly-once for lost answers while the process lives; a crash between launch and flush can duplicate (unless `CheapLookup`) |
/// | `Always` | every launch (provider with any lookup) | exactly-once across crashes too, at one lookup (AAP: one list request) per launch |
/// | `AfterUnknownOutcome` | only after an unknown outcome this engine saw | as `ProviderDefault` without `CheapLookup` |
///
/// `Always` is kept for engines without an intent store (a custom controller that persists only the
/// job history): it is their only crash-safe choice. Providers without lookups
/// ([`IdempotencySupport::Unsupported`](crate::IdempotencySupport::Unsupported)) are
/// **at-least-once** under every setting, with or without an intent store: a launch whose answer is
/// lost is launched again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum LookupBeforeLaunch {
    /// **Default.** Before every launch if the provider reports
    /// [`CheapLookup`](crate::IdempotencySupport::CheapLookup); otherwise only for attempts whose
    /// previous launch this engine saw end with an unknown outcome.
    #[default]
    ProviderDefault,
    /// Before every launch whenever the provider supports lookups at all: crash-safe without an
    /// intent store, at the price of one lookup per launch.
    Always,
    /// Only after an unknown outcome this engine observed.
    AfterUnknownOutcome,
}

/// The engine's tunables. `Default` gives Go's values and provkit's fixed behaviours;
/// [`go_v0_1_1`](Self::go_v0_1_1) and [`go_monorepo`](Self::go_monorepo) give the behaviour sets of the
/// two Go versions (docs/migrating-from-go.md lists the differences).
///
/// The default is neither Go set: it fixes the Go bugs provkit documents and **adopts** legacy jobs
/// ([`LegacyJobs::Adopt`]) — unlike v0.1.1 a later spec change re-provisions, and unlike the newest
/// Go operator a cut-over does not re-provision every resource whose history predates config
/// versions.
///
/// ```
/// use std::time::Duration;
/// use provkit_lifecycle::{Jitter, LifecyclePolicy};
///
/// let mut policy = LifecyclePolicy::default();
/// assert_eq!(policy.backoff.base, Duration::from_secs(120));
/// assert_eq!(policy.backoff.max, Duration::from_secs(1800));
/// assert_eq!(policy.poll_interval, Duration::from_secs(30));
/// assert_eq!(policy.max_history.get(), 10);
/// policy.poll_jitter = Jitter::Proportional { max_fraction: 0.2 };
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LifecyclePolicy {
    /// Backoff bounds for failed jobs (2 min .. 30 min).
    pub backoff: Backoff,
    /// How often a running job is polled (30 s).
    pub poll_interval: Duration,
    /// The history cap shared by provision and deprovision jobs (10).
    pub max_history: NonZeroUsize,
    /// Jitter added to backoff waits.
    pub backoff_jitter: Jitter,
    /// Jitter added to poll intervals.
    pub poll_jitter: Jitter,
    /// Jitter added to the requeue after a rate limit (a `Retry-After`, an open circuit
    /// breaker): default up to half of the wait ([`Jitter::Proportional`] with
    /// `max_fraction: 0.5`), so a fleet refused together does not come back in the same instant
    /// to be refused again. Jitter only delays: the requeue is never earlier than the wait
    /// asked for (nor than [`min_requeue`](Self::min_requeue), to which it is applied too).
    /// [`go_v0_1_1`](Self::go_v0_1_1) turns it off (Go requeues after exactly the wait).
    pub rate_limit_jitter: Jitter,
    /// Legacy-job handling (default: adopt; [`LegacyJobs::SkipForever`] keeps Go's behaviour).
    pub legacy_jobs: LegacyJobs,
    /// Run the stale-cache check before a **backoff retry** too, not only before a plain trigger
    /// (default true; Go checks only before a plain trigger, so a reconcile on a stale copy could retry
    /// twice).
    pub stale_check_before_backoff_retry: bool,
    /// Treat the cache as stale when the API server's latest provision job is a different (even
    /// terminal) job than the cached latest one (default true; Go only looks for non-terminal jobs).
    pub stale_check_newer_terminal_job: bool,
    /// When the stale-cache check itself fails: `true` (default, as Go) proceeds with the launch;
    /// `false` requeues after the poll interval instead.
    pub stale_check_fail_open: bool,
    /// When to look a job up by idempotency key before launching.
    pub lookup_before_launch: LookupBeforeLaunch,
    /// A job the provider no longer knows (not-found while polling) becomes `Failed` (default true;
    /// Go polls it forever).
    pub purged_jobs_fail: bool,
    /// After a poll observes `Failed`/`Canceled`, requeue after the remaining backoff (default true;
    /// Go returns no requeue and relies on the status-write event).
    pub requeue_after_failed_poll: bool,
    /// The smallest timed requeue the engine returns (1 s); a zero retry-after of a rate limit becomes
    /// this, so it never turns into "done".
    pub min_requeue: Duration,
}

impl Default for LifecyclePolicy {
    fn default() -> Self {
        Self {
            backoff: Backoff::default(),
            poll_interval: DEFAULT_STATUS_POLL_INTERVAL,
            max_history: provkit_core::DEFAULT_MAX_JOB_HISTORY,
            backoff_jitter: Jitter::None,
            poll_jitter: Jitter::None,
            rate_limit_jitter: Jitter::Proportional { max_fraction: 0.5 },
            legacy_jobs: LegacyJobs::Adopt,
            stale_check_before_backoff_retry: true,
            stale_check_newer_terminal_job: true,
            stale_check_fail_open: true,
            lookup_before_launch: LookupBeforeLaunch::ProviderDefault,
            purged_jobs_fail: true,
            requeue_after_failed_poll: true,
            min_requeue: Duration::from_secs(1),
        }
    }
}

impl LifecyclePolicy {
    /// The Go operator **v0.1.1** (osac-project/osac-operator `pkg/provisioning`, the version
    /// osac-provisioning.md describes): Go's exact behaviour for every switch provkit changed —
    /// legacy jobs skipped forever, stale check only for non-terminal jobs and only before plain
    /// triggers, purged jobs polled forever, no requeue after a failed poll. The history cap never
    /// evicting a target's latest provision job (provkit-core) is not switchable. No jitter on
    /// rate-limit requeues either ([`rate_limit_jitter`](Self::rate_limit_jitter)).
    ///
    /// ```
    /// use provkit_lifecycle::{LifecyclePolicy, decide::LegacyJobs};
    /// assert_eq!(LifecyclePolicy::go_v0_1_1().legacy_jobs, LegacyJobs::SkipForever);
    /// assert_eq!(LifecyclePolicy::go_v0_1_1(), LifecyclePolicy::go_compatible());
    /// ```
    pub fn go_v0_1_1() -> Self {
        Self {
            legacy_jobs: LegacyJobs::SkipForever,
            stale_check_before_backoff_retry: false,
            stale_check_newer_terminal_job: false,
            purged_jobs_fail: false,
            requeue_after_failed_poll: false,
            rate_limit_jitter: Jitter::None,
            ..Self::default()
        }
    }

    /// The newest Go operator (the `osac-operator/pkg/provisioning` package inside the
    /// osac-project/osac monorepo, the version with multi-target lifecycles): as
    /// [`go_v0_1_1`](Self::go_v0_1_1) except that the legacy Skip path is gone
    /// ([`LegacyJobs::Reprovision`]: a succeeded job with an empty config version no longer counts
    /// as applied, so such a resource is provisioned once more, and an empty desired version is
    /// never "applied"). Multi-target histories ([`MultiTargetLifecycle`](crate::MultiTargetLifecycle))
    /// and the provision history handed to `trigger_deprovision` work the same under every policy.
    ///
    /// ```
    /// use provkit_lifecycle::{LifecyclePolicy, decide::LegacyJobs};
    /// let newest = LifecyclePolicy::go_monorepo();
    /// assert_eq!(newest.legacy_jobs, LegacyJobs::Reprovision);
    /// assert_eq!(
    ///     newest.with_legacy_jobs(LegacyJobs::SkipForever),
    ///     LifecyclePolicy::go_v0_1_1(),
    /// );
    /// ```
    pub fn go_monorepo() -> Self {
        Self {
            legacy_jobs: LegacyJobs::Reprovision,
            ..Self::go_v0_1_1()
        }
    }

    /// The same as [`go_v0_1_1`](Self::go_v0_1_1), the only Go version this name ever meant; kept for
    /// existing callers.
    pub fn go_compatible() -> Self {
        Self::go_v0_1_1()
    }

    /// Go's `IsConfigApplied` under this policy's legacy rule (see
    /// [`is_config_applied_under`](crate::decide::is_config_applied_under)).
    pub fn is_config_applied(&self, jobs: &[provkit_core::JobStatus], desired: &str) -> bool {
        crate::decide::is_config_applied_under(jobs, desired, self.legacy_jobs)
    }

    /// Sets the poll interval.
    #[must_use]
    pub fn with_poll_interval(mut self, poll_interval: Duration) -> Self {
        self.poll_interval = poll_interval;
        self
    }

    /// Sets the smallest timed requeue ([`min_requeue`](Self::min_requeue)). Tests that poll
    /// fast lower it with the poll interval:
    ///
    /// ```
    /// use std::time::Duration;
    /// use provkit_lifecycle::LifecyclePolicy;
    /// let fast = LifecyclePolicy::default()
    ///     .with_poll_interval(Duration::from_millis(100))
    ///     .with_min_requeue(Duration::from_millis(10));
    /// assert_eq!(fast.min_requeue, Duration::from_millis(10));
    /// ```
    #[must_use]
    pub fn with_min_requeue(mut self, min_requeue: Duration) -> Self {
        self.min_requeue = min_requeue;
        self
    }

    /// Sets the history cap.
    #[must_use]
    pub fn with_max_history(mut self, max_history: NonZeroUsize) -> Self {
        self.max_history = max_history;
        self
    }

    /// Sets the backoff bounds.
    #[must_use]
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Sets the legacy-job handling.
    #[must_use]
    pub fn with_legacy_jobs(mut self, legacy_jobs: LegacyJobs) -> Self {
        self.legacy_jobs = legacy_jobs;
        self
    }

    pub(crate) fn poll_requeue(&self) -> Duration {
        self.poll_jitter
            .apply(self.poll_interval)
            .max(self.min_requeue)
    }

    pub(crate) fn backoff_requeue(&self, wait: Duration) -> Duration {
        self.backoff_jitter.apply(wait).max(self.min_requeue)
    }

    /// The requeue after a rate limit asking to wait `retry_after`: at least that (and at least
    /// [`min_requeue`](Self::min_requeue)), plus [`rate_limit_jitter`](Self::rate_limit_jitter).
    ///
    /// ```
    /// use std::time::Duration;
    /// use provkit_lifecycle::{Jitter, LifecyclePolicy};
    ///
    /// let policy = LifecyclePolicy::default();
    /// let wait = Duration::from_secs(30);
    /// let requeue = policy.rate_limit_requeue(wait);
    /// assert!(requeue >= wait && requeue <= wait.mul_f64(1.5));
    /// let exact = policy.with_rate_limit_jitter(Jitter::None);
    /// assert_eq!(exact.rate_limit_requeue(wait), wait);
    /// assert_eq!(exact.rate_limit_requeue(Duration::ZERO), Duration::from_secs(1));
    /// ```
    pub fn rate_limit_requeue(&self, retry_after: Duration) -> Duration {
        self.rate_limit_jitter
            .apply(retry_after.max(self.min_requeue))
    }

    /// Sets the jitter added to the requeue after a rate limit.
    #[must_use]
    pub fn with_rate_limit_jitter(mut self, jitter: Jitter) -> Self {
        self.rate_limit_jitter = jitter;
        self
    }
}
