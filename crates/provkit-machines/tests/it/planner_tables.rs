//! The upstream update-strategy tables (CPMS
//! `pkg/controllers/controlplanemachineset/updates_test.go`), transcribed as data.
//!
//! Source: the largest stored version of the file (82,908 chars). Its 55 specs: 23 RollingUpdate
//! entries (RU1-RU23; RU3 and RU6 are executor error cases in `executor.rs`), 21 OnDelete entries
//! (OD1-OD21; OD5 and OD9 in `executor.rs`), 2 × 4 `It`s for the Recreate and invalid strategies
//! (ST1a-d, ST2a-d) and 3 `sortMachineInfosByIndex` entries (U1-U3). RU24, RU25 and the derived-bug
//! and max-surge tests come from the spec, not from that file. That version predates the 5 s
//! requeue (OCPBUGS-10032); the requeue expectations follow the spec (§A.6.4).
//!
//! Upstream asserts provider calls and logs of the combined plan+execute step; here the planner
//! is asserted (actions, events, requeue) and the executor separately (see `executor.rs`).
//! Where upstream logs `createdReplacement`, the planner emits `ReplacementPlanned`.

use chrono::{TimeZone, Utc};
use provkit_machines::MachineInfo;
use provkit_machines::set::{
    Action, CreatableIndexes, DegradationReason, IndexBucket, PlanEvent, RollingUpdateConfig,
    UpdateStrategy, WAIT_REQUEUE, group_by_index, plan_for_strategy, plan_on_delete,
    plan_rolling_update, validate_cluster_state,
};
use provkit_testing::machines::MachineInfoBuilder as B;

fn u(i: i32) -> MachineInfo {
    B::updated(i, &format!("machine-{i}")).build()
}
fn o(i: i32) -> MachineInfo {
    B::outdated(i, &format!("machine-{i}")).build()
}
fn od(i: i32) -> MachineInfo {
    B::outdated(i, &format!("machine-{i}")).deleted().build()
}
fn ud(i: i32) -> MachineInfo {
    B::deleting(i, &format!("machine-{i}")).build()
}
fn rp(i: i32) -> MachineInfo {
    B::pending(i, &format!("machine-replacement-{i}")).build()
}
fn ru(i: i32) -> MachineInfo {
    B::updated(i, &format!("machine-replacement-{i}")).build()
}

fn b(index: i32, infos: Vec<MachineInfo>) -> IndexBucket {
    IndexBucket::new(index, infos)
}

