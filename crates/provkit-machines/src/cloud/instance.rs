//! [`Instance`] and addresses.

/// Kubernetes node address types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AddressType {
    /// `Hostname`.
    Hostname,
    /// `ExternalIP`.
    ExternalIP,
    /// `InternalIP`.
    InternalIP,
    /// `ExternalDNS`.
    ExternalDNS,
    /// `InternalDNS`.
    InternalDNS,
}

/// One address of an instance.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeAddress {
    /// The address type.
    pub kind: AddressType,
    /// The address.
    pub address: String,
}

impl NodeAddress {
    /// An address.
    ///
    /// ```
    /// use provkit_machines::cloud::{AddressType, NodeAddress};
    /// assert_eq!(NodeAddress::new(AddressType::InternalIP, "10.0.0.1").address, "10.0.0.1");
    /// ```
    #[must_use]
    pub fn new(kind: AddressType, address: impl Into<String>) -> Self {
        Self {
            kind,
            address: address.into(),
        }
    }
}

/// Lifecycle status of a cloud instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceStatus {
    /// Running.
    Running,
    /// Being deleted.
    Deleting,
    /// Gone / terminated (providers must report such instances as not found).
    Deleted,
    /// Being created.
    Creating,
    /// Unknown.
    Unknown,
}

/// A cloud instance.
///
/// ```
/// use provkit_machines::cloud::{AddressType, Instance, InstanceStatus, NodeAddress};
/// let i = Instance::new("vm-1", "i-123", InstanceStatus::Running).with_addresses(vec![
///     NodeAddress::new(AddressType::InternalIP, "10.0.0.2"),
///     NodeAddress::new(AddressType::InternalIP, "10.0.0.1"),
///     NodeAddress::new(AddressType::InternalIP, "10.0.0.2"),
/// ]);
/// assert_eq!(i.addresses.len(), 2);
/// assert_eq!(i.addresses[0].address, "10.0.0.1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// Instance name.
    pub name: String,
    /// Provider-native id.
    pub id: String,
    /// The value the cloud controller manager writes to `node.spec.providerID`, if known.
    pub provider_id: Option<String>,
    /// Addresses, sorted and de-duplicated.
    pub addresses: Vec<NodeAddress>,
    /// Status.
    pub status: InstanceStatus,
}

impl Instance {
    /// An instance without addresses or provider ID.
    ///
    /// ```
    /// use provkit_machines::cloud::{Instance, InstanceStatus};
    /// assert!(Instance::new("n", "i", InstanceStatus::Creating).addresses.is_empty());
    /// ```
    #[must_use]
    pub fn new(name: impl Into<String>, id: impl Into<String>, status: InstanceStatus) -> Self {
        Self {
            name: name.into(),
            id: id.into(),
            provider_id: None,
            addresses: Vec::new(),
            status,
        }
    }

    /// Sets the addresses (sorted, de-duplicated).
    ///
    /// ```
    /// use provkit_machines::cloud::{Instance, InstanceStatus};
    /// assert!(Instance::new("n", "i", InstanceStatus::Running).with_addresses(vec![]).addresses.is_empty());
    /// ```
    #[must_use]
    pub fn with_addresses(mut self, mut addresses: Vec<NodeAddress>) -> Self {
        addresses.sort();
        addresses.dedup();
        self.addresses = addresses;
        self
    }

    /// Sets the provider ID.
    ///
    /// ```
    /// use provkit_machines::cloud::{Instance, InstanceStatus};
    /// let i = Instance::new("n", "i", InstanceStatus::Running).with_provider_id("fake:///i");
    /// assert_eq!(i.provider_id.as_deref(), Some("fake:///i"));
    /// ```
    #[must_use]
    pub fn with_provider_id(mut self, provider_id: impl Into<String>) -> Self {
        self.provider_id = Some(provider_id.into());
        self
    }
}
