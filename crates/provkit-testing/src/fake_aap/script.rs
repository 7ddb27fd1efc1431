//! Job scripts: how a fake job moves through `pending` → `waiting` → `running` → terminal.
//!
//! A job's status is never advanced by a background task; it is computed from the server's
//! clock whenever the job is read, so thousands of jobs cost nothing and advancing the clock
//! moves every job at once.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Final outcome of a scripted job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Ends `successful`.
    #[default]
    Successful,
    /// Ends `failed` (the playbook had failures).
    Failed,
    /// Ends `error` (the job could not run).
    Error,
    /// Ends `canceled` by itself (e.g. a shutdown signal).
    Canceled,
}

impl Outcome {
    pub(crate) fn status(self) -> Status {
        match self {
            Outcome::Successful => Status::Successful,
            Outcome::Failed => Status::Failed,
            Outcome::Error => Status::Error,
            Outcome::Canceled => Status::Canceled,
        }
    }
}

/// Where a scripted job stops for good (until canceled).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Hold {
    /// The job runs through its script.
    #[default]
    None,
    /// The job stays `pending` forever (no execution capacity).
    Pending,
    /// The job stays `running` until canceled (a silent execution).
    Running,
}

/// A unified job status as AWX reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// `pending`
    Pending,
    /// `waiting`
    Waiting,
    /// `running`
    Running,
    /// `successful`
    Successful,
    /// `failed`
    Failed,
    /// `error`
    Error,
    /// `canceled`
    Canceled,
}