#[derive(Debug, PartialEq)]
enum Exp {
    Delete(&'static str),
    Create(i32),
}

fn simplify(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .map(|a| match a {
            Action::Delete { machine, .. } => format!("delete {}", machine.name()),
            Action::CreateIfNoFreshReplacement { index } => format!("create {index}"),
        })
        .collect()
}

fn expected(exp: &[Exp]) -> Vec<String> {
    exp.iter()
        .map(|e| match e {
            Exp::Delete(n) => format!("delete {n}"),
            Exp::Create(i) => format!("create {i}"),
        })
        .collect()
}

fn removing(index: i32, name: &str) -> PlanEvent {
    PlanEvent::RemovingOldMachine {
        index,
        name: name.into(),
    }
}
fn removed(index: i32, name: &str) -> PlanEvent {
    PlanEvent::WaitingForRemoved {
        index,
        name: name.into(),
    }
}
fn replacement(index: i32, name: &str, r: &str) -> PlanEvent {
    PlanEvent::WaitingForReplacement {
        index,
        name: name.into(),
        replacement: r.into(),
    }
}
fn ready(index: i32, name: &str) -> PlanEvent {
    PlanEvent::WaitingForReady {
        index,
        name: name.into(),
    }
}
fn no_cap(index: i32, name: Option<&str>) -> PlanEvent {
    PlanEvent::NoCapacityForExpansion {
        index,
        name: name.map(Into::into),
    }
}
fn planned(index: i32, name: Option<&str>) -> PlanEvent {
    PlanEvent::ReplacementPlanned {
        index,
        name: name.map(Into::into),
    }
}
fn requires(index: i32, name: &str) -> PlanEvent {
    PlanEvent::MachineRequiresUpdate {
        index,
        name: name.into(),
        diff: vec!["providerSpec: desired != actual".into()],
    }
}

struct Case {
    name: &'static str,
    buckets: Vec<IndexBucket>,
    actions: Vec<Exp>,
    events: Vec<PlanEvent>,
    requeue: bool,
}

#[test]
fn rolling_update_table() {
    use Exp::{Create, Delete};
    let cases = vec![
        Case {
            name: "RU1 no updates required",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![u(1)]), b(2, vec![u(2)])],
            actions: vec![],
            events: vec![PlanEvent::NoUpdatesRequired],
            requeue: false,
        },
        Case {
            name: "RU2 update in a single index",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![o(1)]), b(2, vec![u(2)])],
            actions: vec![Create(1)],
            events: vec![planned(1, Some("machine-1"))],
            requeue: false,
        },
        Case {
            name: "RU4 single index, replacement pending",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![o(1), rp(1)]), b(2, vec![u(2)])],
            actions: vec![],
            events: vec![replacement(1, "machine-1", "machine-replacement-1")],
            requeue: true,
        },
        Case {
            name: "RU5 single index, replacement ready",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![o(1), ru(1)]), b(2, vec![u(2)])],
            actions: vec![Delete("machine-1")],
            events: vec![removing(1, "machine-1")],
            requeue: false,
        },
        Case {
            name: "RU7 single index, replacement ready, old already deleted",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![od(1), ru(1)]), b(2, vec![u(2)])],
            actions: vec![],
            events: vec![removed(1, "machine-1")],
            requeue: false,
        },
        Case {
            name: "RU8 multiple indexes: one at a time",
            buckets: vec![b(0, vec![o(0)]), b(1, vec![o(1)]), b(2, vec![u(2)])],
            actions: vec![Create(0)],
            events: vec![planned(0, Some("machine-0")), no_cap(1, Some("machine-1"))],
            requeue: false,
        },
        Case {
            name: "RU9 multiple indexes, replacement pending",
            buckets: vec![b(0, vec![o(0), rp(0)]), b(1, vec![o(1)]), b(2, vec![u(2)])],
            actions: vec![],
            events: vec![
                replacement(0, "machine-0", "machine-replacement-0"),
                no_cap(1, Some("machine-1")),
            ],
            requeue: true,
        },
        Case {
            name: "RU10 multiple indexes, replacement ready",
            buckets: vec![b(0, vec![o(0), ru(0)]), b(1, vec![o(1)]), b(2, vec![u(2)])],
            actions: vec![Delete("machine-0")],
            events: vec![removing(0, "machine-0"), no_cap(1, Some("machine-1"))],
            requeue: false,
        },
        Case {
            name: "RU11 multiple indexes, replacement ready, old already deleted",
            buckets: vec![b(0, vec![od(0), ru(0)]), b(1, vec![o(1)]), b(2, vec![u(2)])],
            actions: vec![],
            events: vec![removed(0, "machine-0"), no_cap(1, Some("machine-1"))],
            requeue: false,
        },
        Case {
            name: "RU12 an empty index",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![u(1)]), b(2, vec![])],
            actions: vec![Create(2)],
            events: vec![planned(2, None)],
            requeue: false,
        },
        Case {
            name: "RU13 a pending machine in an index",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![u(1)]), b(2, vec![rp(2)])],
            actions: vec![],
            events: vec![ready(2, "machine-replacement-2")],
            requeue: true,
        },
        Case {
            name: "RU14 missing index and other updates: two creates",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![o(1)]), b(2, vec![])],
            actions: vec![Create(1), Create(2)],
            events: vec![planned(1, Some("machine-1")), planned(2, None)],
            requeue: false,
        },
        Case {
            name: "RU15 pending in one index, other updates",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![o(1)]), b(2, vec![rp(2)])],
            actions: vec![Create(1)],
            events: vec![
                planned(1, Some("machine-1")),
                ready(2, "machine-replacement-2"),
            ],
            requeue: true,
        },
        Case {
            name: "RU16 missing index, replacements ready",
            buckets: vec![
                b(0, vec![o(0), ru(0)]),
                b(1, vec![o(1), ru(1)]),
                b(2, vec![]),
            ],
            actions: vec![Delete("machine-0"), Delete("machine-1")],
            events: vec![
                removing(0, "machine-0"),
                removing(1, "machine-1"),
                no_cap(2, None),
            ],
            requeue: false,
        },
        Case {
            name: "RU17 missing index, replacements ready, one already deleted",
            buckets: vec![
                b(0, vec![od(0), ru(0)]),
                b(1, vec![o(1), ru(1)]),
                b(2, vec![]),
            ],
            actions: vec![Delete("machine-1")],
            events: vec![
                removed(0, "machine-0"),
                removing(1, "machine-1"),
                no_cap(2, None),
            ],
            requeue: false,
        },
        Case {
            name: "RU18 an extra index hitting max surge",
            buckets: vec![
                b(0, vec![o(0)]),
                b(1, vec![o(1)]),
                b(2, vec![o(2)]),
                b(3, vec![o(3)]),
            ],
            actions: vec![],
            events: vec![
                no_cap(0, Some("machine-0")),
                no_cap(1, Some("machine-1")),
                no_cap(2, Some("machine-2")),
                no_cap(3, Some("machine-3")),
            ],
            requeue: false,
        },
        Case {
            name: "RU19 indexes not from zero, no updates",
            buckets: vec![b(1, vec![u(1)]), b(2, vec![u(2)]), b(3, vec![u(3)])],
            actions: vec![],
            events: vec![PlanEvent::NoUpdatesRequired],
            requeue: false,
        },
        Case {
            name: "RU20 faulty configuration rolled back: delete the broken replacement, create nothing",
            buckets: vec![
                b(
                    0,
                    vec![
                        o(0),
                        B::outdated_not_ready(0, "machine-replacement-0").build(),
                    ],
                ),
                b(1, vec![o(1)]),
                b(2, vec![o(2)]),
            ],
            actions: vec![Delete("machine-replacement-0")],
            events: vec![
                removing(0, "machine-replacement-0"),
                no_cap(0, Some("machine-0")),
                no_cap(1, Some("machine-1")),
                no_cap(2, Some("machine-2")),
            ],
            requeue: false,
        },
        Case {
            name: "RU21 no updates, but a machine was deleted",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![ud(1)]), b(2, vec![u(2)])],
            actions: vec![Create(1)],
            events: vec![planned(1, Some("machine-1"))],
            requeue: false,
        },
        Case {
            name: "RU22 deleted machine, replacement pending",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![ud(1), rp(1)]), b(2, vec![u(2)])],
            actions: vec![],
            events: vec![replacement(1, "machine-1", "machine-replacement-1")],
            requeue: true,
        },
        Case {
            name: "RU23 deleted machine, replacement ready",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![ud(1), ru(1)]), b(2, vec![u(2)])],
            actions: vec![],
            events: vec![removed(1, "machine-1")],
            requeue: false,
        },
        // From the spec's list of upstream cases (not in the stored upstream file version):
        Case {
            name: "RU24 extra updated machines in an index: delete the oldest",
            buckets: vec![
                b(
                    0,
                    vec![
                        B::updated(0, "machine-replacement-0")
                            .created_at(Utc.timestamp_opt(2_000, 0).unwrap())
                            .build(),
                        B::updated(0, "machine-0")
                            .created_at(Utc.timestamp_opt(1_000, 0).unwrap())
                            .build(),
                    ],
                ),
                b(1, vec![u(1)]),
                b(2, vec![u(2)]),
            ],
            actions: vec![Delete("machine-0")],
            events: vec![removing(0, "machine-0")],
            requeue: false,
        },
        Case {
            name: "RU25 a lone outdated machine that is not ready is replaced",
            buckets: vec![
                b(0, vec![u(0)]),
                b(1, vec![B::outdated_not_ready(1, "machine-1").build()]),
                b(2, vec![u(2)]),
            ],
            actions: vec![Create(1)],
            events: vec![planned(1, Some("machine-1"))],
            requeue: false,
        },
    ];
    for c in cases {
        let plan = plan_rolling_update(&c.buckets, 3, RollingUpdateConfig::default());
        assert_eq!(simplify(&plan.actions), expected(&c.actions), "{}", c.name);
        assert_eq!(plan.events, c.events, "{}", c.name);
        assert_eq!(
            plan.requeue_after,
            c.requeue.then_some(WAIT_REQUEUE),
            "{}",
            c.name
        );
    }
}

