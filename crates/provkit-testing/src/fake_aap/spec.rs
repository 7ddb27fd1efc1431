//! Declarations of the fake's contents: organizations, users, tokens, inventories, templates.
//! The same types are read from fixture files (JSON or YAML) by the `fake-aap` binary.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::script::{JobScript, ScriptRule};

/// Which API layout the fake serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Plain AWX: `/api/` → `current_version: /api/v2/`, API under `/api/v2/`.
    #[default]
    Awx,
    /// AAP 2.5+ behind the platform gateway: API under `/api/controller/v2/`, `/api/v2/…` is 404,
    /// tokens under `/api/gateway/v1/tokens/`.
    Gateway,
    /// The controller's optional-prefix behaviour: both `/api/v2/` and `/api/controller/v2/`.
    Both,
    /// AAP 2.7: the gateway layout, and the component API (`/api/controller/v2/`) refuses
    /// basic auth and controller-issued tokens with 401; only gateway tokens (fixture tokens, or
    /// minted at `POST /api/gateway/v1/tokens/`) work. The 401 body is **assumed** (no 2.7 body
    /// was captured): AWX's "credentials were not provided" body and `WWW-Authenticate` header.
    Aap27,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "awx" => Ok(Mode::Awx),
            "gateway" => Ok(Mode::Gateway),
            "both" => Ok(Mode::Both),
            "aap27" => Ok(Mode::Aap27),
            other => Err(format!(
                "unknown mode {other:?} (expected awx, gateway, both or aap27)"
            )),
        }
    }
}

/// Token scope.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Read-only: any non-GET/HEAD/OPTIONS request gets 403.
    Read,
    /// Read and write.
    #[default]
    Write,
}

impl Scope {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
        }
    }
}

/// An organization.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OrganizationSpec {
    /// Explicit id (else the next free one).
    pub id: Option<u64>,
    /// Name (unique).
    pub name: String,
    /// Description.
    pub description: String,
}

/// A user with a password (for Basic auth and token minting).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UserSpec {
    /// Explicit id.
    pub id: Option<u64>,
    /// Username.
    pub username: String,
    /// Password for Basic auth.
    pub password: String,
    /// Superusers see and may launch everything.
    pub is_superuser: bool,
}

/// A bearer token.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TokenSpec {
    /// The secret.
    pub token: String,
    /// Owner's username.
    pub user: String,
    /// Scope.
    pub scope: Scope,
    /// Expiry (default: 1000 years after start, like AWX).
    pub expires: Option<DateTime<Utc>>,
    /// Description.
    pub description: String,
    /// Issued by the controller (`/api/v2/tokens/`) rather than the gateway: refused at the
    /// component API in [`Mode::Aap27`]. Fixture tokens default to gateway-issued.
    pub controller_issued: bool,
}

/// An inventory; `hosts` decides how many slices a sliced job template launch makes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InventorySpec {
    /// Explicit id.
    pub id: Option<u64>,
    /// Name.
    pub name: String,
    /// Organization name.
    pub organization: String,
    /// Number of hosts.
    pub hosts: u32,
}

impl Default for InventorySpec {
    fn default() -> Self {
        InventorySpec {
            id: None,
            name: String::new(),
            organization: "Default".into(),
            hosts: 1,
        }
    }
}

/// One survey question (AWX `survey_spec.spec[]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SurveyQuestion {
    /// Question text.
    pub question_name: String,
    /// Help text.
    pub question_description: String,
    /// Whether an answer is required.
    pub required: bool,
    /// `text`, `textarea`, `password`, `integer`, `float`, `multiplechoice`, `multiselect`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The extra variable name.
    pub variable: String,
    /// Minimum (length or value).
    pub min: Option<serde_json::Value>,
    /// Maximum (length or value).
    pub max: Option<serde_json::Value>,
    /// Default answer.
    pub default: serde_json::Value,
    /// Choices: a list, or a newline-separated string.
    pub choices: serde_json::Value,
}

/// A survey.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SurveySpec {
    /// Survey name.
    pub name: String,
    /// Survey description.
    pub description: String,
    /// Questions.
    pub spec: Vec<SurveyQuestion>,
}

