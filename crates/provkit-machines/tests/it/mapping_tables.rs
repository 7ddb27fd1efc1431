//! The upstream failure-domain mapping tables (CPMS
//! `pkg/machineproviders/providers/openshift/machine/v1beta1/mapping_test.go`), transcribed as
//! data: domains `a`..`e` stand for `us-east-1a`..`us-east-1e`.
//!
//! Source: the largest stored version of the file (122,795 chars), 79 entries:
//! `mapMachineIndexesToFailureDomains` 29 (M1a, M1b, M2, M2t, M3-M26, M14b),
//! `createBaseFailureDomainMapping` 17 (B1-B17), `createMachineMapping` 11 (C1-C6, C8-C12),
//! `reconcileMappings` 17 (R1-R17), `reconcileIndexes` 5 (I1-I5). C7 comes from an older version
//! (selector filtering) and is kept as an extra case.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{TimeZone, Utc};
use provkit_machines::set::{
    MachineDomain, MappingError, MappingEvent, base_mapping, machine_mapping,
    map_indexes_to_failure_domains, map_indexes_to_failure_domains_with_template,
    reconcile_indexes, reconcile_mappings,
};

type D = &'static str;

fn m(name: &str, d: D) -> MachineDomain<D> {
    MachineDomain::new(name, d)
}

fn map(entries: &[(i32, D)]) -> BTreeMap<i32, D> {
    entries.iter().copied().collect()
}

fn seq(domains: &[D]) -> BTreeMap<i32, D> {
    domains
        .iter()
        .enumerate()
        .map(|(i, d)| (i32::try_from(i).unwrap(), *d))
        .collect()
}

fn ignoring(index: i32, domain: D) -> MappingEvent<D> {
    MappingEvent::IgnoringUnknownDomain { index, domain }
}

fn changed(index: i32, old: D, new: D) -> MappingEvent<D> {
    MappingEvent::DomainChanged { index, old, new }
}

fn unexpected(machine: &str) -> MappingEvent<D> {
    MappingEvent::IgnoringUnexpectedName {
        machine: machine.into(),
    }
}

struct MapCase {
    name: &'static str,
    replicas: i32,
    domains: &'static [D],
    machines: Vec<MachineDomain<D>>,
    want: BTreeMap<i32, D>,
    events: Vec<MappingEvent<D>>,
}

fn named(names_domains: &[(&str, D)]) -> Vec<MachineDomain<D>> {
    names_domains.iter().map(|(n, d)| m(n, d)).collect()
}

fn std3(domains: &[D]) -> Vec<MachineDomain<D>> {
    domains
        .iter()
        .enumerate()
        .map(|(i, d)| m(&format!("machine-{i}"), d))
        .collect()
}

