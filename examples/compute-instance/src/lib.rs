//! A small operator as a provkit user writes one: a `ComputeInstance` custom resource
//! provisioned by AAP job templates `acme-create-compute-instance` /
//! `acme-delete-compute-instance`, with a `Ready` condition. Its tests
//! (`tests/operator_env.rs`) use only the public API of provkit's crates:
//! `provkit_testing::operator_env::OperatorTestEnv` runs this reconcile against the fake API
//! server and the fake AAP. docs/testing-your-operator.md shows them.

use std::sync::Arc;

use kube::runtime::controller::Action;
use kube::runtime::events::Reporter;
use kube::{Client, CustomResource, Resource};
use provkit_core::Clock;
use provkit_kube::status::{ConditionStatus, NewCondition, set_condition};
use provkit_kube::{
    EventPublisher, ProvisionedResource, Provisioner, ProvisioningCallbacks, ProvisioningStatus,
    ReconcileError,
};
use provkit_lifecycle::{Lifecycle, LifecyclePolicy, ProvisionStatus, ProvisioningProvider};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The finalizer held while the instance may exist in the infrastructure.
pub const FINALIZER: &str = "compute.example.com/finalizer";

/// A virtual machine.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "compute.example.com",
    version = "v1",
    kind = "ComputeInstance",
    namespaced,
    status = "ComputeInstanceStatus",
    printcolumn = r#"{"name":"Cores","type":"integer","jsonPath":".spec.cores"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#
)]
pub struct ComputeInstanceSpec {
    /// CPU cores.
    pub cores: u32,
}

/// Observed state: the job history, config version and conditions.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
pub struct ComputeInstanceStatus {
    /// provkit's provisioning status, flattened as the Go CRDs have it.
    #[serde(flatten)]
    pub provisioning: ProvisioningStatus,
}
// ComputeInstance is a `ProvisionedResource` (config version hashed from `spec`).
provkit_kube::provisioning_status!(ComputeInstanceStatus.provisioning);

/// Keeps the `Ready` condition.
#[derive(Debug)]
pub struct ReadyCondition {
    clock: Arc<dyn Clock>,
}

impl ReadyCondition {
    fn set(&self, obj: &mut ComputeInstance, status: ConditionStatus, reason: &str, message: &str) {
        let observed_generation = obj.meta().generation;
        let conditions = &mut obj.provisioning_status_mut().conditions;
        let new = NewCondition {
            type_: "Ready",
            status,
            reason,
            message,
            observed_generation,
        };
        set_condition(conditions, new, self.clock.now());
    }
}

impl ProvisioningCallbacks<ComputeInstance> for ReadyCondition {
    fn on_apply(&self, obj: &mut ComputeInstance, config_applied: bool) {
        // Derived from the history, so a lost status write heals on the next reconcile.
        if config_applied {
            self.set(
                obj,
                ConditionStatus::True,
                "Provisioned",
                "the spec is provisioned",
            );
        } else if obj
            .condition("Ready")
            .is_none_or(|c| c.reason != "ProvisioningFailed")
        {
            self.set(
                obj,
                ConditionStatus::False,
                "Provisioning",
                "provisioning the spec",
            );
        }
    }
    fn on_failed(&self, obj: &mut ComputeInstance, message: &str) {
        self.set(obj, ConditionStatus::False, "ProvisioningFailed", message);
    }
    fn on_succeeded(&self, obj: &mut ComputeInstance, _: &ProvisionStatus) {
        self.set(
            obj,
            ConditionStatus::True,
            "Provisioned",
            "the spec is provisioned",
        );
    }
    fn on_deleting(&self, obj: &mut ComputeInstance) {
        self.set(obj, ConditionStatus::False, "Deleting", "deprovisioning");
    }
    fn on_deprovision_failed(&self, obj: &mut ComputeInstance, message: &str) {
        self.set(obj, ConditionStatus::False, "DeprovisionFailed", message);
    }
}

/// What `reconcile` needs.
#[derive(Debug)]
pub struct Context {
    provisioner: Provisioner<ComputeInstance>,
    callbacks: ReadyCondition,
}

impl Context {
    /// The operator's context, as `main` builds it from the real client, provider and clock.
    pub fn new(
        client: Client,
        provider: Arc<dyn ProvisioningProvider>,
        clock: Arc<dyn Clock>,
        policy: LifecyclePolicy,
    ) -> Self {
        let lifecycle = Lifecycle::new(provider, clock.clone()).with_policy(policy);
        let reporter = Reporter {
            controller: "compute-operator".into(),
            instance: None,
        };
        let provisioner = Provisioner::new(client.clone(), lifecycle, FINALIZER)
            .with_events(EventPublisher::new(client, reporter));
        Self {
            provisioner,
            callbacks: ReadyCondition { clock },
        }
    }
}

impl AsRef<Provisioner<ComputeInstance>> for Context {
    fn as_ref(&self) -> &Provisioner<ComputeInstance> {
        &self.provisioner
    }
}

/// The reconcile function of the operator's `Controller`.
///
/// # Errors
/// [`ReconcileError`] for failures; kube-runtime calls [`error_policy`].
pub async fn reconcile(
    obj: Arc<ComputeInstance>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    ctx.provisioner.reconcile(obj, &ctx.callbacks).await
}

/// Requeues after the object's next error-backoff step.
pub fn error_policy(
    obj: Arc<ComputeInstance>,
    error: &ReconcileError,
    ctx: Arc<Context>,
) -> Action {
    provkit_kube::error_policy(obj, error, ctx)
}
