//! The cut-over check on typed CRDs, against config versions the Go operator computed: each
//! expected version is FNV-1a 64 over the exact bytes Go's `encoding/json` writes for the spec
//! (struct fields in declaration order, `omitempty`), computed independently of provkit's hasher
//! (like osac-provisioning.md §3.1's vectors) and written here as constants.

use kube::CustomResource;
use provkit_core::{
    ConfigHasher, JobState, JobType, SpecWithStrategy, SpecWithStrategyAndTargetIp,
};
use provkit_kube::cutover::{CutoverReason, check_cutover, check_cutover_all};
use provkit_kube::{ProvisionedResource, ProvisioningStatus};
use provkit_lifecycle::LifecyclePolicy;
use provkit_lifecycle::decide::Action;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::fixtures::{job, t};

/// Go: `{"vpc":"net-a","cidr":"10.0.1.0/24","mtu":1400}` (fields not in alphabetical order;
/// `zone` omitted by `omitempty`).
const GO_SUBNET_SPEC: &str = "764efecfdbcca115";
/// Go: `{"Spec":{"vpc":"net-a","cidr":"10.0.1.0/24","mtu":1400},"ImplementationStrategy":"ovn"}`.
const GO_SUBNET_WRAPPED: &str = "c8d60b0bf29768f0";
/// Go: `{"Spec":{"vpc":"net-a","cidr":"10.0.1.0/24","mtu":1400},"ImplementationStrategy":"cilium"}`.
const GO_SUBNET_CILIUM: &str = "43bfa87f1076487c";
/// Go: `{"Spec":{"pool":"public","address":"203.0.113.7"},"ImplementationStrategy":"metallb","TargetIP":"10.0.0.5"}`.
const GO_ATTACHMENT_WRAPPED: &str = "e3d8df45d7a005c6";
/// The same spec with sorted keys (what hashing `.spec` as a `serde_json::Value` gives):
/// `{"cidr":"10.0.1.0/24","mtu":1400,"vpc":"net-a"}`.
const SORTED_KEYS_SUBNET_SPEC: &str = "5ed62c459ce7e0f5";

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "osac.openshift.io",
    version = "v1alpha1",
    kind = "Subnet",
    namespaced,
    status = "CommonStatus"
)]
pub struct SubnetSpec {
    pub vpc: String,
    pub cidr: String,
    pub mtu: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        rename = "implementationStrategy"
    )]
    pub implementation_strategy: String,
}

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "osac.openshift.io",
    version = "v1alpha1",
    kind = "ExternalIPAttachment",
    namespaced,
    status = "CommonStatus"
)]
pub struct ExternalIPAttachmentSpec {
    pub pool: String,
    pub address: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
pub struct CommonStatus {
    #[serde(flatten)]
    pub provisioning: ProvisioningStatus,
}

/// A wrapper kind (Go hashes `{Spec, ImplementationStrategy}`), with the spec's strategy kept
/// out of the `Spec` part as Go's controller does.
#[derive(Clone, Debug, Serialize)]
struct GoSubnetSpec<'a> {
    vpc: &'a str,
    cidr: &'a str,
    mtu: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    zone: Option<&'a str>,
}

impl ProvisionedResource for Subnet {
    fn config_source(&self) -> impl Serialize + '_ {
        (
            GoSubnetSpec {
                vpc: &self.spec.vpc,
                cidr: &self.spec.cidr,
                mtu: self.spec.mtu,
                zone: self.spec.zone.as_deref(),
            },
            self.spec.implementation_strategy.as_str(),
        )
            .into_wrapper()
    }
    fn provisioning_status(&self) -> Option<&ProvisioningStatus> {
        self.status.as_ref().map(|s| &s.provisioning)
    }
    fn provisioning_status_mut(&mut self) -> &mut ProvisioningStatus {
        &mut self
            .status
            .get_or_insert_with(Default::default)
            .provisioning
    }
}

/// An owned `{Spec, ImplementationStrategy}` (the borrowed wrapper needs its parts to outlive it).
#[derive(Serialize)]
struct Owned<'a> {
    #[serde(rename = "Spec")]
    spec: GoSubnetSpec<'a>,
    #[serde(rename = "ImplementationStrategy")]
    strategy: &'a str,
}

trait IntoWrapper<'a> {
    fn into_wrapper(self) -> Owned<'a>;
}