#[test]
fn map_machine_indexes_to_failure_domains_table() {
    let abc: &[D] = &["a", "b", "c"];
    let cases = vec![
        MapCase {
            name: "M2 three domains, machines a,b,c",
            replicas: 3,
            domains: abc,
            machines: std3(&["a", "b", "c"]),
            want: seq(&["a", "b", "c"]),
            events: vec![],
        },
        MapCase {
            name: "M3 machines b,c,a",
            replicas: 3,
            domains: abc,
            machines: std3(&["b", "c", "a"]),
            want: seq(&["b", "c", "a"]),
            events: vec![],
        },
        MapCase {
            name: "M4 machines b,a,c",
            replicas: 3,
            domains: abc,
            machines: std3(&["b", "a", "c"]),
            want: seq(&["b", "a", "c"]),
            events: vec![],
        },
        MapCase {
            name: "M5 five machines a,b,c,a,b",
            replicas: 5,
            domains: abc,
            machines: std3(&["a", "b", "c", "a", "b"]),
            want: seq(&["a", "b", "c", "a", "b"]),
            events: vec![],
        },
        MapCase {
            name: "M6 five machines b,c,a,c,b",
            replicas: 5,
            domains: abc,
            machines: std3(&["b", "c", "a", "c", "b"]),
            want: seq(&["b", "c", "a", "c", "b"]),
            events: vec![],
        },
        MapCase {
            name: "M7 five machines b,a,c,c,a",
            replicas: 5,
            domains: abc,
            machines: std3(&["b", "a", "c", "c", "a"]),
            want: seq(&["b", "a", "c", "c", "a"]),
            events: vec![],
        },
        MapCase {
            name: "M8 unrecognised domain (domains a,b)",
            replicas: 3,
            domains: &["a", "b"],
            machines: std3(&["a", "b", "c"]),
            want: seq(&["a", "b", "a"]),
            events: vec![ignoring(2, "c")],
        },
        MapCase {
            name: "M9 unrecognised domain (domains b,a)",
            replicas: 3,
            domains: &["b", "a"],
            machines: std3(&["a", "b", "c"]),
            want: seq(&["a", "b", "a"]),
            events: vec![ignoring(2, "c")],
        },
        MapCase {
            name: "M10 multiple unrecognised domains",
            replicas: 3,
            domains: &["a"],
            machines: std3(&["a", "b", "c"]),
            want: seq(&["a", "a", "a"]),
            events: vec![ignoring(1, "b"), ignoring(2, "c")],
        },
        MapCase {
            name: "M11 multiple machines in one domain",
            replicas: 3,
            domains: abc,
            machines: std3(&["b", "b", "c"]),
            want: seq(&["b", "a", "c"]),
            events: vec![changed(1, "b", "a")],
        },
        MapCase {
            name: "M12 duplicate domains at the beginning",
            replicas: 3,
            domains: &["a", "a", "b", "c"],
            machines: std3(&["a", "b", "c"]),
            want: seq(&["a", "b", "c"]),
            events: vec![],
        },
        MapCase {
            name: "M13 duplicate domains at the end",
            replicas: 3,
            domains: &["a", "b", "c", "c"],
            machines: std3(&["a", "b", "c"]),
            want: seq(&["a", "b", "c"]),
            events: vec![],
        },
        MapCase {
            name: "M14 duplicate domains in the middle",
            replicas: 3,
            domains: &["a", "b", "b", "c"],
            machines: std3(&["a", "b", "c"]),
            want: seq(&["a", "b", "c"]),
            events: vec![],
        },
        MapCase {
            name: "M14b multiple duplicate domains",
            replicas: 3,
            domains: &["a", "a", "b", "b", "b", "c", "c"],
            machines: std3(&["a", "b", "c"]),
            want: seq(&["a", "b", "c"]),
            events: vec![],
        },
        MapCase {
            name: "M15 rebalancing with an index holding only deleted machines",
            replicas: 3,
            domains: abc,
            machines: vec![
                m("machine-0", "a").deleting(),
                m("machine-1", "a"),
                m("machine-2", "a"),
            ],
            want: seq(&["b", "a", "c"]),
            events: vec![changed(0, "a", "b"), changed(2, "a", "c")],
        },
        MapCase {
            name: "M16 a name without index (a,b,c)",
            replicas: 3,
            domains: abc,
            machines: named(&[("machine-a", "a"), ("machine-1", "b"), ("machine-2", "c")]),
            want: seq(&["a", "b", "c"]),
            events: vec![unexpected("machine-a")],
        },
        MapCase {
            name: "M17 a name without index (b,c,a)",
            replicas: 3,
            domains: abc,
            machines: named(&[("machine-a", "b"), ("machine-1", "c"), ("machine-2", "a")]),
            want: seq(&["b", "c", "a"]),
            events: vec![unexpected("machine-a")],
        },
        MapCase {
            name: "M18 unbalanced c,b,a,c,c rebalances index 3",
            replicas: 5,
            domains: abc,
            machines: std3(&["c", "b", "a", "c", "c"]),
            want: seq(&["c", "b", "a", "a", "c"]),
            events: vec![changed(3, "c", "a")],
        },
        MapCase {
            name: "M19 indexed from 3",
            replicas: 3,
            domains: abc,
            machines: named(&[("machine-3", "a"), ("machine-4", "b"), ("machine-5", "c")]),
            want: map(&[(3, "a"), (4, "b"), (5, "c")]),
            events: vec![],
        },
        MapCase {
            name: "M20 not sequentially indexed",
            replicas: 3,
            domains: abc,
            machines: named(&[("machine-0", "a"), ("machine-2", "b"), ("machine-4", "c")]),
            want: map(&[(0, "a"), (2, "b"), (4, "c")]),
            events: vec![],
        },
        MapCase {
            name: "M21 indexed from 3 (second entry)",
            replicas: 3,
            domains: abc,
            machines: named(&[("machine-3", "a"), ("machine-4", "b"), ("machine-5", "c")]),
            want: map(&[(3, "a"), (4, "b"), (5, "c")]),
            events: vec![],
        },
        MapCase {
            name: "M22 four machines not sequential (b,a,b,c)",
            replicas: 3,
            domains: abc,
            machines: named(&[
                ("machine-1", "b"),
                ("machine-4", "a"),
                ("machine-6", "b"),
                ("machine-9", "c"),
            ]),
            want: map(&[(1, "b"), (4, "a"), (6, "b"), (9, "c")]),
            events: vec![],
        },
        MapCase {
            name: "M23 five machines not sequential (c,a,a,b,c)",
            replicas: 3,
            domains: abc,
            machines: named(&[
                ("machine-2", "c"),
                ("machine-3", "a"),
                ("machine-5", "a"),
                ("machine-8", "b"),
                ("machine-13", "c"),
            ]),
            want: map(&[(2, "c"), (3, "a"), (5, "a"), (8, "b"), (13, "c")]),
            events: vec![],
        },
        MapCase {
            name: "M24 five machines duplicating indexes",
            replicas: 3,
            domains: abc,
            machines: named(&[
                ("machine-3", "a"),
                ("machine-replacement-3", "a"),
                ("machine-4", "b"),
                ("machine-replacement-4", "b"),
                ("machine-5", "c"),
            ]),
            want: map(&[(3, "a"), (4, "b"), (5, "c")]),
            events: vec![],
        },
        MapCase {
            name: "M25 seven machines duplicating indexes",
            replicas: 3,
            domains: abc,
            machines: named(&[
                ("machine-0", "a"),
                ("machine-replacement-0", "a"),
                ("machine-3", "a"),
                ("machine-replacement-3", "a"),
                ("machine-4", "b"),
                ("machine-replacement-4", "b"),
                ("machine-5", "c"),
            ]),
            want: map(&[(0, "a"), (3, "a"), (4, "b"), (5, "c")]),
            events: vec![],
        },
        MapCase {
            name: "M26 four domains, three machines skipping the first",
            replicas: 3,
            domains: &["a", "b", "c", "d"],
            machines: std3(&["b", "c", "d"]),
            want: seq(&["b", "c", "d"]),
            events: vec![],
        },
    ];
    for c in cases {
        let out = map_indexes_to_failure_domains(&c.machines, c.replicas, c.domains).unwrap();
        assert_eq!(out.mapping, c.want, "{}", c.name);
        assert_eq!(out.events, c.events, "{}", c.name);
        // Deterministic under permutation of machines and domains.
        let mut rev_m = c.machines.clone();
        rev_m.reverse();
        let mut rev_d = c.domains.to_vec();
        rev_d.reverse();
        let again = map_indexes_to_failure_domains(&rev_m, c.replicas, &rev_d).unwrap();
        assert_eq!(again.mapping, c.want, "{} (permuted)", c.name);
    }
}