impl Status {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Waiting => "waiting",
            Status::Running => "running",
            Status::Successful => "successful",
            Status::Failed => "failed",
            Status::Error => "error",
            Status::Canceled => "canceled",
        }
    }

    /// `pending`, `waiting` or `running` (cancelable).
    pub fn is_active(self) -> bool {
        matches!(self, Status::Pending | Status::Waiting | Status::Running)
    }

    /// The `failed` flag AWX derives from the status.
    pub fn failed(self) -> bool {
        matches!(self, Status::Failed | Status::Error | Status::Canceled)
    }

    /// Parses a wire string.
    pub fn parse(s: &str) -> Option<Status> {
        Some(match s {
            "pending" => Status::Pending,
            "waiting" => Status::Waiting,
            "running" => Status::Running,
            "successful" => Status::Successful,
            "failed" => Status::Failed,
            "error" => Status::Error,
            "canceled" => Status::Canceled,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The scripted life of one job: phase durations, final outcome and what the job reports.
///
/// In fixture files durations are seconds (floats):
/// ```
/// let yaml = "pending: 0.5\nrunning: 2\noutcome: failed\njob_explanation: boom\n";
/// let script: provkit_testing::fake_aap::JobScript = serde_yaml_ng::from_str(yaml).unwrap();
/// assert_eq!(script.running, std::time::Duration::from_secs(2));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobScript {
    /// Time spent `pending` after creation (at least; a non-simultaneous template adds queueing).
    #[serde(with = "secs")]
    pub pending: Duration,
    /// Time spent `waiting`.
    #[serde(with = "secs")]
    pub waiting: Duration,
    /// Time spent `running`.
    #[serde(with = "secs")]
    pub running: Duration,
    /// Final status.
    pub outcome: Outcome,
    /// Stop in `pending` or `running` forever instead.
    pub hold: Hold,
    /// Go from `pending` straight to the outcome (e.g. `error` of a failed dependency).
    pub skip_running: bool,
    /// `job_explanation` once terminal.
    pub job_explanation: String,
    /// `result_traceback` once terminal.
    pub result_traceback: String,
    /// `artifacts` once terminal (an object, or the no_log string).
    pub artifacts: serde_json::Value,
    /// Full standard output (revealed progressively while running).
    pub stdout: String,
    /// The failed tasks a playbook failure reports only through its job events
    /// (`jobs/<id>/job_events/`: one `runner_on_failed` event each, after its
    /// `playbook_on_task_start` parent, both `failed: true`, as AWX marks parents), visible once
    /// the job has ended naturally.
    pub failed_events: Vec<FailedEvent>,
    /// How long `event_processing_finished` lags the terminal status; `None` (YAML `null`) = never.
    #[serde(with = "opt_secs")]
    pub event_processing_lag: Option<Duration>,
    /// Delay between `POST cancel/` on a started (`waiting`/`running`) job and its `canceled`
    /// status; `None` (YAML `null`) = the server's [`Settings::cancel_delay`](super::Settings)
    /// (2 s by default, as observed). A pending job is always canceled at once.
    #[serde(with = "opt_secs")]
    pub cancel_delay: Option<Duration>,
}

/// The default phases follow the real AWX of `aap-observed.md` §13.1 (job 104): `waiting` about
/// 0.1 s after the launch, `running` 0.3 s later, done 2 s after that. So a client polling right
/// after the launch sees `waiting` and `running`, and a cancel soon after the launch hits a job
/// that is no longer `pending`.
impl Default for JobScript {
    fn default() -> Self {
        JobScript {
            pending: Duration::from_millis(100),
            waiting: Duration::from_millis(300),
            running: Duration::from_secs(2),
            outcome: Outcome::Successful,
            hold: Hold::None,
            skip_running: false,
            job_explanation: String::new(),
            result_traceback: String::new(),
            artifacts: serde_json::Value::Object(serde_json::Map::new()),
            stdout: String::new(),
            failed_events: Vec::new(),
            event_processing_lag: Some(Duration::ZERO),
            cancel_delay: None,
        }
    }
}

impl JobScript {
    /// Succeeds after `running` seconds of `running` (short pending and waiting phases).
    pub fn successful(running: Duration) -> Self {
        JobScript {
            running,
            ..JobScript::default()
        }
    }

    /// Ends with `outcome` after `running`.
    pub fn ending(outcome: Outcome, running: Duration) -> Self {
        JobScript {
            running,
            outcome,
            ..JobScript::default()
        }
    }

    /// Goes `pending` → `error` directly after `pending`, with a traceback, like an execution
    /// that could not start.
    pub fn error_before_start(pending: Duration) -> Self {
        JobScript {
            pending,
            outcome: Outcome::Error,
            skip_running: true,
            result_traceback:
                "Traceback (most recent call last):\nRuntimeError: Failed to start work unit\n"
                    .to_owned(),
            ..JobScript::default()
        }
    }

    /// Stays `pending` forever (no execution capacity).
    pub fn stuck_pending() -> Self {
        JobScript {
            hold: Hold::Pending,
            ..JobScript::default()
        }
    }

    /// Runs until canceled.
    pub fn run_until_canceled() -> Self {
        JobScript {
            hold: Hold::Running,
            ..JobScript::default()
        }
    }

    /// Sets the three phase durations.
    #[must_use]
    pub fn with_phases(mut self, pending: Duration, waiting: Duration, running: Duration) -> Self {
        self.pending = pending;
        self.waiting = waiting;
        self.running = running;
        self
    }

    /// Sets `job_explanation`.
    #[must_use]
    pub fn with_explanation(mut self, text: impl Into<String>) -> Self {
        self.job_explanation = text.into();
        self
    }

    /// Sets `result_traceback`.
    #[must_use]
    pub fn with_traceback(mut self, text: impl Into<String>) -> Self {
        self.result_traceback = text.into();
        self
    }

    /// Sets `artifacts`.
    #[must_use]
    pub fn with_artifacts(mut self, artifacts: serde_json::Value) -> Self {
        self.artifacts = artifacts;
        self
    }

    /// Adds a failed task (see [`JobScript::failed_events`]).
    #[must_use]
    pub fn with_failed_event(
        mut self,
        task: impl Into<String>,
        host: impl Into<String>,
        msg: impl Into<String>,
    ) -> Self {
        self.failed_events.push(FailedEvent {
            task: task.into(),
            host: host.into(),
            msg: msg.into(),
        });
        self
    }

    /// A playbook failure as a real AWX reports it (aap-observed.md §13.2): status `failed`,
    /// `job_explanation` and `result_traceback` empty, the reason only in a `runner_on_failed`
    /// event of `task` on `host`.
    pub fn playbook_failure(task: &str, host: &str, msg: &str) -> Self {
        JobScript::ending(Outcome::Failed, Duration::from_millis(200))
            .with_failed_event(task, host, msg)
    }

    /// Sets the standard output.
    #[must_use]
    pub fn with_stdout(mut self, stdout: impl Into<String>) -> Self {
        self.stdout = stdout.into();
        self
    }

    /// Sets this job's cancel delay (see [`JobScript::cancel_delay`]).
    #[must_use]
    pub fn with_cancel_delay(mut self, delay: Duration) -> Self {
        self.cancel_delay = Some(delay);
        self
    }

    /// The timing this fake used before it followed the observed AWX (`pending` 0.5 s and
    /// `waiting` 0.5 s; a started job canceled at once), for tests written against it. `running`
    /// is kept.
    #[must_use]
    pub fn legacy_timing(mut self) -> Self {
        self.pending = Duration::from_millis(500);
        self.waiting = Duration::from_millis(500);
        self.cancel_delay = Some(Duration::ZERO);
        self
    }

    /// Sets the `event_processing_finished` lag (`None` = never).
    #[must_use]
    pub fn with_event_processing_lag(mut self, lag: Option<Duration>) -> Self {
        self.event_processing_lag = lag;
        self
    }
}

/// One failed task of a scripted job (a `runner_on_failed` job event).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailedEvent {
    /// The task name.
    pub task: String,
    /// The host the task failed on.
    pub host: String,
    /// The module's `msg` (`event_data.res.msg`).
    pub msg: String,
}

/// Which script a launch gets: the first matching rule with uses left wins, else the template's
/// default script.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptRule {
    /// Match only launches whose `extra_vars` has this key with this value (JSON equality).
    /// The key may be a dotted path into nested objects, read as a playbook reads a variable
    /// (`osac_job_vars.resource.spec.cidr`); a top-level key of that exact name wins.
    #[serde(default)]
    pub when_extra_var: Option<(String, serde_json::Value)>,
    /// How many launches the rule serves (`None` = unlimited).
    #[serde(default)]
    pub times: Option<u32>,
    /// The script to use.
    pub script: JobScript,
}

