//! The job-history entry that operators store in their CRD status: [`JobStatus`], with its
//! [`JobType`] and [`JobState`].
//!
//! These types are a wire format. A Rust controller that takes over resources from the Go OSAC
//! operator reads the status that Go wrote, and Go reads what Rust writes, so the JSON is exactly
//! Go's:
//!
//! | field | JSON key | written |
//! |---|---|---|
//! | [`JobStatus::job_id`] | `jobID` | always (`""` allowed) |
//! | [`JobStatus::job_type`] | `type` | always |
//! | [`JobStatus::timestamp`] | `timestamp` | always; `null` for `None` |
//! | [`JobStatus::state`] | `state` | always |
//! | [`JobStatus::message`] | `message` | only when non-empty |
//! | [`JobStatus::block_deletion_on_failure`] | `blockDeletionOnFailure` | only when `true` |
//! | [`JobStatus::config_version`] | `configVersion` | only when non-empty |
//! | [`JobStatus::target`] | `target` | only when non-empty (newest Go operator; multi-target resources) |
//! | [`JobStatus::extra`] | any other key | verbatim, after the known keys |
//!
//! # Tolerant reading
//!
//! - A state or type string outside the known set (written by an older or newer operator) is
//!   kept verbatim in an `Other` variant and written back unchanged; an unknown state is never
//!   terminal.
//! - A missing `timestamp` reads as `None`, like `null`.
//! - Missing `message`, `blockDeletionOnFailure`, `configVersion`, `target`, `jobID`, `type` and
//!   `state` read as their defaults (`""`, `false`, `""`, `""`, `""`, provision, `Pending`): Go's decoder is
//!   just as lenient, and a status that lost a field must not make the resource unreadable.
//! - Keys this version does not know are kept in [`JobStatus::extra`] and written back, so
//!   rewriting a status written by a newer operator never loses data.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Kind of a job in the history: provisioning or deprovisioning.
///
/// Serialized as the lower-case strings Go uses (`"provision"`, `"deprovision"`). Any other
/// string is kept verbatim in [`JobType::Other`], so a status written by another version of the
/// operator round-trips unchanged.
///
/// Equality and hashing compare the string form ([`JobType::as_str`]), so
/// `JobType::Other("provision".into()) == JobType::Provision`.
///
/// ```
/// use provkit_core::JobType;
///
/// assert_eq!(serde_json::to_string(&JobType::Deprovision).unwrap(), r#""deprovision""#);
/// let t: JobType = serde_json::from_str(r#""attach""#).unwrap();
/// assert_eq!(t, JobType::Other("attach".to_owned()));
/// assert_eq!(serde_json::to_string(&t).unwrap(), r#""attach""#);
/// ```
#[derive(Clone, Debug, Default)]
pub enum JobType {
    /// `"provision"`: apply the resource's configuration.
    #[default]
    Provision,
    /// `"deprovision"`: tear the resource down.
    Deprovision,
    /// Any other string, kept verbatim (for example `attach`, which existed briefly upstream).
    Other(String),
}

impl JobType {
    /// The JSON string form.
    ///
    /// ```
    /// assert_eq!(provkit_core::JobType::Provision.as_str(), "provision");
    /// ```
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Provision => "provision",
            Self::Deprovision => "deprovision",
            Self::Other(s) => s,
        }
    }

    /// Parses a string form; known strings map to their variant, anything else to
    /// [`JobType::Other`]. Never fails.
    ///
    /// ```
    /// use provkit_core::JobType;
    /// assert_eq!(JobType::from_string("deprovision"), JobType::Deprovision);
    /// assert!(matches!(JobType::from_string("Provision"), JobType::Other(_))); // case-sensitive, like Go
    /// ```
    #[must_use]
    pub fn from_string(s: impl Into<String> + AsRef<str>) -> Self {
        match s.as_ref() {
            "provision" => Self::Provision,
            "deprovision" => Self::Deprovision,
            _ => Self::Other(s.into()),
        }
    }
}

