//! Status counting (§A.6.2).

use super::buckets::IndexBucket;

/// A status condition as the controller would write it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetCondition {
    /// Condition type: `Available`, `Degraded` or `Progressing`.
    pub type_: &'static str,
    /// Condition status.
    pub status: bool,
    /// Machine-readable reason.
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
}

/// Replica counts and conditions computed from the buckets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetStatus {
    /// All machines, deleting ones included.
    pub replicas: i32,
    /// Ready machines.
    pub ready_replicas: i32,
    /// Ready and up-to-date machines.
    pub updated_replicas: i32,
    /// Buckets that are empty or hold no ready machine.
    pub unavailable_replicas: i32,
    /// `Available`, `Degraded`, `Progressing`, in that order.
    pub conditions: Vec<SetCondition>,
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Computes the status of the set.
///
/// ```
/// use provkit_core::k8s::{MachineInfo, ObjectRef};
/// use provkit_machines::set::{compute_status, IndexBucket};
/// let ready = MachineInfo::new(ObjectRef::default(), 0).with_ready(true);
/// let buckets = vec![IndexBucket::new(0, vec![ready]), IndexBucket::new(1, vec![])];
/// let s = compute_status(&buckets, 2);
/// assert_eq!((s.replicas, s.ready_replicas, s.updated_replicas, s.unavailable_replicas), (1, 1, 1, 1));
/// assert_eq!(s.conditions[0].reason, "UnavailableReplicas");
/// assert_eq!(s.conditions[0].message, "Missing 1 available replica(s)");
/// assert_eq!(s.conditions[2].reason, "NeedsUpdateReplicas");
/// ```
#[must_use]
pub fn compute_status(buckets: &[IndexBucket], desired_replicas: i32) -> SetStatus {
    let infos = buckets.iter().flat_map(|b| &b.infos);
    let replicas = count(infos.clone().count());
    let ready = count(infos.clone().filter(|i| i.ready).count());
    let updated = count(infos.filter(|i| i.ready && !i.needs_update()).count());
    let unavailable = count(
        buckets
            .iter()
            .filter(|b| !b.infos.iter().any(|i| i.ready))
            .count(),
    );
    let available = if unavailable > 0 {
        SetCondition {
            type_: "Available",
            status: false,
            reason: "UnavailableReplicas",
            message: format!("Missing {unavailable} available replica(s)"),
        }
    } else {
        SetCondition {
            type_: "Available",
            status: true,
            reason: "AllReplicasAvailable",
            message: String::new(),
        }
    };
    let degraded = if ready == 0 {
        SetCondition {
            type_: "Degraded",
            status: true,
            reason: "NoReadyMachines",
            message: "No ready control plane machines found".into(),
        }
    } else {
        SetCondition {
            type_: "Degraded",
            status: false,
            reason: "AsExpected",
            message: String::new(),
        }
    };
    let progressing = if desired_replicas > updated {
        SetCondition {
            type_: "Progressing",
            status: true,
            reason: "NeedsUpdateReplicas",
            message: format!(
                "Observed {} replica(s) in need of update",
                desired_replicas - updated
            ),
        }
    } else if desired_replicas < ready {
        SetCondition {
            type_: "Progressing",
            status: true,
            reason: "ExcessReplicas",
            message: format!(
                "Waiting for {} old replica(s) to be removed",
                ready - desired_replicas
            ),
        }
    } else {
        SetCondition {
            type_: "Progressing",
            status: false,
            reason: "AllReplicasUpdated",
            message: String::new(),
        }
    };
    SetStatus {
        replicas,
        ready_replicas: ready,
        updated_replicas: updated,
        unavailable_replicas: unavailable,
        conditions: vec![available, degraded, progressing],
    }
}
