//! A client-side token bucket, so a fleet-wide spec change cannot flood AAP.

use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// A request-rate limit: `per_second` sustained, `burst` at once.
///
/// ```
/// use provkit_aap::RateLimit;
/// let limit = RateLimit::new(5.0, 10);
/// assert_eq!(limit.burst(), 10);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimit {
    per_second: f64,
    burst: u32,
}

impl RateLimit {
    /// `per_second` requests per second on average (values ≤ 0 or not finite mean 1/s), at most
    /// `burst` (≥ 1) in a row.
    pub fn new(per_second: f64, burst: u32) -> Self {
        let per_second = if per_second.is_finite() && per_second > 0.0 {
            per_second
        } else {
            1.0
        };
        Self {
            per_second,
            burst: burst.max(1),
        }
    }

    /// The sustained rate.
    pub fn per_second(&self) -> f64 {
        self.per_second
    }

    /// The bucket size.
    pub fn burst(&self) -> u32 {
        self.burst
    }
}

/// Token-bucket state (pure: time is passed in).
#[derive(Debug)]
pub(crate) struct Bucket {
    limit: RateLimit,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    pub(crate) fn new(limit: RateLimit, now: Instant) -> Self {
        Self {
            limit,
            tokens: f64::from(limit.burst),
            last: now,
        }
    }

    /// Takes a token, or says how long to wait for one.
    pub(crate) fn try_take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens =
            (self.tokens + elapsed * self.limit.per_second).min(f64::from(self.limit.burst));
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (1.0 - self.tokens) / self.limit.per_second,
            ))
        }
    }
}

/// A shared limiter; `acquire` waits (tokio time) for a token.
#[derive(Debug)]
pub(crate) struct RateLimiter {
    bucket: Mutex<Bucket>,
}

impl RateLimiter {
    pub(crate) fn new(limit: RateLimit) -> Self {
        Self {
            bucket: Mutex::new(Bucket::new(limit, Instant::now())),
        }
    }

    pub(crate) async fn acquire(&self) {
        loop {
            let wait = {
                let mut bucket = match self.bucket.lock() {
                    Ok(guard) => guard,
                    Err(poisoned) => poisoned.into_inner(),
                };
                match bucket.try_take(Instant::now()) {
                    Ok(()) => return,
                    Err(wait) => wait,
                }
            };
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn bucket_allows_burst_then_paces() {
        let start = Instant::now();
        let mut bucket = Bucket::new(RateLimit::new(2.0, 3), start);
        for _ in 0..3 {
            assert_eq!(bucket.try_take(start), Ok(()));
        }
        assert_eq!(bucket.try_take(start), Err(Duration::from_millis(500)));
        assert_eq!(bucket.try_take(start + Duration::from_millis(500)), Ok(()));
        assert!(bucket.try_take(start + Duration::from_millis(600)).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn limiter_spaces_requests_in_virtual_time() {
        let limiter = RateLimiter::new(RateLimit::new(10.0, 1));
        let start = Instant::now();
        for _ in 0..11 {
            limiter.acquire().await;
        }
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(999), "{elapsed:?}");
        assert!(elapsed < Duration::from_millis(1100), "{elapsed:?}");
    }

    #[test]
    fn nonsense_rates_are_sanitised() {
        assert_eq!(RateLimit::new(f64::NAN, 0), RateLimit::new(1.0, 1));
        assert_eq!(RateLimit::new(-3.0, 2).per_second(), 1.0);
    }
}
