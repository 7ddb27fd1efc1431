//! Cluster-state validation (§A.6.3).

use std::collections::BTreeSet;
use std::fmt;

use super::buckets::IndexBucket;

/// The update strategy of the set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpdateStrategy {
    /// Replace outdated machines one at a time, surge-limited.
    RollingUpdate,
    /// Replace a machine only after a user deleted it.
    OnDelete,
    /// Not supported upstream (degrades with `InvalidStrategy`).
    Recreate,
    /// Anything else (degrades with `InvalidStrategy`).
    Other(String),
}

/// Why the set is degraded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DegradationReason {
    /// No machine is ready although every index has machines.
    NoReadyMachines,
    /// A control-plane node is not backed by any machine of the set.
    UnmanagedNodes,
    /// More indexes than replicas.
    ExcessIndexes,
    /// OnDelete: more than one updated machine in an index.
    ExcessUpdatedReplicas,
    /// A replacement machine failed while an outdated one waits for it.
    FailedReplacement,
    /// The strategy is unsupported or unknown.
    InvalidStrategy,
}

impl fmt::Display for DegradationReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NoReadyMachines => "NoReadyMachines",
            Self::UnmanagedNodes => "UnmanagedNodes",
            Self::ExcessIndexes => "ExcessIndexes",
            Self::ExcessUpdatedReplicas => "ExcessUpdatedReplicas",
            Self::FailedReplacement => "FailedReplacement",
            Self::InvalidStrategy => "InvalidStrategy",
        })
    }
}

/// A degradation: the set needs a human; the controller takes no action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Degradation {
    /// The reason.
    pub reason: DegradationReason,
    /// A human-readable message.
    pub message: String,
}

/// Validates the cluster state; the first failing check wins.
///
/// Checks, in order: no ready machine while every bucket is non-empty (`NoReadyMachines`);
/// every control-plane node name must be some info's node (`UnmanagedNodes`); more buckets than
/// replicas (`ExcessIndexes`); OnDelete only: more than one updated info in a bucket
/// (`ExcessUpdatedReplicas`); a bucket with an outdated info and a pending info carrying an
/// error message (`FailedReplacement`); then the strategy (`InvalidStrategy` for Recreate and
/// unknown strategies).
///
/// # Errors
/// The first [`Degradation`] found.
///
/// ```
/// use std::collections::BTreeSet;
/// use provkit_core::k8s::{GroupVersionResource, MachineInfo, ObjectRef};
/// use provkit_machines::set::{validate_cluster_state, DegradationReason, IndexBucket, UpdateStrategy};
/// let node = ObjectRef::named(GroupVersionResource::new("", "v1", "nodes"), "node-0", None);
/// let info = MachineInfo::new(ObjectRef::default(), 0).with_ready(true).with_node(node);
/// let buckets = vec![IndexBucket::new(0, vec![info])];
/// let nodes = BTreeSet::from(["node-0".to_string(), "node-9".to_string()]);
/// let err = validate_cluster_state(&buckets, &nodes, 1, &UpdateStrategy::RollingUpdate).unwrap_err();
/// assert_eq!(err.reason, DegradationReason::UnmanagedNodes);
/// ```
pub fn validate_cluster_state(
    buckets: &[IndexBucket],
    control_plane_nodes: &BTreeSet<String>,
    replicas: i32,
    strategy: &UpdateStrategy,
) -> Result<(), Degradation> {
    let all_non_empty = buckets.iter().all(|b| !b.infos.is_empty());
    let any_ready = buckets.iter().flat_map(|b| &b.infos).any(|i| i.ready);
    if !buckets.is_empty() && all_non_empty && !any_ready {
        return Err(Degradation {
            reason: DegradationReason::NoReadyMachines,
            message: "No ready control plane machines found".into(),
        });
    }
    let managed: BTreeSet<&str> = buckets
        .iter()
        .flat_map(|b| &b.infos)
        .filter_map(|i| i.node.as_ref().map(|n| n.name()))
        .collect();
    let unmanaged: Vec<&str> = control_plane_nodes
        .iter()
        .map(String::as_str)
        .filter(|n| !managed.contains(n))
        .collect();
    if !unmanaged.is_empty() {
        return Err(Degradation {
            reason: DegradationReason::UnmanagedNodes,
            message: format!(
                "Found {} unmanaged node(s): {}",
                unmanaged.len(),
                unmanaged.join(", ")
            ),
        });
    }
    if usize::try_from(replicas).is_ok_and(|r| buckets.len() > r) {
        return Err(Degradation {
            reason: DegradationReason::ExcessIndexes,
            message: format!(
                "Observed {} indexes, but only {replicas} replicas are desired",
                buckets.len()
            ),
        });
    }
    if *strategy == UpdateStrategy::OnDelete {
        for b in buckets {
            let updated = b
                .infos
                .iter()
                .filter(|i| i.ready && !i.needs_update())
                .count();
            if updated > 1 {
                return Err(Degradation {
                    reason: DegradationReason::ExcessUpdatedReplicas,
                    message: format!("Observed {updated} updated machine(s) in index {}", b.index),
                });
            }
        }
    }
    for b in buckets {
        let has_outdated = b.infos.iter().any(|i| i.needs_update() || i.is_deleting());
        let failed = b.infos.iter().find(|i| {
            !i.ready
                && !i.needs_update()
                && !i.is_deleting()
                && i.error_message.as_deref().is_some_and(|m| !m.is_empty())
        });
        if let (true, Some(f)) = (has_outdated, failed) {
            return Err(Degradation {
                reason: DegradationReason::FailedReplacement,
                message: format!(
                    "Observed failed replacement machine {} in index {}: {}",
                    f.name(),
                    b.index,
                    f.error_message.as_deref().unwrap_or_default()
                ),
            });
        }
    }
    strategy_degradation(strategy).map_or(Ok(()), Err)
}

/// The `InvalidStrategy` degradation for Recreate and unknown strategies (upstream wording:
/// `invalid value for spec.strategy.type: …`), `None` for the supported ones.
pub(crate) fn strategy_degradation(strategy: &UpdateStrategy) -> Option<Degradation> {
    let detail = match strategy {
        UpdateStrategy::RollingUpdate | UpdateStrategy::OnDelete => return None,
        UpdateStrategy::Recreate => "update strategy \"Recreate\" is not supported".to_owned(),
        UpdateStrategy::Other(s) => format!("unknown update strategy: {s}"),
    };
    Some(Degradation {
        reason: DegradationReason::InvalidStrategy,
        message: format!("invalid value for spec.strategy.type: {detail}"),
    })
}
