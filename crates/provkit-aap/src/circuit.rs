//! The fleet-wide circuit breaker: after a run of failed attempts (connection errors, timeouts,
//! 5xx) every request of the client — and of all its clones — fails fast with
//! [`Error::CircuitOpen`](crate::Error::CircuitOpen) for a cool-down; then one probe request at a
//! time tests recovery. Hand-written (about 100 lines of pure state machine, time passed in): the
//! breaker crates on crates.io either own the call (a `Future` wrapper that cannot see HTTP
//! statuses or `Retry-After`) or bring their own clock and metrics.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// How the circuit breaker trips and recovers.
///
/// ```
/// use std::time::Duration;
/// use provkit_aap::CircuitBreakerConfig;
/// let breaker = CircuitBreakerConfig::default()
///     .failure_threshold(3)
///     .cool_down(Duration::from_secs(20))
///     .probe_interval(Duration::from_secs(2));
/// assert_eq!(breaker.get_failure_threshold(), 3);
/// assert_eq!(CircuitBreakerConfig::disabled().get_failure_threshold(), 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitBreakerConfig {
    pub(crate) failure_threshold: u32,
    pub(crate) cool_down: Duration,
    pub(crate) probe_interval: Duration,
}

impl Default for CircuitBreakerConfig {
    /// Opens after 5 failed attempts in a row, stays open 10 s, then lets one probe through at a
    /// time (a probe that never answers frees the slot after 1 s).
    fn default() -> Self {
        Self {
            failure_threshold: 5,
            cool_down: Duration::from_secs(10),
            probe_interval: Duration::from_secs(1),
        }
    }
}

impl CircuitBreakerConfig {
    /// No circuit breaker: every request is sent.
    pub fn disabled() -> Self {
        Self {
            failure_threshold: 0,
            ..Self::default()
        }
    }

    /// Failed attempts in a row (across all clones of the client) that open the circuit; 0
    /// disables the breaker. A failure is a connection error, a timeout or a 5xx; any other
    /// answer resets the count.
    #[must_use]
    pub fn failure_threshold(mut self, failures: u32) -> Self {
        self.failure_threshold = failures;
        self
    }

    /// How long the circuit stays open before the first probe, and again after a failed probe.
    /// A `Retry-After` on the failure that opened it lengthens it.
    #[must_use]
    pub fn cool_down(mut self, cool_down: Duration) -> Self {
        self.cool_down = cool_down;
        self
    }

    /// At most one probe request is sent per interval: a probe that has not answered after it
    /// lets the next request probe.
    #[must_use]
    pub fn probe_interval(mut self, interval: Duration) -> Self {
        self.probe_interval = interval;
        self
    }

    /// The configured threshold (0: disabled).
    pub fn get_failure_threshold(&self) -> u32 {
        self.failure_threshold
    }
}

/// The circuit breaker's state, as [`AapClient::circuit_state`](crate::AapClient::circuit_state)
/// reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CircuitState {
    /// Requests are sent.
    Closed,
    /// Requests fail fast with [`Error::CircuitOpen`](crate::Error::CircuitOpen).
    Open,
    /// The cool-down is over: one probe request is (or may be) on its way; the others fail fast.
    HalfOpen,
}

impl CircuitState {
    /// `"closed"`, `"open"`, `"half_open"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open => "open",
            Self::HalfOpen => "half_open",
        }
    }
}

/// What the breaker says about a request about to be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Send it.
    Go,
    /// Send it as the probe.
    Probe,
    /// Do not send it; the next request may go after this long.
    Reject(Duration),
}

/// What one attempt told about the server's health.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The server answered (any status below 500).
    Healthy,
    /// Connection error, timeout or 5xx (with the `Retry-After` it carried).
    Failed(Option<Duration>),
    /// Nothing was learnt (the request was never sent).
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    Closed { failures: u32 },
    Open { until: Instant },
    Probing { since: Instant },
}

/// The state machine (pure: time is passed in).
#[derive(Debug)]
pub(crate) struct Machine {
    config: CircuitBreakerConfig,
    phase: Phase,
}

impl Machine {
    pub(crate) fn new(config: CircuitBreakerConfig) -> Self {
        Self {
            config,
            phase: Phase::Closed { failures: 0 },
        }
    }

