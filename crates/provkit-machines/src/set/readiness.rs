//! Machine readiness (§A.3.5): pure, time passed in.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

/// Upstream grace period during which a `Running` machine whose node just turned NotReady
/// still counts as ready (reboots, upgrades): 20 minutes.
pub const DEFAULT_READY_GRACE: Duration = Duration::from_secs(20 * 60);

/// The Machine API phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MachinePhase {
    /// Instance being created.
    Provisioning,
    /// Instance exists, node not joined.
    Provisioned,
    /// Node joined.
    Running,
    /// Deletion in progress.
    Deleting,
    /// Terminal failure.
    Failed,
    /// Any other value.
    Other(String),
}

/// Status of a node's `Ready` condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeReadyStatus {
    /// `True`.
    True,
    /// `False`.
    False,
    /// `Unknown`.
    Unknown,
}

/// A node's `Ready` condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeReadyCondition {
    /// The condition status.
    pub status: NodeReadyStatus,
    /// When the status last changed.
    pub last_transition: Option<DateTime<Utc>>,
    /// Whether the node has been Ready before (the operator observed `Ready=True` for it,
    /// e.g. it counted as ready in the previous status). The not-ready grace applies only to
    /// such nodes: a freshly joined node that has never been Ready also has a recent
    /// transition, and counting it ready deletes the machine it replaces too early
    /// (OCPBUGS-7989). `false` when unknown: no grace, the safe side.
    pub has_been_ready: bool,
}

/// Whether a machine counts as a working member of the set.
///
/// - no node reference (`node_ready` is `None` and `has_node` false) → false;
/// - `Running` and node Ready → true;
/// - `Running`, node not Ready but [`has_been_ready`](NodeReadyCondition::has_been_ready),
///   last transition less than `grace` before `now` → true (reboots, upgrades);
/// - `Deleting` and node Ready → true (a draining machine still serves);
/// - anything else (other phases, no Ready condition) → false.
///
/// Failing to fetch the node is the caller's error to report (upstream fails the whole read).
///
/// ```
/// use chrono::{TimeDelta, TimeZone, Utc};
/// use provkit_machines::set::{is_ready, MachinePhase, NodeReadyCondition, NodeReadyStatus, DEFAULT_READY_GRACE};
/// let now = Utc.timestamp_opt(10_000, 0).unwrap();
/// let flapped = NodeReadyCondition {
///     status: NodeReadyStatus::False,
///     last_transition: Some(now - TimeDelta::minutes(5)),
///     has_been_ready: true,
/// };
/// assert!(is_ready(Some(&MachinePhase::Running), true, Some(&flapped), now, DEFAULT_READY_GRACE));
/// assert!(!is_ready(Some(&MachinePhase::Provisioned), true, Some(&flapped), now, DEFAULT_READY_GRACE));
/// let joining = NodeReadyCondition { has_been_ready: false, ..flapped };
/// assert!(!is_ready(Some(&MachinePhase::Running), true, Some(&joining), now, DEFAULT_READY_GRACE));
/// ```
#[must_use]
pub fn is_ready(
    phase: Option<&MachinePhase>,
    has_node: bool,
    node_ready: Option<&NodeReadyCondition>,
    now: DateTime<Utc>,
    grace: Duration,
) -> bool {
    if !has_node {
        return false;
    }
    let Some(cond) = node_ready else {
        return false;
    };
    match (phase, cond.status) {
        (Some(MachinePhase::Running | MachinePhase::Deleting), NodeReadyStatus::True) => true,
        (Some(MachinePhase::Running), NodeReadyStatus::False | NodeReadyStatus::Unknown)
            if cond.has_been_ready =>
        {
            let grace = TimeDelta::from_std(grace).unwrap_or(TimeDelta::MAX);
            cond.last_transition
                .is_some_and(|t| now.signed_duration_since(t) < grace)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    #[allow(clippy::type_complexity)] // a table of tuples
    fn readiness_table() {
        let now = Utc.timestamp_opt(100_000, 0).unwrap();
        let cond = |s, mins: Option<i64>| NodeReadyCondition {
            status: s,
            last_transition: mins.map(|m| now - TimeDelta::minutes(m)),
            has_been_ready: true,
        };
        let never_ready = |s, mins: Option<i64>| NodeReadyCondition {
            has_been_ready: false,
            ..cond(s, mins)
        };
        use MachinePhase as P;
        use NodeReadyStatus as S;
        let cases: Vec<(&str, Option<P>, bool, Option<NodeReadyCondition>, bool)> = vec![
            ("no node ref", Some(P::Running), false, None, false),
            (
                "running ready",
                Some(P::Running),
                true,
                Some(cond(S::True, Some(60))),
                true,
            ),
            (
                "running unready inside grace",
                Some(P::Running),
                true,
                Some(cond(S::False, Some(19))),
                true,
            ),
            (
                "running unknown inside grace",
                Some(P::Running),
                true,
                Some(cond(S::Unknown, Some(1))),
                true,
            ),
            (
                "running, joining node never ready, inside grace (OCPBUGS-7989)",
                Some(P::Running),
                true,
                Some(never_ready(S::False, Some(1))),
                false,
            ),
            (
                "running unready at grace",
                Some(P::Running),
                true,
                Some(cond(S::False, Some(20))),
                false,
            ),
            (
                "running unready outside grace",
                Some(P::Running),
                true,
                Some(cond(S::False, Some(25))),
                false,
            ),
            (
                "running unready no transition",
                Some(P::Running),
                true,
                Some(cond(S::False, None)),
                false,
            ),
            (
                "running no ready condition",
                Some(P::Running),
                true,
                None,
                false,
            ),
            (
                "deleting ready",
                Some(P::Deleting),
                true,
                Some(cond(S::True, Some(1))),
                true,
            ),
            (
                "deleting unready in grace",
                Some(P::Deleting),
                true,
                Some(cond(S::False, Some(1))),
                false,
            ),
            (
                "provisioning",
                Some(P::Provisioning),
                true,
                Some(cond(S::True, Some(1))),
                false,
            ),
            (
                "provisioned",
                Some(P::Provisioned),
                true,
                Some(cond(S::True, Some(1))),
                false,
            ),
            (
                "failed",
                Some(P::Failed),
                true,
                Some(cond(S::True, Some(1))),
                false,
            ),
            ("no phase", None, true, Some(cond(S::True, Some(1))), false),
            (
                "other phase",
                Some(P::Other("X".into())),
                true,
                Some(cond(S::True, Some(1))),
                false,
            ),
        ];
        for (name, phase, has_node, c, want) in cases {
            assert_eq!(
                is_ready(
                    phase.as_ref(),
                    has_node,
                    c.as_ref(),
                    now,
                    DEFAULT_READY_GRACE
                ),
                want,
                "{name}"
            );
        }
    }
}