/// Which launch-time prompts a job template accepts (`ask_*_on_launch`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(clippy::struct_excessive_bools)]
pub struct AskFlags {
    /// `ask_scm_branch_on_launch`
    pub scm_branch: bool,
    /// `ask_diff_mode_on_launch`
    pub diff_mode: bool,
    /// `ask_variables_on_launch`
    pub variables: bool,
    /// `ask_limit_on_launch`
    pub limit: bool,
    /// `ask_tags_on_launch`
    pub tags: bool,
    /// `ask_skip_tags_on_launch`
    pub skip_tags: bool,
    /// `ask_job_type_on_launch`
    pub job_type: bool,
    /// `ask_verbosity_on_launch`
    pub verbosity: bool,
    /// `ask_inventory_on_launch`
    pub inventory: bool,
    /// `ask_credential_on_launch`
    pub credential: bool,
    /// `ask_execution_environment_on_launch`
    pub execution_environment: bool,
    /// `ask_labels_on_launch`
    pub labels: bool,
    /// `ask_forks_on_launch`
    pub forks: bool,
    /// `ask_job_slice_count_on_launch`
    pub job_slice_count: bool,
    /// `ask_timeout_on_launch`
    pub timeout: bool,
    /// `ask_instance_groups_on_launch`
    pub instance_groups: bool,
}

/// A job template.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobTemplateSpec {
    /// Explicit id (job templates and workflow job templates share one id sequence).
    pub id: Option<u64>,
    /// Name (unique per organization).
    pub name: String,
    /// Organization name.
    pub organization: String,
    /// Description.
    pub description: String,
    /// Inventory name; `None` (YAML `null`) = no inventory (launch then needs one).
    pub inventory: Option<String>,
    /// Project id shown in bodies.
    pub project: u64,
    /// Playbook.
    pub playbook: String,
    /// Template `extra_vars` text (JSON or YAML).
    pub extra_vars: String,
    /// Prompt-on-launch flags.
    pub ask: AskFlags,
    /// Survey (applies when `survey_enabled`).
    pub survey_spec: Option<SurveySpec>,
    /// `survey_enabled`.
    pub survey_enabled: bool,
    /// `allow_simultaneous`: false queues a second job behind the first.
    pub allow_simultaneous: bool,
    /// `job_slice_count` (> 1 launches a slice workflow when the inventory has several hosts).
    pub job_slice_count: u32,
    /// `limit`.
    pub limit: String,
    /// `job_tags`.
    pub job_tags: String,
    /// `skip_tags`.
    pub skip_tags: String,
    /// `job_type` (`run` or `check`).
    pub job_type: String,
    /// `verbosity` (0–5).
    pub verbosity: u8,
    /// `forks`.
    pub forks: u32,
    /// `timeout`.
    pub timeout: u32,
    /// `diff_mode`.
    pub diff_mode: bool,
    /// `scm_branch`.
    pub scm_branch: String,
    /// Credential passwords the launch must supply (`passwords_needed_to_start`).
    pub passwords_needed_to_start: Vec<String>,
    /// Usernames that can see the template (`None` = everyone).
    pub visible_to: Option<Vec<String>>,
    /// Usernames that can launch it (`None` = everyone who sees it).
    pub executable_by: Option<Vec<String>>,
    /// Default script of its jobs (else the server's default).
    pub script: Option<JobScript>,
    /// Per-launch script rules.
    pub scripts: Vec<ScriptRule>,
    /// Variables the template's playbook reads, as Jinja dotted paths (for example
    /// `osac_job_vars.resource.spec`). A job whose `extra_vars` lack one fails as Ansible fails on
    /// an undefined variable; otherwise its standard output shows each value as a `debug: var=`
    /// task prints it, and [`JobInfo::reads`](super::JobInfo::reads) holds them. Empty (the
    /// default): the playbook reads nothing.
    pub reads: Vec<String>,
}

impl Default for JobTemplateSpec {
    fn default() -> Self {
        JobTemplateSpec {
            id: None,
            name: String::new(),
            organization: "Default".into(),
            description: String::new(),
            inventory: Some("Demo Inventory".into()),
            project: 6,
            playbook: "hello_world.yml".into(),
            extra_vars: String::new(),
            ask: AskFlags::default(),
            survey_spec: None,
            survey_enabled: false,
            allow_simultaneous: false,
            job_slice_count: 1,
            limit: String::new(),
            job_tags: String::new(),
            skip_tags: String::new(),
            job_type: "run".into(),
            verbosity: 0,
            forks: 0,
            timeout: 0,
            diff_mode: false,
            scm_branch: String::new(),
            passwords_needed_to_start: Vec::new(),
            visible_to: None,
            executable_by: None,
            script: None,
            scripts: Vec::new(),
            reads: Vec::new(),
        }
    }
}