    pub(crate) fn state(&self, now: Instant) -> CircuitState {
        match self.phase {
            Phase::Closed { .. } => CircuitState::Closed,
            Phase::Open { until } if now < until => CircuitState::Open,
            Phase::Open { .. } | Phase::Probing { .. } => CircuitState::HalfOpen,
        }
    }

    pub(crate) fn admit(&mut self, now: Instant) -> Admit {
        match self.phase {
            Phase::Closed { .. } => Admit::Go,
            Phase::Open { until } if now < until => Admit::Reject(until - now),
            Phase::Probing { since } if now < since + self.config.probe_interval => {
                Admit::Reject(since + self.config.probe_interval - now)
            }
            Phase::Open { .. } | Phase::Probing { .. } => {
                self.phase = Phase::Probing { since: now };
                Admit::Probe
            }
        }
    }

    /// Records an attempt's verdict; returns the new state when it changed.
    pub(crate) fn record(
        &mut self,
        now: Instant,
        verdict: Verdict,
        probe: bool,
    ) -> Option<CircuitState> {
        let before = self.state(now);
        match (verdict, self.phase) {
            (Verdict::Unknown, _) => return None,
            (Verdict::Healthy, _) => self.phase = Phase::Closed { failures: 0 },
            (Verdict::Failed(after), Phase::Closed { failures }) => {
                let failures = failures.saturating_add(1);
                self.phase = if failures >= self.config.failure_threshold {
                    self.open(now, after)
                } else {
                    Phase::Closed { failures }
                };
            }
            (Verdict::Failed(after), Phase::Probing { .. }) if probe => {
                self.phase = self.open(now, after);
            }
            // A request sent before the circuit opened, failing late: already counted as open.
            (Verdict::Failed(_), Phase::Open { .. } | Phase::Probing { .. }) => {}
        }
        let after = self.state(now);
        (after != before || (probe && after == CircuitState::Open)).then_some(after)
    }

    fn open(&self, now: Instant, retry_after: Option<Duration>) -> Phase {
        let hold = retry_after.map_or(self.config.cool_down, |r| r.max(self.config.cool_down));
        Phase::Open { until: now + hold }
    }
}

/// The breaker one client shares across clones; `None` inside when disabled.
#[derive(Debug)]
pub(crate) struct Breaker {
    machine: Option<Mutex<Machine>>,
}

impl Breaker {
    pub(crate) fn new(config: CircuitBreakerConfig) -> Self {
        Self {
            machine: (config.failure_threshold > 0).then(|| Mutex::new(Machine::new(config))),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Machine) -> R) -> Option<R> {
        let machine = self.machine.as_ref()?;
        let mut guard = machine
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Some(f(&mut guard))
    }

    pub(crate) fn state(&self) -> CircuitState {
        self.with(|m| m.state(Instant::now()))
            .unwrap_or(CircuitState::Closed)
    }

    pub(crate) fn admit(&self) -> Admit {
        self.with(|m| m.admit(Instant::now())).unwrap_or(Admit::Go)
    }

