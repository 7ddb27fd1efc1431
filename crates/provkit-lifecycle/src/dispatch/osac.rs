//! The OSAC preset of dispatch targets: Go's dual-dispatch provisioning (osac-project/osac,
//! OSAC-1461, August 2026; `pkg/dispatcher` and `internal/controller/dispatcher_helpers.go`).
//!
//! A networking object's NetworkClass may register a **fabric manager** (physical networking)
//! and a **Kubernetes-side manager** (overlay-to-fabric bridging). The object's kind says which
//! roles it needs ([`dispatch_config`]); [`DispatchPlan::resolve`] turns the registered managers
//! into the plan's targets:
//!
//! - The fabric role goes to the fabric manager; when there is none, kinds with the
//!   **fallback** (every networking kind but `NATGateway`) give it to the Kubernetes-side manager
//!   instead, as a Kubernetes-role target; without either it is an error
//!   ([`DispatchError::NoManager`]).
//! - The Kubernetes role (only `Subnet` has it) goes to the Kubernetes-side manager when there is
//!   one and is left out otherwise; a role already in the plan (through the fallback) is not
//!   added twice.
//! - A NetworkClass with neither manager gives **no plan** (`Ok(None)`): the object keeps its
//!   legacy implementation strategy (from its spec or parent), single-target, as before the
//!   dispatcher existed.
//!
//! Each target launches through the **same** provider and templates; its launches see a copy of
//! the object whose [`IMPLEMENTATION_STRATEGY_ANNOTATION`] names the target's manager
//! ([`SetAnnotation`]), so the playbook picks the matching role from the payload; polls see the
//! object as it is. Jobs are tagged `fabric` and `k8s` ([`FABRIC_TARGET`], [`K8S_TARGET`]); the
//! fabric target absorbs the untagged history of the single-target days.
//!
//! ```
//! use provkit_lifecycle::dispatch::osac::{DispatchPlan, Managers, implementation_strategy, subnet_strategies};
//!
//! // Subnet, both managers registered: two targets.
//! let plan = DispatchPlan::resolve("Subnet", &Managers::new(Some("netris"), Some("cudn_net")))?.unwrap();
//! assert_eq!(subnet_strategies(Some(&plan), "legacy"), ("netris".to_owned(), "cudn_net".to_owned()));
//! // VirtualNetwork without a fabric manager: the fallback to the Kubernetes-side manager.
//! let plan = DispatchPlan::resolve("VirtualNetwork", &Managers::new(None, Some("cudn_net")))?;
//! assert_eq!(implementation_strategy(plan.as_ref(), "legacy"), "cudn_net");
//! // NATGateway has no fallback.
//! assert!(DispatchPlan::resolve("NATGateway", &Managers::new(None, Some("cudn_net"))).is_err());
//! // No manager at all: no plan, the legacy value.
//! let plan = DispatchPlan::resolve("SecurityGroup", &Managers::default())?;
//! assert_eq!(implementation_strategy(plan.as_ref(), "ovn"), "ovn");
//! # Ok::<(), provkit_lifecycle::dispatch::osac::DispatchError>(())
//! ```

use std::fmt;

use serde_json::Value;

use super::SetAnnotation;
use crate::engine::Lifecycle;
use crate::engine::multi_target::JobTarget;

/// The annotation an OSAC playbook reads its role from (`osac.openshift.io/implementation-strategy`).
pub const IMPLEMENTATION_STRATEGY_ANNOTATION: &str = "osac.openshift.io/implementation-strategy";

/// The annotation where a dual-dispatch Subnet keeps its Kubernetes-side manager, so that its
/// deletion can tear that target down without resolving the plan again
/// (`osac.openshift.io/k8s-implementation-strategy`).
pub const K8S_IMPLEMENTATION_STRATEGY_ANNOTATION: &str =
    "osac.openshift.io/k8s-implementation-strategy";

/// The job target of the fabric role (`fabric`).
pub const FABRIC_TARGET: &str = "fabric";

/// The job target of the Kubernetes-side role (`k8s`).
pub const K8S_TARGET: &str = "k8s";

/// Which manager handles an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ManagerRole {
    /// The fabric manager: physical networking.
    Fabric,
    /// The Kubernetes-side manager: overlay-to-fabric bridging.
    K8s,
}

impl ManagerRole {
    /// `fabric` or `k8s`: the role's name, also the job target of its jobs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Fabric => FABRIC_TARGET,
            Self::K8s => K8S_TARGET,
        }
    }
}

