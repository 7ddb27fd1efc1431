//! Named regression tests for upstream control-plane-machine-set bugs, on the planners, the
//! executor, readiness, the failure-domain mapping and the instance step function.

use chrono::{TimeDelta, TimeZone, Utc};
use provkit_machines::cloud::{
    BootstrapData, EnsureState, InstanceStep, ProviderError, after_create_step, next_step,
};
use provkit_machines::set::{
    Action, DEFAULT_READY_GRACE, ExecutionEvent, MachineDomain, MachinePhase, MachineSetProvider,
    MappingEvent, NodeReadyCondition, NodeReadyStatus, RollingUpdateConfig, execute_plan,
    group_by_index, is_ready, map_indexes_to_failure_domains, plan_on_delete, plan_rolling_update,
};
use provkit_testing::machines::{InMemoryMachineSetProvider, MachineInfoBuilder as B};

async fn on_delete_pass(p: &dyn MachineSetProvider) -> provkit_machines::Plan {
    let infos = p.machine_infos().await.unwrap();
    plan_on_delete(&group_by_index(&infos, 3, &p.creatable_indexes()))
}

#[tokio::test]
async fn ocpbugs_7516_one_deletion_gets_one_replacement() {
    // The user deletes machine-1 (OnDelete). The first pass creates its replacement; the second
    // pass plans from the informer's stale snapshot, which does not show the replacement yet,
    // and asks again. The executor's uncached re-check must find the replacement.
    let p = InMemoryMachineSetProvider::new(vec![
        B::updated(0, "machine-0").build(),
        B::outdated(1, "machine-1").deleted().build(),
        B::updated(2, "machine-2").build(),
    ]);
    let first = on_delete_pass(&p).await;
    assert_eq!(
        first.actions,
        vec![Action::CreateIfNoFreshReplacement { index: 1 }]
    );
    execute_plan(&p, &first).await.into_result().unwrap();

    let stale = on_delete_pass(&p).await; // `p` still holds the old snapshot
    assert_eq!(
        stale.actions,
        vec![Action::CreateIfNoFreshReplacement { index: 1 }]
    );
    let events = execute_plan(&p, &stale).await.into_result().unwrap();
    assert!(
        matches!(
            events[0],
            ExecutionEvent::ReplacementAlreadyPresent { index: 1, .. }
        ),
        "{events:?}"
    );
    let live_at_1 = p
        .machines()
        .iter()
        .filter(|m| m.index == 1 && !m.is_deleting())
        .count();
    assert_eq!(live_at_1, 1, "exactly one replacement for one deletion");

    // With a fresh snapshot neither planner asks for another machine.
    let fresh = p.refresh().await.unwrap();
    let infos = fresh.machine_infos().await.unwrap();
    let buckets = group_by_index(&infos, 3, &fresh.creatable_indexes());
    assert!(plan_on_delete(&buckets).actions.is_empty());
    let ru = plan_rolling_update(&buckets, 3, RollingUpdateConfig::default());
    assert!(
        !ru.actions
            .iter()
            .any(|a| matches!(a, Action::CreateIfNoFreshReplacement { .. })),
        "{:?}",
        ru.actions
    );
}