impl<'a> IntoWrapper<'a> for (GoSubnetSpec<'a>, &'a str) {
    fn into_wrapper(self) -> Owned<'a> {
        Owned {
            spec: self.0,
            strategy: self.1,
        }
    }
}

fn subnet(strategy: &str, jobs: Vec<provkit_core::JobStatus>, stored: &str) -> Subnet {
    let mut s = Subnet::new(
        "subnet-a",
        SubnetSpec {
            vpc: "net-a".into(),
            cidr: "10.0.1.0/24".into(),
            mtu: 1400,
            zone: None,
            implementation_strategy: strategy.into(),
        },
    );
    s.metadata.namespace = Some("tenant-a".into());
    let st = s.provisioning_status_mut();
    st.provisioning_jobs = jobs;
    st.desired_config_version = stored.into();
    s
}

fn ok(version: &str) -> Vec<provkit_core::JobStatus> {
    vec![job(
        "41",
        JobType::Provision,
        JobState::Succeeded,
        0,
        version,
    )]
}

#[test]
fn wrapper_helpers_write_go_bytes() {
    let spec = GoSubnetSpec {
        vpc: "net-a",
        cidr: "10.0.1.0/24",
        mtu: 1400,
        zone: None,
    };
    let hasher = ConfigHasher::default();
    assert_eq!(hasher.compute(&spec).unwrap(), GO_SUBNET_SPEC);
    assert_eq!(
        hasher
            .compute(&SpecWithStrategy::new(&spec, "ovn"))
            .unwrap(),
        GO_SUBNET_WRAPPED
    );
    let att = ExternalIPAttachmentSpec {
        pool: "public".into(),
        address: "203.0.113.7".into(),
    };
    assert_eq!(
        hasher
            .compute(&SpecWithStrategyAndTargetIp::new(
                &att, "metallb", "10.0.0.5"
            ))
            .unwrap(),
        GO_ATTACHMENT_WRAPPED
    );
}

#[test]
fn go_written_wrapper_kind_is_skipped_not_reprovisioned() {
    let obj = subnet("ovn", ok(GO_SUBNET_WRAPPED), GO_SUBNET_WRAPPED);
    let r = check_cutover(
        &obj,
        &LifecyclePolicy::default(),
        &ConfigHasher::default(),
        t(5),
    )
    .unwrap();
    assert_eq!(r.desired, GO_SUBNET_WRAPPED);
    assert_eq!(r.action, Action::Skip);
    assert_eq!(r.reason, CutoverReason::ConfigApplied);
    assert!(!r.reprovisions_because_of_cutover());
    assert_eq!(r.object, "tenant-a/subnet-a");
}

#[test]
fn sorted_key_hashing_would_have_reported_reprovision() {
    // What the old example did: hash `.spec` as a JSON value (sorted keys). Go stored the
    // struct-order hash, so this would be a false RE-PROVISION.
    let value = serde_json::json!({"vpc": "net-a", "cidr": "10.0.1.0/24", "mtu": 1400});
    assert_eq!(
        ConfigHasher::default().compute(&value).unwrap(),
        SORTED_KEYS_SUBNET_SPEC
    );
    assert_ne!(SORTED_KEYS_SUBNET_SPEC, GO_SUBNET_SPEC);
}

