//! Status types a CRD embeds: [`ProvisioningStatus`] (job history, desired config version,
//! conditions) and a `meta.SetStatusCondition`-style helper, [`set_condition`].

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use provkit_core::{JobStatus, LaunchIntent};
use serde::{Deserialize, Serialize};

use crate::time::to_k8s_time;

/// The provisioning part of a CRD status, with the Go operator's JSON keys
/// (`provisioningJobs`, `desiredConfigVersion`, `conditions`) and provkit's `launchIntent`
/// (the durable launch intent; see docs/lifecycle.md, "Exactly-once launch").
///
/// Embed it in your status struct with `#[serde(flatten)]` so the keys sit directly under
/// `status`, as in the Go CRDs (and as [`ProvisionedResource::provisioning_status_patch`]
/// assumes by default):
///
/// ```
/// use provkit_kube::ProvisioningStatus;
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
/// #[serde(rename_all = "camelCase")]
/// struct VirtualNetworkStatus {
///     #[serde(default, skip_serializing_if = "Option::is_none")]
///     phase: Option<String>,
///     #[serde(flatten)]
///     provisioning: ProvisioningStatus,
/// }
///
/// let s = VirtualNetworkStatus { phase: Some("Ready".into()), ..Default::default() };
/// assert_eq!(serde_json::to_string(&s).unwrap(), r#"{"phase":"Ready"}"#);
/// ```
///
/// In the JSON schema, `conditions` is a list-map keyed by `type`
/// (`x-kubernetes-list-type: map`), so server-side apply merges conditions per type instead of
/// replacing the whole list.
///
/// [`ProvisionedResource::provisioning_status_patch`]: crate::ProvisionedResource::provisioning_status_patch
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    description = "Provisioning status: job history, desired config version and conditions."
)]
pub struct ProvisioningStatus {
    /// Provision and deprovision jobs, oldest first (Go `status.provisioningJobs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(transform = short_job_description)]
    pub provisioning_jobs: Vec<JobStatus>,
    /// Config version computed from the current spec (Go `status.desiredConfigVersion`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub desired_config_version: String,
    /// Standard Kubernetes conditions, at most one per `type`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
    /// The launch attempt persisted before its launch request whose job is not recorded yet
    /// (provkit's write-ahead intent, `status.launchIntent`; a Go operator ignores the key).
    /// Written and cleared by the engine only: status writes never clear an unresolved intent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        description = "Write-ahead record of a launch attempt whose job is not recorded yet (provkit)."
    )]
    pub launch_intent: Option<LaunchIntent>,
}

/// Replaces the long rustdoc of `JobStatus` (with its examples) by a one-line CRD description.
fn short_job_description(schema: &mut schemars::Schema) {
    if let Some(items) = schema
        .get_mut("items")
        .and_then(serde_json::Value::as_object_mut)
    {
        items.insert(
            "description".to_owned(),
            "One job of the history (Go v1alpha1.JobStatus).".into(),
        );
    }
}

/// JSON schema of a `Vec<Condition>` as a list-map keyed by `type` (what `metav1.Condition`
/// lists carry in Go CRDs). Usable on your own fields with
/// `#[schemars(schema_with = "provkit_kube::status::conditions_schema")]`.
pub fn conditions_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "properties": {
                "lastTransitionTime": { "type": "string", "format": "date-time" },
                "message": { "type": "string", "maxLength": 32768 },
                "observedGeneration": { "type": "integer", "format": "int64", "minimum": 0 },
                "reason": { "type": "string", "maxLength": 1024, "minLength": 1 },
                "status": { "type": "string", "enum": ["True", "False", "Unknown"] },
                "type": { "type": "string", "maxLength": 316 }
            },
            "required": ["lastTransitionTime", "message", "reason", "status", "type"]
        }
    })
}

/// The status of a condition (`True` / `False` / `Unknown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    /// `"True"`.
    True,
    /// `"False"`.
    False,
    /// `"Unknown"`.
    Unknown,
}

impl ConditionStatus {
    /// The wire string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

/// A condition to set with [`set_condition`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewCondition<'a> {
    /// Condition type, e.g. `"Ready"`.
    pub type_: &'a str,
    /// Its status.
    pub status: ConditionStatus,
    /// CamelCase reason, e.g. `"ProvisioningSucceeded"`. Must not be empty (API validation).
    pub reason: &'a str,
    /// Human-readable message.
    pub message: &'a str,
    /// `metadata.generation` the condition was computed from.
    pub observed_generation: Option<i64>,
}

