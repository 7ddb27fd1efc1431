//! Template names: explicit names, or `{prefix}-{create|delete}-{suffix}` where the suffix comes
//! from an override table or go-strcase `KebabCase(kind)`. The table is empty by default; the
//! OSAC preset ([`TemplateNames::osac`]) adds OSAC's `ClusterOrder` → `hosted-cluster`.

use std::collections::BTreeMap;

/// The two template actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TemplateAction {
    /// Provisioning (`create`).
    Create,
    /// Deprovisioning (`delete`).
    Delete,
}

impl TemplateAction {
    /// `"create"` / `"delete"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Delete => "delete",
        }
    }
}

/// Why no template name could be derived.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NamingError {
    /// Neither an explicit name nor a prefix is configured for the action.
    #[error("{} template not configured", action.as_str())]
    NotConfigured {
        /// The action.
        action: TemplateAction,
    },
    /// A prefix is configured but the resource has no kind.
    #[error("resource has no Kind set; cannot derive template name from prefix")]
    NoKind,
}

/// How the provider names templates.
///
/// ```
/// use provkit_aap::provider::{TemplateAction, TemplateNames};
/// let names = TemplateNames::with_prefix("acme");
/// assert_eq!(names.resolve(TemplateAction::Create, "VirtualNetwork").unwrap(), "acme-create-virtual-network");
/// assert_eq!(names.resolve(TemplateAction::Delete, "ClusterOrder").unwrap(), "acme-delete-cluster-order");
/// // The OSAC preset: prefix `osac` and OSAC's override table.
/// let osac = TemplateNames::osac();
/// assert_eq!(osac.resolve(TemplateAction::Delete, "ClusterOrder").unwrap(), "osac-delete-hosted-cluster");
/// let custom = TemplateNames::with_prefix("osac").kind_suffix("ExternalIP", "eip");
/// assert_eq!(custom.resolve(TemplateAction::Create, "ExternalIP").unwrap(), "osac-create-eip");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateNames {
    provision: Option<String>,
    deprovision: Option<String>,
    prefix: Option<String>,
    suffixes: BTreeMap<String, String>,
}

impl Default for TemplateNames {
    /// Nothing configured and no kind overrides (neutral: no OSAC names).
    fn default() -> Self {
        Self {
            provision: None,
            deprovision: None,
            prefix: None,
            suffixes: BTreeMap::new(),
        }
    }
}

/// OSAC's kind → template-suffix overrides (the Go operator's `kindToTemplateSuffix`).
pub const OSAC_KIND_SUFFIXES: &[(&str, &str)] = &[("ClusterOrder", "hosted-cluster")];

fn non_empty(s: impl Into<String>) -> Option<String> {
    Some(s.into()).filter(|s| !s.is_empty())
}

impl TemplateNames {
    /// Explicit names for both actions (an empty string means "not set").
    pub fn explicit(provision: impl Into<String>, deprovision: impl Into<String>) -> Self {
        Self {
            provision: non_empty(provision),
            deprovision: non_empty(deprovision),
            ..Self::default()
        }
    }

    /// Names derived from a prefix.
    pub fn with_prefix(prefix: impl Into<String>) -> Self {
        Self {
            prefix: non_empty(prefix),
            ..Self::default()
        }
    }

    /// The OSAC preset: prefix `osac` (Go's default `OSAC_AAP_TEMPLATE_PREFIX`) with OSAC's kind
    /// overrides ([`OSAC_KIND_SUFFIXES`]), i.e. the names the Go OSAC operator derives.
    pub fn osac() -> Self {
        Self::with_prefix("osac").osac_kind_suffixes()
    }

    /// Adds OSAC's kind overrides ([`OSAC_KIND_SUFFIXES`]) to these names.
    #[must_use]
    pub fn osac_kind_suffixes(mut self) -> Self {
        for (kind, suffix) in OSAC_KIND_SUFFIXES {
            self.suffixes
                .insert((*kind).to_owned(), (*suffix).to_owned());
        }
        self
    }

    /// Sets the explicit provision template (wins over the prefix for `create`).
    #[must_use]
    pub fn provision(mut self, name: impl Into<String>) -> Self {
        self.provision = non_empty(name);
        self
    }

    /// Sets the explicit deprovision template (wins over the prefix for `delete`).
    #[must_use]
    pub fn deprovision(mut self, name: impl Into<String>) -> Self {
        self.deprovision = non_empty(name);
        self
    }

    /// Sets the prefix.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = non_empty(prefix);
        self
    }

    /// Adds or replaces a kind → suffix override (the table starts empty; see
    /// [`osac_kind_suffixes`](Self::osac_kind_suffixes)).
    #[must_use]
    pub fn kind_suffix(mut self, kind: impl Into<String>, suffix: impl Into<String>) -> Self {
        self.suffixes.insert(kind.into(), suffix.into());
        self
    }

    /// The template name for `action` on a resource of `kind`.
    ///
    /// # Errors
    /// [`NamingError::NotConfigured`] without an explicit name or prefix;
    /// [`NamingError::NoKind`] when a prefix is needed and `kind` is empty.
    pub fn resolve(&self, action: TemplateAction, kind: &str) -> Result<String, NamingError> {
        let explicit = match action {
            TemplateAction::Create => &self.provision,
            TemplateAction::Delete => &self.deprovision,
        };
        if let Some(name) = explicit {
            return Ok(name.clone());
        }
        let Some(prefix) = &self.prefix else {
            return Err(NamingError::NotConfigured { action });
        };
        if kind.is_empty() {
            return Err(NamingError::NoKind);
        }
        let suffix = self
            .suffixes
            .get(kind)
            .cloned()
            .unwrap_or_else(|| kebab_case(kind));
        Ok(format!("{prefix}-{}-{suffix}", action.as_str()))
    }
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

