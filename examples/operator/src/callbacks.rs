//! Phase and `Ready` condition handling, as the Go networking controllers do it.

use std::sync::Arc;

use kube::Resource;
use provkit_core::Clock;
use provkit_kube::ProvisioningCallbacks;
use provkit_kube::status::{ConditionStatus, NewCondition, set_condition};
use provkit_lifecycle::ProvisionStatus;

use crate::crd::{Phase, VirtualNetwork};

/// Sets `status.phase` and the `Ready` condition.
#[derive(Debug, Clone)]
pub struct VirtualNetworkCallbacks {
    clock: Arc<dyn Clock>,
}

impl VirtualNetworkCallbacks {
    /// Condition timestamps come from `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self { clock }
    }

    fn ready(
        &self,
        obj: &mut VirtualNetwork,
        status: ConditionStatus,
        reason: &str,
        message: &str,
    ) {
        let generation = obj.meta().generation;
        let now = self.clock.now();
        let s = obj.status.get_or_insert_with(Default::default);
        set_condition(
            &mut s.provisioning.conditions,
            NewCondition {
                type_: "Ready",
                status,
                reason,
                message,
                observed_generation: generation,
            },
            now,
        );
    }
}

impl ProvisioningCallbacks<VirtualNetwork> for VirtualNetworkCallbacks {
    fn on_apply(&self, obj: &mut VirtualNetwork, config_applied: bool) {
        let s = obj.status.get_or_insert_with(Default::default);
        // Go: Progressing on first provision or on a spec change after Ready; Failed stays
        // during backoff.
        let progressing = match s.phase {
            None => true,
            Some(Phase::Ready) => !config_applied,
            Some(_) => false,
        };
        if progressing {
            s.phase = Some(Phase::Progressing);
            self.ready(
                obj,
                ConditionStatus::False,
                "Provisioning",
                "provisioning the current spec",
            );
        } else if config_applied && matches!(s.phase, Some(Phase::Progressing | Phase::Failed)) {
            // The spec is provisioned but the phase says otherwise: the status write that
            // would have said Ready was lost (the process died after the job's success was
            // recorded, before the phase was written; or a failed attempt's `Failed` was
            // followed by a successful relaunch whose phase write was lost). `on_succeeded`
            // fires only on the transition, and the engine now skips: derive the phase from
            // the history instead.
            s.phase = Some(Phase::Ready);
            self.ready(
                obj,
                ConditionStatus::True,
                "Provisioned",
                "the current spec is provisioned",
            );
        }
    }

    fn on_failed(&self, obj: &mut VirtualNetwork, message: &str) {
        obj.status.get_or_insert_with(Default::default).phase = Some(Phase::Failed);
        self.ready(obj, ConditionStatus::False, "ProvisioningFailed", message);
    }

    fn on_succeeded(&self, obj: &mut VirtualNetwork, status: &ProvisionStatus) {
        let st = obj.status.get_or_insert_with(Default::default);
        st.phase = Some(Phase::Ready);
        // One chosen output of the job: what the playbook published as `network_id`.
        if let Some(id) = status.outputs.get("network_id").and_then(|v| v.as_str()) {
            st.network_id = Some(id.to_owned());
        }
        self.ready(
            obj,
            ConditionStatus::True,
            "Provisioned",
            "the current spec is provisioned",
        );
    }

    fn on_deleting(&self, obj: &mut VirtualNetwork) {
        obj.status.get_or_insert_with(Default::default).phase = Some(Phase::Deleting);
        self.ready(
            obj,
            ConditionStatus::False,
            "Deleting",
            "the network is being deprovisioned",
        );
    }