/// Sets a condition in place, like Go's `meta.SetStatusCondition`: adds it if no condition of
/// that type exists; otherwise updates reason, message and observed generation, and moves
/// `lastTransitionTime` to `now` **only when the status changes**. Returns whether anything
/// changed.
///
/// A `now` outside the Kubernetes time range (years −9999..=9999) is clamped to the Unix
/// epoch rather than failing.
///
/// ```
/// use chrono::{TimeZone, Utc};
/// use provkit_kube::status::{set_condition, ConditionStatus, NewCondition};
///
/// let mut conditions = Vec::new();
/// let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
/// let ready = |status, message| NewCondition {
///     type_: "Ready", status, reason: "Provisioning", message, observed_generation: Some(1),
/// };
/// assert!(set_condition(&mut conditions, ready(ConditionStatus::False, "job 1 running"), t0));
/// let t1 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 5, 0).unwrap();
/// // Same status, new message: transition time is kept.
/// assert!(set_condition(&mut conditions, ready(ConditionStatus::False, "still running"), t1));
/// assert_eq!(provkit_kube::time::from_k8s_time(&conditions[0].last_transition_time), t0);
/// // Nothing new: no change.
/// assert!(!set_condition(&mut conditions, ready(ConditionStatus::False, "still running"), t1));
/// ```
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    new: NewCondition<'_>,
    now: DateTime<Utc>,
) -> bool {
    let now = to_k8s_time(now).unwrap_or(Time(jiff::Timestamp::UNIX_EPOCH));
    let status = new.status.as_str();
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        None => {
            conditions.push(Condition {
                last_transition_time: now,
                message: new.message.to_owned(),
                observed_generation: new.observed_generation,
                reason: new.reason.to_owned(),
                status: status.to_owned(),
                type_: new.type_.to_owned(),
            });
            true
        }
        Some(c) => {
            let mut changed = false;
            if c.status != status {
                c.status = status.to_owned();
                c.last_transition_time = now;
                changed = true;
            }
            if c.reason != new.reason {
                new.reason.clone_into(&mut c.reason);
                changed = true;
            }
            if c.message != new.message {
                new.message.clone_into(&mut c.message);
                changed = true;
            }
            if c.observed_generation != new.observed_generation {
                c.observed_generation = new.observed_generation;
                changed = true;
            }
            changed
        }
    }
}

impl ProvisioningStatus {
    /// The condition of that type, if any (`status.condition("Ready")`).
    #[must_use]
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        find_condition(&self.conditions, type_)
    }
}

/// The condition of that type, if any.
#[must_use]
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use chrono::TimeZone;
    use provkit_core::{JobState, JobType};
    use serde_json::json;

    #[test]
    fn go_json_keys_and_omitempty() {
        let t = Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap();
        let mut s = ProvisioningStatus::default();
        assert_eq!(serde_json::to_value(&s).unwrap(), json!({}));
        s.provisioning_jobs.push(JobStatus::new(
            "1",
            JobType::Provision,
            JobState::Running,
            t,
        ));
        s.desired_config_version = "abc".into();
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            json!({
                "provisioningJobs": [{"jobID":"1","type":"provision","timestamp":"2026-06-29T12:00:00Z","state":"Running"}],
                "desiredConfigVersion": "abc"
            })
        );
        let back: ProvisioningStatus =
            serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn set_condition_transitions() {
        let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let t1 = Utc.with_ymd_and_hms(2026, 1, 1, 1, 0, 0).unwrap();
        let mut cs = Vec::new();
        let c = |status| NewCondition {
            type_: "Ready",
            status,
            reason: "R",
            message: "m",
            observed_generation: None,
        };
        assert!(set_condition(&mut cs, c(ConditionStatus::False), t0));
        assert!(set_condition(&mut cs, c(ConditionStatus::True), t1));
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].status, "True");
        assert_eq!(crate::time::from_k8s_time(&cs[0].last_transition_time), t1);
        assert!(!set_condition(&mut cs, c(ConditionStatus::True), t0));
        assert_eq!(crate::time::from_k8s_time(&cs[0].last_transition_time), t1);
        let other = NewCondition {
            type_: "Degraded",
            ..c(ConditionStatus::Unknown)
        };
        assert!(set_condition(&mut cs, other, t0));
        assert_eq!(cs.len(), 2);
        assert_eq!(find_condition(&cs, "Degraded").unwrap().status, "Unknown");
    }
}
