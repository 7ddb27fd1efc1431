//! Typed errors a [`ProvisioningProvider`](crate::ProvisioningProvider) returns, and helpers that find
//! them anywhere in an error chain.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

/// A boxed, thread-safe error used as the `source` of provider errors.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// What a failed launch call tells the engine about whether a job was created.
///
/// The engine uses this to keep launches exactly-once: after [`LaunchCertainty::Unknown`] it asks the
/// provider to [find](crate::ProvisioningProvider::find_job_by_idempotency_key) the job carrying the
/// attempt's idempotency key before it launches again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LaunchCertainty {
    /// The provider is certain that no job was created (request rejected before the job existed, rate
    /// limit, template not found, validation error).
    NotMade,
    /// The request may have created a job: the answer was lost (timeout, connection reset, malformed
    /// response) or the provider cannot tell.
    Unknown,
}

/// An error returned by a [`ProvisioningProvider`](crate::ProvisioningProvider).
///
/// Providers choose the variant that describes the failure; the engine reacts to the variant, not to
/// the message:
///
/// | Variant | Engine reaction | [`LaunchCertainty`] |
/// |---|---|---|
/// | [`RateLimited`](Self::RateLimited) | requeue after `retry_after`, record nothing | `NotMade` |
/// | [`NotFound`](Self::NotFound) | while polling: the job was purged, it becomes `Failed` | `NotMade` |
/// | [`LaunchNotMade`](Self::LaunchNotMade) | error, next reconcile launches again | `NotMade` |
/// | [`OutcomeUnknown`](Self::OutcomeUnknown) | error, the next launch first looks the job up by key | `Unknown` |
/// | [`Unsupported`](Self::Unsupported) | the optional operation is skipped | `NotMade` |
/// | [`Other`](Self::Other) | error (treated as outcome unknown on a launch) | `Unknown` |
///
/// ```
/// use std::time::Duration;
/// use provkit_lifecycle::{ProviderError, find_rate_limit};
///
/// let err = ProviderError::rate_limited(Duration::from_secs(90));
/// assert_eq!(err.to_string(), "rate limit active, retry after 1m30s");
///
/// // Found through any number of wrapping layers:
/// let wrapped = ProviderError::other_with_source("launch failed", err);
/// assert_eq!(find_rate_limit(&wrapped), Some(Duration::from_secs(90)));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider (or its backend) throttles requests; try again after `retry_after`.
    #[error("rate limit active, retry after {}", GoDuration(*retry_after))]
    RateLimited {
        /// How long to wait before the next attempt (may be zero).
        retry_after: Duration,
    },
    /// The object asked about (a job, a template) does not exist in the backend.
    #[error("{what} not found")]
    NotFound {
        /// What was not found, for example `"job 123"`.
        what: String,
        /// The underlying error, if any.
        #[source]
        source: Option<BoxError>,
    },
    /// A launch failed and the provider is **certain** no job was created.
    #[error("{message}")]
    LaunchNotMade {
        /// A human-readable description.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<BoxError>,
    },
    /// A launch request was sent but its outcome is unknown (the answer was lost or unreadable), so a
    /// job may exist.
    #[error("{message}")]
    OutcomeUnknown {
        /// A human-readable description.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<BoxError>,
    },
    /// The provider does not implement an optional operation.
    #[error("{operation} is not supported by provider {provider}")]
    Unsupported {
        /// The operation, for example `"find_job_by_idempotency_key"`.
        operation: &'static str,
        /// The provider's [`name`](crate::ProvisioningProvider::name).
        provider: String,
    },
    /// Any other failure.
    #[error("{message}")]
    Other {
        /// A human-readable description.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<BoxError>,
    },
}

impl ProviderError {
    /// A [`RateLimited`](Self::RateLimited) error.
    pub fn rate_limited(retry_after: Duration) -> Self {
        Self::RateLimited { retry_after }
    }

    /// A [`NotFound`](Self::NotFound) error without a source.
    pub fn not_found(what: impl Into<String>) -> Self {
        Self::NotFound {
            what: what.into(),
            source: None,
        }
    }

    /// A [`NotFound`](Self::NotFound) error with a source.
    pub fn not_found_with_source(what: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::NotFound {
            what: what.into(),
            source: Some(source.into()),
        }
    }

    /// A [`LaunchNotMade`](Self::LaunchNotMade) error.
    pub fn launch_not_made(message: impl Into<String>, source: Option<BoxError>) -> Self {
        Self::LaunchNotMade {
            message: message.into(),
            source,
        }
    }

    /// An [`OutcomeUnknown`](Self::OutcomeUnknown) error.
    pub fn outcome_unknown(message: impl Into<String>, source: Option<BoxError>) -> Self {
        Self::OutcomeUnknown {
            message: message.into(),
            source,
        }
    }

    /// An [`Unsupported`](Self::Unsupported) error.
    pub fn unsupported(operation: &'static str, provider: impl Into<String>) -> Self {
        Self::Unsupported {
            operation,
            provider: provider.into(),
        }
    }