#[test]
fn m1_no_failure_domains_gives_an_empty_mapping() {
    // Upstream has two entries: nil failure domains and an empty failure-domains struct. Both
    // reach the Rust function as an empty slice; upstream returns `errNoFailureDomains` with a
    // nil mapping, the Rust function returns an empty mapping and a `NoFailureDomains` event.
    let cases: Vec<(&str, Option<Vec<D>>)> = vec![
        ("M1a nil failure domains", None),
        ("M1b no failure domains (empty)", Some(Vec::new())),
    ];
    for (name, domains) in cases {
        let domains = domains.unwrap_or_default();
        let out = map_indexes_to_failure_domains(&std3(&["a", "b", "c"]), 3, &domains).unwrap();
        assert!(out.mapping.is_empty(), "{name}");
        assert_eq!(out.events, vec![MappingEvent::NoFailureDomains], "{name}");
    }
}

/// An AWS-like failure domain: zone and subnet, either may be left empty in the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct AwsFd {
    zone: Option<&'static str>,
    subnet: Option<&'static str>,
}

impl std::fmt::Display for AwsFd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "AWSFailureDomain{{AvailabilityZone:{}, Subnet:{}}}",
            self.zone.unwrap_or_default(),
            self.subnet.unwrap_or_default()
        )
    }
}

