//! Index → failure-domain mapping (pure, deterministic).
//!
//! Failure domains are any `D: Clone + PartialEq + Display + Debug`; equality is semantic
//! equality and the `Display` form is used for ordering (it must be injective over distinct
//! domains). Configured domains must be completed with the template's domain (fill the fields a
//! domain leaves empty) so that they compare equal to the machines' full domains: either do it
//! before calling, or use [`map_indexes_to_failure_domains_with_template`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use chrono::{DateTime, Utc};

use super::error::MappingError;
use super::index::parse_index;

/// What the mapping needs to know about one machine.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineDomain<D> {
    /// Machine name (the index is parsed from it).
    pub name: String,
    /// Whether the machine has a deletion timestamp.
    pub deleting: bool,
    /// Creation time (newer machines win index conflicts).
    pub created_at: Option<DateTime<Utc>>,
    /// The machine's failure domain (already completed with the template's).
    pub domain: D,
}

impl<D> MachineDomain<D> {
    /// A live machine without creation time.
    ///
    /// ```
    /// use provkit_machines::set::MachineDomain;
    /// let m = MachineDomain::new("machine-0", "us-east-1a");
    /// assert!(!m.deleting);
    /// ```
    #[must_use]
    pub fn new(name: impl Into<String>, domain: D) -> Self {
        Self {
            name: name.into(),
            deleting: false,
            created_at: None,
            domain,
        }
    }

    /// Marks the machine as deleting.
    ///
    /// ```
    /// use provkit_machines::set::MachineDomain;
    /// assert!(MachineDomain::new("m-0", "a").deleting().deleting);
    /// ```
    #[must_use]
    pub fn deleting(mut self) -> Self {
        self.deleting = true;
        self
    }

    /// Sets the creation time.
    ///
    /// ```
    /// use chrono::{TimeZone, Utc};
    /// use provkit_machines::set::MachineDomain;
    /// let t = Utc.timestamp_opt(5, 0).unwrap();
    /// assert_eq!(MachineDomain::new("m-0", "a").created_at(t).created_at, Some(t));
    /// ```
    #[must_use]
    pub fn created_at(mut self, at: DateTime<Utc>) -> Self {
        self.created_at = Some(at);
        self
    }
}

/// Something the mapping functions want logged (they never log themselves).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MappingEvent<D> {
    /// No failure domains were configured; every index uses the template unchanged.
    NoFailureDomains,
    /// A machine without a parseable index in its name was left out of the machine mapping.
    IgnoringUnexpectedName {
        /// The machine's name.
        machine: String,
    },
    /// Two machines claim one index with different domains; the newer machine's domain is kept.
    ConflictingDomains {
        /// The contested index.
        index: i32,
        /// The machine whose domain was dropped.
        older_machine: String,
        /// The machine whose domain was kept.
        newer_machine: String,
    },
    /// A machine's domain is no longer configured; the index gets a configured one.
    IgnoringUnknownDomain {
        /// The index.
        index: i32,
        /// The machine's (removed) domain.
        domain: D,
    },
    /// The index gets another domain to rebalance an over-represented one.
    DomainChanged {
        /// The index.
        index: i32,
        /// The machine's domain.
        old: D,
        /// The domain the index now maps to.
        new: D,
    },
}

/// The machines' own index → domain mapping plus the indexes that only hold deleting machines.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineMapping<D> {
    /// Index → the domain of the (newest) machine at that index.
    pub mapping: BTreeMap<i32, D>,
    /// Indexes whose every machine is being deleted.
    pub deleting_only: BTreeSet<i32>,
}

/// A mapping plus the events produced while computing it.
#[derive(Clone, Debug, PartialEq)]
pub struct MappingOutcome<D> {
    /// Index → failure domain. Empty when no failure domains are configured.
    pub mapping: BTreeMap<i32, D>,
    /// Events to log, in order.
    pub events: Vec<MappingEvent<D>>,
}