    /// An [`Other`](Self::Other) error without a source.
    pub fn other(message: impl Into<String>) -> Self {
        Self::Other {
            message: message.into(),
            source: None,
        }
    }

    /// An [`Other`](Self::Other) error with a source. Its `Display` is `message` alone, like every
    /// provkit error's (the source is not repeated); render it with [`ErrorChain`] to show both.
    ///
    /// ```
    /// use provkit_lifecycle::{ErrorChain, ProviderError};
    /// let err = ProviderError::other_with_source("failed to get job status", ProviderError::not_found("job 7"));
    /// assert_eq!(err.to_string(), "failed to get job status");
    /// assert_eq!(ErrorChain(&err).to_string(), "failed to get job status: job 7 not found");
    /// ```
    pub fn other_with_source(message: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Other {
            message: message.into(),
            source: Some(source.into()),
        }
    }

    /// The retry-after duration when this error, or any error in its source chain, is a rate limit.
    pub fn retry_after(&self) -> Option<Duration> {
        find_rate_limit(self)
    }

    /// True when this error, or any error in its source chain, is a rate limit.
    pub fn is_rate_limited(&self) -> bool {
        self.retry_after().is_some()
    }

    /// True when this error, or any error in its source chain, is a [`NotFound`](Self::NotFound).
    pub fn is_not_found(&self) -> bool {
        find_not_found(self)
    }

    /// True for [`Unsupported`](Self::Unsupported).
    pub fn is_unsupported(&self) -> bool {
        matches!(self, Self::Unsupported { .. })
    }

    /// Whether a launch that failed with this error may have created a job.
    ///
    /// Rate limits, not-found, unsupported and [`LaunchNotMade`](Self::LaunchNotMade) are
    /// [`NotMade`](LaunchCertainty::NotMade); [`OutcomeUnknown`](Self::OutcomeUnknown) and
    /// [`Other`](Self::Other) are [`Unknown`](LaunchCertainty::Unknown) (the conservative answer).
    pub fn launch_certainty(&self) -> LaunchCertainty {
        match self {
            Self::RateLimited { .. }
            | Self::NotFound { .. }
            | Self::LaunchNotMade { .. }
            | Self::Unsupported { .. } => LaunchCertainty::NotMade,
            Self::OutcomeUnknown { .. } | Self::Other { .. } => {
                if self.is_rate_limited() {
                    LaunchCertainty::NotMade
                } else {
                    LaunchCertainty::Unknown
                }
            }
        }
    }
}

/// A stand-alone rate-limit error for providers that keep their own error types: wrap it as the
/// `source` of your error and [`find_rate_limit`] still finds it (Go's `RateLimitError`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("rate limit active, retry after {}", GoDuration(self.retry_after))]
pub struct RateLimitError {
    /// How long to wait before the next attempt.
    pub retry_after: Duration,
}

/// An answer a provider cannot give yet, with when to ask again — for example an idempotency
/// lookup of another process's launch intent whose launch window is still open (its job may
/// yet appear). Wrap it as the `source` of a [`ProviderError`]; provkit-kube's error policy
/// requeues the object after `retry_after` ([`find_retry_later`]). It is not a rate limit
/// ([`find_rate_limit`] does not find it), and its `Display` is the message alone, so a
/// deferral repeated with a shorter wait keeps the same text.
///
/// ```
/// use std::time::Duration;
/// use provkit_lifecycle::{ProviderError, RetryLater, find_rate_limit, find_retry_later};
///
/// let err = ProviderError::other_with_source(
///     "idempotency lookup deferred",
///     RetryLater::new("the launch window closes at 12:00:05Z", Duration::from_secs(3)),
/// );
/// assert_eq!(find_retry_later(&err), Some(Duration::from_secs(3)));
/// assert_eq!(find_rate_limit(&err), None);
/// assert_eq!(
///     provkit_lifecycle::ErrorChain(&err).to_string(),
///     "idempotency lookup deferred: the launch window closes at 12:00:05Z"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct RetryLater {
    /// Why the answer has to wait.
    pub message: String,
    /// How long until asking again can give the answer.
    pub retry_after: Duration,
}

impl RetryLater {
    /// An answer to ask for again after `retry_after`, for the reason `message`.
    pub fn new(message: impl Into<String>, retry_after: Duration) -> Self {
        Self {
            message: message.into(),
            retry_after,
        }
    }
}