impl JobTemplateSpec {
    /// A template named `name` in organization `organization`, prompting for variables.
    pub fn new(name: impl Into<String>, organization: impl Into<String>) -> Self {
        JobTemplateSpec {
            name: name.into(),
            organization: organization.into(),
            ask: AskFlags {
                variables: true,
                ..AskFlags::default()
            },
            ..JobTemplateSpec::default()
        }
    }

    /// The playbook reads these variable paths (see [`reads`](Self::reads)).
    ///
    /// ```
    /// use provkit_testing::fake_aap::JobTemplateSpec;
    /// let t = JobTemplateSpec::new("osac-create-subnet", "osac").reading(["osac_job_vars.resource.spec"]);
    /// assert_eq!(t.reads, ["osac_job_vars.resource.spec"]);
    /// ```
    #[must_use]
    pub fn reading<S: Into<String>>(mut self, paths: impl IntoIterator<Item = S>) -> Self {
        self.reads = paths.into_iter().map(Into::into).collect();
        self
    }
}

/// One node of a workflow job template (nodes run in order, each after the previous succeeded).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkflowNodeSpec {
    /// Job template name to run (ignored for approval nodes).
    pub job_template: String,
    /// Organization of that job template (default: the workflow's).
    pub organization: Option<String>,
    /// Node identifier (default: a fresh UUID).
    pub identifier: Option<String>,
    /// A failure of this node is handled (the workflow continues and can still succeed).
    pub failure_handled: bool,
    /// An approval node that is never approved: the workflow stays `running`.
    pub approval: bool,
}

/// A workflow job template.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkflowJobTemplateSpec {
    /// Explicit id (shared sequence with job templates).
    pub id: Option<u64>,
    /// Name.
    pub name: String,
    /// Organization name.
    pub organization: String,
    /// Description.
    pub description: String,
    /// Template `extra_vars` text.
    pub extra_vars: String,
    /// `ask_variables_on_launch`.
    pub ask_variables_on_launch: bool,
    /// `ask_inventory_on_launch`.
    pub ask_inventory_on_launch: bool,
    /// `ask_limit_on_launch`.
    pub ask_limit_on_launch: bool,
    /// `ask_scm_branch_on_launch`.
    pub ask_scm_branch_on_launch: bool,
    /// `ask_labels_on_launch`.
    pub ask_labels_on_launch: bool,
    /// `ask_skip_tags_on_launch`.
    pub ask_skip_tags_on_launch: bool,
    /// `ask_tags_on_launch`.
    pub ask_tags_on_launch: bool,
    /// Survey.
    pub survey_spec: Option<SurveySpec>,
    /// `survey_enabled`.
    pub survey_enabled: bool,
    /// `allow_simultaneous` (reported only).
    pub allow_simultaneous: bool,
    /// Inventory name.
    pub inventory: Option<String>,
    /// `limit`.
    pub limit: String,
    /// `scm_branch`.
    pub scm_branch: String,
    /// `job_tags`.
    pub job_tags: String,
    /// `skip_tags`.
    pub skip_tags: String,
    /// Nodes, run in order.
    pub nodes: Vec<WorkflowNodeSpec>,
    /// Time the workflow job stays `pending` before it starts its first node.
    #[serde(with = "super::script::secs")]
    pub pending: Duration,
    /// The workflow job never leaves `pending` (no capacity).
    pub stuck_pending: bool,
    /// Usernames that can see it (`None` = everyone).
    pub visible_to: Option<Vec<String>>,
    /// Usernames that can launch it.
    pub executable_by: Option<Vec<String>>,
}

impl Default for WorkflowJobTemplateSpec {
    fn default() -> Self {
        WorkflowJobTemplateSpec {
            id: None,
            name: String::new(),
            organization: "Default".into(),
            description: String::new(),
            extra_vars: String::new(),
            ask_variables_on_launch: false,
            ask_inventory_on_launch: false,
            ask_limit_on_launch: false,
            ask_scm_branch_on_launch: false,
            ask_labels_on_launch: false,
            ask_skip_tags_on_launch: false,
            ask_tags_on_launch: false,
            survey_spec: None,
            survey_enabled: false,
            allow_simultaneous: false,
            inventory: None,
            limit: String::new(),
            scm_branch: String::new(),
            job_tags: String::new(),
            skip_tags: String::new(),
            nodes: Vec::new(),
            pending: Duration::from_millis(500),
            stuck_pending: false,
            visible_to: None,
            executable_by: None,
        }
    }
}