    fn on_deprovision_failed(&self, obj: &mut VirtualNetwork, message: &str) {
        // The AAP provider blocks deletion on a failed delete job (`blockDeletionOnFailure`):
        // the finalizer stays until someone intervenes, so the condition says why.
        self.ready(obj, ConditionStatus::False, "DeprovisionFailed", message);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::crd::VirtualNetworkSpec;
    use chrono::TimeZone;
    use provkit_core::ManualClock;
    use provkit_lifecycle::ProvisionStatus;

    fn vnet() -> VirtualNetwork {
        VirtualNetwork::new(
            "n",
            VirtualNetworkSpec {
                cidr: "10.0.0.0/24".into(),
                region: None,
            },
        )
    }

    #[test]
    fn phases_follow_the_go_rules() {
        let clock = ManualClock::new(chrono::Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap());
        let cb = VirtualNetworkCallbacks::new(Arc::new(clock));
        let mut n = vnet();
        cb.on_apply(&mut n, false);
        assert_eq!(n.status.as_ref().unwrap().phase, Some(Phase::Progressing));
        cb.on_failed(&mut n, "boom");
        let s = n.status.as_ref().unwrap();
        assert_eq!(s.phase, Some(Phase::Failed));
        assert_eq!(s.provisioning.conditions[0].reason, "ProvisioningFailed");
        // Failed stays during the backoff (the config is not applied)...
        let mut backing_off = n.clone();
        cb.on_apply(&mut backing_off, false);
        assert_eq!(
            backing_off.status.as_ref().unwrap().phase,
            Some(Phase::Failed)
        );
        // ...but once a relaunch succeeded at the desired config (its `Ready` write lost), the
        // history decides: Ready.
        let mut relaunched = n.clone();
        cb.on_apply(&mut relaunched, true);
        let s = relaunched.status.as_ref().unwrap();
        assert_eq!(s.phase, Some(Phase::Ready));
        assert_eq!(s.provisioning.conditions[0].reason, "Provisioned");
        // Failed is kept during backoff
        cb.on_apply(&mut n, false);
        assert_eq!(n.status.as_ref().unwrap().phase, Some(Phase::Failed));
        let outputs = serde_json::json!({"network_id": "net-42"});
        cb.on_succeeded(
            &mut n,
            &ProvisionStatus::new("1", provkit_core::JobState::Succeeded, "successful")
                .with_outputs(outputs.as_object().cloned().unwrap()),
        );
        assert_eq!(n.status.as_ref().unwrap().phase, Some(Phase::Ready));
        assert_eq!(
            n.status.as_ref().unwrap().network_id.as_deref(),
            Some("net-42")
        );
        assert_eq!(
            n.status.as_ref().unwrap().provisioning.conditions[0].status,
            "True"
        );
        cb.on_apply(&mut n, true);
        assert_eq!(n.status.as_ref().unwrap().phase, Some(Phase::Ready));
        cb.on_apply(&mut n, false);
        assert_eq!(n.status.as_ref().unwrap().phase, Some(Phase::Progressing));
        // The success was recorded but the Ready write was lost (a crash between the two):
        // the next reconcile, which finds the spec applied, heals the phase and condition.
        cb.on_apply(&mut n, true);
        let s = n.status.as_ref().unwrap();
        assert_eq!(s.phase, Some(Phase::Ready));
        assert_eq!(s.provisioning.conditions[0].status, "True");
        cb.on_apply(&mut n, false);
        assert_eq!(n.status.as_ref().unwrap().phase, Some(Phase::Progressing));
        cb.on_deleting(&mut n);
        let s = n.status.as_ref().unwrap();
        assert_eq!(s.phase, Some(Phase::Deleting));
        let ready = &s.provisioning.conditions[0];
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "Deleting")
        );
        cb.on_deprovision_failed(&mut n, "delete job 7 failed");
        let s = n.status.as_ref().unwrap();
        assert_eq!(s.phase, Some(Phase::Deleting));
        let ready = &s.provisioning.conditions[0];
        assert_eq!(
            (ready.reason.as_str(), ready.message.as_str()),
            ("DeprovisionFailed", "delete job 7 failed")
        );
    }
}
