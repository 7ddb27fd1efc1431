//! Status counting, cluster-state validation, grouping and the derived-bug decisions on indexes.

use std::collections::{BTreeMap, BTreeSet};

use provkit_machines::MachineInfo;
use provkit_machines::set::{
    CreatableIndexes, DegradationReason, IndexBucket, MappingError, UpdateStrategy, compute_status,
    group_by_index, index_for_machine, validate_cluster_state,
};
use provkit_testing::machines::MachineInfoBuilder as B;

fn u(i: i32) -> MachineInfo {
    B::updated(i, &format!("machine-{i}")).build()
}

#[test]
fn compute_status_table() {
    let cases: Vec<(
        &str,
        Vec<IndexBucket>,
        i32,
        (i32, i32, i32, i32),
        [(&str, bool); 3],
    )> = vec![
        (
            "all good",
            vec![
                IndexBucket::new(0, vec![u(0)]),
                IndexBucket::new(1, vec![u(1)]),
                IndexBucket::new(2, vec![u(2)]),
            ],
            3,
            (3, 3, 3, 0),
            [
                ("AllReplicasAvailable", true),
                ("AsExpected", false),
                ("AllReplicasUpdated", false),
            ],
        ),
        (
            "one outdated",
            vec![
                IndexBucket::new(0, vec![u(0)]),
                IndexBucket::new(1, vec![B::outdated(1, "machine-1").build()]),
                IndexBucket::new(2, vec![u(2)]),
            ],
            3,
            (3, 3, 2, 0),
            [
                ("AllReplicasAvailable", true),
                ("AsExpected", false),
                ("NeedsUpdateReplicas", true),
            ],
        ),
        (
            "empty bucket and a pending one",
            vec![
                IndexBucket::new(0, vec![u(0)]),
                IndexBucket::new(1, vec![]),
                IndexBucket::new(2, vec![B::pending(2, "machine-2").build()]),
            ],
            3,
            (2, 1, 1, 2),
            [
                ("UnavailableReplicas", false),
                ("AsExpected", false),
                ("NeedsUpdateReplicas", true),
            ],
        ),
        (
            "no ready machines",
            vec![IndexBucket::new(
                0,
                vec![B::pending(0, "machine-0").build()],
            )],
            1,
            (1, 0, 0, 1),
            [
                ("UnavailableReplicas", false),
                ("NoReadyMachines", true),
                ("NeedsUpdateReplicas", true),
            ],
        ),
        (
            "excess ready replicas (deleting counted)",
            vec![IndexBucket::new(
                0,
                vec![u(0), B::updated(0, "machine-r-0").build()],
            )],
            1,
            (2, 2, 2, 0),
            [
                ("AllReplicasAvailable", true),
                ("AsExpected", false),
                ("ExcessReplicas", true),
            ],
        ),
    ];
    for (name, buckets, desired, counts, conds) in cases {
        let s = compute_status(&buckets, desired);
        assert_eq!(
            (
                s.replicas,
                s.ready_replicas,
                s.updated_replicas,
                s.unavailable_replicas
            ),
            counts,
            "{name}"
        );
        let got: Vec<(&str, bool)> = s.conditions.iter().map(|c| (c.reason, c.status)).collect();
        assert_eq!(got, conds.to_vec(), "{name}");
    }
}