#[test]
fn on_delete_table() {
    use Exp::Create;
    let cases = vec![
        Case {
            name: "OD1 no updates required",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![u(1)]), b(2, vec![u(2)])],
            actions: vec![],
            events: vec![PlanEvent::NoUpdatesRequired],
            requeue: false,
        },
        Case {
            name: "OD2 single index, not yet deleted",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![o(1)]), b(2, vec![u(2)])],
            actions: vec![],
            events: vec![requires(1, "machine-1")],
            requeue: false,
        },
        Case {
            name: "OD3 single index, deleted",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![od(1)]), b(2, vec![u(2)])],
            actions: vec![Create(1)],
            events: vec![planned(1, Some("machine-1"))],
            requeue: false,
        },
        Case {
            name: "OD4 single index, deleted, non-standard indexes",
            buckets: vec![b(3, vec![u(3)]), b(4, vec![od(4)]), b(5, vec![u(5)])],
            actions: vec![Create(4)],
            events: vec![planned(4, Some("machine-4"))],
            requeue: false,
        },
        Case {
            name: "OD6 single index, replacement pending",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![od(1), rp(1)]), b(2, vec![u(2)])],
            actions: vec![],
            events: vec![replacement(1, "machine-1", "machine-replacement-1")],
            requeue: true,
        },
        Case {
            name: "OD7 single index, replacement ready",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![od(1), ru(1)]), b(2, vec![u(2)])],
            actions: vec![],
            events: vec![removed(1, "machine-1")],
            requeue: false,
        },
        Case {
            name: "OD8 multiple indexes, not yet deleted",
            buckets: vec![b(0, vec![o(0)]), b(1, vec![o(1)]), b(2, vec![u(2)])],
            actions: vec![],
            events: vec![requires(0, "machine-0"), requires(1, "machine-1")],
            requeue: false,
        },
        Case {
            name: "OD10 multiple indexes, one deleted",
            buckets: vec![b(0, vec![o(0)]), b(1, vec![od(1)]), b(2, vec![u(2)])],
            actions: vec![Create(1)],
            events: vec![requires(0, "machine-0"), planned(1, Some("machine-1"))],
            requeue: false,
        },
        Case {
            name: "OD11 multiple machines deleted: several creates",
            buckets: vec![b(0, vec![od(0)]), b(1, vec![od(1)]), b(2, vec![u(2)])],
            actions: vec![Create(0), Create(1)],
            events: vec![planned(0, Some("machine-0")), planned(1, Some("machine-1"))],
            requeue: false,
        },
        Case {
            name: "OD12 one deleted with pending replacement",
            buckets: vec![b(0, vec![o(0)]), b(1, vec![od(1), rp(1)]), b(2, vec![u(2)])],
            actions: vec![],
            events: vec![
                requires(0, "machine-0"),
                replacement(1, "machine-1", "machine-replacement-1"),
            ],
            requeue: true,
        },
        Case {
            name: "OD13 several deleted, replacements pending",
            buckets: vec![
                b(0, vec![od(0), rp(0)]),
                b(1, vec![od(1), rp(1)]),
                b(2, vec![u(2)]),
            ],
            actions: vec![],
            events: vec![
                replacement(0, "machine-0", "machine-replacement-0"),
                replacement(1, "machine-1", "machine-replacement-1"),
            ],
            requeue: true,
        },
        Case {
            name: "OD14 one deleted, replacement ready",
            buckets: vec![b(0, vec![o(0)]), b(1, vec![od(1), ru(1)]), b(2, vec![u(2)])],
            actions: vec![],
            events: vec![requires(0, "machine-0"), removed(1, "machine-1")],
            requeue: false,
        },
        Case {
            name: "OD15 several deleted, one ready one pending",
            buckets: vec![
                b(0, vec![od(0), rp(0)]),
                b(1, vec![od(1), ru(1)]),
                b(2, vec![u(2)]),
            ],
            actions: vec![],
            events: vec![
                replacement(0, "machine-0", "machine-replacement-0"),
                removed(1, "machine-1"),
            ],
            requeue: true,
        },
        Case {
            name: "OD16 several deleted, all replacements ready",
            buckets: vec![
                b(0, vec![od(0), ru(0)]),
                b(1, vec![od(1), ru(1)]),
                b(2, vec![u(2)]),
            ],
            actions: vec![],
            events: vec![removed(0, "machine-0"), removed(1, "machine-1")],
            requeue: false,
        },
        Case {
            name: "OD17 an empty index",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![u(1)]), b(2, vec![])],
            actions: vec![Create(2)],
            events: vec![planned(2, None)],
            requeue: false,
        },
        Case {
            name: "OD18 a pending machine",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![u(1)]), b(2, vec![rp(2)])],
            actions: vec![],
            events: vec![ready(2, "machine-replacement-2")],
            requeue: true,
        },
        Case {
            name: "OD19 missing index, others need updating",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![o(1)]), b(2, vec![])],
            actions: vec![Create(2)],
            events: vec![requires(1, "machine-1"), planned(2, None)],
            requeue: false,
        },
        Case {
            name: "OD20 pending machine, others need updating",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![o(1)]), b(2, vec![rp(2)])],
            actions: vec![],
            events: vec![requires(1, "machine-1"), ready(2, "machine-replacement-2")],
            requeue: true,
        },
        Case {
            name: "OD21 no updates, but a machine was deleted",
            buckets: vec![b(0, vec![u(0)]), b(1, vec![u(1)]), b(2, vec![ud(2)])],
            actions: vec![Create(2)],
            events: vec![planned(2, Some("machine-2"))],
            requeue: false,
        },
    ];
    for c in cases {
        let plan = plan_on_delete(&c.buckets);
        assert_eq!(simplify(&plan.actions), expected(&c.actions), "{}", c.name);
        assert_eq!(plan.events, c.events, "{}", c.name);
        assert_eq!(
            plan.requeue_after,
            c.requeue.then_some(WAIT_REQUEUE),
            "{}",
            c.name
        );
    }
}

