//! Executor tests against the in-memory provider and the mockall mock.

use provkit_machines::set::{
    Action, CreatableIndexes, ExecutionEvent, MachineSetError, MachineSetProvider, Plan,
    RollingUpdateConfig, execute_plan, group_by_index, plan_rolling_update,
};
use provkit_testing::machines::{Call, InMemoryMachineSetProvider, MachineInfoBuilder as B};

fn rollout_start() -> InMemoryMachineSetProvider {
    InMemoryMachineSetProvider::new(vec![
        B::updated(0, "machine-0").build(),
        B::outdated(1, "machine-1").build(),
        B::updated(2, "machine-2").build(),
    ])
}

async fn plan_pass(p: &dyn MachineSetProvider) -> Plan {
    let infos = p.machine_infos().await.unwrap();
    let buckets = group_by_index(&infos, 3, &p.creatable_indexes());
    plan_rolling_update(&buckets, 3, RollingUpdateConfig::default())
}

#[tokio::test]
async fn ru2_creates_after_an_uncached_recheck() {
    let p = rollout_start();
    let plan = plan_pass(&p).await;
    let events = execute_plan(&p, &plan).await.into_result().unwrap();
    assert_eq!(
        events,
        vec![ExecutionEvent::CreatedReplacement { index: 1 }]
    );
    assert_eq!(
        p.calls(),
        vec![
            Call::MachineInfos,
            Call::Refresh,
            Call::MachineInfos,
            Call::Create(1)
        ]
    );
}

#[tokio::test]
async fn ru3_create_error_propagates_and_stops() {
    let p = rollout_start();
    p.fail_next_create("transient error");
    let plan = Plan {
        actions: vec![
            Action::CreateIfNoFreshReplacement { index: 1 },
            Action::CreateIfNoFreshReplacement { index: 3 },
        ],
        ..Plan::default()
    };
    let report = execute_plan(&p, &plan).await;
    assert!(report.events.is_empty());
    let err = report.error.unwrap();
    assert!(matches!(err, MachineSetError::Create { index: 1, .. }));
    assert_eq!(err.to_string(), "error creating new Machine for index 1");
    assert!(
        !p.calls().contains(&Call::Create(3)),
        "execution stops at the first error"
    );
}

#[tokio::test]
async fn ru6_delete_error_propagates() {
    let p = InMemoryMachineSetProvider::new(vec![
        B::outdated(1, "machine-1").build(),
        B::updated(1, "machine-replacement-1").build(),
    ]);
    p.fail_next_delete("transient error");
    let infos = p.machine_infos().await.unwrap();
    let plan = plan_rolling_update(
        &group_by_index(&infos, 1, &CreatableIndexes::Any),
        1,
        RollingUpdateConfig::default(),
    );
    let err = execute_plan(&p, &plan).await.into_result().unwrap_err();
    assert_eq!(
        err.to_string(),
        "error deleting Machine openshift-machine-api/machine-1"
    );
}

#[tokio::test]
async fn stale_cache_recheck_prevents_a_duplicate_replacement() {
    // OCPBUGS-4297: the second pass plans from a stale snapshot that does not show the
    // replacement created by the first pass; the uncached re-check finds it.
    let p = rollout_start();
    let plan = plan_pass(&p).await;
    execute_plan(&p, &plan).await.into_result().unwrap();
    let stale_plan = plan_pass(&p).await; // same (stale) snapshot
    assert_eq!(
        stale_plan.actions,
        vec![Action::CreateIfNoFreshReplacement { index: 1 }]
    );
    let events = execute_plan(&p, &stale_plan).await.into_result().unwrap();
    assert!(matches!(
        events[0],
        ExecutionEvent::ReplacementAlreadyPresent { index: 1, .. }
    ));
    assert_eq!(
        p.machines().iter().filter(|m| m.index == 1).count(),
        2,
        "no duplicate"
    );
}

#[tokio::test]
async fn scripted_stale_refresh_reproduces_the_duplicate_replacement_bug() {
    // When even the "fresh" read is stale (what the uncached client exists to prevent), the
    // second pass creates a duplicate replacement.
    let p = rollout_start();
    execute_plan(&p, &plan_pass(&p).await)
        .await
        .into_result()
        .unwrap();
    p.script_stale_refreshes(1);
    execute_plan(&p, &plan_pass(&p).await)
        .await
        .into_result()
        .unwrap();
    assert_eq!(
        p.machines().iter().filter(|m| m.index == 1).count(),
        3,
        "duplicate created"
    );
}

#[tokio::test]
async fn wrong_gvr_delete_is_an_error_and_deletes_nothing() {
    let p = rollout_start();
    let mut foreign = p.machines()[0].machine.clone();
    foreign.gvr = provkit_machines::GroupVersionResource::new("", "v1", "nodes");
    let err = p.delete_machine(&foreign).await.unwrap_err();
    assert!(matches!(err, MachineSetError::WrongGvr { .. }));
    assert!(p.machines().iter().all(|m| !m.is_deleting()));
}

#[cfg(feature = "mock")]
#[tokio::test]
async fn executor_with_the_mock_uses_a_boxed_fresh_provider() {
    use provkit_machines::set::MockMachineSetProvider;
    let mut fresh = MockMachineSetProvider::new();
    fresh
        .expect_machine_infos()
        .returning(|| Ok(vec![B::updated(2, "machine-replacement-2").build()]));
    let mut fresh = Some(fresh);
    let mut mock = MockMachineSetProvider::new();
    mock.expect_refresh()
        .times(1)
        .returning(move || Ok(Box::new(fresh.take().unwrap()) as Box<dyn MachineSetProvider>));
    mock.expect_create_machine().times(0);
    let plan = Plan {
        actions: vec![Action::CreateIfNoFreshReplacement { index: 2 }],
        ..Plan::default()
    };
    let events = execute_plan(&mock, &plan).await.into_result().unwrap();
    assert!(matches!(
        events[0],
        ExecutionEvent::ReplacementAlreadyPresent { index: 2, .. }
    ));
}

#[tokio::test]
async fn od5_od9_on_delete_create_errors_propagate() {
    use provkit_machines::set::{PlanEvent, plan_on_delete};
    // OD5: single deleted machine; OD9: plus another index that requires an update.
    for with_other_outdated in [false, true] {
        let first = if with_other_outdated {
            B::outdated(0, "machine-0").build()
        } else {
            B::updated(0, "machine-0").build()
        };
        let p = InMemoryMachineSetProvider::new(vec![
            first,
            B::outdated(1, "machine-1").deleted().build(),
            B::updated(2, "machine-2").build(),
        ]);
        p.fail_next_create("transient error");
        let infos = p.machine_infos().await.unwrap();
        let plan = plan_on_delete(&group_by_index(&infos, 3, &CreatableIndexes::Any));
        assert_eq!(
            plan.events
                .iter()
                .any(|e| matches!(e, PlanEvent::MachineRequiresUpdate { index: 0, .. })),
            with_other_outdated
        );
        let err = execute_plan(&p, &plan).await.into_result().unwrap_err();
        assert!(matches!(err, MachineSetError::Create { index: 1, .. }));
    }
}
