//! The one time scale of a run: every duration of the scenario (poll interval, job durations,
//! backoff, lease and renew deadlines, client timeouts and retry sleeps) is divided by one
//! factor and then runs in **real** time, so relative timings stay as in production while a
//! run takes minutes instead of hours. (Tokio's paused time cannot be used: real sockets are
//! in use, and its auto-advance would fire client timeouts while a request waits on the
//! kernel.)

use std::time::Duration;

/// Scenario durations ÷ `factor` = wall durations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeScale {
    factor: f64,
}

impl TimeScale {
    /// A scale; `factor` is clamped to at least 1 (a scenario second lasts `1 / factor` s).
    pub fn new(factor: f64) -> Self {
        Self {
            factor: if factor.is_finite() {
                factor.max(1.0)
            } else {
                1.0
            },
        }
    }

    /// The factor.
    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// The wall duration of a scenario duration.
    pub fn wall(&self, scenario: Duration) -> Duration {
        scenario.div_f64(self.factor)
    }

    /// The wall duration of `secs` scenario seconds.
    pub fn secs(&self, secs: f64) -> Duration {
        self.wall(Duration::from_secs_f64(secs.max(0.0)))
    }

    /// The scenario duration of a wall duration.
    pub fn scenario(&self, wall: Duration) -> Duration {
        wall.mul_f64(self.factor)
    }
}

impl std::fmt::Display for TimeScale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "time scale ×{} (1 scenario second = {:.0} ms)",
            self.factor,
            1000.0 / self.factor
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_both_ways() {
        let s = TimeScale::new(10.0);
        assert_eq!(s.wall(Duration::from_secs(30)), Duration::from_secs(3));
        assert_eq!(s.scenario(Duration::from_secs(3)), Duration::from_secs(30));
        assert_eq!(TimeScale::new(0.0).factor(), 1.0);
    }
}
