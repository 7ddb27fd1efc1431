//! The engine's metric hooks: no-ops without the `metrics` feature or without
//! [`Lifecycle::with_metrics`](super::Lifecycle::with_metrics).

use provkit_core::JobType;

/// What a launch attempt came to (see `metrics::LaunchResult`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Launch {
    Made,
    NotMade,
    Unknown,
    Recovered,
}

impl Launch {
    pub(crate) fn of_certainty(certainty: crate::error::LaunchCertainty) -> Self {
        match certainty {
            crate::error::LaunchCertainty::Unknown => Self::Unknown,
            _ => Self::NotMade,
        }
    }
}

/// The engine's recorder (cheap to clone).
#[derive(Clone, Debug, Default)]
pub(crate) struct Observe {
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<crate::metrics::LifecycleMetrics>,
}

/// A started poll; [`Observe::polled`] records its duration, read from the engine's
/// [`Clock`](provkit_core::Clock) like every other time (a manual clock in tests gives 0 s).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PollTimer {
    #[cfg(feature = "metrics")]
    start: Option<chrono::DateTime<chrono::Utc>>,
}

impl Observe {
    pub(crate) fn launch(&self, job_type: &JobType, launch: Launch) {
        #[cfg(feature = "metrics")]
        if let Some(m) = &self.metrics {
            use crate::metrics::LaunchResult;
            let result = match launch {
                Launch::Made => LaunchResult::Made,
                Launch::NotMade => LaunchResult::NotMade,
                Launch::Unknown => LaunchResult::Unknown,
                Launch::Recovered => LaunchResult::Recovered,
            };
            m.launch(job_type, result);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (job_type, launch);
    }

    pub(crate) fn poll_started(&self, clock: &dyn provkit_core::Clock) -> PollTimer {
        #[cfg(not(feature = "metrics"))]
        let _ = clock;
        PollTimer {
            #[cfg(feature = "metrics")]
            start: self.metrics.as_ref().map(|_| clock.now()),
        }
    }

    pub(crate) fn polled(
        &self,
        job_type: &JobType,
        timer: PollTimer,
        clock: &dyn provkit_core::Clock,
    ) {
        #[cfg(feature = "metrics")]
        if let (Some(m), Some(start)) = (&self.metrics, timer.start) {
            m.poll(job_type, (clock.now() - start).to_std().unwrap_or_default());
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (job_type, timer, clock);
    }
}
