//! Push notifications of job completion as a wake-up source (pure; no IO).
//!
//! A provider whose backend pushes job status changes (AWX's websocket: `provkit_aap::push`)
//! lets a controller learn at once that a job ended, and poll in-flight jobs only as a safety
//! net. This module holds the decisions that need no network and are shared by the provider
//! side and the controller side:
//!
//! - [`PushHealth`] / [`PushTransition`] / [`PushStep`]: how far the stream can be trusted, and
//!   when every in-flight job must be polled once (after each confirmed (re)subscription: the
//!   backend does not replay what it announced while nobody listened);
//! - [`PollCadence`]: the poll interval of in-flight jobs for a stream health;
//! - [`ReconnectBackoff`]: the delays between reconnection attempts;
//! - [`PushSignal`]: what a stream tells a controller (a transition, or that a job ended).
//!
//! A push message is only ever a wake-up: the controller confirms the final state with one read
//! of the job (the message may lack the job's outputs, may arrive twice, and may be for a job of
//! someone else).

use std::time::Duration;

/// How far the push stream can be trusted right now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PushHealth {
    /// Not connected (never was, dropped, or the upgrade was refused).
    #[default]
    Down,
    /// Connected, but the server has not confirmed the `jobs-status_changed` subscription
    /// (or refused it).
    Unconfirmed,
    /// Connected and subscribed: a final status will be announced.
    Healthy,
}

/// What happened to the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushTransition {
    /// The upgrade succeeded (`{"accept": true}` received).
    Connected,
    /// The server confirmed `jobs-status_changed` in `groups_current`.
    Subscribed,
    /// The server refused the subscription (`{"error": ...}`).
    Denied,
    /// The connection ended (with or without a close frame) or could not be made.
    Dropped,
}

/// The result of one [`PushTransition`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PushStep {
    /// The health after the transition.
    pub health: PushHealth,
    /// Every in-flight job must be polled once now: the stream has (re)started and AWX does not
    /// replay what it announced while nobody listened.
    pub repoll_in_flight: bool,
}

impl PushHealth {
    /// Applies a transition.
    ///
    /// A confirmation that makes the stream healthy asks for one poll of every in-flight job
    /// (the first one too: a job may have ended before the subscription was in place).
    ///
    /// ```
    /// use provkit_lifecycle::push::{PushHealth, PushTransition};
    /// let step = PushHealth::Unconfirmed.apply(PushTransition::Subscribed);
    /// assert_eq!(step.health, PushHealth::Healthy);
    /// assert!(step.repoll_in_flight);
    /// assert_eq!(step.health.apply(PushTransition::Dropped).health, PushHealth::Down);
    /// ```
    pub fn apply(self, transition: PushTransition) -> PushStep {
        let health = match transition {
            PushTransition::Connected | PushTransition::Denied => PushHealth::Unconfirmed,
            PushTransition::Subscribed => PushHealth::Healthy,
            PushTransition::Dropped => PushHealth::Down,
        };
        PushStep {
            health,
            repoll_in_flight: health == PushHealth::Healthy && self != PushHealth::Healthy,
        }
    }
}

/// The poll intervals of in-flight jobs with push in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PollCadence {
    /// The interval while the stream is not healthy (the lifecycle's normal poll interval).
    pub normal: Duration,
    /// The long safety-net interval while the stream is healthy.
    pub while_healthy: Duration,
}

impl PollCadence {
    /// The default safety-net interval while the stream is healthy: 10 minutes.
    pub const DEFAULT_WHILE_HEALTHY: Duration = Duration::from_secs(600);

    /// A cadence with the given normal interval and the default safety-net interval (never
    /// shorter than `normal`).
    pub fn new(normal: Duration) -> Self {
        Self {
            normal,
            while_healthy: Self::DEFAULT_WHILE_HEALTHY.max(normal),
        }
    }

    /// Sets the safety-net interval used while the stream is healthy (never shorter than
    /// `normal`).
    pub fn with_while_healthy(mut self, interval: Duration) -> Self {
        self.while_healthy = interval.max(self.normal);
        self
    }