/// Finds a [`RetryLater`] anywhere in an error chain and returns its wait.
pub fn find_retry_later(err: &(dyn StdError + 'static)) -> Option<Duration> {
    find_in_chain(err, |e| {
        e.downcast_ref::<RetryLater>().map(|r| r.retry_after)
    })
}

/// The first answer `found` gives for an error of `err`'s chain (`err`, then each `source()`).
fn find_in_chain<T>(
    err: &(dyn StdError + 'static),
    found: impl Fn(&(dyn StdError + 'static)) -> Option<T>,
) -> Option<T> {
    let mut current: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(answer) = found(e) {
            return Some(answer);
        }
        current = e.source();
    }
    None
}

/// Finds a rate limit anywhere in an error chain ([`ProviderError::RateLimited`] or
/// [`RateLimitError`]) and returns its retry-after duration (Go's `AsRateLimitError`).
pub fn find_rate_limit(err: &(dyn StdError + 'static)) -> Option<Duration> {
    find_in_chain(err, |e| match e.downcast_ref::<ProviderError>() {
        Some(ProviderError::RateLimited { retry_after }) => Some(*retry_after),
        _ => e.downcast_ref::<RateLimitError>().map(|r| r.retry_after),
    })
}

/// True when any error in the chain is a [`ProviderError::NotFound`].
pub fn find_not_found(err: &(dyn StdError + 'static)) -> bool {
    find_in_chain(err, |e| {
        matches!(
            e.downcast_ref::<ProviderError>(),
            Some(ProviderError::NotFound { .. })
        )
        .then_some(())
    })
    .is_some()
}

/// Displays an error and its whole `source()` chain, joined with `": "` — the way to render an
/// error for a human (a job message, a condition, a log line), since each error's own `Display`
/// does not repeat its source.
///
/// ```
/// use provkit_lifecycle::{ErrorChain, ProviderError};
/// let inner = ProviderError::not_found("job 7");
/// let outer = ProviderError::launch_not_made("failed to launch job template", Some(Box::new(inner)));
/// assert_eq!(ErrorChain(&outer).to_string(), "failed to launch job template: job 7 not found");
/// ```
#[derive(Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a (dyn StdError + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut current = self.0.source();
        while let Some(e) = current {
            write!(f, ": {e}")?;
            current = e.source();
        }
        Ok(())
    }
}

impl fmt::Debug for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Formats a duration like Go's `time.Duration.String()` (`45s`, `1m30s`, `2h0m0s`, `1.5s`, `0s`).
#[derive(Clone, Copy, Debug)]
pub struct GoDuration(pub Duration);

impl fmt::Display for GoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        let total_nanos = d.as_nanos();
        if total_nanos == 0 {
            return f.write_str("0s");
        }
        if total_nanos < 1_000 {
            return write!(f, "{total_nanos}ns");
        }
        if total_nanos < 1_000_000 {
            return write!(f, "{}µs", trim_fraction(total_nanos, 1_000));
        }
        if total_nanos < 1_000_000_000 {
            return write!(f, "{}ms", trim_fraction(total_nanos, 1_000_000));
        }
        let secs = d.as_secs();
        let hours = secs / 3600;
        let minutes = (secs % 3600) / 60;
        let seconds_nanos = u128::from(secs % 60) * 1_000_000_000 + u128::from(d.subsec_nanos());
        let seconds = trim_fraction(seconds_nanos, 1_000_000_000);
        if hours > 0 {
            write!(f, "{hours}h{minutes}m{seconds}s")
        } else if minutes > 0 {
            write!(f, "{minutes}m{seconds}s")
        } else {
            write!(f, "{seconds}s")
        }
    }
}

fn trim_fraction(value: u128, unit: u128) -> String {
    let whole = value / unit;
    let frac = value % unit;
    if frac == 0 {
        return whole.to_string();
    }
    let width = unit.to_string().len() - 1;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_duration_strings() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_secs(45), "45s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(120), "2m0s"),
            (Duration::from_secs(7200), "2h0m0s"),
            (Duration::from_millis(1500), "1.5s"),
            (Duration::from_millis(250), "250ms"),
            (Duration::from_nanos(12), "12ns"),
        ];
        for (d, want) in cases {
            assert_eq!(GoDuration(d).to_string(), want, "{d:?}");
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] RateLimitError);

    #[test]
    fn rate_limit_found_through_foreign_wrappers() {
        let err = Outer(RateLimitError {
            retry_after: Duration::from_secs(5),
        });
        assert_eq!(find_rate_limit(&err), Some(Duration::from_secs(5)));
        let plain = ProviderError::other("boom");
        assert_eq!(find_rate_limit(&plain), None);
        assert!(!plain.is_rate_limited());
    }

    #[test]
    fn classification() {
        assert_eq!(
            ProviderError::rate_limited(Duration::ZERO).launch_certainty(),
            LaunchCertainty::NotMade
        );
        assert_eq!(
            ProviderError::not_found("template x").launch_certainty(),
            LaunchCertainty::NotMade
        );
        assert_eq!(
            ProviderError::launch_not_made("400", None).launch_certainty(),
            LaunchCertainty::NotMade
        );
        assert_eq!(
            ProviderError::outcome_unknown("timeout", None).launch_certainty(),
            LaunchCertainty::Unknown
        );
        assert_eq!(
            ProviderError::other("?").launch_certainty(),
            LaunchCertainty::Unknown
        );
        let wrapped_rl = ProviderError::other_with_source(
            "x",
            ProviderError::rate_limited(Duration::from_secs(1)),
        );
        assert_eq!(wrapped_rl.launch_certainty(), LaunchCertainty::NotMade);
        let wrapped_nf = ProviderError::other_with_source("x", ProviderError::not_found("job 1"));
        assert!(wrapped_nf.is_not_found());
        assert_eq!(ErrorChain(&wrapped_nf).to_string(), "x: job 1 not found");
    }
}