impl WorkflowJobTemplateSpec {
    /// A workflow named `name` prompting for variables, running the given job templates in order.
    pub fn new(
        name: impl Into<String>,
        organization: impl Into<String>,
        job_templates: &[&str],
    ) -> Self {
        WorkflowJobTemplateSpec {
            name: name.into(),
            organization: organization.into(),
            ask_variables_on_launch: true,
            nodes: job_templates
                .iter()
                .map(|jt| WorkflowNodeSpec {
                    job_template: (*jt).to_owned(),
                    ..WorkflowNodeSpec::default()
                })
                .collect(),
            ..WorkflowJobTemplateSpec::default()
        }
    }
}

/// Server-wide settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// API layout.
    pub mode: Mode,
    /// Reported version (`ping.version`, `X-API-Product-Version`).
    pub version: String,
    /// Cluster node name (`X-API-Node`, `execution_node`, …).
    pub node: String,
    /// Delay between `POST cancel/` on a started job and its `canceled` status (default 2 s, as
    /// observed: until then `GET` shows `running` and a second cancel gets 202 again); a job's
    /// script may override it ([`JobScript::cancel_delay`](super::JobScript)).
    #[serde(with = "super::script::secs")]
    pub cancel_delay: Duration,
    /// Lifetime of tokens minted at `POST /api/gateway/v1/tokens/` (default one year, the
    /// gateway's default since AAP 2.5.20250604; controller-minted tokens keep 1000 years).
    #[serde(with = "super::script::secs")]
    pub gateway_token_lifetime: Duration,
    /// Request-log ring size (0 = off).
    pub request_log_capacity: usize,
    /// Seed for every random choice (ids of tokens, fault fractions).
    pub seed: u64,
    /// Maximum request body size (larger → 413).
    pub max_body_bytes: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mode: Mode::Awx,
            version: "24.6.2.dev145+ge21dd0a093".into(),
            node: "awx-1".into(),
            cancel_delay: Duration::from_secs(2),
            gateway_token_lifetime: Duration::from_secs(31_536_000),
            request_log_capacity: 1000,
            seed: 0x5eed,
            max_body_bytes: 4 * 1024 * 1024,
        }
    }
}

/// Everything the fake holds at start, as read from a fixture file.
///
/// ```
/// let yaml = r#"
/// organizations: [{name: osac}]
/// users: [{username: admin, password: secret, is_superuser: true}]
/// tokens: [{token: t0ken, user: admin}]
/// job_templates:
///   - name: osac-create-virtual-network
///     organization: osac
///     ask: {variables: true}
///     script: {running: 3, outcome: successful}
/// "#;
/// let fx = provkit_testing::fake_aap::Fixtures::from_yaml(yaml).unwrap();
/// assert_eq!(fx.job_templates[0].name, "osac-create-virtual-network");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Fixtures {
    /// Settings.
    pub settings: Settings,
    /// Organizations (`Default` always exists).
    pub organizations: Vec<OrganizationSpec>,
    /// Users (`admin` / `password`, superuser, always exists unless redefined).
    pub users: Vec<UserSpec>,
    /// Tokens.
    pub tokens: Vec<TokenSpec>,
    /// Inventories (`Demo Inventory` with 3 hosts always exists).
    pub inventories: Vec<InventorySpec>,
    /// Job templates.
    pub job_templates: Vec<JobTemplateSpec>,
    /// Workflow job templates.
    pub workflow_job_templates: Vec<WorkflowJobTemplateSpec>,
    /// Default script for every job whose template has none.
    pub default_script: Option<JobScript>,
}

impl Fixtures {
    /// Parses YAML (which also accepts JSON).
    pub fn from_yaml(text: &str) -> Result<Self, super::FakeAapError> {
        serde_yaml_ng::from_str(text).map_err(|source| super::FakeAapError::Fixtures { source })
    }

    /// Parses JSON.
    pub fn from_json(text: &str) -> Result<Self, super::FakeAapError> {
        serde_json::from_str(text).map_err(|source| super::FakeAapError::FixturesJson { source })
    }
}
