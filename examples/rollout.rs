//! RollingUpdate of a 3-replica control plane across 3 failure domains, against the in-memory
//! machine-set provider. Each pass: refresh the snapshot, group by index, validate, plan, print
//! the plan, execute it (with the uncached re-check before each create). While the plan only
//! waits, the world moves on (pending machines become ready, deleting machines disappear).
//! Stops when the plan is idle and every machine is up to date.
//!
//! Run with `cargo run -p provkit-examples --example rollout`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use provkit::machines::set::{
    MachineDomain, MachineSetProvider, RollingUpdateConfig, UpdateStrategy, compute_status,
    execute_plan, group_by_index, map_indexes_to_failure_domains, plan_rolling_update,
    validate_cluster_state,
};
use provkit_testing::machines::{InMemoryMachineSetProvider, MachineInfoBuilder};

const REPLICAS: i32 = 3;
const ZONES: [&str; 3] = ["us-east-1a", "us-east-1b", "us-east-1c"];

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Three healthy masters, one per zone.
    let initial: Vec<_> = (0..REPLICAS)
        .map(|i| MachineInfoBuilder::updated(i, &format!("cluster-master-{i}")).build())
        .collect();
    let machines: Vec<MachineDomain<&str>> = initial
        .iter()
        .zip(ZONES)
        .map(|(m, z)| MachineDomain::new(m.name(), z))
        .collect();
    let mapping = map_indexes_to_failure_domains(&machines, REPLICAS, &ZONES).expect("mapping");
    println!("failure-domain mapping:");
    for (index, zone) in &mapping.mapping {
        println!("  index {index} -> {zone}");
    }
    let provider = InMemoryMachineSetProvider::new(initial)
        .with_name_prefix("cluster-master")
        .with_creatable_indexes(mapping.mapping.keys().copied().collect());

    // A template change makes every machine outdated.
    provider.mark_all_outdated("spec.providerSpec.value.instanceType: m6i.xlarge != m5.xlarge");
    println!("\ntemplate changed: all machines need an update\n");

    let control_plane_nodes = BTreeSet::new();
    for pass in 1..=40 {
        let snapshot = provider.refresh().await.expect("refresh");
        let infos = snapshot.machine_infos().await.expect("machine infos");
        let buckets = group_by_index(&infos, REPLICAS, &snapshot.creatable_indexes());
        let status = compute_status(&buckets, REPLICAS);
        if let Err(d) = validate_cluster_state(
            &buckets,
            &control_plane_nodes,
            REPLICAS,
            &UpdateStrategy::RollingUpdate,
        ) {
            println!("pass {pass}: degraded ({}): {}", d.reason, d.message);
            break;
        }
        let plan = plan_rolling_update(&buckets, REPLICAS, RollingUpdateConfig::default());
        println!(
            "pass {pass}: machines={} ready={} updated={} | actions={:?} requeue={:?}",
            status.replicas,
            status.ready_replicas,
            status.updated_replicas,
            plan.actions
                .iter()
                .map(|a| match a {
                    provkit::machines::set::Action::Delete { machine, .. } =>
                        format!("delete {}", machine.name()),
                    provkit::machines::set::Action::CreateIfNoFreshReplacement { index } =>
                        format!("create@{index}"),
                })
                .collect::<Vec<_>>(),
            plan.requeue_after,
        );
        for event in &plan.events {
            println!("    {event:?}");
        }
        let report = execute_plan(&snapshot, &plan).await;
        for event in &report.events {
            println!("    executed: {event:?}");
        }
        if let Some(err) = report.error {
            println!("    stopped: {err}");
        }
        let all_updated = status.updated_replicas == REPLICAS && status.replicas == REPLICAS;
        if plan.actions.is_empty() && plan.requeue_after.is_none() && all_updated {
            println!("\nrollout complete after {pass} passes:");
            for m in provider.machines() {
                println!("  {} (index {}, ready={})", m.name(), m.index, m.ready);
            }
            return;
        }
        // The world moves on while the controller waits (a requeue or a watch event later).
        if plan.actions.is_empty() {
            println!("    ... machines progress (pending → ready, deleting → gone)");
            provider.advance();
        }
    }
    println!("rollout did not complete");
    std::process::exit(1);
}