/// Which upstream `It` of the Recreate / invalid-strategy contexts a row checks.
#[derive(Clone, Copy, Debug)]
enum StrategySpec {
    ReturnsAnEmptyResult,
    DoesNotReturnAnError,
    LogsThatTheStrategyIsInvalid,
    SetsTheDegradedCondition,
}

#[test]
fn unsupported_strategies_table() {
    // Upstream: the "When the update strategy is Recreate" and "... is invalid" contexts, four
    // `It`s each (ST1a-d, ST2a-d), run through the strategy dispatcher.
    use StrategySpec::{
        DoesNotReturnAnError, LogsThatTheStrategyIsInvalid, ReturnsAnEmptyResult,
        SetsTheDegradedCondition,
    };
    let recreate_msg =
        "invalid value for spec.strategy.type: update strategy \"Recreate\" is not supported";
    let invalid_msg = "invalid value for spec.strategy.type: unknown update strategy: invalid";
    let recreate = UpdateStrategy::Recreate;
    let invalid = UpdateStrategy::Other("invalid".into());
    let cases: Vec<(&str, &UpdateStrategy, &str, StrategySpec)> = vec![
        (
            "ST1a Recreate: returns an empty result",
            &recreate,
            recreate_msg,
            ReturnsAnEmptyResult,
        ),
        (
            "ST1b Recreate: does not return an error",
            &recreate,
            recreate_msg,
            DoesNotReturnAnError,
        ),
        (
            "ST1c Recreate: logs that the strategy is invalid",
            &recreate,
            recreate_msg,
            LogsThatTheStrategyIsInvalid,
        ),
        (
            "ST1d Recreate: sets the degraded condition",
            &recreate,
            recreate_msg,
            SetsTheDegradedCondition,
        ),
        (
            "ST2a invalid: returns an empty result",
            &invalid,
            invalid_msg,
            ReturnsAnEmptyResult,
        ),
        (
            "ST2b invalid: does not return an error",
            &invalid,
            invalid_msg,
            DoesNotReturnAnError,
        ),
        (
            "ST2c invalid: logs that the strategy is invalid",
            &invalid,
            invalid_msg,
            LogsThatTheStrategyIsInvalid,
        ),
        (
            "ST2d invalid: sets the degraded condition",
            &invalid,
            invalid_msg,
            SetsTheDegradedCondition,
        ),
    ];
    // Upstream passes no machine infos; a bucket needing work shows that nothing is planned.
    let buckets = vec![b(0, vec![o(0)]), b(1, vec![]), b(2, vec![u(2)])];
    for (name, strategy, message, spec) in cases {
        let out = plan_for_strategy(strategy, &buckets, 3, RollingUpdateConfig::default());
        match spec {
            ReturnsAnEmptyResult => {
                assert!(out.plan.is_idle(), "{name}: {:?}", out.plan);
                assert_eq!(out.plan.requeue_after, None, "{name}");
            }
            DoesNotReturnAnError => {
                // The invalid strategy is a degradation for a human, not an error to retry:
                // nothing is executed and nothing requeues.
                assert!(out.plan.actions.is_empty(), "{name}");
                assert!(out.degradation.is_some(), "{name}");
            }
            LogsThatTheStrategyIsInvalid => assert_eq!(
                out.plan.events,
                vec![PlanEvent::InvalidStrategy {
                    message: message.into()
                }],
                "{name}"
            ),
            SetsTheDegradedCondition => {
                let d = out.degradation.expect("degradation");
                assert_eq!(d.reason, DegradationReason::InvalidStrategy, "{name}");
                assert_eq!(d.message, message, "{name}");
                // Cluster-state validation reports the same degradation.
                let nodes = std::collections::BTreeSet::new();
                let v =
                    validate_cluster_state(&[b(0, vec![u(0)])], &nodes, 1, strategy).unwrap_err();
                assert_eq!(v, d, "{name}");
            }
        }
    }
}

