//! The throttled-AAP scenario (issue 17, "Measured"): the fleet run ([`run_fleet`]: every
//! resource created, provisioned, changed, provisioned again and deleted through the one-path
//! harness) with AAP limited to a rate in requests per **scenario** second (8/s: the reference
//! controller of AAP's sizing guide). The limit is the AAP client's own token bucket
//! (provkit-aap [`RateLimit`](provkit_aap::RateLimit), scaled: `limit ÷ scale` per wall second,
//! burst 1), shared by every request of a replica's client; the harness's observer of the fake
//! AAP counts the replicas' requests per scenario second. Reported: the largest count in one
//! second, the seconds above the limit and the longest run of them (target: never more than one
//! second at a time), and the run's duration against requests ÷ limit (the shortest a run at
//! the limit can take).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use provkit_testing::observe::{ObservedRequest, Phase, Verdict};

use crate::backend::BackendError;
use crate::fleet::{FleetConfig, FleetReport, run_fleet};
use crate::measure::{PerSecond, RateSummary};

/// AAP's reference controller rate (requests per second).
pub const AAP_REFERENCE_RATE: f64 = 8.0;

/// The fleet settings of the throttled scenario: `resources` arriving over one minute and
/// changed/deleted within a minute of converging (so the run is bound by the rate, not by the
/// scenario's own timeline), no plain-loop probes.
pub fn throttled(resources: usize) -> FleetConfig {
    let mut config = FleetConfig::new(resources);
    config.arrival = Duration::from_secs(60);
    config.think = Duration::from_secs(60);
    config.probe = Duration::ZERO;
    config
}

/// What a throttled run measured.
#[derive(Debug)]
#[non_exhaustive]
pub struct ThrottleReport {
    /// The fleet run's own report (convergence, audit, requests by endpoint).
    pub fleet: FleetReport,
    /// The limit, requests per scenario second.
    pub limit: f64,
    /// The replicas' AAP requests per scenario second, as the fake saw them.
    pub rate: RateSummary,
}

impl ThrottleReport {
    /// The run's duration in scenario time.
    pub fn duration(&self) -> Duration {
        self.fleet.config.scale.production(self.fleet.wall)
    }

    /// requests ÷ limit: the shortest the run can take at the limit.
    pub fn bound(&self) -> Duration {
        #[allow(clippy::cast_precision_loss)]
        let secs = self.rate.total as f64 / self.limit.max(1e-9);
        Duration::from_secs_f64(secs.min(1e9))
    }

    /// `(what, value, target, ok)` of the throttle's targets (the fleet's own verdicts come on
    /// top).
    pub fn verdicts(&self) -> Vec<(String, String, String, bool)> {
        vec![
            (
                "longest run of seconds above the limit".into(),
                format!("{} s", self.rate.longest_above),
                "≤ 1 s".into(),
                self.rate.longest_above <= 1,
            ),
            (
                "duration ≥ requests ÷ limit (the limit held overall)".into(),
                format!("{:.0} s", self.duration().as_secs_f64()),
                format!("≥ {:.0} s", self.bound().as_secs_f64()),
                self.duration() >= self.bound(),
            ),
        ]
    }

    /// Every target met (the throttle's and the fleet's).
    pub fn ok(&self) -> bool {
        self.fleet.ok() && self.verdicts().iter().all(|(.., ok)| *ok)
    }

    /// The fleet report, then the throttle's figures.
    pub fn render(&self) -> String {
        let mut out = self.fleet.render();
        let r = &self.rate;
        let scale = self.fleet.config.scale;
        let _ = writeln!(
            out,
            "\nThrottled AAP: client-side rate limit {} requests per scenario second ({:.0} per wall second at {scale}, burst 1)",
            self.limit,
            self.limit / scale.factor()
        );
        let _ = writeln!(
            out,
            "  replicas' AAP requests seen by the fake: {} over {} scenario seconds ({} with any) · max {} in one second (second {}) · {} seconds above {} · longest run above {} s",
            r.total, r.seconds, r.busy, r.max, r.max_at, r.above, self.limit, r.longest_above
        );
        #[allow(clippy::cast_precision_loss)]
        let mean = r.total as f64 / r.seconds.max(1) as f64;
        let _ = writeln!(
            out,
            "  duration {:.0} s (scenario; wall {:.1} s) against requests ÷ {} = {:.0} s: {:.2} × · mean {:.2} requests/s",
            self.duration().as_secs_f64(),
            self.fleet.wall.as_secs_f64(),
            self.limit,
            self.bound().as_secs_f64(),
            self.duration().as_secs_f64() / self.bound().as_secs_f64().max(1e-9),
            mean
        );
        for (what, value, target, ok) in self.verdicts() {
            let _ = writeln!(
                out,
                "  {what}: {value} (target {target}) {}",
                if ok { "ok" } else { "MISSED" }
            );
        }
        let _ = writeln!(
            out,
            "{}",
            if self.ok() {
                "every throttled-AAP target met"
            } else {
                "THROTTLED-AAP TARGETS MISSED"
            }
        );
        out
    }
}

/// Runs `config` with the AAP client limited to `limit` requests per scenario second, counting
/// the replicas' requests at the fake.
///
/// # Errors
/// [`BackendError`] when the fake AAP or a client cannot be set up.
pub async fn run_throttled(
    mut config: FleetConfig,
    limit: f64,
) -> Result<ThrottleReport, BackendError> {
    let meter = Arc::new(PerSecond::new(config.scale));
    let m = meter.clone();
    config.aap_rate = Some(limit);
    config.taps.aap = Some(Arc::new(move |req: &ObservedRequest<'_>, phase: Phase| {
        if phase == Phase::Received && req.client.starts_with("replica-") {
            m.hit();
        }
        Verdict::Continue
    }));
    let fleet = run_fleet(config).await?;
    Ok(ThrottleReport {
        fleet,
        limit,
        rate: meter.summary(limit),
    })
}
