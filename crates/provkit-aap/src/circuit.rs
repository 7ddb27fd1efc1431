//! The fleet-wide circuit breaker: after a run of failed attempts (connection errors, timeouts,
//! 5xx) every request of the client — and of all its clones — fails fast with
//! [`Error::CircuitOpen`](crate::Error::CircuitOpen) for a cool-down; then one probe request at a
//! time tests recovery. The breaker counts the attempts on their way even while all is well, so
//! from the first failure of a run on it lets through only as many more as could still open it:
//! a failing AAP receives at most `threshold` requests of a run (the first failure included),
//! or — when more were already on their way when that failure came back — none beyond those.
//! A request that finds those places taken waits (up to the
//! [admission wait](CircuitBreakerConfig::admission_wait)) for the verdict of the attempts on
//! their way rather than failing at once: one failure among many answers costs a few
//! milliseconds, not a refused request.
//! Hand-written (about 100 lines of pure state machine, time passed in): the
//! breaker crates on crates.io either own the call (a `Future` wrapper that cannot see HTTP
//! statuses or `Retry-After`) or bring their own clock and metrics.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// How the circuit breaker trips and recovers.
///
/// - **Closed**, no failure outstanding: every request is sent (and counted while on its way).
/// - **Closed after a failure** (`n` failures in a row, fewer than the threshold): at most
///   `threshold − n` requests may be on their way at a time — those sent before the failure
///   came back included — as many as could still open the circuit; a further request waits for
///   one of them to end, up to the [admission wait](Self::admission_wait): a healthy answer
///   lets it go, the circuit opening refuses it, and when the wait runs out it fails with
///   [`Error::CircuitOpen`](crate::Error::CircuitOpen) and a wait of one
///   [probe interval](Self::probe_interval), nothing sent. A request that ends without a verdict
///   (never sent, or its future dropped) gives its place back; any answer below 500 ends the
///   limit. So a failing AAP receives at most `threshold` requests of a failing run (the first
///   failure included) — unless more than that were already on their way when the first
///   failure came back, and then not one more.
/// - **Open** at the threshold-th failure: every request fails fast for the
///   [cool-down](Self::cool_down).
/// - **Half-open** after it: one probe at a time; an answer below 500 closes the circuit, a
///   failure reopens it.
///
/// ```
/// use std::time::Duration;
/// use provkit_aap::CircuitBreakerConfig;
/// let breaker = CircuitBreakerConfig::default()
///     .failure_threshold(3)
///     .cool_down(Duration::from_secs(20))
///     .probe_interval(Duration::from_secs(2));
/// assert_eq!(breaker.get_failure_threshold(), 3);
/// assert_eq!(breaker.get_admission_wait(), Duration::from_secs(1));
/// assert_eq!(CircuitBreakerConfig::disabled().get_failure_threshold(), 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitBreakerConfig {
    pub(crate) failure_threshold: u32,
    pub(crate) cool_down: Duration,
    pub(crate) probe_interval: Duration,
    pub(crate) admission_wait: Duration,
}

