//! [`MachineInfoBuilder`].

use chrono::{DateTime, TimeZone, Utc};
use provkit_machines::{GroupVersionResource, MachineInfo, ObjectRef, UpdateState};

/// The OpenShift Machine GVR (`machine.openshift.io/v1beta1, machines`).
///
/// ```
/// assert_eq!(provkit_testing::machines::machine_gvr().resource, "machines");
/// ```
#[must_use]
pub fn machine_gvr() -> GroupVersionResource {
    GroupVersionResource::new("machine.openshift.io", "v1beta1", "machines")
}

/// The core Node GVR (`v1, nodes`).
///
/// ```
/// assert_eq!(provkit_testing::machines::node_gvr().api_version(), "v1");
/// ```
#[must_use]
pub fn node_gvr() -> GroupVersionResource {
    GroupVersionResource::new("", "v1", "nodes")
}

/// Builds [`MachineInfo`]s. Defaults follow upstream: ready and up to date; the machine is
/// named `machine-<index>` unless set; no node unless set.
///
/// ```
/// use provkit_testing::machines::MachineInfoBuilder;
/// let info = MachineInfoBuilder::outdated(1, "machine-1").build();
/// assert!(info.ready && info.needs_update());
/// assert_eq!(info.node.as_ref().unwrap().name(), "node-1");
/// let p = MachineInfoBuilder::pending(1, "machine-replacement-1").build();
/// assert!(!p.ready && !p.needs_update() && p.node.is_none());
/// ```
#[derive(Clone, Debug)]
pub struct MachineInfoBuilder {
    index: i32,
    machine_name: Option<String>,
    namespace: Option<String>,
    node_name: Option<String>,
    ready: bool,
    update: UpdateState,
    created_at: Option<DateTime<Utc>>,
    deleted_at: Option<DateTime<Utc>>,
    error_message: Option<String>,
    gvr: GroupVersionResource,
}