#[test]
fn validate_cluster_state_table() {
    let nodes: BTreeSet<String> = ["node-0", "node-1", "node-2"]
        .iter()
        .map(ToString::to_string)
        .collect();
    let ok = vec![
        IndexBucket::new(0, vec![u(0)]),
        IndexBucket::new(1, vec![u(1)]),
        IndexBucket::new(2, vec![u(2)]),
    ];
    let cases: Vec<(
        &str,
        Vec<IndexBucket>,
        BTreeSet<String>,
        i32,
        UpdateStrategy,
        Option<DegradationReason>,
    )> = vec![
        (
            "valid",
            ok.clone(),
            nodes.clone(),
            3,
            UpdateStrategy::RollingUpdate,
            None,
        ),
        (
            "no ready machines",
            vec![IndexBucket::new(
                0,
                vec![B::pending(0, "machine-0").build()],
            )],
            BTreeSet::new(),
            1,
            UpdateStrategy::RollingUpdate,
            Some(DegradationReason::NoReadyMachines),
        ),
        (
            "unmanaged node",
            ok.clone(),
            nodes
                .iter()
                .cloned()
                .chain(["node-x".to_string()])
                .collect(),
            3,
            UpdateStrategy::RollingUpdate,
            Some(DegradationReason::UnmanagedNodes),
        ),
        (
            "excess indexes",
            ok.iter()
                .cloned()
                .chain([IndexBucket::new(
                    3,
                    vec![B::updated(3, "machine-3").node_name("node-0").build()],
                )])
                .collect(),
            nodes.clone(),
            3,
            UpdateStrategy::RollingUpdate,
            Some(DegradationReason::ExcessIndexes),
        ),
        (
            "excess updated replicas (OnDelete)",
            vec![
                IndexBucket::new(
                    0,
                    vec![
                        u(0),
                        B::updated(0, "machine-r-0").node_name("node-0").build(),
                    ],
                ),
                IndexBucket::new(1, vec![u(1)]),
                IndexBucket::new(2, vec![u(2)]),
            ],
            nodes.clone(),
            3,
            UpdateStrategy::OnDelete,
            Some(DegradationReason::ExcessUpdatedReplicas),
        ),
        (
            "excess updated replicas is fine for RollingUpdate",
            vec![
                IndexBucket::new(
                    0,
                    vec![
                        u(0),
                        B::updated(0, "machine-r-0").node_name("node-0").build(),
                    ],
                ),
                IndexBucket::new(1, vec![u(1)]),
                IndexBucket::new(2, vec![u(2)]),
            ],
            nodes.clone(),
            3,
            UpdateStrategy::RollingUpdate,
            None,
        ),
        (
            "failed replacement",
            vec![
                IndexBucket::new(
                    0,
                    vec![
                        B::outdated(0, "machine-0").build(),
                        B::pending(0, "machine-r-0")
                            .error_message("instance type unavailable")
                            .build(),
                    ],
                ),
                IndexBucket::new(1, vec![u(1)]),
                IndexBucket::new(2, vec![u(2)]),
            ],
            nodes.clone(),
            3,
            UpdateStrategy::RollingUpdate,
            Some(DegradationReason::FailedReplacement),
        ),
        (
            "fewer buckets than replicas is fine",
            vec![IndexBucket::new(0, vec![u(0)])],
            ["node-0".to_string()].into(),
            3,
            UpdateStrategy::RollingUpdate,
            None,
        ),
    ];
    for (name, buckets, nodes, replicas, strategy, want) in cases {
        let got = validate_cluster_state(&buckets, &nodes, replicas, &strategy)
            .err()
            .map(|d| d.reason);
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn derived_bug_missing_index_is_never_requested() {
    // Machines only at 3 and 4, replicas 3: upstream adds an empty bucket for index 0 although
    // the mapping was re-keyed to 3, 4, 5. With the provider's creatable indexes, index 5 is used.
    let infos = vec![u(3), u(4)];
    let upstream = group_by_index(&infos, 3, &CreatableIndexes::Any);
    assert_eq!(
        upstream.iter().map(|b| b.index).collect::<Vec<_>>(),
        vec![0, 3, 4]
    );
    let fixed = group_by_index(
        &infos,
        3,
        &CreatableIndexes::Only(BTreeSet::from([3, 4, 5])),
    );
    assert_eq!(
        fixed.iter().map(|b| b.index).collect::<Vec<_>>(),
        vec![3, 4, 5]
    );
    let none_free = group_by_index(&infos, 3, &CreatableIndexes::Only(BTreeSet::from([3, 4])));
    assert_eq!(none_free.len(), 2, "no index is invented");
}

#[test]
fn derived_bug_shared_domain_index_choice_is_deterministic() {
    // 5 replicas over 3 zones: indexes 0 and 3 share zone a. Go iterates a map (random pick).
    let mapping = BTreeMap::from([(0, "a"), (1, "b"), (2, "c"), (3, "a"), (4, "b")]);
    for _ in 0..10 {
        assert_eq!(
            index_for_machine("master-x", &"a", &mapping, &BTreeSet::new()),
            Ok(0)
        );
        assert_eq!(
            index_for_machine("master-x", &"a", &mapping, &BTreeSet::from([0])),
            Ok(3)
        );
        assert_eq!(
            index_for_machine("master-x", &"a", &mapping, &BTreeSet::from([0, 3])),
            Ok(0)
        );
    }
    assert_eq!(
        index_for_machine("master-x", &"z", &mapping, &BTreeSet::new()),
        Err(MappingError::IndexUndeterminable {
            machine: "master-x".into()
        })
    );
    assert_eq!(
        index_for_machine("master-7", &"z", &mapping, &BTreeSet::new()),
        Ok(7),
        "name wins unconditionally"
    );
}
