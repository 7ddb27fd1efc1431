//! Retry policy for idempotent calls: exponential backoff with jitter, `Retry-After`, bounds.
//!
//! Only idempotent calls (`GET`s and job cancellation) are retried, and only on 429, 502, 503,
//! 504, timeouts and connection errors. **A launch `POST` is never retried automatically**: a lost
//! answer does not mean no job was created (see the provider's idempotency lookup instead).

use std::time::{Duration, SystemTime};

use provkit_core::backoff::{Jitter, exponential};

/// How idempotent requests are retried.
///
/// ```
/// use std::time::Duration;
/// use provkit_aap::RetryConfig;
/// let retry = RetryConfig::default().max_retries(5).initial_backoff(Duration::from_millis(50));
/// assert_eq!(retry.get_max_retries(), 5);
/// assert_eq!(RetryConfig::disabled().get_max_retries(), 0);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct RetryConfig {
    pub(crate) max_retries: u32,
    pub(crate) initial_backoff: Duration,
    pub(crate) max_backoff: Duration,
    pub(crate) max_elapsed: Duration,
    pub(crate) jitter: bool,
}

impl Default for RetryConfig {
    /// 4 retries, 250 ms doubling up to 10 s per wait, at most 60 s in total, with jitter.
    fn default() -> Self {
        Self {
            max_retries: 4,
            initial_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(10),
            max_elapsed: Duration::from_secs(60),
            jitter: true,
        }
    }
}

impl RetryConfig {
    /// No retries at all.
    pub fn disabled() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// Maximum number of retries after the first attempt.
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// The first backoff; each further retry doubles it.
    #[must_use]
    pub fn initial_backoff(mut self, backoff: Duration) -> Self {
        self.initial_backoff = backoff;
        self
    }

    /// The cap of one backoff; a server's `Retry-After` above it ends the retries.
    #[must_use]
    pub fn max_backoff(mut self, backoff: Duration) -> Self {
        self.max_backoff = backoff;
        self
    }

    /// Total time budget: no retry is started that would end after it.
    #[must_use]
    pub fn max_elapsed(mut self, budget: Duration) -> Self {
        self.max_elapsed = budget;
        self
    }

    /// Full jitter on/off (on by default; off makes delays deterministic).
    #[must_use]
    pub fn jitter(mut self, on: bool) -> Self {
        self.jitter = on;
        self
    }

    /// The configured retry count.
    pub fn get_max_retries(&self) -> u32 {
        self.max_retries
    }

    /// The delay before retry number `retry` (0-based).
    ///
    /// Without `Retry-After`: `min(initial · 2^retry, max_backoff)`, shortened by `unit` ∈ [0, 1)
    /// times half of it when jitter is on (so within [50 %, 100 %]) (so a fleet does not retry in lockstep). With
    /// `Retry-After`, the server's value is used as is (the client gives up instead of waiting
    /// when it exceeds `max_backoff` or the remaining budget).
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, unit: f64) -> Duration {
        if let Some(after) = retry_after {
            return after;
        }
        let base = exponential(self.initial_backoff, self.max_backoff, retry);
        if self.jitter {
            Jitter::Shorten { max_fraction: 0.5 }.apply_with(base, || unit)
        } else {
            base
        }
    }
}

/// Parses a `Retry-After` header value: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
///
/// A date in the past yields zero. Anything else yields `None`.
///
/// ```
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
/// use provkit_aap::retry::parse_retry_after;
/// let now = UNIX_EPOCH + Duration::from_secs(1_445_412_480); // Wed, 21 Oct 2015 07:28:00 GMT
/// assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
/// assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now), Some(Duration::from_secs(30)));
/// ```
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return value.parse::<u64>().ok().map(Duration::from_secs);
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_445_412_480)
    }

    #[test]
    fn retry_after_vectors() {
        let cases = [
            ("0", Some(Duration::ZERO)),
            ("5", Some(Duration::from_secs(5))),
            (" 17 ", Some(Duration::from_secs(17))),
            ("Wed, 21 Oct 2015 07:28:00 GMT", Some(Duration::ZERO)),
            (
                "Wed, 21 Oct 2015 07:29:00 GMT",
                Some(Duration::from_secs(60)),
            ),
            ("Tue, 20 Oct 2015 07:28:00 GMT", Some(Duration::ZERO)),
            (
                "Wednesday, 21-Oct-15 07:28:10 GMT",
                Some(Duration::from_secs(10)),
            ),
            ("-1", None),
            ("1.5", None),
            ("soon", None),
            ("", None),
        ];
        for (raw, want) in cases {
            assert_eq!(parse_retry_after(raw, now()), want, "{raw:?}");
        }
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let cfg = RetryConfig::default()
            .jitter(false)
            .initial_backoff(Duration::from_millis(100))
            .max_backoff(Duration::from_millis(500));
        let got: Vec<_> = (0..5)
            .map(|n| cfg.delay(n, None, 0.3).as_millis())
            .collect();
        assert_eq!(got, vec![100, 200, 400, 500, 500]);
        assert_eq!(cfg.delay(100, None, 0.0), Duration::from_millis(500));
    }

    #[test]
    fn retry_after_is_used_verbatim() {
        let cfg = RetryConfig::default().max_backoff(Duration::from_secs(3));
        assert_eq!(
            cfg.delay(0, Some(Duration::from_secs(2)), 0.9),
            Duration::from_secs(2)
        );
        assert_eq!(
            cfg.delay(3, Some(Duration::from_secs(30)), 0.1),
            Duration::from_secs(30)
        );
    }

    proptest::proptest! {
        #[test]
        fn jitter_stays_within_half_and_full(retry in 0u32..40, unit in 0.0f64..1.0) {
            let cfg = RetryConfig::default();
            let full = cfg.clone().jitter(false).delay(retry, None, unit);
            let got = cfg.delay(retry, None, unit);
            proptest::prop_assert!(got <= full);
            proptest::prop_assert!(got >= full / 2);
        }
    }
}
