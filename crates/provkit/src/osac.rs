//! The OSAC preset in one call (features `aap` and `kube`): a [`Provisioner`] that launches the
//! template names the Go OSAC operator derives ([`TemplateNames::osac`]: prefix `osac`,
//! `ClusterOrder` → `osac-create-hosted-cluster`) with the extra_vars of its newest
//! `extractExtraVars` ([`Envelope::OsacJobVars`]: `osac_job_vars.resource`, since
//! osac-project/osac `232f1752e`) and honours its management-state annotation
//! ([`ManagementStatePolicy::osac`]: `osac.openshift.io/management-state: unmanaged`).
//!
//! Dual-dispatch (a fabric and a Kubernetes-side target per networking object) is the preset
//! [`provkit_lifecycle::dispatch::osac`]: `DispatchPlan::job_targets(&lifecycle)` gives the
//! targets of an object's plan, to run with a `MultiTargetProvisioner`.
//!
//! provkit's own defaults are neutral (no annotation, no kind overrides, the `provkit_job_vars`
//! envelope); this is where the two
//! OSAC presets of `provkit-aap` and `provkit-kube` meet, so that migrating an OSAC operator is
//! one line:
//!
//! ```no_run
//! # use std::sync::Arc;
//! use provkit::{AapClient, LifecyclePolicy, ProvisionedResource, Provisioner, SystemClock};
//!
//! fn provisioner<Subnet: ProvisionedResource>(client: kube::Client, aap: AapClient) -> Provisioner<Subnet> {
//!     // was: Provisioner::new(client, Lifecycle::new(Arc::new(AapProvider::with_prefix(aap, "osac")), clock), FINALIZER)
//!     provkit::osac::provisioner(client, aap, Arc::new(SystemClock), LifecyclePolicy::default(), "osac.openshift.io/subnet-finalizer")
//! }
//! ```
//!
//! The result is an ordinary [`Provisioner`]: chain `with_events`, `with_field_manager` and the
//! other builder methods as usual; ComputeInstance and ClusterOrder controllers, which also skip
//! `manual` objects, add `.with_management(ManagementStatePolicy::osac().with_manual())`.
//!
//! [`Provisioner`]: provkit_kube::Provisioner
//! [`TemplateNames::osac`]: provkit_aap::provider::TemplateNames::osac
//! [`ManagementStatePolicy::osac`]: provkit_kube::ManagementStatePolicy::osac
//! [`Envelope::OsacJobVars`]: provkit_aap::provider::Envelope::OsacJobVars

use std::sync::Arc;

use provkit_aap::AapProvider;
use provkit_aap::provider::{Envelope, IntoAapApi, TemplateNames};
use provkit_core::Clock;
use provkit_kube::{ManagementStatePolicy, ProvisionedResource, Provisioner};
use provkit_lifecycle::{Lifecycle, LifecyclePolicy};

/// The OSAC [`AapProvider`] (the names and envelope of [`AapProvider::osac`], dating its launch
/// attempts with `clock` like the engine does) in a [`Lifecycle`] with `clock` and `policy`,
/// wrapped in a [`Provisioner`] that reads OSAC's management-state annotation
/// ([`ManagementStatePolicy::osac`]). See the [module docs](self).
pub fn provisioner<K: ProvisionedResource>(
    client: kube::Client,
    aap: impl IntoAapApi,
    clock: Arc<dyn Clock>,
    policy: LifecyclePolicy,
    finalizer: impl Into<String>,
) -> Provisioner<K> {
    let provider = AapProvider::builder(aap)
        .templates(TemplateNames::osac())
        .envelope(Envelope::OsacJobVars)
        .clock(clock.clone())
        .build();
    let lifecycle = Lifecycle::new(Arc::new(provider), clock).with_policy(policy);
    Provisioner::new(client, lifecycle, finalizer).with_management(ManagementStatePolicy::osac())
}
