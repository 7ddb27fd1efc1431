//! Property tests for the §E.7 invariants.

use std::collections::BTreeSet;

use proptest::prelude::*;
use provkit_machines::MachineInfo;
use provkit_machines::set::{
    Action, IndexBucket, MachineDomain, RollingUpdateConfig, map_indexes_to_failure_domains,
    parse_index, plan_on_delete, plan_rolling_update,
};
use provkit_testing::machines::MachineInfoBuilder as B;

const DOMAINS: [&str; 5] = ["a", "b", "c", "d", "e"];

fn machine_domain() -> impl Strategy<Value = MachineDomain<&'static str>> {
    (0..7i32, 0..5usize, any::<bool>(), 0..3u8, 0..4i64).prop_map(
        |(index, d, deleting, generation, created)| {
            // Unique-ish names; some without a parseable index.
            let name = if generation == 2 {
                format!("machine-x{index}")
            } else {
                format!("machine-g{generation}-{index}")
            };
            let mut m = MachineDomain::new(name, DOMAINS[d])
                .created_at(chrono::DateTime::from_timestamp(created, 0).unwrap());
            m.deleting = deleting;
            m
        },
    )
}

fn domains() -> impl Strategy<Value = Vec<&'static str>> {
    proptest::sample::subsequence(DOMAINS.to_vec(), 1..=5)
}

proptest! {
    #[test]
    fn mapping_is_deterministic_under_permutation(
        machines in proptest::collection::vec(machine_domain(), 0..8),
        doms in domains(),
        replicas in 1..7i32,
        seed in any::<u64>(),
    ) {
        let out = map_indexes_to_failure_domains(&machines, replicas, &doms).unwrap();
        let mut shuffled = machines.clone();
        let mut shuffled_d = doms.clone();
        // Deterministic pseudo-shuffle from the seed.
        let n = shuffled.len();
        for i in 0..n {
            let j = usize::try_from((seed >> (i % 32)) % (n as u64)).unwrap();
            shuffled.swap(i, j);
        }
        shuffled_d.rotate_left(usize::try_from(seed % (doms.len() as u64)).unwrap());
        let again = map_indexes_to_failure_domains(&shuffled, replicas, &shuffled_d).unwrap();
        prop_assert_eq!(out.mapping, again.mapping);
    }

    #[test]
    fn every_expected_index_is_mapped_to_a_configured_domain(
        machines in proptest::collection::vec(machine_domain(), 0..8),
        doms in domains(),
        replicas in 1..7i32,
    ) {
        let out = map_indexes_to_failure_domains(&machines, replicas, &doms).unwrap();
        let machine_indexes: BTreeSet<i32> = machines.iter().filter_map(|m| parse_index(&m.name)).collect();
        for i in &machine_indexes {
            prop_assert!(out.mapping.contains_key(i), "machine index {} unmapped", i);
        }
        prop_assert!(out.mapping.len() >= usize::try_from(replicas).unwrap());
        for d in out.mapping.values() {
            prop_assert!(doms.contains(d), "unconfigured domain {}", d);
        }
    }

    #[test]
    fn without_machines_the_mapping_is_balanced(doms in domains(), replicas in 1..12i32) {
        let out = map_indexes_to_failure_domains::<&str>(&[], replicas, &doms).unwrap();
        let n = out.mapping.len();
        let max = n.div_ceil(doms.len());
        for d in &doms {
            prop_assert!(out.mapping.values().filter(|v| *v == d).count() <= max);
        }
        prop_assert_eq!(n, usize::try_from(replicas).unwrap());
    }
}

fn info(kind: u8, index: i32, k: usize) -> MachineInfo {
    let name = format!("machine-{k}-{index}");
    let b = match kind {
        0 => B::updated(index, &name),
        1 => B::outdated(index, &name),
        2 => B::outdated(index, &name).deleted(),
        3 => B::deleting(index, &name),
        4 => B::pending(index, &name),
        _ => B::outdated_not_ready(index, &name),
    };
    b.created_at(chrono::DateTime::from_timestamp(i64::try_from(k).unwrap() * 10, 0).unwrap())
        .build()
}

fn buckets() -> impl Strategy<Value = Vec<IndexBucket>> {
    proptest::collection::vec(proptest::collection::vec(0..6u8, 0..4), 1..6).prop_map(|bs| {
        let mut k = 0;
        bs.into_iter()
            .enumerate()
            .map(|(i, kinds)| {
                let index = i32::try_from(i).unwrap();
                let infos = kinds
                    .into_iter()
                    .map(|kind| {
                        k += 1;
                        info(kind, index, k)
                    })
                    .collect();
                IndexBucket::new(index, infos)
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn rolling_update_never_deletes_a_lone_or_last_ready_machine(bs in buckets(), replicas in 1..6i32, surge in 0..3i32) {
        let plan = plan_rolling_update(&bs, replicas, RollingUpdateConfig { max_surge: surge });
        for b in &bs {
            let deleted: Vec<&str> = plan.actions.iter().filter_map(|a| match a {
                Action::Delete { index, machine } if *index == b.index => Some(machine.name()),
                _ => None,
            }).collect();
            if !deleted.is_empty() {
                prop_assert!(b.infos.len() >= 2, "deleted the sole machine of index {}", b.index);
            }
            let had_ready_live = b.infos.iter().any(|i| i.ready && !i.is_deleting());
            let keeps_ready_live = b.infos.iter().any(|i| i.ready && !i.is_deleting() && !deleted.contains(&i.name()));
            prop_assert!(!had_ready_live || keeps_ready_live, "index {} lost its last ready machine", b.index);
        }
    }

    #[test]
    fn rolling_update_respects_the_surge_budget(bs in buckets(), replicas in 1..6i32, surge in 0..3i32) {
        let plan = plan_rolling_update(&bs, replicas, RollingUpdateConfig { max_surge: surge });
        let machines = i32::try_from(bs.iter().map(|b| b.infos.len()).sum::<usize>()).unwrap();
        let creates = i32::try_from(plan.actions.iter().filter(|a| matches!(a, Action::CreateIfNoFreshReplacement { .. })).count()).unwrap();
        prop_assert!(creates <= (replicas - machines + surge).max(0));
    }

    #[test]
    fn on_delete_never_deletes(bs in buckets()) {
        let plan = plan_on_delete(&bs);
        let deletes = plan.actions.iter().filter(|a| matches!(a, Action::Delete { .. })).count();
        prop_assert_eq!(deletes, 0);
    }
}