impl Default for MachineInfoBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// A fixed reference time for builders (2026-01-01T00:00:00Z).
fn epoch() -> DateTime<Utc> {
    Utc.timestamp_opt(1_767_225_600, 0)
        .single()
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

fn node_for(name: &str) -> String {
    match name.strip_prefix("machine-") {
        Some(rest) => format!("node-{rest}"),
        None => format!("{name}-node"),
    }
}

impl MachineInfoBuilder {
    /// Upstream defaults: ready, up to date, index 0.
    ///
    /// ```
    /// let i = provkit_testing::machines::MachineInfoBuilder::new().build();
    /// assert!(i.ready && i.index == 0 && i.name() == "machine-0");
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self {
            index: 0,
            machine_name: None,
            namespace: Some("openshift-machine-api".into()),
            node_name: None,
            ready: true,
            update: UpdateState::UpToDate,
            created_at: Some(epoch()),
            deleted_at: None,
            error_message: None,
            gvr: machine_gvr(),
        }
    }

    /// Archetype *updated*: ready, up to date, with a node (`machine-N` → `node-N`).
    ///
    /// ```
    /// let i = provkit_testing::machines::MachineInfoBuilder::updated(2, "machine-2").build();
    /// assert!(i.ready && !i.needs_update() && i.node.is_some());
    /// ```
    #[must_use]
    pub fn updated(index: i32, name: &str) -> Self {
        Self::new()
            .index(index)
            .machine_name(name)
            .node_name(node_for(name))
    }

    /// Archetype *pending*: not ready, up to date, no node.
    ///
    /// ```
    /// assert!(!provkit_testing::machines::MachineInfoBuilder::pending(0, "m-0").build().ready);
    /// ```
    #[must_use]
    pub fn pending(index: i32, name: &str) -> Self {
        Self::new().index(index).machine_name(name).ready(false)
    }

    /// Archetype *outdated* (ready, needs update, with a node).
    ///
    /// ```
    /// assert!(provkit_testing::machines::MachineInfoBuilder::outdated(0, "m-0").build().needs_update());
    /// ```
    #[must_use]
    pub fn outdated(index: i32, name: &str) -> Self {
        Self::updated(index, name).needs_update(["providerSpec: desired != actual"])
    }

    /// Archetype *outdated not ready*: not ready, needs update, no node.
    ///
    /// ```
    /// let i = provkit_testing::machines::MachineInfoBuilder::outdated_not_ready(0, "m-0").build();
    /// assert!(!i.ready && i.needs_update());
    /// ```
    #[must_use]
    pub fn outdated_not_ready(index: i32, name: &str) -> Self {
        Self::pending(index, name).needs_update(["providerSpec: desired != actual"])
    }

    /// Archetype *deleting*: an updated machine with a deletion timestamp.
    ///
    /// ```
    /// assert!(provkit_testing::machines::MachineInfoBuilder::deleting(0, "m-0").build().is_deleting());
    /// ```
    #[must_use]
    pub fn deleting(index: i32, name: &str) -> Self {
        Self::updated(index, name).deleted()
    }

    /// Sets the index.
    ///
    /// ```
    /// assert_eq!(provkit_testing::machines::MachineInfoBuilder::new().index(4).build().index, 4);
    /// ```
    #[must_use]
    pub fn index(mut self, index: i32) -> Self {
        self.index = index;
        self
    }

    /// Sets the machine name.
    ///
    /// ```
    /// let i = provkit_testing::machines::MachineInfoBuilder::new().machine_name("x-1").build();
    /// assert_eq!(i.name(), "x-1");
    /// ```
    #[must_use]
    pub fn machine_name(mut self, name: impl Into<String>) -> Self {
        self.machine_name = Some(name.into());
        self
    }

    /// Sets the namespace (`None` for none).
    ///
    /// ```
    /// let i = provkit_testing::machines::MachineInfoBuilder::new().namespace(None).build();
    /// assert_eq!(i.machine.namespace(), None);
    /// ```
    #[must_use]
    pub fn namespace(mut self, namespace: Option<String>) -> Self {
        self.namespace = namespace;
        self
    }

    /// Sets the node name (adds a node reference).
    ///
    /// ```
    /// let i = provkit_testing::machines::MachineInfoBuilder::new().node_name("n").build();
    /// assert_eq!(i.node.unwrap().name(), "n");
    /// ```
    #[must_use]
    pub fn node_name(mut self, name: impl Into<String>) -> Self {
        self.node_name = Some(name.into());
        self
    }

    /// Sets readiness.
    ///
    /// ```
    /// assert!(!provkit_testing::machines::MachineInfoBuilder::new().ready(false).build().ready);
    /// ```
    #[must_use]
    pub fn ready(mut self, ready: bool) -> Self {
        self.ready = ready;
        self
    }

    /// Marks the machine outdated with the given diff.
    ///
    /// ```
    /// let i = provkit_testing::machines::MachineInfoBuilder::new().needs_update(["a"]).build();
    /// assert_eq!(i.diff(), ["a"]);
    /// ```
    #[must_use]
    pub fn needs_update<I, S>(mut self, diff: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.update = UpdateState::needs_update(diff);
        self
    }

    /// Sets the creation time.
    ///
    /// ```
    /// use chrono::{TimeZone, Utc};
    /// let t = Utc.timestamp_opt(9, 0).unwrap();
    /// let i = provkit_testing::machines::MachineInfoBuilder::new().created_at(t).build();
    /// assert_eq!(i.machine.created_at(), Some(t));
    /// ```
    #[must_use]
    pub fn created_at(mut self, at: DateTime<Utc>) -> Self {
        self.created_at = Some(at);
        self
    }

    /// Adds a deletion timestamp.
    ///
    /// ```
    /// assert!(provkit_testing::machines::MachineInfoBuilder::new().deleted().build().is_deleting());
    /// ```
    #[must_use]
    pub fn deleted(mut self) -> Self {
        self.deleted_at = Some(epoch());
        self
    }

    /// Sets the error message.
    ///
    /// ```
    /// let i = provkit_testing::machines::MachineInfoBuilder::new().error_message("e").build();
    /// assert_eq!(i.error_message.as_deref(), Some("e"));
    /// ```
    #[must_use]
    pub fn error_message(mut self, message: impl Into<String>) -> Self {
        self.error_message = Some(message.into());
        self
    }

    /// Sets the machine GVR.
    ///
    /// ```
    /// use provkit_machines::GroupVersionResource;
    /// let g = GroupVersionResource::new("cluster.x-k8s.io", "v1beta2", "machines");
    /// let i = provkit_testing::machines::MachineInfoBuilder::new().gvr(g.clone()).build();
    /// assert_eq!(i.machine.gvr, g);
    /// ```
    #[must_use]
    pub fn gvr(mut self, gvr: GroupVersionResource) -> Self {
        self.gvr = gvr;
        self
    }

    /// Builds the info.
    ///
    /// ```
    /// let _ = provkit_testing::machines::MachineInfoBuilder::new().build();
    /// ```
    #[must_use]
    pub fn build(&self) -> MachineInfo {
        let name = self
            .machine_name
            .clone()
            .unwrap_or_else(|| format!("machine-{}", self.index));
        let mut machine = ObjectRef::named(self.gvr.clone(), name, self.namespace.clone());
        if let Some(t) = self.created_at {
            machine = machine.with_creation_timestamp(t);
        }
        if let Some(t) = self.deleted_at {
            machine = machine.with_deletion_timestamp(t);
        }
        let mut info = MachineInfo::new(machine, self.index)
            .with_ready(self.ready)
            .with_update(self.update.clone());
        if let Some(n) = &self.node_name {
            info = info.with_node(ObjectRef::named(node_gvr(), n.clone(), None));
        }
        if let Some(e) = &self.error_message {
            info = info.with_error_message(e.clone());
        }
        info
    }
}