    /// The interval to poll an in-flight job at, given the stream's health: the long one only
    /// while it is [`PushHealth::Healthy`], the normal one at once otherwise.
    ///
    /// ```
    /// use std::time::Duration;
    /// use provkit_lifecycle::push::{PollCadence, PushHealth};
    /// let cadence = PollCadence::new(Duration::from_secs(30));
    /// assert_eq!(cadence.interval(PushHealth::Healthy), Duration::from_secs(600));
    /// assert_eq!(cadence.interval(PushHealth::Unconfirmed), Duration::from_secs(30));
    /// assert_eq!(cadence.interval(PushHealth::Down), Duration::from_secs(30));
    /// ```
    pub fn interval(&self, health: PushHealth) -> Duration {
        match health {
            PushHealth::Healthy => self.while_healthy,
            PushHealth::Unconfirmed | PushHealth::Down => self.normal,
        }
    }
}

/// Exponential reconnection delays with a cap, reset once a subscription is confirmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReconnectBackoff {
    /// The first delay.
    pub initial: Duration,
    /// The largest delay.
    pub max: Duration,
    failures: u32,
}

impl Default for ReconnectBackoff {
    /// 1 s doubling up to 60 s.
    fn default() -> Self {
        Self::new(Duration::from_secs(1), Duration::from_secs(60))
    }
}

impl ReconnectBackoff {
    /// A backoff from `initial`, doubling per failure, capped at `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max: max.max(initial),
            failures: 0,
        }
    }

    /// The delay before the next attempt after one more failure (the caller adds jitter).
    ///
    /// ```
    /// use std::time::Duration;
    /// use provkit_lifecycle::push::ReconnectBackoff;
    /// let mut backoff = ReconnectBackoff::new(Duration::from_secs(1), Duration::from_secs(5));
    /// let delays: Vec<u64> = (0..5).map(|_| backoff.next_delay().as_secs()).collect();
    /// assert_eq!(delays, [1, 2, 4, 5, 5]);
    /// backoff.reset();
    /// assert_eq!(backoff.next_delay(), Duration::from_secs(1));
    /// ```
    pub fn next_delay(&mut self) -> Duration {
        let delay = provkit_core::backoff::exponential(self.initial, self.max, self.failures);
        self.failures = self.failures.saturating_add(1);
        delay
    }

    /// Forgets the failures (after a confirmed subscription).
    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

/// What a push stream tells a controller: a change of the stream's state, or that a job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PushSignal {
    /// The stream connected, was confirmed, was refused or dropped.
    Stream(PushTransition),
    /// The backend announced a final status (successful, failed, error, canceled) of this job.
    /// Only a wake-up: the controller reads the job to learn its outcome.
    JobFinished {
        /// The job's id as the provider records it in `status.provisioningJobs[].jobID`.
        job_id: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_transitions_table() {
        use PushHealth::{Down, Healthy, Unconfirmed};
        use PushTransition::{Connected, Denied, Dropped, Subscribed};
        // (from, transition, to, re-poll every in-flight job)
        let table = [
            (Down, Connected, Unconfirmed, false),
            (Unconfirmed, Subscribed, Healthy, true),
            (Down, Subscribed, Healthy, true),
            (Healthy, Subscribed, Healthy, false),
            (Unconfirmed, Denied, Unconfirmed, false),
            (Healthy, Denied, Unconfirmed, false),
            (Healthy, Dropped, Down, false),
            (Unconfirmed, Dropped, Down, false),
            (Down, Dropped, Down, false),
        ];
        for (from, transition, to, repoll) in table {
            let step = from.apply(transition);
            assert_eq!(step.health, to, "{from:?} {transition:?}");
            assert_eq!(step.repoll_in_flight, repoll, "{from:?} {transition:?}");
        }
    }

    #[test]
    fn the_safety_net_is_never_shorter_than_the_normal_interval() {
        let cadence =
            PollCadence::new(Duration::from_secs(900)).with_while_healthy(Duration::from_secs(5));
        assert_eq!(
            cadence.interval(PushHealth::Healthy),
            Duration::from_secs(900)
        );
    }

    #[test]
    fn reconnect_delays_saturate() {
        let mut backoff = ReconnectBackoff::new(Duration::from_secs(1), Duration::from_secs(60));
        let last = (0..100).map(|_| backoff.next_delay()).last();
        assert_eq!(last, Some(Duration::from_secs(60)));
    }
}
