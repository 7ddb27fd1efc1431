//! [`ObjectRef`].

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use super::GroupVersionResource;

/// Identifies any cluster object without a typed client: its [`GroupVersionResource`] plus the
/// full metadata as last observed (name, namespace, labels, owner references, creation and
/// deletion timestamps).
///
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
/// use k8s_openapi::jiff::Timestamp;
/// use provkit_core::k8s::{GroupVersionResource, ObjectRef};
///
/// let meta = ObjectMeta {
///     name: Some("m-0".into()),
///     namespace: Some("openshift-machine-api".into()),
///     creation_timestamp: Some(Time(Timestamp::from_second(1_700_000_000).unwrap())),
///     deletion_timestamp: Some(Time(Timestamp::from_second(1_700_000_600).unwrap())),
///     ..ObjectMeta::default()
/// };
/// let r = ObjectRef::new(GroupVersionResource::new("machine.openshift.io", "v1beta1", "machines"), meta);
/// assert_eq!(r.name(), "m-0");
/// assert_eq!(r.namespace(), Some("openshift-machine-api"));
/// assert!(r.is_deleting());
/// assert_eq!(r.created_at().unwrap().timestamp(), 1_700_000_000);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectRef {
    /// What kind of object this is.
    pub gvr: GroupVersionResource,
    /// The object's metadata as last observed.
    pub meta: ObjectMeta,
}

impl ObjectRef {
    /// Builds a reference from a GVR and metadata.
    ///
    /// ```
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    /// use provkit_core::k8s::{GroupVersionResource, ObjectRef};
    /// let r = ObjectRef::new(GroupVersionResource::new("", "v1", "nodes"), ObjectMeta::default());
    /// assert_eq!(r.name(), "");
    /// ```
    #[must_use]
    pub fn new(gvr: GroupVersionResource, meta: ObjectMeta) -> Self {
        Self { gvr, meta }
    }

    /// A reference holding only a name (and optionally a namespace), e.g. a Node reference.
    ///
    /// ```
    /// use provkit_core::k8s::{GroupVersionResource, ObjectRef};
    /// let node = ObjectRef::named(GroupVersionResource::new("", "v1", "nodes"), "node-0", None);
    /// assert_eq!(node.name(), "node-0");
    /// assert_eq!(node.namespace(), None);
    /// ```
    #[must_use]
    pub fn named(
        gvr: GroupVersionResource,
        name: impl Into<String>,
        namespace: Option<String>,
    ) -> Self {
        Self {
            gvr,
            meta: ObjectMeta {
                name: Some(name.into()),
                namespace,
                ..ObjectMeta::default()
            },
        }
    }

    /// Sets the creation timestamp from a chrono value.
    ///
    /// ```
    /// use chrono::{TimeZone, Utc};
    /// use provkit_core::k8s::ObjectRef;
    /// let t = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
    /// assert_eq!(ObjectRef::default().with_creation_timestamp(t).created_at(), Some(t));
    /// ```
    #[must_use]
    pub fn with_creation_timestamp(mut self, at: DateTime<Utc>) -> Self {
        self.meta.creation_timestamp = chrono_to_time(at);
        self
    }

    /// Sets the deletion timestamp from a chrono value (marks the object as deleting).
    ///
    /// ```
    /// use chrono::{TimeZone, Utc};
    /// use provkit_core::k8s::ObjectRef;
    /// let t = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
    /// let r = ObjectRef::default().with_deletion_timestamp(t);
    /// assert!(r.is_deleting());
    /// assert_eq!(r.deleted_at(), Some(t));
    /// ```
    #[must_use]
    pub fn with_deletion_timestamp(mut self, at: DateTime<Utc>) -> Self {
        self.meta.deletion_timestamp = chrono_to_time(at);
        self
    }

