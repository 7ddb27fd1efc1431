//! Honouring a management-state annotation: objects an operator must leave alone.
//!
//! The Go OSAC operator skips objects annotated `osac.openshift.io/management-state: unmanaged`
//! unless they are being deleted, and for some kinds (ComputeInstance, ClusterOrder) also
//! skips provisioning **and** deprovisioning when the value is `manual`
//! (osac-provisioning.md §6). [`ManagementStatePolicy::osac`] is exactly the first rule;
//! [`ManagementStatePolicy::with_manual`] adds the second.
//!
//! [`ManagementStatePolicy::default`] is neutral: it reads no annotation and manages every object
//! until [`ManagementStatePolicy::with_annotation`] names one (the `unmanaged` value is then
//! honoured). OSAC operators migrate with one line: `.with_management(ManagementStatePolicy::osac())`.

use kube::Resource;

/// The annotation the Go operator reads.
pub const MANAGEMENT_STATE_ANNOTATION: &str = "osac.openshift.io/management-state";

/// What to do with an object, according to its management state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Management {
    /// Reconcile normally.
    Managed,
    /// Leave it alone: no status write, no job, no finalizer change.
    Skip,
}

/// A decision hook on the object's annotations. Implement it for custom rules; the default
/// is [`ManagementStatePolicy`].
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait ManagementHook: Send + Sync + std::fmt::Debug {
    /// Decide for `obj`; `deleting` is whether `metadata.deletionTimestamp` is set.
    fn management(
        &self,
        annotations: &std::collections::BTreeMap<String, String>,
        deleting: bool,
    ) -> Management;
}

/// The Go rule set, configurable: an annotation key, the values that mean "unmanaged"
/// (skipped unless deleting) and the values that mean "manual" (skipped always).
///
/// ```
/// use provkit_kube::management::{Management, ManagementHook, ManagementStatePolicy};
/// use std::collections::BTreeMap;
///
/// let p = ManagementStatePolicy::osac();
/// let ann = BTreeMap::from([("osac.openshift.io/management-state".to_owned(), "unmanaged".to_owned())]);
/// assert_eq!(p.management(&ann, false), Management::Skip);
/// assert_eq!(p.management(&ann, true), Management::Managed); // deletion still cleans up
///
/// let manual = BTreeMap::from([("osac.openshift.io/management-state".to_owned(), "manual".to_owned())]);
/// assert_eq!(p.management(&manual, false), Management::Managed);
/// assert_eq!(p.clone().with_manual().management(&manual, true), Management::Skip);
///
/// // Neutral default: no annotation is read until one is named.
/// assert_eq!(ManagementStatePolicy::default().management(&ann, false), Management::Managed);
/// let mine = ManagementStatePolicy::default().with_annotation("example.com/management-state");
/// let ann = BTreeMap::from([("example.com/management-state".to_owned(), "unmanaged".to_owned())]);
/// assert_eq!(mine.management(&ann, false), Management::Skip);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManagementStatePolicy {
    /// Annotation key (default empty: none is read; [`MANAGEMENT_STATE_ANNOTATION`] with
    /// [`ManagementStatePolicy::osac`]).
    pub annotation: String,
    /// Values skipped unless the object is being deleted (default `["unmanaged"]`).
    pub unmanaged_values: Vec<String>,
    /// Values skipped even while deleting (default empty; `["manual"]` with [`Self::with_manual`]).
    pub manual_values: Vec<String>,
}

impl Default for ManagementStatePolicy {
    /// Neutral: no annotation, so every object is managed; `unmanaged` is honoured once
    /// [`with_annotation`](Self::with_annotation) names a key.
    fn default() -> Self {
        Self {
            annotation: String::new(),
            unmanaged_values: vec!["unmanaged".to_owned()],
            manual_values: Vec::new(),
        }
    }
}

