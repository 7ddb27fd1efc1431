//! The wrapper structs some Go controllers hash instead of the bare spec
//! (osac-provisioning.md §3.1): `{Spec, ImplementationStrategy}` (Subnet, SecurityGroup,
//! NATGateway, ExternalIP, ExternalIPPool) and ExternalIPAttachment's
//! `{Spec, ImplementationStrategy, TargetIP}`. The Go structs are anonymous with untagged fields,
//! so the JSON keys are the Go field names, in that order.

use serde::Serialize;

/// Go's `{Spec, ImplementationStrategy}` hash input.
///
/// ```
/// use provkit_core::{compute_desired_config_version, to_go_json, SpecWithStrategy};
///
/// #[derive(serde::Serialize)]
/// struct SubnetSpec { vpc: String, cidr: String }
/// let spec = SubnetSpec { vpc: "net-a".into(), cidr: "10.0.1.0/24".into() };
/// let wrapped = SpecWithStrategy::new(&spec, "ovn");
/// assert_eq!(
///     String::from_utf8(to_go_json(&wrapped).unwrap()).unwrap(),
///     r#"{"Spec":{"vpc":"net-a","cidr":"10.0.1.0/24"},"ImplementationStrategy":"ovn"}"#,
/// );
/// # let _ = compute_desired_config_version(&wrapped).unwrap();
/// ```
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SpecWithStrategy<'a, S: ?Sized> {
    /// The resource's spec.
    #[serde(rename = "Spec")]
    pub spec: &'a S,
    /// The implementation strategy (Go: from the spec or its annotation).
    #[serde(rename = "ImplementationStrategy")]
    pub implementation_strategy: &'a str,
}

impl<'a, S: ?Sized> SpecWithStrategy<'a, S> {
    /// Wraps `spec` with `implementation_strategy`.
    pub fn new(spec: &'a S, implementation_strategy: &'a str) -> Self {
        Self {
            spec,
            implementation_strategy,
        }
    }
}

/// ExternalIPAttachment's `{Spec, ImplementationStrategy, TargetIP}` hash input.
///
/// ```
/// use provkit_core::{to_go_json, SpecWithStrategyAndTargetIp};
/// let spec = serde_json::json!({});
/// let w = SpecWithStrategyAndTargetIp::new(&spec, "metallb", "10.0.0.5");
/// assert_eq!(
///     String::from_utf8(to_go_json(&w).unwrap()).unwrap(),
///     r#"{"Spec":{},"ImplementationStrategy":"metallb","TargetIP":"10.0.0.5"}"#,
/// );
/// ```
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SpecWithStrategyAndTargetIp<'a, S: ?Sized> {
    /// The resource's spec.
    #[serde(rename = "Spec")]
    pub spec: &'a S,
    /// The implementation strategy.
    #[serde(rename = "ImplementationStrategy")]
    pub implementation_strategy: &'a str,
    /// The attachment's target IP.
    #[serde(rename = "TargetIP")]
    pub target_ip: &'a str,
}

impl<'a, S: ?Sized> SpecWithStrategyAndTargetIp<'a, S> {
    /// Wraps `spec` with `implementation_strategy` and `target_ip`.
    pub fn new(spec: &'a S, implementation_strategy: &'a str, target_ip: &'a str) -> Self {
        Self {
            spec,
            implementation_strategy,
            target_ip,
        }
    }
}

/// The dual-dispatch Subnet's `{Spec, ImplementationStrategy, K8sImplementationStrategy}` hash
/// input (newest Go, OSAC-1461): the Kubernetes-side manager is hashed too, so a NetworkClass
/// changing only its `k8sManager` re-provisions. The field is `""` (and still hashed) when the
/// plan has no Kubernetes-side target.
///
/// ```
/// use provkit_core::{to_go_json, SpecWithStrategies};
/// let spec = serde_json::json!({"ipv4CIDR": "10.0.1.0/24"});
/// assert_eq!(
///     String::from_utf8(to_go_json(&SpecWithStrategies::new(&spec, "netris", "cudn_net")).unwrap()).unwrap(),
///     r#"{"Spec":{"ipv4CIDR":"10.0.1.0/24"},"ImplementationStrategy":"netris","K8sImplementationStrategy":"cudn_net"}"#,
/// );
/// assert_eq!(
///     String::from_utf8(to_go_json(&SpecWithStrategies::new(&spec, "netris", "")).unwrap()).unwrap(),
///     r#"{"Spec":{"ipv4CIDR":"10.0.1.0/24"},"ImplementationStrategy":"netris","K8sImplementationStrategy":""}"#,
/// );
/// ```
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SpecWithStrategies<'a, S: ?Sized> {
    /// The resource's spec.
    #[serde(rename = "Spec")]
    pub spec: &'a S,
    /// The fabric manager's name (or the legacy strategy without a dispatch plan).
    #[serde(rename = "ImplementationStrategy")]
    pub implementation_strategy: &'a str,
    /// The Kubernetes-side manager's name (`""` without one).
    #[serde(rename = "K8sImplementationStrategy")]
    pub k8s_implementation_strategy: &'a str,
}

impl<'a, S: ?Sized> SpecWithStrategies<'a, S> {
    /// Wraps `spec` with both strategies.
    pub fn new(
        spec: &'a S,
        implementation_strategy: &'a str,
        k8s_implementation_strategy: &'a str,
    ) -> Self {
        Self {
            spec,
            implementation_strategy,
            k8s_implementation_strategy,
        }
    }
}
