//! [`LaunchIntent`]: the write-ahead record of a launch attempt, persisted on the object before
//! the launch request is sent.
//!
//! JSON (under `status.launchIntent`; a Go OSAC operator ignores the unknown key):
//!
//! | Field | JSON key | Notes |
//! |---|---|---|
//! | [`LaunchIntent::idempotency_key`] | `idempotencyKey` | the attempt's key (see provkit-lifecycle's `IdempotencyKey`) |
//! | [`LaunchIntent::job_type`] | `jobType` | `provision` / `deprovision` |
//! | [`LaunchIntent::config_version`] | `configVersion` | omitted when empty (deprovision) |
//! | [`LaunchIntent::created_at`] | `createdAt` | RFC 3339 UTC with microseconds (`metav1.MicroTime`); a whole-second value of an older writer still reads |
//! | [`LaunchIntent::target`] | `target` | omitted when empty; the job's target once jobs carry one |
//! | [`LaunchIntent::marker`] | `marker` | omitted when empty; what the provider promised to attach to the attempt's job so that one exact query finds it |

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::job::JobType;

/// A launch attempt that was persisted **before** its launch request was sent and whose job is
/// not yet recorded in the history.
///
/// The engine (provkit-lifecycle) writes it, launches only after the write succeeded, and clears
/// it with the status write that records the job. An intent found on a later reconcile (after a
/// crash, a lost answer or a refused status write) is resolved before anything new is launched:
/// the job carrying [`idempotency_key`](Self::idempotency_key) is looked up in the backend,
/// created since [`created_at`](Self::created_at), and adopted if it exists.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{JobType, LaunchIntent};
///
/// let at = Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap() + chrono::Duration::nanoseconds(250_000_999);
/// let intent = LaunchIntent::new("pk1-uid-p-0123456789abcdef", JobType::Provision, "v1", at);
/// assert_eq!(
///     serde_json::to_string(&intent).unwrap(),
///     r#"{"idempotencyKey":"pk1-uid-p-0123456789abcdef","jobType":"provision","configVersion":"v1","createdAt":"2026-06-29T12:00:00.250000Z"}"#,
/// );
/// // The time is kept at whole microseconds, the precision it reads back with.
/// assert_eq!(intent.created_at, Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap() + chrono::Duration::microseconds(250_000));
/// let back: LaunchIntent = serde_json::from_str(&serde_json::to_string(&intent).unwrap()).unwrap();
/// assert_eq!(back, intent);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LaunchIntent {
    /// The attempt's idempotency key, as attached to the job it creates.
    pub idempotency_key: String,
    /// The type of job the attempt launches.
    pub job_type: JobType,
    /// The desired config version of the attempt (provision attempts; empty otherwise).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub config_version: String,
    /// When the attempt was persisted (before its launch request), at whole microseconds: a
    /// lookup's window starts and ends from it, and a process keys what it knows of the
    /// attempt's launch by it, so it must read back exactly as it was written (a whole-second
    /// time would move the window's end up to a second early).
    #[serde(with = "crate::timestamp::micro")]
    #[cfg_attr(feature = "schemars", schemars(with = "DateTime<Utc>"))]
    pub created_at: DateTime<Utc>,
    /// The job's target, once jobs carry one (empty: none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target: String,
    /// What the provider promised, before this intent was written, to attach to the attempt's
    /// launch so that one exact query finds its job (provkit-aap: a skip tag); empty: nothing,
    /// the lookup reads the attempt's window. Only the provider interprets it. It is recorded
    /// here, not derived again at lookup time, because whether the launch carried it must be
    /// known to every process that inherits the intent, whatever the provider's configuration
    /// or the backend's settings are by then.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub marker: String,
}

impl LaunchIntent {
    /// An intent without a target; `created_at` is kept at whole microseconds (truncated), the
    /// precision it is written with.
    #[must_use]
    pub fn new(
        idempotency_key: impl Into<String>,
        job_type: JobType,
        config_version: impl Into<String>,
        created_at: DateTime<Utc>,
    ) -> Self {
        Self {
            idempotency_key: idempotency_key.into(),
            job_type,
            config_version: config_version.into(),
            created_at: crate::timestamp::micro::truncate(created_at),
            target: String::new(),
            marker: String::new(),
        }
    }

    /// Sets the target.
    #[must_use]
    pub fn with_target(mut self, target: impl Into<String>) -> Self {
        self.target = target.into();
        self
    }

    /// Sets the marker (see [`marker`](Self::marker)).
    ///
    /// ```
    /// use chrono::{TimeZone, Utc};
    /// use provkit_core::{JobType, LaunchIntent};
    ///
    /// let at = Utc.with_ymd_and_hms(2026, 12, 5, 12, 0, 0).unwrap();
    /// let intent = LaunchIntent::new("pk1-uid-p-0123456789abcdef", JobType::Provision, "v1", at)
    ///     .with_marker("pk1-uid-p-0123456789abcdef");
    /// let json = serde_json::to_value(&intent).unwrap();
    /// assert_eq!(json["marker"], "pk1-uid-p-0123456789abcdef");
    /// // An intent without a marker (or written before markers existed) reads back with none.
    /// let plain: LaunchIntent = serde_json::from_str(
    ///     r#"{"idempotencyKey":"k","jobType":"provision","createdAt":"2026-12-05T12:00:00Z"}"#,
    /// ).unwrap();
    /// assert!(plain.marker.is_empty());
    /// ```
    #[must_use]
    pub fn with_marker(mut self, marker: impl Into<String>) -> Self {
        self.marker = marker.into();
        self
    }
}