fn aws(zone: &'static str) -> AwsFd {
    AwsFd {
        zone: Some(zone),
        subnet: Some(match zone {
            "us-east-1a" => "subnet-us-east-1a",
            "us-east-1b" => "subnet-us-east-1b",
            _ => "subnet-us-east-1c",
        }),
    }
}

fn complete_aws(d: &AwsFd, template: &AwsFd) -> AwsFd {
    AwsFd {
        zone: d.zone.or(template.zone),
        subnet: d.subnet.or(template.subnet),
    }
}

#[test]
fn m2t_template_zone_completes_a_subnet_only_failure_domain() {
    // Upstream: "with three failure domains matching three machines in order (a,b,c) and
    // us-east-1a zone is specified in template". The configured domain for `a` names only the
    // subnet; the template supplies the zone, so it matches machine-0's full domain.
    let a_subnet_only = AwsFd {
        zone: None,
        subnet: Some("subnet-us-east-1a"),
    };
    let template = AwsFd {
        zone: Some("us-east-1a"),
        subnet: None,
    };
    let (a, b, c) = (aws("us-east-1a"), aws("us-east-1b"), aws("us-east-1c"));
    let machines = vec![
        MachineDomain::new("machine-0", a),
        MachineDomain::new("machine-1", b),
        MachineDomain::new("machine-2", c),
    ];
    let domains = [a_subnet_only, b, c];
    let want: BTreeMap<i32, AwsFd> = BTreeMap::from([(0, a), (1, b), (2, c)]);
    let out = map_indexes_to_failure_domains_with_template(
        &machines,
        3,
        &domains,
        &template,
        complete_aws,
    )
    .unwrap();
    assert_eq!(out.mapping, want);
    assert_eq!(out.events, vec![]);
    let mut rev_m = machines.clone();
    rev_m.reverse();
    let rev_d = [c, b, a_subnet_only];
    let again =
        map_indexes_to_failure_domains_with_template(&rev_m, 3, &rev_d, &template, complete_aws)
            .unwrap();
    assert_eq!(again.mapping, want, "permuted");
    // Without completion the subnet-only domain matches no machine: machine-0's domain is
    // unknown and index 0 gets the incomplete configured domain instead.
    let raw = map_indexes_to_failure_domains(&machines, 3, &domains).unwrap();
    assert_eq!(raw.mapping[&0], a_subnet_only);
    assert_eq!(
        raw.events,
        vec![MappingEvent::IgnoringUnknownDomain {
            index: 0,
            domain: a
        }]
    );
}