#[test]
fn supported_strategies_dispatch_to_their_planner() {
    let buckets = vec![b(0, vec![u(0)]), b(1, vec![od(1)]), b(2, vec![o(2)])];
    let rolling = plan_for_strategy(
        &UpdateStrategy::RollingUpdate,
        &buckets,
        3,
        RollingUpdateConfig::default(),
    );
    assert_eq!(rolling.degradation, None);
    assert_eq!(
        rolling.plan,
        plan_rolling_update(&buckets, 3, RollingUpdateConfig::default())
    );
    let on_delete = plan_for_strategy(
        &UpdateStrategy::OnDelete,
        &buckets,
        3,
        RollingUpdateConfig::default(),
    );
    assert_eq!(on_delete.degradation, None);
    assert_eq!(on_delete.plan, plan_on_delete(&buckets));
}

#[test]
fn sort_machine_infos_by_index_table() {
    // Upstream `sortMachineInfosByIndex` cases: buckets come out ascending.
    let cases: Vec<(&str, Vec<MachineInfo>, Vec<i32>)> = vec![
        (
            "U1 index starts at 0",
            vec![u(1), u(0), u(2)],
            vec![0, 1, 2],
        ),
        (
            "U2 index starts at 1",
            vec![u(3), u(2), u(1)],
            vec![1, 2, 3],
        ),
        ("U3 one index missing", vec![u(2), u(0)], vec![0, 2]),
    ];
    for (name, infos, want) in cases {
        // replicas = number of machines so no empty bucket is added.
        let replicas = i32::try_from(want.len()).unwrap();
        let got: Vec<i32> = group_by_index(&infos, replicas, &CreatableIndexes::Any)
            .iter()
            .map(|b| b.index)
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn derived_bug_deleting_replacement_is_not_counted_as_updated() {
    // Bucket [old outdated (live), new up-to-date but deleting]. Upstream would delete the old
    // machine (the only live one) and create another replacement; provkit keeps the old machine
    // and only plans the replacement.
    let buckets = vec![
        b(
            0,
            vec![o(0), B::deleting(0, "machine-replacement-0").build()],
        ),
        b(1, vec![u(1)]),
        b(2, vec![u(2)]),
    ];
    let plan = plan_rolling_update(&buckets, 3, RollingUpdateConfig::default());
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert!(plan.events.contains(&no_cap(0, Some("machine-0"))));
    // With surge budget available the replacement is planned, still without deleting.
    let plan = plan_rolling_update(&buckets, 4, RollingUpdateConfig::default());
    assert!(
        !plan
            .actions
            .iter()
            .any(|a| matches!(a, Action::Delete { .. })),
        "the last live machine of the index must not be deleted: {:?}",
        plan.actions
    );
    assert_eq!(simplify(&plan.actions), vec!["create 0".to_string()]);
}

#[test]
fn max_surge_is_a_parameter() {
    let buckets = vec![b(0, vec![o(0)]), b(1, vec![o(1)]), b(2, vec![o(2)])];
    let one = plan_rolling_update(&buckets, 3, RollingUpdateConfig { max_surge: 1 });
    assert_eq!(simplify(&one.actions), vec!["create 0".to_string()]);
    let three = plan_rolling_update(&buckets, 3, RollingUpdateConfig { max_surge: 3 });
    assert_eq!(
        simplify(&three.actions),
        vec!["create 0", "create 1", "create 2"]
    );
    let zero = plan_rolling_update(&buckets, 3, RollingUpdateConfig { max_surge: 0 });
    assert!(zero.actions.is_empty());
}