    /// Records a verdict; logs and returns a change of state.
    pub(crate) fn record(&self, verdict: Verdict, probe: bool) -> Option<CircuitState> {
        let changed = self
            .with(|m| m.record(Instant::now(), verdict, probe))
            .flatten()?;
        match changed {
            CircuitState::Open if probe => {
                tracing::warn!("AAP circuit breaker probe failed; circuit stays open");
            }
            CircuitState::Open => tracing::warn!(
                "AAP circuit breaker opened after repeated failures; requests fail fast"
            ),
            CircuitState::Closed => {
                tracing::info!("AAP circuit breaker closed; AAP answers again");
            }
            CircuitState::HalfOpen => {}
        }
        Some(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> CircuitBreakerConfig {
        CircuitBreakerConfig::default()
            .failure_threshold(3)
            .cool_down(Duration::from_secs(10))
            .probe_interval(Duration::from_secs(1))
    }

    const FAIL: Verdict = Verdict::Failed(None);

    #[tokio::test(start_paused = true)]
    async fn opens_after_the_threshold_and_fails_fast_for_the_cool_down() {
        let t0 = Instant::now();
        let mut m = Machine::new(config());
        assert_eq!(m.record(t0, FAIL, false), None);
        assert_eq!(
            m.record(t0, Verdict::Healthy, false),
            None,
            "a success resets"
        );
        assert_eq!(m.record(t0, FAIL, false), None);
        assert_eq!(m.record(t0, FAIL, false), None);
        assert_eq!(m.admit(t0), Admit::Go);
        assert_eq!(m.record(t0, FAIL, false), Some(CircuitState::Open));
        assert_eq!(m.admit(t0), Admit::Reject(Duration::from_secs(10)));
        let t = t0 + Duration::from_secs(4);
        assert_eq!(m.admit(t), Admit::Reject(Duration::from_secs(6)));
        assert_eq!(m.state(t), CircuitState::Open);
        // Unknown verdicts (nothing sent) and late failures change nothing.
        assert_eq!(m.record(t, Verdict::Unknown, false), None);
        assert_eq!(m.record(t, FAIL, false), None);
    }

    #[tokio::test(start_paused = true)]
    async fn one_probe_per_interval_then_close_or_reopen() {
        let t0 = Instant::now();
        let mut m = Machine::new(config().failure_threshold(1));
        m.record(t0, FAIL, false);
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(m.state(t1), CircuitState::HalfOpen);
        assert_eq!(m.admit(t1), Admit::Probe);
        assert_eq!(m.admit(t1), Admit::Reject(Duration::from_secs(1)));
        let lost = t1 + Duration::from_millis(1500);
        assert_eq!(m.admit(lost), Admit::Probe, "a probe that never answered");
        assert_eq!(
            m.record(lost, FAIL, true),
            Some(CircuitState::Open),
            "a failed probe reopens (a change worth logging)"
        );
        assert_eq!(m.admit(lost), Admit::Reject(Duration::from_secs(10)));
        let t2 = lost + Duration::from_secs(10);
        assert_eq!(m.admit(t2), Admit::Probe);
        assert_eq!(
            m.record(t2, Verdict::Healthy, true),
            Some(CircuitState::Closed)
        );
        assert_eq!(m.admit(t2), Admit::Go);
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_lengthens_the_cool_down_but_never_shortens_it() {
        let t0 = Instant::now();
        let mut m = Machine::new(config().failure_threshold(1));
        m.record(t0, Verdict::Failed(Some(Duration::from_secs(30))), false);
        assert_eq!(m.admit(t0), Admit::Reject(Duration::from_secs(30)));
        let mut m = Machine::new(config().failure_threshold(1));
        m.record(t0, Verdict::Failed(Some(Duration::from_secs(2))), false);
        assert_eq!(m.admit(t0), Admit::Reject(Duration::from_secs(10)));
    }

    #[test]
    fn disabled_breaker_always_admits() {
        let b = Breaker::new(CircuitBreakerConfig::disabled());
        for _ in 0..100 {
            assert_eq!(b.record(FAIL, false), None);
        }
        assert_eq!(b.admit(), Admit::Go);
        assert_eq!(b.state(), CircuitState::Closed);
    }

    proptest::proptest! {
        /// Whatever the sequence of verdicts, a rejected request is never told to wait longer than
        /// the longest hold, and at most one probe is admitted per probe interval.
        #[test]
        fn at_most_one_probe_per_interval(steps in proptest::collection::vec((0u8..4, 0u64..3000), 1..200)) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
            rt.block_on(async {
                let cfg = config().failure_threshold(2);
                let mut m = Machine::new(cfg.clone());
                let mut now = Instant::now();
                let mut last_probe: Option<Instant> = None;
                for (kind, advance_ms) in steps {
                    now += Duration::from_millis(advance_ms);
                    match m.admit(now) {
                        Admit::Probe => {
                            if let Some(prev) = last_probe {
                                proptest::prop_assert!(now - prev >= cfg.probe_interval);
                            }
                            last_probe = Some(now);
                            let verdict = if kind == 0 { Verdict::Healthy } else { FAIL };
                            m.record(now, verdict, true);
                        }
                        Admit::Reject(wait) => proptest::prop_assert!(wait <= cfg.cool_down),
                        Admit::Go => {
                            let verdict = match kind { 0 => Verdict::Healthy, 1 => Verdict::Unknown, _ => FAIL };
                            m.record(now, verdict, false);
                        }
                    }
                }
                Ok(())
            })?;
        }
    }
}