impl Default for CircuitBreakerConfig {
    /// Opens after 5 failed attempts in a row, stays open 10 s, then lets one probe through at a
    /// time (a probe that never answers frees the slot after 1 s); after a failure, a request
    /// waits up to 1 s for a place.
    fn default() -> Self {
        Self {
            failure_threshold: 5,
            cool_down: Duration::from_secs(10),
            probe_interval: Duration::from_secs(1),
            admission_wait: Duration::from_secs(1),
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
    /// lets the next request probe. Also the wait a request is told when it is refused because
    /// its [admission wait](Self::admission_wait) ran out.
    #[must_use]
    pub fn probe_interval(mut self, interval: Duration) -> Self {
        self.probe_interval = interval;
        self
    }

    /// How long a request waits for a place while the circuit is closed after a failure and as
    /// many attempts are on their way as could open it: the first of them to end decides (a
    /// healthy answer lets the request go; the circuit opening refuses it). Past the wait the
    /// request fails with [`Error::CircuitOpen`](crate::Error::CircuitOpen), nothing sent.
    /// Without it a single failure among many concurrent answers would refuse every request
    /// made before the next answer came back. `Duration::ZERO` refuses at once.
    #[must_use]
    pub fn admission_wait(mut self, wait: Duration) -> Self {
        self.admission_wait = wait;
        self
    }

    /// The configured threshold (0: disabled).
    pub fn get_failure_threshold(&self) -> u32 {
        self.failure_threshold
    }

    /// The configured [admission wait](Self::admission_wait).
    pub fn get_admission_wait(&self) -> Duration {
        self.admission_wait
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

/// Which kind of attempt the breaker admitted: handed back with the attempt's verdict (or, when
/// the attempt ends without one, by [`Permit`]'s `Drop`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ticket {
    /// Sent while the circuit was closed: counted on its way in epoch `epoch` until it ends.
    Counted {
        /// The closed spell the attempt was counted in (an attempt of an earlier spell — sent
        /// before the circuit opened — gives no place back).
        epoch: u64,
    },
    /// The half-open probe.
    Probe,
}

/// What the breaker says about a request about to be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Send it; hand the ticket back with its verdict.
    Go(Ticket),
    /// Do not send it; the next request may go after this long.
    Reject(Duration),
    /// Not yet: as many attempts are on their way as could open the circuit; wait for one of
    /// them to end (refuse with this wait if none does in time).
    Wait(Duration),
}

/// What one attempt told about the server's health.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The server answered (any status below 500).
    Healthy,
    /// Connection error, timeout or 5xx (with the `Retry-After` it carried).
    Failed(Option<Duration>),
    /// Nothing was learnt (the request was never sent, or the attempt was dropped).
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Closed, no failure outstanding: every request is sent; `in_flight` are on their way.
    Closed {
        in_flight: u32,
    },
    /// Closed after `failures` failures in a row: at most `threshold − failures` attempts
    /// (`in_flight`) may be on their way, as many as could still open the circuit.
    Failing {
        failures: u32,
        in_flight: u32,
    },
    Open {
        until: Instant,
    },
    Probing {
        since: Instant,
    },
}

/// The state machine (pure: time is passed in).
#[derive(Debug)]
pub(crate) struct Machine {
    config: CircuitBreakerConfig,
    phase: Phase,
    /// Counts the closed spells (a new one each time the circuit opens or closes again), so
    /// that an attempt gives its place back only to the spell that counted it.
    epoch: u64,
}

impl Machine {
    pub(crate) fn new(config: CircuitBreakerConfig) -> Self {
        Self {
            config,
            phase: Phase::Closed { in_flight: 0 },
            epoch: 0,
        }
    }

    /// The rest of an open circuit's cool-down at `now` (`None` unless open).
    pub(crate) fn refused_for(&self, now: Instant) -> Option<Duration> {
        match self.phase {
            Phase::Open { until } if now < until => Some(until - now),
            _ => None,
        }
    }

    pub(crate) fn state(&self, now: Instant) -> CircuitState {
        match self.phase {
            Phase::Closed { .. } | Phase::Failing { .. } => CircuitState::Closed,
            Phase::Open { until } if now < until => CircuitState::Open,
            Phase::Open { .. } | Phase::Probing { .. } => CircuitState::HalfOpen,
        }
    }

    pub(crate) fn admit(&mut self, now: Instant) -> Admit {
        match self.phase {
            Phase::Closed { in_flight } => {
                self.phase = Phase::Closed {
                    in_flight: in_flight.saturating_add(1),
                };
                Admit::Go(Ticket::Counted { epoch: self.epoch })
            }
            Phase::Failing {
                failures,
                in_flight,
            } => {
                if failures.saturating_add(in_flight) < self.config.failure_threshold {
                    self.phase = Phase::Failing {
                        failures,
                        in_flight: in_flight + 1,
                    };
                    Admit::Go(Ticket::Counted { epoch: self.epoch })
                } else {
                    // Enough attempts are on their way to open the circuit if they fail.
                    Admit::Wait(self.config.probe_interval)
                }
            }
            Phase::Open { until } if now < until => Admit::Reject(until - now),
            Phase::Probing { since } if now < since + self.config.probe_interval => {
                Admit::Reject(since + self.config.probe_interval - now)
            }
            Phase::Open { .. } | Phase::Probing { .. } => {
                self.phase = Phase::Probing { since: now };
                Admit::Go(Ticket::Probe)
            }
        }
    }