/// Maps each machine with a parseable index to its domain (step 1 of the algorithm) and finds
/// the indexes that only hold deleting machines (step 2).
///
/// When two machines claim one index with different domains, the newer one (by creation time)
/// wins; equal creation times are broken by the greater name (then the greater domain string),
/// so the result does not depend on the order of `machines`.
///
/// ```
/// use provkit_machines::set::{machine_mapping, MachineDomain};
/// let (m, events) = machine_mapping(&[
///     MachineDomain::new("machine-0", "a").deleting(),
///     MachineDomain::new("machine-a", "b"),
///     MachineDomain::new("machine-2", "c"),
/// ]);
/// assert_eq!(m.mapping.into_iter().collect::<Vec<_>>(), vec![(0, "a"), (2, "c")]);
/// assert_eq!(m.deleting_only.into_iter().collect::<Vec<_>>(), vec![0]);
/// assert_eq!(events.len(), 1);
/// ```
#[must_use]
pub fn machine_mapping<D: Clone + PartialEq + fmt::Display>(
    machines: &[MachineDomain<D>],
) -> (MachineMapping<D>, Vec<MappingEvent<D>>) {
    let mut events = Vec::new();
    let mut winners: BTreeMap<i32, &MachineDomain<D>> = BTreeMap::new();
    // Process in a canonical order so events and tie-breaks do not depend on input order.
    let mut sorted: Vec<(&MachineDomain<D>, String)> =
        machines.iter().map(|m| (m, m.domain.to_string())).collect();
    sorted
        .sort_by(|(a, ad), (b, bd)| (a.created_at, &a.name, ad).cmp(&(b.created_at, &b.name, bd)));
    for (machine, _) in sorted {
        let Some(index) = parse_index(&machine.name) else {
            events.push(MappingEvent::IgnoringUnexpectedName {
                machine: machine.name.clone(),
            });
            continue;
        };
        match winners.get(&index) {
            Some(existing) if existing.domain != machine.domain => {
                // `sorted` is ascending by (created_at, name): the current machine is newer.
                events.push(MappingEvent::ConflictingDomains {
                    index,
                    older_machine: existing.name.clone(),
                    newer_machine: machine.name.clone(),
                });
                winners.insert(index, machine);
            }
            Some(_) => {}
            None => {
                winners.insert(index, machine);
            }
        }
    }
    let mut deleting_only = BTreeSet::new();
    let mut live = BTreeSet::new();
    for machine in machines {
        if let Some(index) = parse_index(&machine.name) {
            if machine.deleting {
                deleting_only.insert(index);
            } else {
                live.insert(index);
            }
        }
    }
    deleting_only.retain(|i| !live.contains(i));
    let mapping = winners
        .into_iter()
        .map(|(i, m)| (i, m.domain.clone()))
        .collect();
    (
        MachineMapping {
            mapping,
            deleting_only,
        },
        events,
    )
}

/// The balanced base mapping (step 3): `max(replicas, machine indexes)` entries, index `i` →
/// `sorted[i mod n]`, where the de-duplicated domains are ordered "used by a machine" first, then
/// by their `Display` form. Independent of the order of `domains`.
///
/// # Errors
/// [`MappingError::ReplicasUnset`] when `replicas < 1`; [`MappingError::NoFailureDomains`] when
/// `domains` is empty.
///
/// ```
/// use std::collections::BTreeMap;
/// use provkit_machines::set::base_mapping;
/// let machines = BTreeMap::from([(0, "b")]);
/// let base = base_mapping(3, &["a", "b", "c"], &machines).unwrap();
/// assert_eq!(base.into_values().collect::<Vec<_>>(), vec!["b", "a", "c"]);
/// ```
pub fn base_mapping<D: Clone + PartialEq + fmt::Display>(
    replicas: i32,
    domains: &[D],
    machine_mapping: &BTreeMap<i32, D>,
) -> Result<BTreeMap<i32, D>, MappingError> {
    if replicas < 1 {
        return Err(MappingError::ReplicasUnset);
    }
    let mut unique: Vec<D> = Vec::new();
    for d in domains {
        if !unique.contains(d) {
            unique.push(d.clone());
        }
    }
    if unique.is_empty() {
        return Err(MappingError::NoFailureDomains);
    }
    let used: Vec<&D> = machine_mapping.values().collect();
    let mut keyed: Vec<(bool, String, D)> = unique
        .into_iter()
        .map(|d| (!used.contains(&&d), d.to_string(), d))
        .collect();
    keyed.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let size = usize::try_from(replicas)
        .unwrap_or(0)
        .max(machine_mapping.len());
    let mut out = BTreeMap::new();
    for (i, (_, _, d)) in keyed.iter().cycle().take(size).enumerate() {
        let Ok(index) = i32::try_from(i) else { break };
        out.insert(index, d.clone());
    }
    Ok(out)
}

/// Re-keys `reconciled` so its index set overlaps `preferred` (step 4a): indexes of
/// `reconciled` missing from `preferred` are renamed, in ascending order, to indexes of
/// `preferred` missing from `reconciled` (ascending), until either list runs out.
///
/// ```
/// use std::collections::{BTreeMap, BTreeSet};
/// use provkit_machines::set::reconcile_indexes;
/// let mut m = BTreeMap::from([(0, "a"), (1, "b"), (2, "c")]);
/// reconcile_indexes(&mut m, &BTreeSet::from([0, 2, 3]));
/// assert_eq!(m, BTreeMap::from([(0, "a"), (2, "c"), (3, "b")]));
/// ```
pub fn reconcile_indexes<D>(reconciled: &mut BTreeMap<i32, D>, preferred: &BTreeSet<i32>) {
    let extra: Vec<i32> = reconciled
        .keys()
        .filter(|k| !preferred.contains(k))
        .copied()
        .collect();
    let missing: Vec<i32> = preferred
        .iter()
        .filter(|k| !reconciled.contains_key(k))
        .copied()
        .collect();
    for (from, to) in extra.into_iter().zip(missing) {
        if let Some(d) = reconciled.remove(&from) {
            reconciled.insert(to, d);
        }
    }
}