fn is_delimiter(c: char) -> bool {
    c == '-' || c == '_' || is_space(c)
}

/// go-strcase v1.3.1 `KebabCase`, ported exactly (acronyms, digits and `.` behave as in Go).
///
/// ```
/// use provkit_aap::provider::kebab_case;
/// assert_eq!(kebab_case("NATGateway"), "nat-gateway");
/// assert_eq!(kebab_case("ParseURL.DoParse"), "parse-url.do-parse");
/// ```
pub fn kebab_case(s: &str) -> String {
    let s = s.trim();
    let mut out = String::with_capacity(s.len() + 3);
    let mut prev = '\0';
    let mut curr = '\0';
    for next in s.chars() {
        if is_delimiter(curr) {
            if !is_delimiter(prev) {
                out.push('-');
            }
        } else if curr.is_ascii_uppercase() {
            if prev.is_ascii_lowercase() || (prev.is_ascii_uppercase() && next.is_ascii_lowercase())
            {
                out.push('-');
            }
            out.push(curr.to_ascii_lowercase());
        } else if curr != '\0' {
            out.push(curr.to_ascii_lowercase());
        }
        prev = curr;
        curr = next;
    }
    if !s.is_empty() {
        if curr.is_ascii_uppercase() && prev.is_ascii_lowercase() && prev != '\0' {
            out.push('-');
        }
        out.push(curr.to_ascii_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kebab_case_spec_vectors() {
        let cases = [
            ("VirtualNetwork", "virtual-network"),
            ("SecurityGroup", "security-group"),
            ("ComputeInstance", "compute-instance"),
            ("NATGateway", "nat-gateway"),
            ("ExternalIP", "external-ip"),
            ("ExternalIPPool", "external-ip-pool"),
            ("ExternalIPAttachment", "external-ip-attachment"),
            ("Subnet", "subnet"),
            ("Tenant", "tenant"),
            ("HTTPStatusCode", "http-status-code"),
            ("FooID", "foo-id"),
            ("FooB", "foo-b"),
            ("V1Alpha", "v1alpha"),
            ("ParseURL.DoParse", "parse-url.do-parse"),
            ("Skip___MultipleUnderscores", "skip-multiple-underscores"),
            ("", ""),
            // go-strcase edge cases
            ("  Trimmed  ", "trimmed"),
            ("already-kebab", "already-kebab"),
            ("snake_case_name", "snake-case-name"),
            ("with space\tand\ttabs", "with-space-and-tabs"),
            ("A", "a"),
            ("aB", "a-b"),
            ("ABC", "abc"),
            ("foo_", "foo_"),
            ("-Foo", "-foo"),
            ("Überfall", "Überfall"),
            ("ClusterOrder", "cluster-order"),
        ];
        for (input, want) in cases {
            assert_eq!(kebab_case(input), want, "{input:?}");
        }
    }

    #[test]
    fn resolution_rules() {
        let both = TemplateNames::explicit("my-provision", "").prefix("osac");
        assert_eq!(
            both.resolve(TemplateAction::Create, "ComputeInstance")
                .unwrap(),
            "my-provision"
        );
        assert_eq!(
            both.resolve(TemplateAction::Delete, "ComputeInstance")
                .unwrap(),
            "osac-delete-compute-instance"
        );
        // Spec §7.3 case 3 is the OSAC preset; a bare prefix is neutral.
        assert_eq!(
            TemplateNames::osac()
                .resolve(TemplateAction::Create, "ClusterOrder")
                .unwrap(),
            "osac-create-hosted-cluster"
        );
        assert_eq!(
            TemplateNames::with_prefix("osac")
                .resolve(TemplateAction::Create, "ClusterOrder")
                .unwrap(),
            "osac-create-cluster-order"
        );
        assert_eq!(
            TemplateNames::with_prefix("acme")
                .osac_kind_suffixes()
                .resolve(TemplateAction::Delete, "ClusterOrder")
                .unwrap(),
            "acme-delete-hosted-cluster"
        );
        assert_eq!(
            TemplateNames::explicit("my-provision", "my-deprovision")
                .resolve(TemplateAction::Delete, "")
                .unwrap(),
            "my-deprovision"
        );
        let none = TemplateNames::default();
        assert_eq!(
            none.resolve(TemplateAction::Create, "X")
                .unwrap_err()
                .to_string(),
            "create template not configured"
        );
        assert_eq!(
            none.resolve(TemplateAction::Delete, "X")
                .unwrap_err()
                .to_string(),
            "delete template not configured"
        );
        let err = TemplateNames::with_prefix("osac")
            .resolve(TemplateAction::Create, "")
            .unwrap_err();
        assert!(err.to_string().contains("resource has no Kind set"));
        let overridden = TemplateNames::with_prefix("osac").kind_suffix("ClusterOrder", "hcp");
        assert_eq!(
            overridden
                .resolve(TemplateAction::Create, "ClusterOrder")
                .unwrap(),
            "osac-create-hcp"
        );
    }

    proptest::proptest! {
        #[test]
        fn kebab_output_is_lowercase_and_idempotent(input in "[A-Za-z0-9_ .-]{0,24}") {
            let out = kebab_case(&input);
            proptest::prop_assert!(!out.bytes().any(|b| b.is_ascii_uppercase() || b == b' '));
            proptest::prop_assert_eq!(kebab_case(&out), out);
        }
    }
}