impl ScriptRule {
    /// The next `times` launches fail (outcome `failed`), e.g. "fail 2 times then succeed"
    /// when the template's default script succeeds.
    pub fn fail_times(times: u32) -> Self {
        ScriptRule {
            when_extra_var: None,
            times: Some(times),
            script: JobScript::ending(Outcome::Failed, Duration::from_secs(1)),
        }
    }

    /// Launches whose `extra_vars[key] == value` use `script` (`key` may be a dotted path:
    /// see the `when_extra_var` field).
    pub fn when_extra_var(
        key: impl Into<String>,
        value: serde_json::Value,
        script: JobScript,
    ) -> Self {
        ScriptRule {
            when_extra_var: Some((key.into(), value)),
            times: None,
            script,
        }
    }

    /// The next launch uses `script`.
    pub fn once(script: JobScript) -> Self {
        ScriptRule {
            when_extra_var: None,
            times: Some(1),
            script,
        }
    }
}

fn add(t: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    t + chrono::TimeDelta::from_std(d).unwrap_or(chrono::TimeDelta::MAX / 4)
}

/// What a job looks like at one instant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Snapshot {
    pub status: Status,
    pub started: Option<DateTime<Utc>>,
    pub finished: Option<DateTime<Utc>>,
    /// When the job becomes (or became) terminal, if known.
    pub terminal_at: Option<DateTime<Utc>>,
    /// The terminal status came from the script (not from a cancel).
    pub natural_end: bool,
}

/// Computes the snapshot of a scripted job.
///
/// `release`: when the job may leave `pending` (None = not yet known / blocked);
/// `cancel`: (time the cancel was requested, delay before a started job shows `canceled`).
pub(crate) fn snapshot(
    script: &JobScript,
    created: DateTime<Utc>,
    release: Option<DateTime<Utc>>,
    cancel: Option<(DateTime<Utc>, Duration)>,
    now: DateTime<Utc>,
) -> Snapshot {
    // Natural timeline.
    let p_end = release
        .map(|r| add(created, script.pending).max(r))
        .filter(|_| script.hold != Hold::Pending);
    let (started, natural_end) = match p_end {
        None => (None, None),
        Some(p) if script.skip_running => (None, Some(p)),
        Some(p) => {
            let s = add(p, script.waiting);
            let end = (script.hold != Hold::Running).then(|| add(s, script.running));
            (Some(s), end)
        }
    };
    let natural_status = |t: DateTime<Utc>| -> Status {
        match p_end {
            None => Status::Pending,
            Some(p) if t < p => Status::Pending,
            Some(_) => match (started, natural_end) {
                (_, Some(e)) if t >= e => script.outcome.status(),
                (Some(s), _) if t < s => Status::Waiting,
                _ => Status::Running,
            },
        }
    };
    // Effective end, considering a cancel.
    let mut terminal_at = natural_end;
    let mut natural = true;
    if let Some((k, delay)) = cancel {
        let at_k = natural_status(k);
        if at_k.is_active() {
            let effective = if at_k == Status::Pending {
                k
            } else {
                add(k, delay)
            };
            if natural_end.is_none_or(|e| e > effective) {
                terminal_at = Some(effective);
                natural = false;
            }
        }
    }
    match terminal_at {
        Some(end) if now >= end => Snapshot {
            status: if natural {
                script.outcome.status()
            } else {
                Status::Canceled
            },
            started: started.filter(|s| *s <= end),
            finished: Some(end),
            terminal_at,
            natural_end: natural,
        },
        _ => {
            let status = natural_status(now);
            Snapshot {
                status,
                started: started.filter(|s| *s <= now),
                finished: None,
                terminal_at,
                natural_end: natural,
            }
        }
    }
}