    /// Records how an admitted attempt ended; returns the new state when it changed (or a
    /// failed probe kept it open).
    pub(crate) fn record(
        &mut self,
        now: Instant,
        verdict: Verdict,
        ticket: Ticket,
    ) -> Option<CircuitState> {
        let before = self.state(now);
        if let (
            Ticket::Counted { epoch },
            Phase::Closed { in_flight } | Phase::Failing { in_flight, .. },
        ) = (ticket, &mut self.phase)
            && epoch == self.epoch
        {
            *in_flight = in_flight.saturating_sub(1);
        }
        let probe = ticket == Ticket::Probe;
        match (verdict, self.phase) {
            (Verdict::Unknown, _) => return None,
            (Verdict::Healthy, Phase::Closed { in_flight } | Phase::Failing { in_flight, .. }) => {
                self.phase = Phase::Closed { in_flight }
            }
            (Verdict::Healthy, Phase::Open { .. } | Phase::Probing { .. }) => {
                self.epoch = self.epoch.wrapping_add(1);
                self.phase = Phase::Closed { in_flight: 0 };
            }
            (Verdict::Failed(after), Phase::Closed { in_flight }) => {
                self.phase = self.failed(now, after, 1, in_flight);
            }
            (
                Verdict::Failed(after),
                Phase::Failing {
                    failures,
                    in_flight,
                },
            ) => self.phase = self.failed(now, after, failures.saturating_add(1), in_flight),
            (Verdict::Failed(after), Phase::Probing { .. }) if probe => {
                self.phase = self.open(now, after);
            }
            // A request sent before the circuit opened, failing late: already counted as open.
            (Verdict::Failed(_), Phase::Open { .. } | Phase::Probing { .. }) => {}
        }
        let after = self.state(now);
        (after != before || (probe && after == CircuitState::Open)).then_some(after)
    }

    fn failed(
        &mut self,
        now: Instant,
        after: Option<Duration>,
        failures: u32,
        in_flight: u32,
    ) -> Phase {
        if failures >= self.config.failure_threshold {
            self.open(now, after)
        } else {
            Phase::Failing {
                failures,
                in_flight,
            }
        }
    }

    /// Opens the circuit: the attempts still on their way are no longer counted.
    fn open(&mut self, now: Instant, retry_after: Option<Duration>) -> Phase {
        self.epoch = self.epoch.wrapping_add(1);
        let hold = retry_after.map_or(self.config.cool_down, |r| r.max(self.config.cool_down));
        Phase::Open { until: now + hold }
    }
}

/// The breaker one client shares across clones; `None` inside when disabled.
#[derive(Debug)]
pub(crate) struct Breaker {
    machine: Option<Mutex<Machine>>,
    /// Woken whenever an attempt ends: the requests waiting for a place try again.
    ended: Notify,
    admission_wait: Duration,
}

/// An admitted attempt. [`record`](Self::record) hands its verdict to the breaker; dropped
/// without one (the attempt's future was cancelled) it gives its slot back as
/// [`Verdict::Unknown`], so a cancelled attempt never holds a slot of a failing run.
#[derive(Debug)]
pub(crate) struct Permit<'a> {
    breaker: &'a Breaker,
    ticket: Ticket,
    recorded: bool,
}