/// State of a job, as stored in the history.
///
/// Serialized as Go's PascalCase strings (`"Pending"`, …, `"Canceled"` with one "l"). Any other
/// string (including `""`) is kept verbatim in [`JobState::Other`] and is **not** terminal, like
/// in Go, where `IsTerminal` compares strings.
///
/// Equality and hashing compare the string form ([`JobState::as_str`]), so
/// `JobState::Other("Failed".into()) == JobState::Failed` and both are terminal.
///
/// ```
/// use provkit_core::JobState;
///
/// let s: JobState = serde_json::from_str(r#""Paused""#).unwrap();
/// assert_eq!(s, JobState::Other("Paused".to_owned()));
/// assert!(!s.is_terminal());
/// assert!(JobState::Canceled.is_terminal());
/// assert!(!JobState::Canceled.is_successful());
/// ```
#[derive(Clone, Debug, Default)]
pub enum JobState {
    /// `"Pending"`: accepted, not started.
    #[default]
    Pending,
    /// `"Waiting"`: waiting for a dependency or capacity.
    Waiting,
    /// `"Running"`: in progress.
    Running,
    /// `"Succeeded"`: finished successfully (terminal).
    Succeeded,
    /// `"Failed"`: finished with an error (terminal).
    Failed,
    /// `"Canceled"`: canceled (terminal).
    Canceled,
    /// `"Unknown"`: the provider could not tell; not terminal.
    Unknown,
    /// Any other string, kept verbatim; not terminal.
    Other(String),
}

impl JobState {
    /// The JSON string form.
    ///
    /// ```
    /// assert_eq!(provkit_core::JobState::Canceled.as_str(), "Canceled");
    /// ```
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Pending => "Pending",
            Self::Waiting => "Waiting",
            Self::Running => "Running",
            Self::Succeeded => "Succeeded",
            Self::Failed => "Failed",
            Self::Canceled => "Canceled",
            Self::Unknown => "Unknown",
            Self::Other(s) => s,
        }
    }

    /// Parses a string form; known strings map to their variant, anything else to
    /// [`JobState::Other`]. Never fails; case-sensitive like Go.
    ///
    /// ```
    /// use provkit_core::JobState;
    /// assert_eq!(JobState::from_string("Running"), JobState::Running);
    /// assert_eq!(JobState::from_string("running"), JobState::Other("running".into()));
    /// ```
    #[must_use]
    pub fn from_string(s: impl Into<String> + AsRef<str>) -> Self {
        match s.as_ref() {
            "Pending" => Self::Pending,
            "Waiting" => Self::Waiting,
            "Running" => Self::Running,
            "Succeeded" => Self::Succeeded,
            "Failed" => Self::Failed,
            "Canceled" => Self::Canceled,
            "Unknown" => Self::Unknown,
            _ => Self::Other(s.into()),
        }
    }

    /// True only for `Succeeded`, `Failed` and `Canceled` (compared by string form). `Unknown`
    /// and unrecognised strings are not terminal.
    ///
    /// ```
    /// use provkit_core::JobState;
    /// assert!(JobState::Failed.is_terminal());
    /// assert!(!JobState::Unknown.is_terminal());
    /// assert!(!JobState::Other(String::new()).is_terminal());
    /// ```
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        matches!(self.as_str(), "Succeeded" | "Failed" | "Canceled")
    }

    /// True only for `Succeeded`.
    ///
    /// ```
    /// use provkit_core::JobState;
    /// assert!(JobState::Succeeded.is_successful());
    /// assert!(!JobState::Failed.is_successful());
    /// ```
    #[must_use]
    pub fn is_successful(&self) -> bool {
        self.as_str() == "Succeeded"
    }
}

macro_rules! string_enum_impls {
    ($ty:ident, $what:literal) => {
        impl PartialEq for $ty {
            fn eq(&self, other: &Self) -> bool {
                self.as_str() == other.as_str()
            }
        }

        impl Eq for $ty {}

        impl Hash for $ty {
            fn hash<H: Hasher>(&self, state: &mut H) {
                self.as_str().hash(state);
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = std::convert::Infallible;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Ok(Self::from_string(s))
            }
        }

        impl From<&str> for $ty {
            fn from(s: &str) -> Self {
                Self::from_string(s)
            }
        }

        impl From<String> for $ty {
            fn from(s: String) -> Self {
                Self::from_string(s)
            }
        }

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$ty, E> {
                        Ok($ty::from_string(v))
                    }
                    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<$ty, E> {
                        Ok($ty::from_string(v))
                    }
                }
                deserializer.deserialize_str(V)
            }
        }

        #[cfg(feature = "schemars")]
        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed(stringify!($ty))
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "description": $what,
                })
            }
        }
    };
}

