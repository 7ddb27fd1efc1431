//! [`Envelope`]: the shape a launch's extra_vars take (documented on the type, which is public).

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value, json};

use provkit_lifecycle::LaunchContext;

use super::extra_vars::{ExtraVarsError, job_vars};
use crate::marker::IDEMPOTENCY_KEY_VAR;

/// The shape a launch's extra_vars take — a named choice, because the playbooks
/// decide it, not provkit.
///
/// | envelope | extra_vars | for |
/// |---|---|---|
/// | [`OsacJobVars`](Envelope::OsacJobVars) | `{"osac_job_vars": {"resource": …, <context keys>}}` | OSAC playbooks since osac-project/osac `232f1752e` (2026-08-02, OSAC-3547); the OSAC preset's default ([`AapProvider::osac`](super::AapProvider::osac)) |
/// | [`AnsibleEda`](Envelope::AnsibleEda) | `{"ansible_eda": {"event": {"payload": …, <context keys>}}}` | OSAC playbooks before that commit (Event-Driven Ansible's event shape); legacy |
/// | [`Neutral`](Envelope::Neutral) | `{"provkit_job_vars": {"resource": …, <context keys>}}` | everyone else; the builder's default |
///
/// The context keys (each only when set) and the caller's fields are listed in the
/// [`build_extra_vars`](super::build_extra_vars) docs. In every envelope the launch attempt's
/// idempotency key sits at the **top level**, as [`IDEMPOTENCY_KEY_VAR`] next to the envelope's
/// variable: the provider's lookup reads it there, and a template's survey can declare it as a
/// plain text question (a survey question cannot hold the envelope's object).
///
/// Each envelope keeps everything under one top-level variable. Extra variables have the highest
/// precedence in Ansible, so a top-level `resource` would silently override any role variable of
/// that name; one namespaced variable cannot collide.
///
/// ```
/// use provkit_aap::provider::Envelope;
/// use provkit_lifecycle::LaunchContext;
/// use serde_json::json;
///
/// let object = json!({"kind": "Subnet", "metadata": {"name": "s"}, "spec": {"cidr": "10.0.1.0/24"}});
/// let ctx = LaunchContext::new().with_admin_kubeconfig("apiVersion: v1");
/// let osac = Envelope::OsacJobVars.build(&object, &ctx).unwrap();
/// assert_eq!(osac["osac_job_vars"]["resource"]["spec"]["cidr"], "10.0.1.0/24");
/// assert_eq!(osac["osac_job_vars"]["admin_kubeconfig"], "apiVersion: v1");
/// let eda = Envelope::AnsibleEda.build(&object, &ctx).unwrap();
/// assert_eq!(eda["ansible_eda"]["event"]["payload"]["spec"]["cidr"], "10.0.1.0/24");
/// let neutral = Envelope::Neutral.build(&object, &ctx).unwrap();
/// assert_eq!(neutral["provkit_job_vars"]["resource"]["spec"]["cidr"], "10.0.1.0/24");
/// assert_eq!("osac_job_vars".parse::<Envelope>().unwrap(), Envelope::OsacJobVars);
/// assert_eq!(Envelope::OsacJobVars.resource_path(), "osac_job_vars.resource");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Envelope {
    /// `{"osac_job_vars": {"resource": …, <context keys>}}`: Go's `extractExtraVars` since
    /// osac-project/osac `232f1752e` (2026-08-02, OSAC-3547), read by the current osac-aap
    /// playbooks (`osac_job_vars.resource.spec`).
    OsacJobVars,
    /// `{"ansible_eda": {"event": {"payload": …, <context keys>}}}`: the Event-Driven Ansible event
    /// shape OSAC used before that commit, for playbooks not yet migrated.
    AnsibleEda,
    /// `{"provkit_job_vars": {"resource": …, <context keys>}}`: the same flat shape under a name
    /// of provkit's, for playbooks written for provkit.
    #[default]
    Neutral,
}

/// The text is not an envelope name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown extra_vars envelope {0:?} (expected osac_job_vars, ansible_eda or neutral)")]
pub struct UnknownEnvelope(pub String);

impl Envelope {
    /// Every envelope, for listings and table tests.
    pub const ALL: [Envelope; 3] = [Self::OsacJobVars, Self::AnsibleEda, Self::Neutral];

    /// The envelope's name: `osac_job_vars`, `ansible_eda` or `neutral` (what
    /// [`FromStr`] accepts).
    pub const fn name(self) -> &'static str {
        match self {
            Self::OsacJobVars => "osac_job_vars",
            Self::AnsibleEda => "ansible_eda",
            Self::Neutral => "neutral",
        }
    }

    /// The top-level variable that holds everything but the idempotency key.
    pub const fn variable(self) -> &'static str {
        match self {
            Self::OsacJobVars => "osac_job_vars",
            Self::AnsibleEda => "ansible_eda",
            Self::Neutral => "provkit_job_vars",
        }
    }

    /// Where a playbook finds the resource, as a Jinja variable path
    /// (`osac_job_vars.resource`, `ansible_eda.event.payload`, `provkit_job_vars.resource`).
    pub const fn resource_path(self) -> &'static str {
        match self {
            Self::OsacJobVars => "osac_job_vars.resource",
            Self::AnsibleEda => "ansible_eda.event.payload",
            Self::Neutral => "provkit_job_vars.resource",
        }
    }

    /// The extra_vars of a launch of `resource` with `ctx`, in this envelope, plus the
    /// idempotency key at the top level when `ctx` has one.
    ///
    /// # Errors
    /// [`ExtraVarsError::QuotaOverflow`] for an absurd storage quota.
    pub fn build(
        self,
        resource: &Value,
        ctx: &LaunchContext,
    ) -> Result<Map<String, Value>, ExtraVarsError> {
        let resource_key = match self {
            Self::AnsibleEda => "payload",
            Self::OsacJobVars | Self::Neutral => "resource",
        };
        let vars = Value::Object(job_vars(resource, ctx, resource_key)?);
        let mut out = Map::new();
        let inner = match self {
            Self::AnsibleEda => json!({ "event": vars }),
            Self::OsacJobVars | Self::Neutral => vars,
        };
        out.insert(self.variable().to_owned(), inner);
        if let Some(key) = &ctx.idempotency_key {
            out.insert(
                IDEMPOTENCY_KEY_VAR.to_owned(),
                Value::String(key.as_str().to_owned()),
            );
        }
        Ok(out)
    }
}

impl fmt::Display for Envelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Envelope {
    type Err = UnknownEnvelope;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| UnknownEnvelope(s.to_owned()))
    }
}