impl fmt::Display for ManagerRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The roles a kind needs and whether its fabric role falls back to the Kubernetes-side manager.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DispatchConfig {
    /// The roles, in dispatch order.
    pub roles: Vec<ManagerRole>,
    /// Without a fabric manager, the fabric role is served by the Kubernetes-side manager.
    pub k8s_fallback: bool,
}

/// OSAC's dispatch table: the networking kinds and their roles (`None` for any other kind).
///
/// | kind | roles | fallback |
/// |---|---|---|
/// | `VirtualNetwork`, `SecurityGroup`, `ExternalIP`, `ExternalIPPool`, `ExternalIPAttachment` | fabric | yes |
/// | `Subnet` | fabric, k8s | yes |
/// | `NATGateway` | fabric | no |
pub fn dispatch_config(kind: &str) -> Option<DispatchConfig> {
    use ManagerRole::{Fabric, K8s};
    let (roles, k8s_fallback) = match kind {
        "VirtualNetwork"
        | "SecurityGroup"
        | "ExternalIP"
        | "ExternalIPPool"
        | "ExternalIPAttachment" => (vec![Fabric], true),
        "Subnet" => (vec![Fabric, K8s], true),
        "NATGateway" => (vec![Fabric], false),
        _ => return None,
    };
    Some(DispatchConfig {
        roles,
        k8s_fallback,
    })
}

/// The managers a NetworkClass registers (by name; `None` when it names none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Managers {
    /// The fabric manager.
    pub fabric: Option<String>,
    /// The Kubernetes-side manager.
    pub k8s: Option<String>,
}

impl Managers {
    /// The two managers (empty names count as none).
    pub fn new(fabric: Option<&str>, k8s: Option<&str>) -> Self {
        let name = |n: Option<&str>| n.filter(|n| !n.is_empty()).map(str::to_owned);
        Self {
            fabric: name(fabric),
            k8s: name(k8s),
        }
    }
}

/// One manager the plan dispatches to.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DispatchTarget {
    /// Why it is targeted (a fabric role served by the fallback is [`ManagerRole::K8s`]).
    pub role: ManagerRole,
    /// The manager's name: what the target's launches put in
    /// [`IMPLEMENTATION_STRATEGY_ANNOTATION`].
    pub manager: String,
}

/// No plan can be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DispatchError {
    /// The kind is not in the dispatch table.
    #[error("no dispatch configuration for resource kind {kind:?}")]
    UnknownKind {
        /// The kind.
        kind: String,
    },
    /// The fabric role has no manager and no usable fallback.
    #[error(
        "no manager available for {kind}: NetworkClass has neither a fabricManager nor a usable k8sManager fallback"
    )]
    NoManager {
        /// The kind.
        kind: String,
    },
}

/// The managers an object's launches go to (Go's `DispatchPlan`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DispatchPlan {
    targets: Vec<DispatchTarget>,
}

impl DispatchPlan {
    /// The plan for an object of `kind` whose NetworkClass registers `managers`; `Ok(None)` when it
    /// registers neither (the legacy, single-target path). See the [module docs](self) for the rules.
    ///
    /// # Errors
    /// [`DispatchError::UnknownKind`] for a kind outside the table (checked first, as Go),
    /// [`DispatchError::NoManager`] for a fabric role without manager or fallback.
    pub fn resolve(kind: &str, managers: &Managers) -> Result<Option<Self>, DispatchError> {
        let config = dispatch_config(kind).ok_or_else(|| DispatchError::UnknownKind {
            kind: kind.to_owned(),
        })?;
        if managers.fabric.is_none() && managers.k8s.is_none() {
            return Ok(None);
        }
        let mut plan = Self::default();
        for role in &config.roles {
            match role {
                ManagerRole::Fabric => match (&managers.fabric, &managers.k8s) {
                    (Some(fabric), _) => plan.add(ManagerRole::Fabric, fabric),
                    (None, Some(k8s)) if config.k8s_fallback => plan.add(ManagerRole::K8s, k8s),
                    _ => {
                        return Err(DispatchError::NoManager {
                            kind: kind.to_owned(),
                        });
                    }
                },
                ManagerRole::K8s => {
                    if let Some(k8s) = &managers.k8s {
                        plan.add(ManagerRole::K8s, k8s);
                    }
                }
            }
        }
        Ok(Some(plan))
    }