string_enum_impls!(
    JobType,
    "a job type: \"provision\" or \"deprovision\" (other strings are kept verbatim)"
);
string_enum_impls!(
    JobState,
    "a job state: Pending, Waiting, Running, Succeeded, Failed, Canceled or Unknown (other strings are kept verbatim and are not terminal)"
);

/// One entry of a resource's job history (Go `v1alpha1.JobStatus`).
///
/// See the [module docs](self) for the JSON mapping and what is tolerated on read.
///
/// `timestamp` is the time the job was **triggered**; it is written as RFC 3339 UTC at
/// whole-second precision with a `Z` suffix (what the Kubernetes API server stores), so a
/// sub-second part held in memory is lost after a round trip, as in Go. `None` is written as
/// `null` (Go's zero time) and orders before every real time.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_core::{JobState, JobStatus, JobType};
///
/// let t = Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap();
/// let mut job = JobStatus::new("123", JobType::Provision, JobState::Pending, t);
/// job.config_version = "90f31220e6080755".into();
/// assert_eq!(
///     serde_json::to_string(&job).unwrap(),
///     r#"{"jobID":"123","type":"provision","timestamp":"2026-06-29T12:00:00Z","state":"Pending","configVersion":"90f31220e6080755"}"#,
/// );
///
/// let read: JobStatus = serde_json::from_str(
///     r#"{"jobID":"7","type":"deprovision","timestamp":null,"state":"Failed","blockDeletionOnFailure":true,"x":1}"#,
/// ).unwrap();
/// assert_eq!(read.timestamp, None);
/// assert!(read.state.is_terminal());
/// assert_eq!(read.extra["x"], 1);
/// ```
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct JobStatus {
    /// Provider job id (for AAP the decimal job id, e.g. `"123"`). `""` is accepted.
    #[serde(rename = "jobID", default)]
    pub job_id: String,
    /// Provision or deprovision.
    #[serde(rename = "type", default)]
    pub job_type: JobType,
    /// When the job was triggered; `None` ⇔ JSON `null` or a missing key.
    #[serde(default, with = "crate::timestamp::option")]
    #[cfg_attr(feature = "schemars", schemars(with = "Option<DateTime<Utc>>"))]
    pub timestamp: Option<DateTime<Utc>>,
    /// Last known state.
    #[serde(default)]
    pub state: JobState,
    /// Human-readable message; omitted from JSON when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Whether a failure of this (deprovision) job blocks deletion; omitted when `false`.
    #[serde(
        rename = "blockDeletionOnFailure",
        default,
        skip_serializing_if = "is_false"
    )]
    pub block_deletion_on_failure: bool,
    /// Desired config version at trigger time (provision jobs only); omitted when empty.
    #[serde(
        rename = "configVersion",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub config_version: String,
    /// Which provisioning target (manager) the job was dispatched to, for resources provisioned
    /// through several targets at once (Go `JobStatus.Target`, newest operator); empty for a
    /// resource with one target. Omitted from JSON when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target: String,
    /// Keys this version does not know, kept verbatim and written back after the known keys.
    /// Do not put the known keys (`jobID`, `type`, …) here: they would be written twice.
    #[serde(flatten)]
    #[cfg_attr(feature = "schemars", schemars(skip))]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_false(b: &bool) -> bool {
    !*b
}

impl JobStatus {
    /// A job with the given id, type, state and trigger time; message, config version and
    /// `block_deletion_on_failure` are empty/false and there are no extra fields.
    ///
    /// ```
    /// use chrono::{TimeZone, Utc};
    /// use provkit_core::{JobState, JobStatus, JobType};
    ///
    /// let job = JobStatus::new("42", JobType::Deprovision, JobState::Running, Utc.timestamp_opt(0, 0).unwrap());
    /// assert_eq!(job.job_id, "42");
    /// assert!(job.timestamp.is_some());
    /// ```
    #[must_use]
    pub fn new(
        job_id: impl Into<String>,
        job_type: JobType,
        state: JobState,
        timestamp: DateTime<Utc>,
    ) -> Self {
        Self {
            job_id: job_id.into(),
            job_type,
            timestamp: Some(timestamp),
            state,
            ..Self::default()
        }
    }
}