/// Reconciles the base mapping with the machines' mapping (step 4): machines keep their domain
/// when it is configured and not over-represented; removed domains are replaced; indexes that
/// only hold deleting machines yield their domain; extra machine indexes are kept.
///
/// # Errors
/// [`MappingError::BaseSmallerThanMachines`] when `base` has fewer entries than `machines`.
///
/// ```
/// use std::collections::{BTreeMap, BTreeSet};
/// use provkit_machines::set::reconcile_mappings;
/// let base = BTreeMap::from([(0, "a"), (1, "b"), (2, "c")]);
/// let machines = BTreeMap::from([(0, "b"), (1, "a"), (2, "a")]);
/// let out = reconcile_mappings(&base, &machines, &BTreeSet::new()).unwrap();
/// assert_eq!(out.mapping, BTreeMap::from([(0, "b"), (1, "a"), (2, "c")]));
/// ```
pub fn reconcile_mappings<D: Clone + PartialEq>(
    base: &BTreeMap<i32, D>,
    machines: &BTreeMap<i32, D>,
    deleting_only: &BTreeSet<i32>,
) -> Result<MappingOutcome<D>, MappingError> {
    if base.len() < machines.len() {
        return Err(MappingError::BaseSmallerThanMachines {
            base: base.len(),
            machines: machines.len(),
        });
    }
    let mut events = Vec::new();
    let mut out = machines.clone();
    let mut candidates = base.clone();
    let machine_indexes: BTreeSet<i32> = machines.keys().copied().collect();
    reconcile_indexes(&mut candidates, &machine_indexes);
    let mut unmatched: BTreeSet<i32> = candidates.keys().copied().collect();

    // (c) match machines to candidates holding an equal domain.
    for (&idy, domain) in machines {
        if deleting_only.contains(&idy) {
            continue;
        }
        let found = candidates
            .iter()
            .find(|(_, c)| *c == domain)
            .map(|(&idx, _)| idx);
        if let Some(idx) = found {
            if idx != idy {
                swap(&mut candidates, idx, idy);
            }
            candidates.remove(&idy);
            unmatched.remove(&idy);
        }
    }

    // (d) the balance bound.
    let mut distinct: Vec<&D> = Vec::new();
    for d in base.values() {
        if !distinct.contains(&d) {
            distinct.push(d);
        }
    }
    let max_per_domain = base.len().div_ceil(distinct.len().max(1));

    // (e) settle the remaining indexes.
    for idx in unmatched {
        let candidate = candidates.remove(&idx);
        match (out.get(&idx).cloned(), candidate) {
            (None, Some(c)) => {
                out.insert(idx, c);
            }
            (Some(current), Some(c)) if !base.values().any(|b| *b == current) => {
                events.push(MappingEvent::IgnoringUnknownDomain {
                    index: idx,
                    domain: current,
                });
                out.insert(idx, c);
            }
            (Some(current), Some(c))
                if out.values().filter(|d| **d == current).count() > max_per_domain =>
            {
                events.push(MappingEvent::DomainChanged {
                    index: idx,
                    old: current,
                    new: c.clone(),
                });
                out.insert(idx, c);
            }
            _ => {}
        }
    }
    Ok(MappingOutcome {
        mapping: out,
        events,
    })
}

fn swap<D>(m: &mut BTreeMap<i32, D>, a: i32, b: i32) {
    let va = m.remove(&a);
    let vb = m.remove(&b);
    if let Some(v) = va {
        m.insert(b, v);
    }
    if let Some(v) = vb {
        m.insert(a, v);
    }
}

