//! Replica index parsing and machine naming.

/// The vowel-free alphabet Kubernetes uses for random name suffixes
/// (`bcdfghjklmnpqrstvwxz2456789`).
pub const RANDOM_SUFFIX_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

/// The index encoded in a machine name: the suffix after the **last** `-`, if it parses as a
/// 32-bit integer.
///
/// ```
/// use provkit_machines::set::parse_index;
/// assert_eq!(parse_index("cluster-abc12-master-2"), Some(2));
/// assert_eq!(parse_index("cluster-abc12-master-a"), None);
/// assert_eq!(parse_index("master3"), None);
/// ```
#[must_use]
pub fn parse_index(name: &str) -> Option<i32> {
    let suffix = name.rsplit_once('-').map_or(name, |(_, s)| s);
    // Go's ParseInt accepts a sign; names never carry one in practice, but keep parity.
    suffix.parse::<i32>().ok()
}

/// How the name of a new machine starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MachineNamePrefix {
    /// A configured prefix: `<prefix>-<random>-<index>`.
    Prefix(String),
    /// `<cluster id>-<role>-<random>-<index>` from the template's labels.
    ClusterRole {
        /// The cluster ID label value.
        cluster_id: String,
        /// The machine role label value (e.g. `master`).
        role: String,
    },
}

/// The name of a new machine. It always ends in `-<index>` so that [`parse_index`] reads the
/// index back.
///
/// `random` is the five-character random component (from [`RANDOM_SUFFIX_ALPHABET`]); it is a
/// parameter so the function stays pure.
///
/// ```
/// use provkit_machines::set::{machine_name, parse_index, MachineNamePrefix};
/// let p = MachineNamePrefix::ClusterRole { cluster_id: "c-x7k2p".into(), role: "master".into() };
/// let name = machine_name(&p, "bcd42", 4);
/// assert_eq!(name, "c-x7k2p-master-bcd42-4");
/// assert_eq!(parse_index(&name), Some(4));
/// assert_eq!(machine_name(&MachineNamePrefix::Prefix("cp".into()), "zz9zz", 0), "cp-zz9zz-0");
/// ```
#[must_use]
pub fn machine_name(prefix: &MachineNamePrefix, random: &str, index: i32) -> String {
    match prefix {
        MachineNamePrefix::Prefix(p) => format!("{p}-{random}-{index}"),
        MachineNamePrefix::ClusterRole { cluster_id, role } => {
            format!("{cluster_id}-{role}-{random}-{index}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_parsing_table() {
        let cases: &[(&str, Option<i32>)] = &[
            ("machine-0", Some(0)),
            ("machine-13", Some(13)),
            ("machine-replacement-3", Some(3)),
            ("cluster-abc12-master-2", Some(2)),
            ("machine-a", None),
            ("machine-master3", None),
            ("machine-", None),
            ("7", Some(7)),
            ("machine-2147483648", None),
            ("machine-2147483647", Some(i32::MAX)),
        ];
        for (name, want) in cases {
            assert_eq!(parse_index(name), *want, "{name}");
        }
    }
}