#[test]
fn ocpbugs_7989_a_machine_is_not_ready_before_its_node() {
    let now = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
    let running = Some(&MachinePhase::Running);
    // Running, no node yet: upstream counted this ready before the fix.
    assert!(!is_ready(running, false, None, now, DEFAULT_READY_GRACE));
    // Running, node reference but no Ready condition yet.
    assert!(!is_ready(running, true, None, now, DEFAULT_READY_GRACE));
    // Running, a node that joined a minute ago and has never been Ready: the reboot grace
    // must not count it.
    let joining = NodeReadyCondition {
        status: NodeReadyStatus::False,
        last_transition: Some(now - TimeDelta::minutes(1)),
        has_been_ready: false,
    };
    assert!(!is_ready(
        running,
        true,
        Some(&joining),
        now,
        DEFAULT_READY_GRACE
    ));
    let ready = NodeReadyCondition {
        status: NodeReadyStatus::True,
        ..joining.clone()
    };
    assert!(is_ready(
        running,
        true,
        Some(&ready),
        now,
        DEFAULT_READY_GRACE
    ));

    // The consequence in RollingUpdate: the outdated machine is kept while its replacement's
    // node is not Ready; it is deleted once it is.
    let replacement = |node_ready: &NodeReadyCondition| {
        B::updated(1, "machine-1-new")
            .ready(is_ready(
                running,
                true,
                Some(node_ready),
                now,
                DEFAULT_READY_GRACE,
            ))
            .build()
    };
    let old = B::outdated(1, "machine-1").build();
    let plan_with = |new| {
        let infos = vec![
            B::updated(0, "machine-0").build(),
            old.clone(),
            new,
            B::updated(2, "machine-2").build(),
        ];
        let buckets = group_by_index(&infos, 3, &provkit_machines::set::CreatableIndexes::Any);
        plan_rolling_update(&buckets, 3, RollingUpdateConfig::default())
    };
    let deletes = |plan: &provkit_machines::Plan| {
        plan.actions
            .iter()
            .filter(|a| matches!(a, Action::Delete { .. }))
            .count()
    };
    assert_eq!(deletes(&plan_with(replacement(&joining))), 0);
    assert_eq!(deletes(&plan_with(replacement(&ready))), 1);
}

fn machines(domains: &[&'static str]) -> Vec<MachineDomain<&'static str>> {
    domains
        .iter()
        .enumerate()
        .map(|(i, d)| MachineDomain::new(format!("machine-{i}"), *d))
        .collect()
}

#[test]
fn failure_domains_are_not_rebalanced_alphabetically_when_it_does_not_help() {
    // 4.14 release note: balanced machines were moved to the alphabetical order, replacing
    // machines for nothing. Every balanced placement must be kept as it is.
    let abc = ["a", "b", "c"];
    let orders: [[&str; 3]; 6] = [
        ["a", "b", "c"],
        ["a", "c", "b"],
        ["b", "a", "c"],
        ["b", "c", "a"],
        ["c", "a", "b"],
        ["c", "b", "a"],
    ];
    for order in orders {
        let out = map_indexes_to_failure_domains(&machines(&order), 3, &abc).unwrap();
        let got: Vec<&str> = out.mapping.values().copied().collect();
        assert_eq!(got, order, "placement {order:?} must be kept");
        assert!(
            !out.events
                .iter()
                .any(|e| matches!(e, MappingEvent::DomainChanged { .. })),
            "{order:?}: {:?}",
            out.events
        );
    }
    // A new domain in the configuration does not move balanced machines either.
    let out = map_indexes_to_failure_domains(&machines(&["c", "d", "b"]), 3, &["a", "b", "c", "d"])
        .unwrap();
    assert_eq!(
        out.mapping.values().copied().collect::<Vec<_>>(),
        ["c", "d", "b"]
    );
}

#[test]
fn ocpbugs_34158_a_transient_bootstrap_data_error_is_not_terminal() {
    let state = EnsureState {
        bootstrap: BootstrapData::ReadFailed,
        finalizers_present: true,
        ..EnsureState::default()
    };
    let step = next_step(&state, &Err(ProviderError::NotFound));
    assert!(
        matches!(step, InstanceStep::RetryWithBackoff { .. }),
        "retried with backoff: {step:?}"
    );
    assert!(!matches!(step, InstanceStep::SetError { .. }));
    // A create that failed on transiently unavailable bootstrap data is retried too.
    let step = after_create_step(&Err(ProviderError::transient(
        "user-data secret not readable yet",
    )));
    assert!(
        matches!(step, InstanceStep::RetryWithBackoff { .. }),
        "{step:?}"
    );
    // Missing data is waited for, never an error.
    let missing = EnsureState {
        bootstrap: BootstrapData::NotYetAvailable,
        ..state
    };
    assert!(matches!(
        next_step(&missing, &Err(ProviderError::NotFound)),
        InstanceStep::Requeue { .. }
    ));
}