    /// A role already in the plan is not added again.
    fn add(&mut self, role: ManagerRole, manager: &str) {
        if self.targets.iter().all(|t| t.role != role) {
            self.targets.push(DispatchTarget {
                role,
                manager: manager.to_owned(),
            });
        }
    }

    /// The targets, in dispatch order.
    pub fn targets(&self) -> &[DispatchTarget] {
        &self.targets
    }

    /// The fabric-role target, if any.
    pub fn fabric_target(&self) -> Option<&DispatchTarget> {
        self.targets.iter().find(|t| t.role == ManagerRole::Fabric)
    }

    /// The Kubernetes-role target, if any (also a fabric role served by the fallback).
    pub fn k8s_target(&self) -> Option<&DispatchTarget> {
        self.targets.iter().find(|t| t.role == ManagerRole::K8s)
    }

    /// The job targets of a multi-target object (Go's Subnet): `None` when the plan has no fabric
    /// target (the object stays on the single-target path, launching with its own
    /// annotation); otherwise `fabric` (absorbing the legacy history) and, when planned, `k8s`,
    /// each a clone of `lifecycle` whose launches see its manager in
    /// [`IMPLEMENTATION_STRATEGY_ANNOTATION`].
    pub fn job_targets(&self, lifecycle: &Lifecycle) -> Option<Vec<JobTarget>> {
        let fabric = self.fabric_target()?;
        Some(targets_for(
            &fabric.manager,
            self.k8s_target().map(|t| t.manager.as_str()),
            lifecycle,
        ))
    }
}

fn targets_for(fabric: &str, k8s: Option<&str>, lifecycle: &Lifecycle) -> Vec<JobTarget> {
    let view = |manager: &str| SetAnnotation::new(IMPLEMENTATION_STRATEGY_ANNOTATION, manager);
    let mut targets = vec![
        JobTarget::new(
            FABRIC_TARGET,
            lifecycle.clone().with_launch_view(view(fabric)),
        )
        .absorbs_legacy_history(),
    ];
    if let Some(k8s) = k8s.filter(|k| !k.is_empty()) {
        targets.push(JobTarget::new(
            K8S_TARGET,
            lifecycle.clone().with_launch_view(view(k8s)),
        ));
    }
    targets
}

/// The implementation strategy of a single-target networking object (Go's
/// `resolveImplementationStrategy`): the plan's fabric manager, else its Kubernetes-side manager
/// (the fallback), else — no plan, or neither — `legacy`.
pub fn implementation_strategy(plan: Option<&DispatchPlan>, legacy: &str) -> String {
    plan.and_then(|p| p.fabric_target().or_else(|| p.k8s_target()))
        .map_or_else(|| legacy.to_owned(), |t| t.manager.clone())
}

/// A Subnet's two strategies, to stamp as [`IMPLEMENTATION_STRATEGY_ANNOTATION`] and
/// [`K8S_IMPLEMENTATION_STRATEGY_ANNOTATION`] (`""`: remove it) and to hash with
/// [`SpecWithStrategies`](provkit_core::SpecWithStrategies): the fabric manager or else `legacy`
/// (a Kubernetes-only plan keeps the legacy value, as Go's Subnet does), and the Kubernetes-side
/// manager or `""`.
pub fn subnet_strategies(plan: Option<&DispatchPlan>, legacy: &str) -> (String, String) {
    let fabric = plan
        .and_then(DispatchPlan::fabric_target)
        .map_or_else(|| legacy.to_owned(), |t| t.manager.clone());
    let k8s = plan
        .and_then(DispatchPlan::k8s_target)
        .map(|t| t.manager.clone())
        .unwrap_or_default();
    (fabric, k8s)
}