#[test]
fn create_base_failure_domain_mapping_table() {
    assert_eq!(
        base_mapping(0, &["a", "b", "c"], &BTreeMap::new()),
        Err(MappingError::ReplicasUnset),
        "B1 no replicas"
    );
    let cases: Vec<(&str, i32, BTreeMap<i32, D>, &[D], BTreeMap<i32, D>)> = vec![
        (
            "B2 3 replicas a,b,c",
            3,
            seq(&["a", "b", "c"]),
            &["a", "b", "c"],
            seq(&["a", "b", "c"]),
        ),
        (
            "B3 3 replicas b,c,a",
            3,
            seq(&["b", "c", "a"]),
            &["b", "c", "a"],
            seq(&["a", "b", "c"]),
        ),
        (
            "B4 3 replicas b,a,c",
            3,
            seq(&["b", "a", "c"]),
            &["b", "a", "c"],
            seq(&["a", "b", "c"]),
        ),
        (
            "B5 3 replicas one domain",
            3,
            seq(&["a", "a", "a"]),
            &["a"],
            seq(&["a", "a", "a"]),
        ),
        (
            "B6 3 replicas two domains a,b",
            3,
            seq(&["a", "b", "a"]),
            &["a", "b"],
            seq(&["a", "b", "a"]),
        ),
        (
            "B7 3 replicas two domains b,a",
            3,
            seq(&["b", "a", "b"]),
            &["b", "a"],
            seq(&["a", "b", "a"]),
        ),
        (
            "B8 5 replicas a,b,c",
            5,
            seq(&["a", "a", "b", "b", "c"]),
            &["a", "b", "c"],
            seq(&["a", "b", "c", "a", "b"]),
        ),
        (
            "B9 5 replicas b,c,a",
            5,
            seq(&["a", "a", "b", "b", "c"]),
            &["b", "c", "a"],
            seq(&["a", "b", "c", "a", "b"]),
        ),
        (
            "B10 5 replicas two domains a,b",
            5,
            seq(&["a", "a", "b", "b", "a"]),
            &["a", "b"],
            seq(&["a", "b", "a", "b", "a"]),
        ),
        (
            "B11 5 replicas two domains b,a",
            5,
            seq(&["a", "a", "b", "b", "a"]),
            &["b", "a"],
            seq(&["a", "b", "a", "b", "a"]),
        ),
        (
            "B12 3 replicas, 5 machines",
            3,
            seq(&["a", "a", "b", "b", "c"]),
            &["a", "b", "c"],
            seq(&["a", "b", "c", "a", "b"]),
        ),
        (
            "B13 4 replicas, 2 machines",
            4,
            seq(&["a", "b"]),
            &["a", "b", "c"],
            seq(&["a", "b", "c", "a"]),
        ),
        (
            "B14 3 replicas, 1 machine in a",
            3,
            seq(&["a"]),
            &["a", "b", "c"],
            seq(&["a", "b", "c"]),
        ),
        (
            "B15 3 replicas, 1 machine in b",
            3,
            seq(&["b"]),
            &["a", "b", "c"],
            seq(&["b", "a", "c"]),
        ),
        (
            "B16 3 replicas, 1 machine in c",
            3,
            seq(&["c"]),
            &["a", "b", "c"],
            seq(&["c", "a", "b"]),
        ),
        (
            "B17 5 domains, 3 machines d,c,b",
            5,
            seq(&["d", "c", "b"]),
            &["a", "b", "c", "d", "e"],
            seq(&["b", "c", "d", "a", "e"]),
        ),
    ];
    for (name, replicas, mm, domains, want) in cases {
        assert_eq!(
            base_mapping(replicas, domains, &mm).unwrap(),
            want,
            "{name}"
        );
    }
}

#[test]
fn create_machine_mapping_table() {
    let t = |s| Utc.timestamp_opt(s, 0).unwrap();
    let cases: Vec<(
        &str,
        Vec<MachineDomain<D>>,
        BTreeMap<i32, D>,
        BTreeSet<i32>,
        Vec<MappingEvent<D>>,
    )> = vec![
        (
            "C1 a,b,c",
            std3(&["a", "b", "c"]),
            seq(&["a", "b", "c"]),
            BTreeSet::new(),
            vec![],
        ),
        (
            "C2 b,c,a",
            std3(&["b", "c", "a"]),
            seq(&["b", "c", "a"]),
            BTreeSet::new(),
            vec![],
        ),
        (
            "C3 non-index names",
            named(&[("machine-a", "a"), ("machine-1", "b"), ("machine-c", "c")]),
            map(&[(1, "b")]),
            BTreeSet::new(),
            vec![unexpected("machine-a"), unexpected("machine-c")],
        ),
        (
            "C4 several machines in one domain",
            std3(&["a", "a", "c"]),
            seq(&["a", "a", "c"]),
            BTreeSet::new(),
            vec![],
        ),
        (
            "C5 same index, same domain",
            named(&[
                ("machine-0", "a"),
                ("machine-replacement-0", "a"),
                ("machine-2", "c"),
            ]),
            map(&[(0, "a"), (2, "c")]),
            BTreeSet::new(),
            vec![],
        ),
        (
            "C6 same index, different domains: newer wins",
            vec![
                m("machine-0", "a").created_at(t(100)),
                m("machine-replacement-0", "b").created_at(t(200)),
                m("machine-2", "c").created_at(t(100)),
            ],
            map(&[(0, "b"), (2, "c")]),
            BTreeSet::new(),
            vec![MappingEvent::ConflictingDomains {
                index: 0,
                older_machine: "machine-0".into(),
                newer_machine: "machine-replacement-0".into(),
            }],
        ),
        // C7 (older upstream version only; not among the 79 entries of the current table): the
        // worker machines are filtered out by the label selector before the pure function.
        (
            "C7 machines not matched by the selector",
            named(&[("machine-0", "a")]),
            map(&[(0, "a")]),
            BTreeSet::new(),
            vec![],
        ),
        (
            "C8 indexed from 3",
            named(&[("machine-3", "a"), ("machine-4", "b"), ("machine-5", "c")]),
            map(&[(3, "a"), (4, "b"), (5, "c")]),
            BTreeSet::new(),
            vec![],
        ),
        (
            "C9 not sequential",
            named(&[("machine-0", "a"), ("machine-2", "b"), ("machine-4", "c")]),
            map(&[(0, "a"), (2, "b"), (4, "c")]),
            BTreeSet::new(),
            vec![],
        ),
        (
            "C10 an index with only deleted machines",
            vec![
                m("machine-0", "a").deleting(),
                m("machine-1", "b"),
                m("machine-2", "c"),
            ],
            seq(&["a", "b", "c"]),
            BTreeSet::from([0]),
            vec![],
        ),
        (
            "C11 several deleted-only indexes",
            vec![
                m("machine-0", "a").deleting(),
                m("machine-1", "b"),
                m("machine-2", "c").deleting(),
            ],
            seq(&["a", "b", "c"]),
            BTreeSet::from([0, 2]),
            vec![],
        ),
        (
            "C12 an index with a deleted and a live machine",
            vec![
                m("machine-0", "a").deleting(),
                m("machine-replacement-0", "a"),
                m("machine-1", "b"),
                m("machine-2", "c"),
            ],
            seq(&["a", "b", "c"]),
            BTreeSet::new(),
            vec![],
        ),
    ];
    for (name, machines, want, deleting, events) in cases {
        let (mm, ev) = machine_mapping(&machines);
        assert_eq!(mm.mapping, want, "{name}");
        assert_eq!(mm.deleting_only, deleting, "{name}");
        assert_eq!(ev, events, "{name}");
    }
}

