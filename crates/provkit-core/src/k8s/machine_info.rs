//! [`MachineInfo`] and [`UpdateState`].

use super::ObjectRef;

/// Whether a machine matches the desired configuration.
///
/// A diff exists only together with "needs update", so the upstream contract "diff is non-nil
/// only when NeedsUpdate" holds by construction.
///
/// ```
/// use provkit_core::k8s::UpdateState;
/// assert!(!UpdateState::UpToDate.is_needs_update());
/// let s = UpdateState::needs_update(["a: 1 != 2"]);
/// assert!(s.is_needs_update());
/// assert_eq!(s.diff(), ["a: 1 != 2"]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum UpdateState {
    /// The machine's provider spec matches the desired one.
    #[default]
    UpToDate,
    /// The machine must be replaced; the human-readable field differences
    /// (`"path: desired != actual"`) explain why.
    NeedsUpdate(Vec<String>),
}

impl UpdateState {
    /// `NeedsUpdate` with the given diff lines.
    ///
    /// ```
    /// use provkit_core::k8s::UpdateState;
    /// assert_eq!(UpdateState::needs_update(["x"]), UpdateState::NeedsUpdate(vec!["x".into()]));
    /// ```
    #[must_use]
    pub fn needs_update<I, S>(diff: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::NeedsUpdate(diff.into_iter().map(Into::into).collect())
    }

    /// True for [`UpdateState::NeedsUpdate`].
    ///
    /// ```
    /// use provkit_core::k8s::UpdateState;
    /// assert!(UpdateState::NeedsUpdate(vec![]).is_needs_update());
    /// ```
    #[must_use]
    pub fn is_needs_update(&self) -> bool {
        matches!(self, Self::NeedsUpdate(_))
    }

    /// The diff lines (empty when up to date).
    ///
    /// ```
    /// use provkit_core::k8s::UpdateState;
    /// assert!(UpdateState::UpToDate.diff().is_empty());
    /// ```
    #[must_use]
    pub fn diff(&self) -> &[String] {
        match self {
            Self::UpToDate => &[],
            Self::NeedsUpdate(d) => d,
        }
    }
}

/// One existing machine of a replicated set (never synthesised for a missing machine).
///
/// ```
/// use provkit_core::k8s::{GroupVersionResource, MachineInfo, ObjectRef};
/// let m = ObjectRef::named(GroupVersionResource::new("machine.openshift.io", "v1beta1", "machines"), "m-2", None);
/// let node = ObjectRef::named(GroupVersionResource::new("", "v1", "nodes"), "node-2", None);
/// let info = MachineInfo::new(m, 2).with_node(node).with_ready(true);
/// assert_eq!(info.index, 2);
/// assert_eq!(info.node.as_ref().map(|n| n.name()), Some("node-2"));
/// assert!(info.ready && !info.needs_update());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct MachineInfo {
    /// The Machine object (always present in production data).
    pub machine: ObjectRef,
    /// The Node backing the machine, when the machine reports one (metadata holds only the name).
    pub node: Option<ObjectRef>,
    /// Whether this replica counts as a working member of the set.
    pub ready: bool,
    /// Whether the machine needs replacing, and why.
    pub update: UpdateState,
    /// Replica slot. Need not start at 0 nor be contiguous.
    pub index: i32,
    /// The machine's error message (e.g. after entering `Failed`), if any.
    pub error_message: Option<String>,
}

impl MachineInfo {
    /// A not-ready, up-to-date machine without a node at `index`.
    ///
    /// ```
    /// use provkit_core::k8s::{MachineInfo, ObjectRef};
    /// let info = MachineInfo::new(ObjectRef::default(), 0);
    /// assert!(!info.ready && info.node.is_none() && info.error_message.is_none());
    /// ```
    #[must_use]
    pub fn new(machine: ObjectRef, index: i32) -> Self {
        Self {
            machine,
            node: None,
            ready: false,
            update: UpdateState::UpToDate,
            index,
            error_message: None,
        }
    }

    /// Sets the node reference.
    ///
    /// ```
    /// use provkit_core::k8s::{MachineInfo, ObjectRef};
    /// let info = MachineInfo::new(ObjectRef::default(), 0).with_node(ObjectRef::default());
    /// assert!(info.node.is_some());
    /// ```
    #[must_use]
    pub fn with_node(mut self, node: ObjectRef) -> Self {
        self.node = Some(node);
        self
    }

    /// Sets readiness.
    ///
    /// ```
    /// use provkit_core::k8s::{MachineInfo, ObjectRef};
    /// assert!(MachineInfo::new(ObjectRef::default(), 0).with_ready(true).ready);
    /// ```
    #[must_use]
    pub fn with_ready(mut self, ready: bool) -> Self {
        self.ready = ready;
        self
    }

    /// Sets the update state.
    ///
    /// ```
    /// use provkit_core::k8s::{MachineInfo, ObjectRef, UpdateState};
    /// let i = MachineInfo::new(ObjectRef::default(), 0).with_update(UpdateState::needs_update(["d"]));
    /// assert!(i.needs_update());
    /// ```
    #[must_use]
    pub fn with_update(mut self, update: UpdateState) -> Self {
        self.update = update;
        self
    }

    /// Sets the error message.
    ///
    /// ```
    /// use provkit_core::k8s::{MachineInfo, ObjectRef};
    /// let i = MachineInfo::new(ObjectRef::default(), 0).with_error_message("boom");
    /// assert_eq!(i.error_message.as_deref(), Some("boom"));
    /// ```
    #[must_use]
    pub fn with_error_message(mut self, message: impl Into<String>) -> Self {
        self.error_message = Some(message.into());
        self
    }

    /// True when the machine must be replaced.
    ///
    /// ```
    /// use provkit_core::k8s::{MachineInfo, ObjectRef};
    /// assert!(!MachineInfo::new(ObjectRef::default(), 0).needs_update());
    /// ```
    #[must_use]
    pub fn needs_update(&self) -> bool {
        self.update.is_needs_update()
    }

    /// The diff lines (empty when up to date).
    ///
    /// ```
    /// use provkit_core::k8s::{MachineInfo, ObjectRef};
    /// assert!(MachineInfo::new(ObjectRef::default(), 0).diff().is_empty());
    /// ```
    #[must_use]
    pub fn diff(&self) -> &[String] {
        self.update.diff()
    }

    /// True when the machine carries a deletion timestamp.
    ///
    /// ```
    /// use provkit_core::k8s::{MachineInfo, ObjectRef};
    /// assert!(!MachineInfo::new(ObjectRef::default(), 0).is_deleting());
    /// ```
    #[must_use]
    pub fn is_deleting(&self) -> bool {
        self.machine.is_deleting()
    }

    /// The machine's name.
    ///
    /// ```
    /// use provkit_core::k8s::{GroupVersionResource, MachineInfo, ObjectRef};
    /// let i = MachineInfo::new(ObjectRef::named(GroupVersionResource::default(), "m-1", None), 1);
    /// assert_eq!(i.name(), "m-1");
    /// ```
    #[must_use]
    pub fn name(&self) -> &str {
        self.machine.name()
    }
}
