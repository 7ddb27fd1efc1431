//! The resource types the fake serves: the built-ins an operator touches and custom resources
//! registered from a `CustomResourceDefinition`.
//!
//! The CRD is read as JSON (from `CustomResourceExt::crd()` or a YAML/JSON document) rather than
//! through k8s-openapi's typed struct so one reader serves both, and unknown CRD fields never
//! make registration fail.

use serde_json::Value;

/// A CRD document the fake cannot register.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrdError {
    /// The document is not YAML/JSON.
    #[error("the CRD document does not parse: {0}")]
    Parse(String),
    /// It is not a `CustomResourceDefinition`.
    #[error("expected kind CustomResourceDefinition, found {0:?}")]
    NotACrd(String),
    /// A required field is missing or has the wrong type.
    #[error("the CRD lacks {0}")]
    Missing(&'static str),
    /// `spec.scope` is neither `Namespaced` nor `Cluster`.
    #[error("unknown CRD scope {0:?}")]
    Scope(String),
}

/// One served `group/version/plural`, with what the server needs to know about it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResourceType {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) kind: String,
    pub(crate) plural: String,
    pub(crate) singular: String,
    pub(crate) short_names: Vec<String>,
    pub(crate) namespaced: bool,
    /// `subresources.status` declared (CRDs) or built in.
    pub(crate) status_subresource: bool,
    /// The structural `openAPIV3Schema` of a custom resource (pruning and type checks).
    pub(crate) schema: Option<Value>,
    /// Custom resource (JSON-only patch types, pruning) or built-in.
    pub(crate) custom: bool,
    /// Whether the server keeps `metadata.generation` for it (custom resources and types with a
    /// spec; ConfigMap, Secret, Lease and Event have none on a real server).
    pub(crate) has_generation: bool,
    /// The CRD version's `additionalPrinterColumns` (Table output).
    pub(crate) printer_columns: Vec<super::table::PrinterColumn>,
}

impl ResourceType {
    /// `apiVersion` of its objects.
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The storage key objects of this type live under: every version of one group/plural
    /// shares the same objects.
    pub(crate) fn key(&self) -> TypeKey {
        TypeKey {
            group: self.group.clone(),
            plural: self.plural.clone(),
        }
    }

    fn builtin(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            singular: kind.to_ascii_lowercase(),
            short_names: Vec::new(),
            namespaced,
            status_subresource: false,
            schema: None,
            custom: false,
            has_generation: false,
            printer_columns: Vec::new(),
        }
    }

    /// Lease, both Event APIs, Namespace, ConfigMap and Secret.
    pub(crate) fn builtins() -> Vec<Self> {
        let mut ns = Self::builtin("", "v1", "Namespace", "namespaces", false);
        ns.status_subresource = true;
        ns.short_names = vec!["ns".into()];
        let mut cm = Self::builtin("", "v1", "ConfigMap", "configmaps", true);
        cm.short_names = vec!["cm".into()];
        let mut ev = Self::builtin("", "v1", "Event", "events", true);
        ev.short_names = vec!["ev".into()];
        vec![
            ns,
            cm,
            Self::builtin("", "v1", "Secret", "secrets", true),
            ev,
            Self::builtin("events.k8s.io", "v1", "Event", "events", true),
            Self::builtin("coordination.k8s.io", "v1", "Lease", "leases", true),
        ]
    }

    /// Every served version of a CRD document, as JSON.
    pub(crate) fn from_crd(crd: &Value) -> Result<Vec<Self>, CrdError> {
        let kind = crd.get("kind").and_then(Value::as_str).unwrap_or_default();
        if kind != "CustomResourceDefinition" {
            return Err(CrdError::NotACrd(kind.to_owned()));
        }
        let spec = crd.get("spec").ok_or(CrdError::Missing("spec"))?;
        let text = |v: Option<&Value>, what: &'static str| {
            v.and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or(CrdError::Missing(what))
        };
        let group = text(spec.get("group"), "spec.group")?;
        let names = spec.get("names").ok_or(CrdError::Missing("spec.names"))?;
        let kind = text(names.get("kind"), "spec.names.kind")?;
        let plural = text(names.get("plural"), "spec.names.plural")?;
        let singular = names
            .get("singular")
            .and_then(Value::as_str)
            .map_or_else(|| kind.to_ascii_lowercase(), str::to_owned);
        let short_names: Vec<String> = names
            .get("shortNames")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let namespaced = match spec.get("scope").and_then(Value::as_str) {
            Some("Namespaced") | None => true,
            Some("Cluster") => false,
            Some(other) => return Err(CrdError::Scope(other.to_owned())),
        };
        let versions = spec
            .get("versions")
            .and_then(Value::as_array)
            .ok_or(CrdError::Missing("spec.versions"))?;
        let mut out = Vec::new();
        for v in versions {
            if v.get("served").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            let version = text(v.get("name"), "spec.versions[].name")?;
            let status_subresource = v
                .pointer("/subresources/status")
                .is_some_and(|s| !s.is_null());
            let schema = v.pointer("/schema/openAPIV3Schema").cloned();
            out.push(Self {
                group: group.clone(),
                version,
                kind: kind.clone(),
                plural: plural.clone(),
                singular: singular.clone(),
                short_names: short_names.clone(),
                namespaced,
                status_subresource,
                schema,
                custom: true,
                has_generation: true,
                printer_columns: super::table::printer_columns(v),
            });
        }
        if out.is_empty() {
            return Err(CrdError::Missing("a served version"));
        }
        Ok(out)
    }
}

/// The storage identity of a type: group and plural (versions share storage).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct TypeKey {
    pub(crate) group: String,
    pub(crate) plural: String,
}

/// Parses one or more CRD documents (YAML stream or JSON) into JSON values.
pub(crate) fn parse_crd_documents(text: &str) -> Result<Vec<Value>, CrdError> {
    use serde::Deserialize;
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let v = Value::deserialize(doc).map_err(|e| CrdError::Parse(e.to_string()))?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

/// The types served under one group-version (empty when it is not served).
pub(crate) fn served_in<'a>(
    types: &'a [ResourceType],
    group: &str,
    version: &str,
) -> Vec<&'a ResourceType> {
    types
        .iter()
        .filter(|t| t.group == group && t.version == version)
        .collect()
}