    /// The object's name, or `""` when the metadata carries none.
    ///
    /// ```
    /// use provkit_core::k8s::{GroupVersionResource, ObjectRef};
    /// let r = ObjectRef::named(GroupVersionResource::default(), "x", None);
    /// assert_eq!(r.name(), "x");
    /// ```
    #[must_use]
    pub fn name(&self) -> &str {
        self.meta.name.as_deref().unwrap_or_default()
    }

    /// The object's namespace, if any.
    ///
    /// ```
    /// use provkit_core::k8s::{GroupVersionResource, ObjectRef};
    /// let r = ObjectRef::named(GroupVersionResource::default(), "x", Some("ns".into()));
    /// assert_eq!(r.namespace(), Some("ns"));
    /// ```
    #[must_use]
    pub fn namespace(&self) -> Option<&str> {
        self.meta.namespace.as_deref()
    }

    /// True when the object carries a deletion timestamp (deletion requested, finalizers pending).
    ///
    /// ```
    /// use provkit_core::k8s::{GroupVersionResource, ObjectRef};
    /// let r = ObjectRef::named(GroupVersionResource::default(), "x", None);
    /// assert!(!r.is_deleting());
    /// ```
    #[must_use]
    pub fn is_deleting(&self) -> bool {
        self.meta.deletion_timestamp.is_some()
    }

    /// The creation timestamp as a chrono value, if set.
    ///
    /// ```
    /// use provkit_core::k8s::{GroupVersionResource, ObjectRef};
    /// assert!(ObjectRef::default().created_at().is_none());
    /// ```
    #[must_use]
    pub fn created_at(&self) -> Option<DateTime<Utc>> {
        self.meta
            .creation_timestamp
            .as_ref()
            .and_then(time_to_chrono)
    }

    /// The deletion timestamp as a chrono value, if set.
    ///
    /// ```
    /// use provkit_core::k8s::{GroupVersionResource, ObjectRef};
    /// assert!(ObjectRef::default().deleted_at().is_none());
    /// ```
    #[must_use]
    pub fn deleted_at(&self) -> Option<DateTime<Utc>> {
        self.meta
            .deletion_timestamp
            .as_ref()
            .and_then(time_to_chrono)
    }
}

/// chrono → jiff; `None` for values jiff cannot represent (e.g. leap-second nanos).
fn chrono_to_time(at: DateTime<Utc>) -> Option<Time> {
    let nanos = i32::try_from(at.timestamp_subsec_nanos()).ok()?;
    k8s_openapi::jiff::Timestamp::new(at.timestamp(), nanos)
        .ok()
        .map(Time)
}

/// jiff → chrono at the k8s-openapi boundary; jiff's sub-second part is signed, chrono's is not.
fn time_to_chrono(t: &Time) -> Option<DateTime<Utc>> {
    let mut secs = t.0.as_second();
    let mut nanos = i64::from(t.0.subsec_nanosecond());
    if nanos < 0 {
        secs -= 1;
        nanos += 1_000_000_000;
    }
    DateTime::from_timestamp(secs, u32::try_from(nanos).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    #[test]
    fn converts_pre_epoch_fractional_times() {
        let ts = Timestamp::new(-1, -500_000_000).unwrap();
        let r = ObjectRef::new(
            GroupVersionResource::default(),
            ObjectMeta {
                creation_timestamp: Some(Time(ts)),
                ..ObjectMeta::default()
            },
        );
        let got = r.created_at().unwrap();
        assert_eq!(got.timestamp(), -2);
        assert_eq!(got.timestamp_subsec_nanos(), 500_000_000);
    }

    #[test]
    fn whole_second_round_trip() {
        let ts = Timestamp::from_second(1_750_000_000).unwrap();
        let r = ObjectRef::new(
            GroupVersionResource::default(),
            ObjectMeta {
                deletion_timestamp: Some(Time(ts)),
                ..ObjectMeta::default()
            },
        );
        assert_eq!(r.deleted_at().unwrap().timestamp(), 1_750_000_000);
        assert!(r.is_deleting());
    }
}
