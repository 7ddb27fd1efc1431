//! Grouping machine infos by replica index.

use std::collections::BTreeMap;

use provkit_core::k8s::MachineInfo;

use super::provider::CreatableIndexes;

/// All machine infos of one replica index (possibly none: a missing replica).
#[derive(Clone, Debug, PartialEq)]
pub struct IndexBucket {
    /// The replica index.
    pub index: i32,
    /// The machines at this index, in input order.
    pub infos: Vec<MachineInfo>,
}

impl IndexBucket {
    /// A bucket.
    ///
    /// ```
    /// use provkit_machines::set::IndexBucket;
    /// assert!(IndexBucket::new(2, vec![]).infos.is_empty());
    /// ```
    #[must_use]
    pub fn new(index: i32, infos: Vec<MachineInfo>) -> Self {
        Self { index, infos }
    }
}

/// Buckets `infos` by index (ascending), then adds empty buckets until there are `replicas`
/// buckets. Buckets are never removed, so extra indexes survive.
///
/// Empty buckets are only added for indexes the provider can create: with
/// [`CreatableIndexes::Only`], the lowest creatable indexes without machines are used (and no
/// others, so fewer than `replicas` buckets may result); with [`CreatableIndexes::Any`], the
/// lowest non-negative indexes without machines (upstream behaviour). This fixes the upstream
/// case "machines at 3 and 4, replicas 3 → asks for index 0 the mapping does not contain".
///
/// ```
/// use std::collections::BTreeSet;
/// use provkit_core::k8s::{MachineInfo, ObjectRef};
/// use provkit_machines::set::{group_by_index, CreatableIndexes};
/// let infos = vec![MachineInfo::new(ObjectRef::default(), 3), MachineInfo::new(ObjectRef::default(), 4)];
/// let any = group_by_index(&infos, 3, &CreatableIndexes::Any);
/// assert_eq!(any.iter().map(|b| b.index).collect::<Vec<_>>(), vec![0, 3, 4]);
/// let only = group_by_index(&infos, 3, &CreatableIndexes::Only(BTreeSet::from([3, 4, 5])));
/// assert_eq!(only.iter().map(|b| b.index).collect::<Vec<_>>(), vec![3, 4, 5]);
/// ```
#[must_use]
pub fn group_by_index(
    infos: &[MachineInfo],
    replicas: i32,
    creatable: &CreatableIndexes,
) -> Vec<IndexBucket> {
    let mut by_index: BTreeMap<i32, Vec<MachineInfo>> = BTreeMap::new();
    for info in infos {
        by_index.entry(info.index).or_default().push(info.clone());
    }
    let want = usize::try_from(replicas).unwrap_or(0);
    match creatable {
        CreatableIndexes::Only(set) => {
            let free: Vec<i32> = set
                .iter()
                .filter(|i| !by_index.contains_key(i))
                .copied()
                .collect();
            for i in free {
                if by_index.len() >= want {
                    break;
                }
                by_index.insert(i, Vec::new());
            }
        }
        CreatableIndexes::Any => {
            let mut next = 0;
            while by_index.len() < want && next < i32::MAX {
                by_index.entry(next).or_default();
                next += 1;
            }
        }
    }
    by_index
        .into_iter()
        .map(|(index, infos)| IndexBucket { index, infos })
        .collect()
}