/// The full index → failure-domain mapping of §A.3.3: machine mapping, base mapping, reconcile.
/// Deterministic: the result does not depend on the order of `machines` or `domains`.
///
/// With no failure domains configured the mapping is empty (every index uses the template
/// unchanged) and a [`MappingEvent::NoFailureDomains`] event is returned.
///
/// # Errors
/// [`MappingError::ReplicasUnset`] when failure domains are configured and `replicas < 1`.
///
/// ```
/// use provkit_machines::set::{map_indexes_to_failure_domains, MachineDomain};
/// let machines = [
///     MachineDomain::new("machine-0", "b"),
///     MachineDomain::new("machine-1", "c"),
///     MachineDomain::new("machine-2", "a"),
/// ];
/// let out = map_indexes_to_failure_domains(&machines, 3, &["a", "b", "c"]).unwrap();
/// assert_eq!(out.mapping.into_values().collect::<Vec<_>>(), vec!["b", "c", "a"]);
/// ```
pub fn map_indexes_to_failure_domains<D: Clone + PartialEq + fmt::Display>(
    machines: &[MachineDomain<D>],
    replicas: i32,
    domains: &[D],
) -> Result<MappingOutcome<D>, MappingError> {
    if domains.is_empty() {
        return Ok(MappingOutcome {
            mapping: BTreeMap::new(),
            events: vec![MappingEvent::NoFailureDomains],
        });
    }
    let (mm, mut events) = machine_mapping(machines);
    let base = base_mapping(replicas, domains, &mm.mapping)?;
    let mut outcome = reconcile_mappings(&base, &mm.mapping, &mm.deleting_only)?;
    events.append(&mut outcome.events);
    outcome.events = events;
    Ok(outcome)
}

/// [`map_indexes_to_failure_domains`] after completing every configured domain with the
/// template's domain: `complete(domain, template)` returns `domain` with the fields it leaves
/// empty taken from `template` (e.g. a domain naming only a subnet gets the template's zone).
/// Machines' domains are read from their full provider specs and are not completed.
///
/// # Errors
/// As [`map_indexes_to_failure_domains`].
///
/// ```
/// use provkit_machines::set::{map_indexes_to_failure_domains_with_template, MachineDomain};
/// // Domains as "zone/subnet"; an empty part is filled from the template.
/// let complete = |d: &String, t: &String| {
///     let (dz, ds) = d.split_once('/').unwrap_or((d, ""));
///     let (tz, ts) = t.split_once('/').unwrap_or((t, ""));
///     format!("{}/{}", if dz.is_empty() { tz } else { dz }, if ds.is_empty() { ts } else { ds })
/// };
/// let machines = [MachineDomain::new("machine-0", "a/subnet-a".to_string())];
/// let domains = ["/subnet-a".to_string()];
/// let out = map_indexes_to_failure_domains_with_template(
///     &machines, 1, &domains, &"a/".to_string(), complete,
/// ).unwrap();
/// assert_eq!(out.mapping[&0], "a/subnet-a");
/// ```
pub fn map_indexes_to_failure_domains_with_template<D, F>(
    machines: &[MachineDomain<D>],
    replicas: i32,
    domains: &[D],
    template: &D,
    complete: F,
) -> Result<MappingOutcome<D>, MappingError>
where
    D: Clone + PartialEq + fmt::Display,
    F: Fn(&D, &D) -> D,
{
    let completed: Vec<D> = domains.iter().map(|d| complete(d, template)).collect();
    map_indexes_to_failure_domains(machines, replicas, &completed)
}

/// The index of a machine: parsed from its name when possible, otherwise the index whose mapped
/// domain equals the machine's domain.
///
/// When several indexes share the domain (e.g. 5 replicas over 3 zones) the choice is
/// deterministic — the lowest such index not in `occupied` (indexes that already hold a
/// machine), else the lowest such index. (Go picks one at random.)
///
/// # Errors
/// [`MappingError::IndexUndeterminable`] when the name has no index and no mapped domain matches.
///
/// ```
/// use std::collections::{BTreeMap, BTreeSet};
/// use provkit_machines::set::index_for_machine;
/// let mapping = BTreeMap::from([(0, "a"), (1, "b"), (2, "c"), (3, "a"), (4, "b")]);
/// assert_eq!(index_for_machine("master-2", &"a", &mapping, &BTreeSet::new()), Ok(2));
/// assert_eq!(index_for_machine("master-x", &"a", &mapping, &BTreeSet::from([0])), Ok(3));
/// assert_eq!(index_for_machine("master-x", &"b", &mapping, &BTreeSet::from([1, 4])), Ok(1));
/// assert!(index_for_machine("master-x", &"z", &mapping, &BTreeSet::new()).is_err());
/// ```
pub fn index_for_machine<D: PartialEq>(
    name: &str,
    domain: &D,
    mapping: &BTreeMap<i32, D>,
    occupied: &BTreeSet<i32>,
) -> Result<i32, MappingError> {
    if let Some(index) = parse_index(name) {
        return Ok(index);
    }
    let matching: Vec<i32> = mapping
        .iter()
        .filter(|(_, d)| *d == domain)
        .map(|(&i, _)| i)
        .collect();
    matching
        .iter()
        .find(|i| !occupied.contains(i))
        .or_else(|| matching.first())
        .copied()
        .ok_or_else(|| MappingError::IndexUndeterminable {
            machine: name.to_owned(),
        })
}