#[test]
fn cutover_table() {
    let policy = LifecyclePolicy::default();
    let hasher = ConfigHasher::default();
    let mut failed = ok(GO_SUBNET_WRAPPED);
    failed[0].state = JobState::Failed;
    let mut running = ok(GO_SUBNET_WRAPPED);
    running[0].state = JobState::Running;
    // (name, object, want action, want reason)
    let cases: Vec<(&str, Subnet, Action, CutoverReason)> = vec![
        (
            "applied",
            subnet("ovn", ok(GO_SUBNET_WRAPPED), GO_SUBNET_WRAPPED),
            Action::Skip,
            CutoverReason::ConfigApplied,
        ),
        (
            "in flight",
            subnet("ovn", running, GO_SUBNET_WRAPPED),
            Action::Poll,
            CutoverReason::InFlight,
        ),
        (
            "failed, backing off",
            subnet("ovn", failed, GO_SUBNET_WRAPPED),
            Action::Backoff,
            CutoverReason::BackingOff {
                backoff: std::time::Duration::from_secs(120),
                remaining: None,
            },
        ),
        (
            "no job yet",
            subnet("ovn", vec![], ""),
            Action::Trigger,
            CutoverReason::NoJobYet,
        ),
        (
            "legacy job adopted",
            subnet("ovn", ok(""), ""),
            Action::Skip,
            CutoverReason::LegacyAdopted,
        ),
        // Go saw the strategy change (it stored the new version) but its job ran the old one:
        // a real spec change, not the cut-over.
        (
            "spec changed",
            subnet("cilium", ok(GO_SUBNET_WRAPPED), GO_SUBNET_CILIUM),
            Action::Trigger,
            CutoverReason::SpecChanged,
        ),
        // A hash that does not match what Go stored for this very spec is flagged.
        (
            "hash differs from Go",
            subnet("ovn", ok(SORTED_KEYS_SUBNET_SPEC), SORTED_KEYS_SUBNET_SPEC),
            Action::Trigger,
            CutoverReason::HashDiffersFromGo,
        ),
    ];
    let objects: Vec<Subnet> = cases.iter().map(|c| c.1.clone()).collect();
    let reports = check_cutover_all(&objects, &policy, &hasher, t(5));
    for ((name, _, action, reason), report) in cases.into_iter().zip(reports) {
        let report = report.unwrap();
        assert_eq!(report.action, action, "{name}");
        assert_eq!(report.reason, reason, "{name}");
    }
    // Under Go v0.1.1 the legacy job is skipped, under the newest Go it is provisioned again.
    let legacy = subnet("ovn", ok(""), "");
    let r = check_cutover(&legacy, &LifecyclePolicy::go_v0_1_1(), &hasher, t(5)).unwrap();
    assert_eq!(
        (r.action, r.reason),
        (Action::Skip, CutoverReason::LegacySkipped)
    );
    let r = check_cutover(&legacy, &LifecyclePolicy::go_monorepo(), &hasher, t(5)).unwrap();
    assert_eq!(r.action, Action::Trigger);
}

impl ProvisionedResource for ExternalIPAttachment {
    fn config_source(&self) -> impl Serialize + '_ {
        // The Go controller's strategy and resolved target IP, stored here in annotations.
        let ann = self.metadata.annotations.as_ref();
        let get = |k: &str| ann.and_then(|a| a.get(k)).cloned().unwrap_or_default();
        OwnedAttachment {
            spec: &self.spec,
            strategy: get("osac.openshift.io/implementation-strategy"),
            target_ip: get("osac.openshift.io/target-ip"),
        }
    }
    fn provisioning_status(&self) -> Option<&ProvisioningStatus> {
        self.status.as_ref().map(|s| &s.provisioning)
    }
    fn provisioning_status_mut(&mut self) -> &mut ProvisioningStatus {
        &mut self
            .status
            .get_or_insert_with(Default::default)
            .provisioning
    }
}
#[derive(Serialize)]
struct OwnedAttachment<'a> {
    #[serde(rename = "Spec")]
    spec: &'a ExternalIPAttachmentSpec,
    #[serde(rename = "ImplementationStrategy")]
    strategy: String,
    #[serde(rename = "TargetIP")]
    target_ip: String,
}

#[test]
fn target_ip_wrapper_kind_is_skipped() {
    let mut obj = ExternalIPAttachment::new(
        "eip-a",
        ExternalIPAttachmentSpec {
            pool: "public".into(),
            address: "203.0.113.7".into(),
        },
    );
    obj.metadata.annotations = Some(
        [
            (
                "osac.openshift.io/implementation-strategy".to_owned(),
                "metallb".to_owned(),
            ),
            (
                "osac.openshift.io/target-ip".to_owned(),
                "10.0.0.5".to_owned(),
            ),
        ]
        .into(),
    );
    let st = obj.provisioning_status_mut();
    st.provisioning_jobs = ok(GO_ATTACHMENT_WRAPPED);
    st.desired_config_version = GO_ATTACHMENT_WRAPPED.into();
    let r = check_cutover(
        &obj,
        &LifecyclePolicy::default(),
        &ConfigHasher::default(),
        t(5),
    )
    .unwrap();
    assert_eq!(r.desired, GO_ATTACHMENT_WRAPPED);
    assert_eq!(r.action, Action::Skip);
}