/// The deprovision targets of a Subnet from its stamped annotations (Go's
/// `handleDeprovisioning`, which does not resolve the plan again: the parent may be gone):
/// `None` when [`IMPLEMENTATION_STRATEGY_ANNOTATION`] was never stamped (the single-target
/// path); otherwise `fabric` (absorbing the legacy history) and, when
/// [`K8S_IMPLEMENTATION_STRATEGY_ANNOTATION`] is set, `k8s`.
///
/// ```
/// # fn f(lifecycle: provkit_lifecycle::Lifecycle) {
/// use provkit_lifecycle::dispatch::osac::deprovision_job_targets;
/// let object = serde_json::json!({"metadata": {"annotations": {
///     "osac.openshift.io/implementation-strategy": "netris",
///     "osac.openshift.io/k8s-implementation-strategy": "cudn_net"}}});
/// let targets = deprovision_job_targets(&object, &lifecycle).unwrap();
/// assert_eq!(targets.iter().map(|t| t.name()).collect::<Vec<_>>(), ["fabric", "k8s"]);
/// assert!(deprovision_job_targets(&serde_json::json!({"metadata": {}}), &lifecycle).is_none());
/// # }
/// ```
pub fn deprovision_job_targets(object: &Value, lifecycle: &Lifecycle) -> Option<Vec<JobTarget>> {
    let annotation = |key: &str| {
        object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
    };
    let fabric = annotation(IMPLEMENTATION_STRATEGY_ANNOTATION)?;
    Some(targets_for(
        fabric,
        annotation(K8S_IMPLEMENTATION_STRATEGY_ANNOTATION),
        lifecycle,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(plan: &DispatchPlan) -> Vec<(ManagerRole, String)> {
        plan.targets()
            .iter()
            .map(|t| (t.role, t.manager.clone()))
            .collect()
    }

    #[test]
    fn dispatch_vectors() {
        use ManagerRole::{Fabric, K8s};
        let both = Managers::new(Some("netris"), Some("cudn_net"));
        let fabric_only = Managers::new(Some("netris"), None);
        let k8s_only = Managers::new(None, Some("cudn_net"));
        let none = Managers::new(Some(""), None);
        type Want = Result<Option<Vec<(ManagerRole, &'static str)>>, ()>;
        type Got = Result<Option<Vec<(ManagerRole, String)>>, ()>;
        let cases: Vec<(&str, &Managers, Want)> = vec![
            (
                "Subnet",
                &both,
                Ok(Some(vec![(Fabric, "netris"), (K8s, "cudn_net")])),
            ),
            ("Subnet", &fabric_only, Ok(Some(vec![(Fabric, "netris")]))),
            // The fallback and Subnet's own k8s role collapse into one target.
            ("Subnet", &k8s_only, Ok(Some(vec![(K8s, "cudn_net")]))),
            ("Subnet", &none, Ok(None)),
            ("VirtualNetwork", &both, Ok(Some(vec![(Fabric, "netris")]))),
            (
                "VirtualNetwork",
                &k8s_only,
                Ok(Some(vec![(K8s, "cudn_net")])),
            ),
            (
                "SecurityGroup",
                &k8s_only,
                Ok(Some(vec![(K8s, "cudn_net")])),
            ),
            (
                "ExternalIPAttachment",
                &k8s_only,
                Ok(Some(vec![(K8s, "cudn_net")])),
            ),
            ("NATGateway", &both, Ok(Some(vec![(Fabric, "netris")]))),
            ("NATGateway", &k8s_only, Err(())),
            ("NATGateway", &none, Ok(None)),
            ("ComputeInstance", &both, Err(())),
            ("ComputeInstance", &none, Err(())),
        ];
        for (kind, managers, want) in cases {
            let got = DispatchPlan::resolve(kind, managers);
            let got: Got = got.map(|p| p.map(|p| names(&p))).map_err(|_| ());
            let want: Got =
                want.map(|w| w.map(|w| w.into_iter().map(|(r, m)| (r, m.to_owned())).collect()));
            assert_eq!(got, want, "{kind} {managers:?}");
        }
    }

    #[test]
    fn strategies_and_the_legacy_value() {
        let plan = |kind: &str, f: Option<&str>, k: Option<&str>| {
            DispatchPlan::resolve(kind, &Managers::new(f, k)).unwrap()
        };
        let vn = plan("VirtualNetwork", None, Some("cudn_net"));
        assert_eq!(implementation_strategy(vn.as_ref(), "legacy"), "cudn_net");
        assert_eq!(implementation_strategy(None, "legacy"), "legacy");
        let subnet_k8s_only = plan("Subnet", None, Some("cudn_net"));
        assert_eq!(
            subnet_strategies(subnet_k8s_only.as_ref(), "from-parent"),
            ("from-parent".to_owned(), "cudn_net".to_owned())
        );
        assert_eq!(
            subnet_strategies(None, "from-parent"),
            ("from-parent".to_owned(), String::new())
        );
        assert_eq!(
            DispatchError::NoManager {
                kind: "NATGateway".into()
            }
            .to_string(),
            "no manager available for NATGateway: NetworkClass has neither a fabricManager nor a usable k8sManager fallback"
        );
    }
}
