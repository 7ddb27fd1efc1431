//! The operator's tests on `OperatorTestEnv`: the fake API server with the CRD, the fake AAP
//! with the two templates, one virtual clock, and `reconcile` in kube-runtime's `Controller`.
#![allow(missing_docs, clippy::unwrap_used)]
use std::time::Duration;

use provkit_example_compute_instance::{ComputeInstance, ComputeInstanceSpec, Context};
use provkit_example_compute_instance::{error_policy, reconcile};
use provkit_kube::ProvisionedResource;
use provkit_testing::operator_env::{EnvError, OperatorTestEnv, OperatorWiring};
use serde_json::json;

const CREATE: &str = "acme-create-compute-instance";
const DELETE: &str = "acme-delete-compute-instance";
const MINUTE: Duration = Duration::from_secs(60);

async fn start() -> OperatorTestEnv<ComputeInstance> {
    let env = OperatorTestEnv::builder().template(CREATE).template(DELETE);
    let ctx = |w: OperatorWiring| Context::new(w.client, w.provider, w.clock, w.policy);
    env.template_prefix("acme")
        .start(ctx, reconcile, error_policy)
        .await
        .unwrap()
}

fn vm(cores: u32) -> ComputeInstance {
    ComputeInstance::new("vm-a", ComputeInstanceSpec { cores })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_ready_update_delete() -> Result<(), EnvError> {
    let env = start().await;
    env.create(&vm(2)).await?;
    env.wait_launches(CREATE, 1).await?;
    env.advance(MINUTE); // the job runs 10 s of virtual time
    env.wait_condition("vm-a", "Ready", "True").await?;
    let cores: u32 = env.extra_vars_at(CREATE, "/provkit_job_vars/resource/spec/cores")?;
    assert_eq!(cores, 2);

    env.merge_patch("vm-a", json!({"spec": {"cores": 4}}))
        .await?;
    env.wait_condition("vm-a", "Ready", "False").await?;
    env.advance(MINUTE);
    let vm = env.wait_condition("vm-a", "Ready", "True").await?;
    assert_eq!(vm.condition("Ready").unwrap().observed_generation, Some(2));
    assert_eq!(env.launches(CREATE), 2);

    env.delete("vm-a").await?;
    env.wait_launches(DELETE, 1).await?;
    env.advance(MINUTE);
    env.wait_gone("vm-a").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_status_writes_and_a_restart_launch_one_job() -> Result<(), EnvError> {
    let env = start().await;
    env.create(&vm(2)).await?;
    env.wait_launches(CREATE, 1).await?;
    // The writes refused are the poll's, a minute later: the launch's job id is recorded
    // first. (Refusing the flush instead leaves the launch to the restarted process, which
    // adopts it only once its launch window has closed on AAP's clock: a clock this test does
    // not move after the restart.)
    env.wait_for("vm-a", "the job id recorded", |vm| {
        !vm.provisioning_jobs().is_empty()
    })
    .await?;
    let refused = env.refuse_status_writes(2);
    env.advance(MINUTE);
    env.wait_fault_hits(refused, 2).await?;
    env.restart_controller()?;
    env.wait_condition("vm-a", "Ready", "True").await?;
    assert_eq!(env.launches(CREATE), 1);
    Ok(())
}