/// Serde helpers: `Duration` as float seconds.
pub(crate) mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
    }
}

/// Serde helpers: `Option<Duration>` as float seconds or `null`.
pub(crate) mod opt_secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_f64(d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        match Option::<f64>::deserialize(d)? {
            Some(v) => Duration::try_from_secs_f64(v)
                .map(Some)
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + s, 0).unwrap_or_default()
    }

    #[test]
    fn walks_through_phases() {
        let script = JobScript::default().with_phases(
            Duration::from_secs(1),
            Duration::from_secs(1),
            Duration::from_secs(2),
        );
        let c = t(0);
        let at = |s| snapshot(&script, c, Some(c), None, t(s));
        assert_eq!(at(0).status, Status::Pending);
        assert_eq!(at(1).status, Status::Waiting);
        assert_eq!(at(2).status, Status::Running);
        assert_eq!(at(2).started, Some(t(2)));
        assert_eq!(at(3).finished, None);
        let done = at(4);
        assert_eq!(
            (done.status, done.started, done.finished),
            (Status::Successful, Some(t(2)), Some(t(4)))
        );
    }

    #[test]
    fn blocked_release_and_cancel() {
        let script = JobScript::default().with_phases(
            Duration::ZERO,
            Duration::ZERO,
            Duration::from_secs(10),
        );
        let c = t(0);
        assert_eq!(
            snapshot(&script, c, None, None, t(100)).status,
            Status::Pending
        );
        assert_eq!(
            snapshot(&script, c, Some(t(5)), None, t(4)).status,
            Status::Pending
        );
        assert_eq!(
            snapshot(&script, c, Some(t(5)), None, t(5)).status,
            Status::Running
        );
        // cancel while running, 2 s delay
        let cancel = Some((t(7), Duration::from_secs(2)));
        assert_eq!(
            snapshot(&script, c, Some(c), cancel, t(8)).status,
            Status::Running
        );
        let s = snapshot(&script, c, Some(c), cancel, t(9));
        assert_eq!((s.status, s.finished), (Status::Canceled, Some(t(9))));
        // a cancel whose delay reaches past the natural end does not change the outcome
        let late = Some((t(8), Duration::from_secs(5)));
        assert_eq!(
            snapshot(&script, c, Some(c), late, t(20)).status,
            Status::Successful
        );
        // cancel while pending is immediate
        let s = snapshot(&script, c, None, Some((t(3), Duration::from_secs(3))), t(3));
        assert_eq!(
            (s.status, s.started, s.finished),
            (Status::Canceled, None, Some(t(3)))
        );
    }

    fn rank(s: Status) -> u8 {
        match s {
            Status::Pending => 0,
            Status::Waiting => 1,
            Status::Running => 2,
            _ => 3,
        }
    }

    proptest::proptest! {
        /// Whatever the script, release and cancel: the status only moves forward in time,
        /// `started <= finished`, and a terminal job keeps its finish time.
        #[test]
        fn timeline_is_monotonic(
            pending in 0u64..20, waiting in 0u64..20, running in 0u64..20,
            release in proptest::option::of(0i64..40), cancel in proptest::option::of((0i64..60, 0u64..10)),
            hold in 0u8..3, skip in proptest::bool::ANY,
        ) {
            let script = JobScript {
                hold: [Hold::None, Hold::Pending, Hold::Running][usize::from(hold)],
                skip_running: skip,
                ..JobScript::default().with_phases(Duration::from_secs(pending), Duration::from_secs(waiting), Duration::from_secs(running))
            };
            let cancel = cancel.map(|(k, d)| (t(k), Duration::from_secs(d)));
            let mut last: Option<Snapshot> = None;
            for now in 0..120 {
                let s = snapshot(&script, t(0), release.map(t), cancel, t(now));
                if let (Some(st), Some(f)) = (s.started, s.finished) {
                    proptest::prop_assert!(st <= f);
                }
                proptest::prop_assert_eq!(s.finished.is_some(), !s.status.is_active());
                if let Some(prev) = last {
                    proptest::prop_assert!(rank(prev.status) <= rank(s.status));
                    if !prev.status.is_active() {
                        proptest::prop_assert_eq!(prev, s);
                    }
                }
                last = Some(s);
            }
        }
    }
}