impl ManagementStatePolicy {
    /// The OSAC preset: the Go OSAC operator's annotation [`MANAGEMENT_STATE_ANNOTATION`], with
    /// `unmanaged` skipped unless deleting (add [`with_manual`](Self::with_manual) for the
    /// ComputeInstance / ClusterOrder rule).
    pub fn osac() -> Self {
        Self::default().with_annotation(MANAGEMENT_STATE_ANNOTATION)
    }

    /// Also skip objects marked `manual`, even while deleting (Go's ComputeInstance and
    /// ClusterOrder rule).
    #[must_use]
    pub fn with_manual(mut self) -> Self {
        if !self.manual_values.iter().any(|v| v == "manual") {
            self.manual_values.push("manual".to_owned());
        }
        self
    }

    /// Reads another annotation key.
    #[must_use]
    pub fn with_annotation(mut self, annotation: impl Into<String>) -> Self {
        self.annotation = annotation.into();
        self
    }

    /// A policy that manages everything.
    #[must_use]
    pub fn manage_everything() -> Self {
        Self {
            unmanaged_values: Vec::new(),
            manual_values: Vec::new(),
            ..Self::default()
        }
    }

    /// Decide for a typed object.
    pub fn for_object<K: Resource>(&self, obj: &K) -> Management {
        let meta = obj.meta();
        let empty = std::collections::BTreeMap::new();
        self.management(
            meta.annotations.as_ref().unwrap_or(&empty),
            meta.deletion_timestamp.is_some(),
        )
    }
}

impl ManagementHook for ManagementStatePolicy {
    fn management(
        &self,
        annotations: &std::collections::BTreeMap<String, String>,
        deleting: bool,
    ) -> Management {
        if self.annotation.is_empty() {
            return Management::Managed;
        }
        // The Go operator compares the value exactly (lower case).
        match annotations.get(&self.annotation) {
            Some(v) if self.manual_values.iter().any(|m| m == v) => Management::Skip,
            Some(v) if !deleting && self.unmanaged_values.iter().any(|m| m == v) => {
                Management::Skip
            }
            _ => Management::Managed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn table() {
        let go = ManagementStatePolicy::osac();
        let manual = ManagementStatePolicy::osac().with_manual();
        let neutral = ManagementStatePolicy::default().with_manual();
        let cases: &[(Option<&str>, bool, Management, Management)] = &[
            (None, false, Management::Managed, Management::Managed),
            (Some("unmanaged"), false, Management::Skip, Management::Skip),
            (
                Some("unmanaged"),
                true,
                Management::Managed,
                Management::Managed,
            ),
            (
                Some("Unmanaged"),
                false,
                Management::Managed,
                Management::Managed,
            ),
            (Some("manual"), false, Management::Managed, Management::Skip),
            (Some("manual"), true, Management::Managed, Management::Skip),
            (
                Some("managed"),
                false,
                Management::Managed,
                Management::Managed,
            ),
        ];
        for (value, deleting, want_go, want_manual) in cases {
            let ann: BTreeMap<String, String> = value
                .map(|v| (MANAGEMENT_STATE_ANNOTATION.to_owned(), v.to_owned()))
                .into_iter()
                .collect();
            assert_eq!(
                go.management(&ann, *deleting),
                *want_go,
                "{value:?} {deleting}"
            );
            assert_eq!(
                manual.management(&ann, *deleting),
                *want_manual,
                "{value:?} {deleting}"
            );
            assert_eq!(
                neutral.management(&ann, *deleting),
                Management::Managed,
                "neutral default ignores the OSAC annotation: {value:?} {deleting}"
            );
        }
        let ann = BTreeMap::from([(
            MANAGEMENT_STATE_ANNOTATION.to_owned(),
            "unmanaged".to_owned(),
        )]);
        assert_eq!(
            ManagementStatePolicy::manage_everything().management(&ann, false),
            Management::Managed
        );
        assert_eq!(
            go.clone().with_annotation("x/y").management(&ann, false),
            Management::Managed
        );
    }
}