impl Permit<'_> {
    /// Whether this attempt is the half-open probe.
    pub(crate) fn is_probe(&self) -> bool {
        self.ticket == Ticket::Probe
    }

    /// Records the attempt's verdict; logs and returns a change of state.
    pub(crate) fn record(mut self, verdict: Verdict) -> Option<CircuitState> {
        self.recorded = true;
        self.breaker.record(verdict, self.ticket)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if !self.recorded {
            self.breaker.record(Verdict::Unknown, self.ticket);
        }
    }
}

impl Breaker {
    pub(crate) fn new(config: CircuitBreakerConfig) -> Self {
        Self {
            admission_wait: config.admission_wait,
            machine: (config.failure_threshold > 0).then(|| Mutex::new(Machine::new(config))),
            ended: Notify::new(),
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

    /// How long every request is still refused unsent: the rest of an open circuit's cool-down.
    pub(crate) fn refused_for(&self) -> Option<Duration> {
        self.with(|m| m.refused_for(Instant::now())).flatten()
    }

    /// A permit to send one attempt, or how long to wait before the next may go. While the
    /// places a failing run leaves are taken, waits (up to the admission wait) for an attempt
    /// on its way to end.
    pub(crate) async fn admit(&self) -> Result<Permit<'_>, Duration> {
        let deadline = Instant::now() + self.admission_wait;
        // Registered for the end of an attempt only once a place was refused (not on the path
        // of every request), and before the machine is asked again, so that an attempt ending
        // in between still wakes it.
        let mut ended = std::pin::pin!(self.ended.notified());
        let mut registered = false;
        loop {
            match self
                .with(|m| m.admit(Instant::now()))
                .unwrap_or(Admit::Go(Ticket::Counted { epoch: 0 }))
            {
                Admit::Go(ticket) => {
                    return Ok(Permit {
                        breaker: self,
                        ticket,
                        recorded: false,
                    });
                }
                Admit::Reject(wait) => return Err(wait),
                Admit::Wait(_) if !registered => {
                    ended.as_mut().enable();
                    registered = true;
                }
                Admit::Wait(wait) => {
                    if tokio::time::timeout_at(deadline, ended.as_mut())
                        .await
                        .is_err()
                    {
                        return Err(wait);
                    }
                    ended.set(self.ended.notified());
                    registered = false;
                }
            }
        }
    }

    /// Records a verdict; logs and returns a change of state.
    fn record(&self, verdict: Verdict, ticket: Ticket) -> Option<CircuitState> {
        let changed = self
            .with(|m| m.record(Instant::now(), verdict, ticket))
            .flatten();
        self.ended.notify_waiters();
        let changed = changed?;
        match changed {
            CircuitState::Open if ticket == Ticket::Probe => {
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
    use std::collections::HashMap;

    use super::*;

    fn config() -> CircuitBreakerConfig {
        CircuitBreakerConfig::default()
            .failure_threshold(3)
            .cool_down(Duration::from_secs(10))
            .probe_interval(Duration::from_secs(1))
    }

    const FAIL: Verdict = Verdict::Failed(None);
    const PROBE: Admit = Admit::Go(Ticket::Probe);

    fn counted(epoch: u64) -> Admit {
        Admit::Go(Ticket::Counted { epoch })
    }

    /// Admits one attempt and records `verdict` for it at once.
    fn attempt(m: &mut Machine, now: Instant, verdict: Verdict) -> Option<CircuitState> {
        match m.admit(now) {
            Admit::Go(ticket) => m.record(now, verdict, ticket),
            Admit::Reject(wait) | Admit::Wait(wait) => panic!("refused for {wait:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn opens_after_the_threshold_and_fails_fast_for_the_cool_down() {
        let t0 = Instant::now();
        let mut m = Machine::new(config());
        assert_eq!(attempt(&mut m, t0, FAIL), None);
        assert_eq!(
            attempt(&mut m, t0, Verdict::Healthy),
            None,
            "a success resets"
        );
        assert_eq!(attempt(&mut m, t0, FAIL), None);
        assert_eq!(attempt(&mut m, t0, FAIL), None);
        assert_eq!(attempt(&mut m, t0, FAIL), Some(CircuitState::Open));
        assert_eq!(m.admit(t0), Admit::Reject(Duration::from_secs(10)));
        let t = t0 + Duration::from_secs(4);
        assert_eq!(m.admit(t), Admit::Reject(Duration::from_secs(6)));
        assert_eq!(m.state(t), CircuitState::Open);
        // Unknown verdicts (nothing sent) and late failures change nothing.
        let before_it_opened = Ticket::Counted { epoch: 0 };
        assert_eq!(m.record(t, Verdict::Unknown, before_it_opened), None);
        assert_eq!(m.record(t, FAIL, before_it_opened), None);
    }

    #[tokio::test(start_paused = true)]
    async fn one_probe_per_interval_then_close_or_reopen() {
        let t0 = Instant::now();
        let mut m = Machine::new(config().failure_threshold(1));
        attempt(&mut m, t0, FAIL);
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(m.state(t1), CircuitState::HalfOpen);
        assert_eq!(m.admit(t1), PROBE);
        assert_eq!(m.admit(t1), Admit::Reject(Duration::from_secs(1)));
        let lost = t1 + Duration::from_millis(1500);
        assert_eq!(m.admit(lost), PROBE, "a probe that never answered");
        assert_eq!(
            m.record(lost, FAIL, Ticket::Probe),
            Some(CircuitState::Open),
            "a failed probe reopens (a change worth logging)"
        );
        assert_eq!(m.admit(lost), Admit::Reject(Duration::from_secs(10)));
        let t2 = lost + Duration::from_secs(10);
        assert_eq!(m.admit(t2), PROBE);
        assert_eq!(
            m.record(t2, Verdict::Healthy, Ticket::Probe),
            Some(CircuitState::Closed)
        );
        assert!(matches!(m.admit(t2), Admit::Go(Ticket::Counted { .. })));
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_lengthens_the_cool_down_but_never_shortens_it() {
        let t0 = Instant::now();
        let mut m = Machine::new(config().failure_threshold(1));
        attempt(&mut m, t0, Verdict::Failed(Some(Duration::from_secs(30))));
        assert_eq!(m.admit(t0), Admit::Reject(Duration::from_secs(30)));
        let mut m = Machine::new(config().failure_threshold(1));
        attempt(&mut m, t0, Verdict::Failed(Some(Duration::from_secs(2))));
        assert_eq!(m.admit(t0), Admit::Reject(Duration::from_secs(10)));
    }

    /// One step of a table: admit the attempt named, or end it with a verdict.
    #[derive(Clone, Copy)]
    enum Op {
        Admit(&'static str),
        End(&'static str, Verdict),
    }

    /// What the step must give: the admission, or the change of state the verdict caused.
    #[derive(Clone, Copy)]
    enum Expect {
        Admit(Admit),
        Change(Option<CircuitState>),
    }

    /// Threshold 3: every attempt is counted while on its way; once a failure is outstanding, at
    /// most `3 − failures` attempts are on their way — those sent before it included; a dropped
    /// attempt gives its place back, an attempt of an earlier closed spell does not, any
    /// healthy answer lifts the limit, and the threshold-th failure opens the circuit.
    #[tokio::test(start_paused = true)]
    async fn after_a_failure_only_as_many_attempts_go_as_could_still_open_it() {
        use Expect::{Admit as A, Change as C};
        use Op::{Admit as Go, End};
        let full = A(Admit::Wait(Duration::from_secs(1)));
        let rows = [
            ("a: sent while healthy", Go("a"), A(counted(0))),
            ("b: sent while healthy", Go("b"), A(counted(0))),
            ("a fails: the first failure", End("a", FAIL), C(None)),
            ("c: 1 failure + 1 in flight (b) < 3", Go("c"), A(counted(0))),
            ("1 failure + 2 in flight could open it", Go("x"), full),
            (
                "c ends without a verdict",
                End("c", Verdict::Unknown),
                C(None),
            ),
            ("e: takes c's place", Go("e"), A(counted(0))),
            ("full again", Go("x"), full),
            (
                "b answers: the limit is lifted",
                End("b", Verdict::Healthy),
                C(None),
            ),
            ("f: sent freely", Go("f"), A(counted(0))),
            ("g: sent freely", Go("g"), A(counted(0))),
            (
                "f fails: a second failing run, e and g on their way",
                End("f", FAIL),
                C(None),
            ),
            ("1 failure + 2 in flight: full at once", Go("x"), full),
            ("e fails: 2 failures + 1 in flight", End("e", FAIL), C(None)),
            ("still full", Go("x"), full),
            ("g is dropped", End("g", Verdict::Unknown), C(None)),
            ("h: 2 failures + 0 in flight < 3", Go("h"), A(counted(0))),
            ("2 failures + 1 in flight", Go("x"), full),
            (
                "h fails: the third failure opens it",
                End("h", FAIL),
                C(Some(CircuitState::Open)),
            ),
            (
                "open: refused for the cool-down",
                Go("x"),
                A(Admit::Reject(Duration::from_secs(10))),
            ),
        ];
        let t0 = Instant::now();
        let mut m = Machine::new(config());
        let mut tickets = HashMap::new();
        for (what, op, expect) in rows {
            match (op, expect) {
                (Op::Admit(name), Expect::Admit(want)) => {
                    let got = m.admit(t0);
                    assert_eq!(got, want, "{what}");
                    if let Admit::Go(ticket) = got {
                        tickets.insert(name, ticket);
                    }
                }
                (Op::End(name, verdict), Expect::Change(want)) => {
                    let ticket = tickets.remove(name).expect("admitted before");
                    assert_eq!(m.record(t0, verdict, ticket), want, "{what}");
                }
                _ => panic!("malformed row: {what}"),
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_failure_after_the_circuit_closed_starts_a_new_failing_run() {
        let t0 = Instant::now();
        let mut m = Machine::new(config());
        let go = |m: &mut Machine| match m.admit(t0) {
            Admit::Go(ticket) => ticket,
            Admit::Reject(wait) | Admit::Wait(wait) => panic!("closed, refused for {wait:?}"),
        };
        let [late, dropped, o1, o2, o3] = [(); 5].map(|()| go(&mut m));
        assert_eq!(m.record(t0, FAIL, o1), None);
        assert_eq!(m.record(t0, FAIL, o2), None);
        assert_eq!(m.record(t0, FAIL, o3), Some(CircuitState::Open));
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(m.admit(t1), PROBE);
        assert_eq!(
            m.record(t1, Verdict::Healthy, Ticket::Probe),
            Some(CircuitState::Closed)
        );
        let spell = m.epoch;
        assert_ne!(Ticket::Counted { epoch: spell }, late, "a new closed spell");
        // Attempts sent before the circuit opened end after it closed: their places were
        // dropped when it opened, so they give nothing back to the new spell...
        assert_eq!(m.admit(t1), counted(spell));
        assert_eq!(m.record(t1, Verdict::Unknown, dropped), None);
        // ...but a late failure still starts a new failing run: 1 failure + 1 in flight.
        assert_eq!(m.record(t1, FAIL, late), None);
        assert_eq!(m.admit(t1), counted(spell), "1 failure + 1 in flight < 3");
        assert_eq!(
            m.admit(t1),
            Admit::Wait(Duration::from_secs(1)),
            "1 failure + 2 in flight could open it"
        );
    }

    #[tokio::test]
    async fn disabled_breaker_always_admits() {
        let b = Breaker::new(CircuitBreakerConfig::disabled());
        for _ in 0..100 {
            let permit = b.admit().await.expect("disabled");
            assert_eq!(permit.record(FAIL), None);
        }
        assert!(b.admit().await.is_ok());
        assert_eq!(b.state(), CircuitState::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_permit_gives_its_slot_back() {
        let b = Breaker::new(config().failure_threshold(2));
        let first = b.admit().await.expect("closed");
        assert_eq!(first.record(FAIL), None);
        let held = b
            .admit()
            .await
            .expect("one slot left (1 failure + 0 in flight < 2)");
        let t0 = Instant::now();
        assert_eq!(b.admit().await.err(), Some(Duration::from_secs(1)), "full");
        assert_eq!(
            t0.elapsed(),
            Duration::from_secs(1),
            "after the admission wait"
        );
        drop(held);
        let again = b
            .admit()
            .await
            .expect("the dropped attempt's slot came back");
        assert_eq!(again.record(FAIL), Some(CircuitState::Open));
        let t1 = Instant::now();
        assert_eq!(b.admit().await.err(), Some(Duration::from_secs(10)));
        assert_eq!(t1.elapsed(), Duration::ZERO, "open: refused at once");
    }

    /// After a failure, with as many attempts on their way as could open the circuit, a request
    /// waits for the first of them to end: a healthy answer lets it go at that moment, the
    /// circuit opening refuses it at that moment, and no answer within the admission wait
    /// refuses it when the wait runs out (`ZERO`: at once). Before, it was refused at once
    /// whatever came back next, so one 5xx among many concurrent answers refused every request
    /// made before the next answer (the 10,000-resource chaos run fell far behind on it).
    #[tokio::test(start_paused = true)]
    async fn after_a_failure_a_request_waits_for_an_attempt_on_its_way_to_end() {
        async fn answer_after(
            permit: Permit<'_>,
            ms: u64,
            verdict: Verdict,
        ) -> Option<CircuitState> {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            permit.record(verdict)
        }
        let b = Breaker::new(config().failure_threshold(2));
        let (first, second) = (b.admit().await.unwrap(), b.admit().await.unwrap());
        assert_eq!(first.record(FAIL), None, "1 failure + 1 on its way: full");
        let t0 = Instant::now();
        let (waiter, changed) =
            tokio::join!(b.admit(), answer_after(second, 300, Verdict::Healthy));
        assert_eq!(changed, None);
        let waiter = waiter.expect("sent once the healthy answer came back");
        assert_eq!(t0.elapsed(), Duration::from_millis(300));

        assert_eq!(
            waiter.record(FAIL),
            None,
            "a new failing run, nothing on its way"
        );
        let last = b.admit().await.unwrap();
        let t1 = Instant::now();
        let (refused, changed) = tokio::join!(b.admit(), answer_after(last, 200, FAIL));
        assert_eq!(changed, Some(CircuitState::Open));
        assert_eq!(
            refused.err(),
            Some(Duration::from_secs(10)),
            "the cool-down, from the moment it opened"
        );
        assert_eq!(
            t1.elapsed(),
            Duration::from_millis(200),
            "refused when it opened"
        );

        let quick = Breaker::new(config().failure_threshold(2).admission_wait(Duration::ZERO));
        let (first, _held) = (quick.admit().await.unwrap(), quick.admit().await.unwrap());
        first.record(FAIL);
        let t2 = Instant::now();
        assert_eq!(quick.admit().await.err(), Some(Duration::from_secs(1)));
        assert_eq!(t2.elapsed(), Duration::ZERO);
    }

    /// A step of the property tests: admit an attempt, end the `pick`-th attempt in flight
    /// (0: healthy, 1: no verdict — never sent, or dropped — otherwise failed), or let time pass.
    #[derive(Clone, Debug)]
    enum Step {
        Admit,
        End { pick: usize, kind: u8 },
        Wait(u64),
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            3 => Just(Step::Admit),
            3 => (any::<usize>(), 0u8..6).prop_map(|(pick, kind)| Step::End { pick, kind }),
            1 => (0u64..3000).prop_map(Step::Wait),
        ]
    }

    fn verdict_of(kind: u8) -> Verdict {
        match kind {
            0 => Verdict::Healthy,
            1 => Verdict::Unknown,
            _ => FAIL,
        }
    }

    /// A failing run as the test sees it from outside: from a failure recorded while the circuit
    /// was closed with no failure outstanding, until the circuit opens or a healthy answer.
    #[derive(Debug)]
    struct Run {
        /// The closed spell the run belongs to.
        epoch: u64,
        /// Attempts of that spell on their way when the first failure was recorded.
        counted_at_start: usize,
        /// Attempts admitted since, and attempts of the spell that ended without a verdict
        /// (never sent, or dropped) since.
        admitted: usize,
        unsent: usize,
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
                        Admit::Go(Ticket::Probe) => {
                            if let Some(prev) = last_probe {
                                proptest::prop_assert!(now - prev >= cfg.probe_interval);
                            }
                            last_probe = Some(now);
                            let verdict = if kind == 0 { Verdict::Healthy } else { FAIL };
                            m.record(now, verdict, Ticket::Probe);
                        }
                        Admit::Reject(wait) | Admit::Wait(wait) => proptest::prop_assert!(wait <= cfg.cool_down),
                        Admit::Go(ticket) => {
                            m.record(now, verdict_of(kind), ticket);
                        }
                    }
                }
                Ok(())
            })?;
        }

        /// From the first failure on, until the circuit opens or a healthy answer resets it, the
        /// requests that reach AAP — those of the closed spell already on their way when the
        /// first failure was recorded plus those admitted since, less those that ended without
        /// being sent (or were dropped) — number at most `threshold − 1`, or those already on
        /// their way when there were more (the first breaker counted nothing before the first
        /// failure, and admitted `threshold − 1` more whatever was on its way). And no place ever
        /// leaks: with nothing in flight and the circuit closed, a request is always admitted.
        #[test]
        fn a_failing_run_admits_no_more_than_could_open_the_circuit(
            threshold in 1u32..6,
            steps in proptest::collection::vec(step(), 1..300),
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
            rt.block_on(async {
                let mut m = Machine::new(config().failure_threshold(threshold));
                let mut now = Instant::now();
                let mut in_flight: Vec<Ticket> = Vec::new();
                let mut run: Option<Run> = None;
                for step in steps {
                    match step {
                        Step::Wait(ms) => now += Duration::from_millis(ms),
                        Step::Admit => {
                            let closed = m.state(now) == CircuitState::Closed;
                            match m.admit(now) {
                                Admit::Go(ticket) => {
                                    if let Some(r) = run.as_mut() {
                                        r.admitted += 1;
                                        let reaching = r.counted_at_start + r.admitted - r.unsent;
                                        let bound = (threshold as usize - 1).max(r.counted_at_start);
                                        proptest::prop_assert!(
                                            reaching <= bound,
                                            "{r:?}, threshold {threshold}"
                                        );
                                    }
                                    in_flight.push(ticket);
                                }
                                Admit::Reject(_) | Admit::Wait(_) => proptest::prop_assert!(
                                    !(closed && in_flight.is_empty()),
                                    "a closed circuit with nothing in flight refused a request"
                                ),
                            }
                        }
                        Step::End { pick, kind } => {
                            if in_flight.is_empty() {
                                continue;
                            }
                            let ticket = in_flight.swap_remove(pick % in_flight.len());
                            let verdict = verdict_of(kind);
                            let closed = m.state(now) == CircuitState::Closed;
                            let changed = m.record(now, verdict, ticket);
                            match verdict {
                                Verdict::Healthy => run = None,
                                Verdict::Failed(_) if closed && run.is_none() => {
                                    let spell = Ticket::Counted { epoch: m.epoch };
                                    run = Some(Run {
                                        epoch: m.epoch,
                                        counted_at_start: in_flight.iter().filter(|t| **t == spell).count(),
                                        admitted: 0,
                                        unsent: 0,
                                    });
                                }
                                Verdict::Unknown => {
                                    if let Some(r) = run.as_mut().filter(|r| ticket == Ticket::Counted { epoch: r.epoch }) {
                                        r.unsent += 1;
                                    }
                                }
                                Verdict::Failed(_) => {}
                            }
                            if changed == Some(CircuitState::Open) {
                                run = None;
                            }
                        }
                    }
                }
                Ok(())
            })?;
        }
    }
}