#[test]
fn reconcile_mappings_table() {
    let none = BTreeSet::new();
    let cases: Vec<(
        &str,
        BTreeMap<i32, D>,
        BTreeMap<i32, D>,
        BTreeSet<i32>,
        BTreeMap<i32, D>,
        Vec<MappingEvent<D>>,
    )> = vec![
        (
            "R1 mappings match",
            seq(&["a", "b", "c"]),
            seq(&["a", "b", "c"]),
            none.clone(),
            seq(&["a", "b", "c"]),
            vec![],
        ),
        (
            "R2 match with duplicated domains",
            seq(&["a", "b", "c", "a", "b"]),
            seq(&["a", "b", "c", "a", "b"]),
            none.clone(),
            seq(&["a", "b", "c", "a", "b"]),
            vec![],
        ),
        (
            "R3 machines take precedence (b,c,a)",
            seq(&["a", "b", "c"]),
            seq(&["b", "c", "a"]),
            none.clone(),
            seq(&["b", "c", "a"]),
            vec![],
        ),
        (
            "R4 machines take precedence (b,a,c)",
            seq(&["a", "b", "c"]),
            seq(&["b", "a", "c"]),
            none.clone(),
            seq(&["b", "a", "c"]),
            vec![],
        ),
        (
            "R5 duplicated domains, machines take precedence (b,a,a,c,b)",
            seq(&["a", "b", "c", "a", "b"]),
            seq(&["b", "a", "a", "c", "b"]),
            none.clone(),
            seq(&["b", "a", "a", "c", "b"]),
            vec![],
        ),
        (
            "R6 a machine domain not in the base",
            seq(&["a", "b", "a"]),
            seq(&["b", "a", "c"]),
            none.clone(),
            seq(&["b", "a", "a"]),
            vec![ignoring(2, "c")],
        ),
        (
            "R7 a base domain not in the machines",
            seq(&["a", "b", "c"]),
            seq(&["b", "a", "a"]),
            none.clone(),
            seq(&["b", "a", "c"]),
            vec![changed(2, "a", "c")],
        ),
        (
            "R8 ... and index 1 only deleting",
            seq(&["a", "b", "c"]),
            seq(&["b", "a", "a"]),
            BTreeSet::from([1]),
            seq(&["b", "c", "a"]),
            vec![changed(1, "a", "c")],
        ),
        (
            "R9 ... and index 2 only deleting",
            seq(&["a", "b", "c"]),
            seq(&["b", "a", "a"]),
            BTreeSet::from([2]),
            seq(&["b", "a", "c"]),
            vec![changed(2, "a", "c")],
        ),
        (
            "R10 a domain without machines",
            seq(&["a", "b", "c"]),
            map(&[(0, "b"), (2, "c")]),
            none.clone(),
            seq(&["b", "a", "c"]),
            vec![],
        ),
        (
            "R11 balanced differently: keep",
            seq(&["a", "b", "a"]),
            seq(&["b", "a", "b"]),
            none.clone(),
            seq(&["b", "a", "b"]),
            vec![],
        ),
        (
            "R12 unbalanced c,b,a,c,c",
            seq(&["a", "b", "c", "a", "b"]),
            seq(&["c", "b", "a", "c", "c"]),
            none.clone(),
            seq(&["c", "b", "a", "a", "c"]),
            vec![changed(3, "c", "a")],
        ),
        (
            "R13 extra machine index kept",
            seq(&["a", "b", "c", "a"]),
            seq(&["b", "a", "c", "c"]),
            none.clone(),
            seq(&["b", "a", "c", "c"]),
            vec![],
        ),
        (
            "R14 machines indexed from 3",
            seq(&["a", "b", "c"]),
            map(&[(3, "b"), (4, "a"), (5, "c")]),
            none.clone(),
            map(&[(3, "b"), (4, "a"), (5, "c")]),
            vec![],
        ),
        (
            "R15 machines not sequential",
            seq(&["a", "b", "c"]),
            map(&[(0, "b"), (2, "a"), (4, "c")]),
            none.clone(),
            map(&[(0, "b"), (2, "a"), (4, "c")]),
            vec![],
        ),
        (
            "R16 not sequential, keeps order (a,b,a,c)",
            seq(&["a", "b", "c", "a"]),
            map(&[(0, "a"), (2, "b"), (3, "a"), (4, "c")]),
            none.clone(),
            map(&[(0, "a"), (2, "b"), (3, "a"), (4, "c")]),
            vec![],
        ),
        (
            "R17 not sequential, keeps order (b,b,a,c)",
            seq(&["a", "b", "c", "a"]),
            map(&[(0, "b"), (2, "b"), (4, "a"), (6, "c")]),
            none.clone(),
            map(&[(0, "b"), (2, "b"), (4, "a"), (6, "c")]),
            vec![],
        ),
    ];
    for (name, base, machines, deleting, want, events) in cases {
        // Upstream runs each case 10 times to check stability; the Rust function is pure.
        for _ in 0..10 {
            let out = reconcile_mappings(&base, &machines, &deleting).unwrap();
            assert_eq!(out.mapping, want, "{name}");
            assert_eq!(out.events, events, "{name}");
        }
    }
}

#[test]
fn reconcile_mappings_rejects_a_base_smaller_than_the_machines() {
    let err = reconcile_mappings(&seq(&["a"]), &seq(&["a", "b"]), &BTreeSet::new()).unwrap_err();
    assert_eq!(
        err,
        MappingError::BaseSmallerThanMachines {
            base: 1,
            machines: 2
        }
    );
}

#[test]
fn reconcile_indexes_table() {
    let cases: Vec<(&str, BTreeSet<i32>, BTreeMap<i32, D>)> = vec![
        (
            "I1 mappings match",
            BTreeSet::from([0, 1, 2]),
            seq(&["a", "b", "c"]),
        ),
        (
            "I2 preferred has more values",
            BTreeSet::from([0, 1, 2, 3, 4]),
            seq(&["a", "b", "c"]),
        ),
        (
            "I3 preferred is missing values",
            BTreeSet::from([0]),
            seq(&["a", "b", "c"]),
        ),
        (
            "I4 not aligned (3,4,5)",
            BTreeSet::from([3, 4, 5]),
            map(&[(3, "a"), (4, "b"), (5, "c")]),
        ),
        (
            "I5 not aligned (0,2,3)",
            BTreeSet::from([0, 2, 3]),
            map(&[(0, "a"), (3, "b"), (2, "c")]),
        ),
    ];
    for (name, preferred, want) in cases {
        let mut m = seq(&["a", "b", "c"]);
        reconcile_indexes(&mut m, &preferred);
        assert_eq!(m, want, "{name}");
    }
}
