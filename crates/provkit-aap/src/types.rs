//! Typed views of AAP resources, decoded tolerantly.
//!
//! AAP returns `extra_vars` and sometimes `artifacts` as JSON-encoded strings, `null` datetimes,
//! `elapsed` as a float or integer, statuses this crate may not know yet, and many fields no
//! client needs. Decoding accepts all of that: unknown fields are ignored, unknown statuses are
//! kept verbatim, unparsable datetimes become `None`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The two launchable template kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TemplateKind {
    /// `job_template`.
    JobTemplate,
    /// `workflow_job_template`.
    WorkflowJobTemplate,
}

impl TemplateKind {
    /// The API's `type` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::JobTemplate => "job_template",
            Self::WorkflowJobTemplate => "workflow_job_template",
        }
    }

    /// The collection endpoint (`job_templates` / `workflow_job_templates`).
    pub fn endpoint(self) -> &'static str {
        match self {
            Self::JobTemplate => "job_templates",
            Self::WorkflowJobTemplate => "workflow_job_templates",
        }
    }

    /// Parses the API's `type` value.
    pub fn from_type(value: &str) -> Option<Self> {
        match value {
            "job_template" => Some(Self::JobTemplate),
            "workflow_job_template" => Some(Self::WorkflowJobTemplate),
            _ => None,
        }
    }

    /// The kind of job a launch of this template normally creates.
    pub fn job_kind(self) -> JobKind {
        match self {
            Self::JobTemplate => JobKind::Job,
            Self::WorkflowJobTemplate => JobKind::WorkflowJob,
        }
    }
}

/// A launchable template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    /// Numeric id (launches always use it: the gateway rejects names in launch paths).
    pub id: u64,
    /// Name.
    pub name: String,
    /// Job template or workflow job template.
    pub kind: TemplateKind,
    /// Organization id.
    pub organization: Option<u64>,
    /// Organization name (`summary_fields.organization.name`).
    pub organization_name: Option<String>,
}

/// Kinds of unified jobs this crate polls and cancels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// A job (`/jobs/<id>/`).
    Job,
    /// A workflow job (`/workflow_jobs/<id>/`), also what a sliced job template launches.
    WorkflowJob,
}

impl JobKind {
    /// The API's `type` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Job => "job",
            Self::WorkflowJob => "workflow_job",
        }
    }

    /// The collection endpoint (`jobs` / `workflow_jobs`).
    pub fn endpoint(self) -> &'static str {
        match self {
            Self::Job => "jobs",
            Self::WorkflowJob => "workflow_jobs",
        }
    }

    /// Parses the API's `type` value.
    pub fn from_type(value: &str) -> Option<Self> {
        match value {
            "job" => Some(Self::Job),
            "workflow_job" => Some(Self::WorkflowJob),
            _ => None,
        }
    }
}

/// A unified job's `status`; unknown values are kept verbatim and are non-terminal.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum AapJobStatus {
    /// `new`.
    New,
    /// `pending`.
    #[default]
    Pending,
    /// `waiting`.
    Waiting,
    /// `running`.
    Running,
    /// `successful`.
    Successful,
    /// `failed`.
    Failed,
    /// `error`.
    Error,
    /// `canceled`.
    Canceled,
    /// Anything else, verbatim.
    Other(String),
}

impl AapJobStatus {
    /// Parses a status string (exact, case-sensitive).
    pub fn parse(value: &str) -> Self {
        match value {
            "new" => Self::New,
            "pending" => Self::Pending,
            "waiting" => Self::Waiting,
            "running" => Self::Running,
            "successful" => Self::Successful,
            "failed" => Self::Failed,
            "error" => Self::Error,
            "canceled" => Self::Canceled,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::New => "new",
            Self::Pending => "pending",
            Self::Waiting => "waiting",
            Self::Running => "running",
            Self::Successful => "successful",
            Self::Failed => "failed",
            Self::Error => "error",
            Self::Canceled => "canceled",
            Self::Other(s) => s,
        }
    }

    /// `successful`, `failed`, `error`, `canceled`.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Self::Successful | Self::Failed | Self::Error | Self::Canceled
        )
    }
}

/// A job or workflow job (detail or list entry).
///
/// Its `Debug` output shows the **keys** of `extra_vars` only: AWX keeps a launch's variables,
/// secrets included, in the job record.
#[derive(Clone, PartialEq)]
pub struct Job {
    /// Id (jobs and workflow jobs share one sequence).
    pub id: u64,
    /// Job or workflow job (from `type`; defaults to the endpoint it was read from).
    pub kind: JobKind,
    /// Name (the template's).
    pub name: String,
    /// Status.
    pub status: AapJobStatus,
    /// `failed` flag.
    pub failed: bool,
    /// Creation time.
    pub created: Option<DateTime<Utc>>,
    /// Start time.
    pub started: Option<DateTime<Utc>>,
    /// Finish time.
    pub finished: Option<DateTime<Utc>>,
    /// Seconds elapsed.
    pub elapsed: f64,
    /// `job_explanation`.
    pub job_explanation: String,
    /// `result_traceback`.
    pub result_traceback: String,
    /// `extra_vars` parsed into an object (empty when absent or not a JSON object, e.g. YAML).
    pub extra_vars: Map<String, Value>,
    /// `extra_vars` exactly as the server sent it when it was a string.
    pub extra_vars_raw: Option<String>,
    /// `artifacts` (object, or the no_log string, or null).
    pub artifacts: Value,
    /// `launch_type`.
    pub launch_type: Option<String>,
    /// The job template (jobs, sliced workflow jobs).
    pub job_template: Option<u64>,
    /// The workflow job template (workflow jobs).
    pub workflow_job_template: Option<u64>,
    /// `unified_job_template`.
    pub unified_job_template: Option<u64>,
    /// `is_sliced_job` (workflow jobs).
    pub is_sliced_job: bool,
    /// `event_processing_finished` (jobs, detail view only).
    pub event_processing_finished: Option<bool>,
    /// Root-relative `url`.
    pub url: Option<String>,
    /// The workflow job that launched this job (`summary_fields.source_workflow_job.id`).
    pub source_workflow_job: Option<u64>,
    /// `skip_tags` (jobs; comma-separated, empty when none).
    pub skip_tags: String,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("name", &self.name)
            .field("status", &self.status)
            .field("failed", &self.failed)
            .field("created", &self.created)
            .field("started", &self.started)
            .field("finished", &self.finished)
            .field("elapsed", &self.elapsed)
            .field("job_explanation", &self.job_explanation)
            .field("result_traceback", &self.result_traceback)
            .field(
                "extra_vars_keys",
                &self.extra_vars.keys().collect::<Vec<_>>(),
            )
            .field("artifacts", &self.artifacts)
            .field("launch_type", &self.launch_type)
            .field("job_template", &self.job_template)
            .field("workflow_job_template", &self.workflow_job_template)
            .field("unified_job_template", &self.unified_job_template)
            .field("is_sliced_job", &self.is_sliced_job)
            .field("event_processing_finished", &self.event_processing_finished)
            .field("url", &self.url)
            .field("source_workflow_job", &self.source_workflow_job)
            .field("skip_tags", &self.skip_tags)
            .finish_non_exhaustive()
    }
}

fn as_u64(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn as_string(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn as_time(value: Option<&Value>) -> Option<DateTime<Utc>> {
    let s = value?.as_str()?;
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn as_f64(value: Option<&Value>) -> f64 {
    match value {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0),
        Some(Value::String(s)) => s.parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// Decodes `extra_vars` given as a JSON object or a JSON-encoded string.
pub(crate) fn parse_extra_vars(value: Option<&Value>) -> (Map<String, Value>, Option<String>) {
    match value {
        Some(Value::Object(map)) => (map.clone(), None),
        Some(Value::String(s)) => {
            let parsed = match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(map)) => map,
                _ => Map::new(),
            };
            (parsed, Some(s.clone()))
        }
        _ => (Map::new(), None),
    }
}

impl Job {
    /// A job known by its id, kind and status alone (what a shared read keeps of it); every
    /// other field is empty.
    pub(crate) fn known(id: u64, kind: JobKind, status: AapJobStatus) -> Self {
        Self {
            id,
            kind,
            name: String::new(),
            status,
            failed: false,
            created: None,
            started: None,
            finished: None,
            elapsed: 0.0,
            job_explanation: String::new(),
            result_traceback: String::new(),
            extra_vars: Map::new(),
            extra_vars_raw: None,
            artifacts: Value::Null,
            launch_type: None,
            job_template: None,
            workflow_job_template: None,
            unified_job_template: None,
            is_sliced_job: false,
            event_processing_finished: None,
            url: None,
            source_workflow_job: None,
            skip_tags: String::new(),
        }
    }

    /// Decodes a job from any JSON object; `default_kind` applies when `type` is absent.
    ///
    /// Returns `None` when there is no usable `id`.
    ///
    /// ```
    /// use provkit_aap::{Job, JobKind, AapJobStatus};
    /// let job = Job::from_value(&serde_json::json!({
    ///     "id": 7, "status": "galloping", "extra_vars": "{\"a\": 1}", "artifacts": "no_log",
    ///     "started": null, "elapsed": 1.5, "some_future_field": [1, 2]
    /// }), JobKind::Job).unwrap();
    /// assert_eq!(job.status, AapJobStatus::Other("galloping".into()));
    /// assert_eq!(job.extra_vars["a"], 1);
    /// assert!(job.started.is_none());
    /// ```
    pub fn from_value(value: &Value, default_kind: JobKind) -> Option<Self> {
        let obj = value.as_object()?;
        let id = obj.get("id").and_then(as_u64)?;
        let kind = obj
            .get("type")
            .and_then(Value::as_str)
            .and_then(JobKind::from_type)
            .unwrap_or(default_kind);
        let (extra_vars, extra_vars_raw) = parse_extra_vars(obj.get("extra_vars"));
        let artifacts = match obj.get("artifacts") {
            Some(Value::String(s)) => serde_json::from_str::<Value>(s)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| Value::String(s.clone())),
            Some(other) => other.clone(),
            None => Value::Null,
        };
        Some(Self {
            id,
            kind,
            name: as_string(obj.get("name")),
            status: AapJobStatus::parse(&as_string(obj.get("status"))),
            failed: obj.get("failed").and_then(Value::as_bool).unwrap_or(false),
            created: as_time(obj.get("created")),
            started: as_time(obj.get("started")),
            finished: as_time(obj.get("finished")),
            elapsed: as_f64(obj.get("elapsed")),
            job_explanation: as_string(obj.get("job_explanation")),
            result_traceback: as_string(obj.get("result_traceback")),
            extra_vars,
            extra_vars_raw,
            artifacts,
            launch_type: obj
                .get("launch_type")
                .and_then(Value::as_str)
                .map(str::to_owned),
            job_template: obj.get("job_template").and_then(as_u64),
            workflow_job_template: obj.get("workflow_job_template").and_then(as_u64),
            unified_job_template: obj.get("unified_job_template").and_then(as_u64),
            is_sliced_job: obj
                .get("is_sliced_job")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            event_processing_finished: obj
                .get("event_processing_finished")
                .and_then(Value::as_bool),
            url: obj.get("url").and_then(Value::as_str).map(str::to_owned),
            source_workflow_job: value
                .pointer("/summary_fields/source_workflow_job/id")
                .and_then(as_u64),
            skip_tags: as_string(obj.get("skip_tags")),
        })
    }
}

/// The fields of a job detail this crate reads; everything else is skipped without being built
/// (a detail body is mostly `related`, `summary_fields` and `job_env`).
#[derive(Deserialize)]
pub(crate) struct JobWire {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default, rename = "type")]
    kind: Option<Value>,
    #[serde(default)]
    name: Option<Value>,
    #[serde(default)]
    status: Option<Value>,
    #[serde(default)]
    failed: Option<Value>,
    #[serde(default)]
    created: Option<Value>,
    #[serde(default)]
    started: Option<Value>,
    #[serde(default)]
    finished: Option<Value>,
    #[serde(default)]
    elapsed: Option<Value>,
    #[serde(default)]
    job_explanation: Option<Value>,
    #[serde(default)]
    result_traceback: Option<Value>,
    #[serde(default)]
    extra_vars: Option<Value>,
    #[serde(default)]
    artifacts: Option<Value>,
    #[serde(default)]
    launch_type: Option<Value>,
    #[serde(default)]
    job_template: Option<Value>,
    #[serde(default)]
    workflow_job_template: Option<Value>,
    #[serde(default)]
    unified_job_template: Option<Value>,
    #[serde(default)]
    is_sliced_job: Option<Value>,
    #[serde(default)]
    event_processing_finished: Option<Value>,
    #[serde(default)]
    url: Option<Value>,
    #[serde(default)]
    skip_tags: Option<Value>,
    #[serde(default)]
    summary_fields: Option<SummaryWire>,
}

#[derive(Deserialize)]
struct SummaryWire {
    #[serde(default)]
    source_workflow_job: Option<Value>,
}

impl JobWire {
    /// Converts into the same object [`Job::from_value`] reads.
    pub(crate) fn into_value(self) -> Value {
        let mut map = Map::new();
        let fields = [
            ("id", self.id),
            ("type", self.kind),
            ("name", self.name),
            ("status", self.status),
            ("failed", self.failed),
            ("created", self.created),
            ("started", self.started),
            ("finished", self.finished),
            ("elapsed", self.elapsed),
            ("job_explanation", self.job_explanation),
            ("result_traceback", self.result_traceback),
            ("extra_vars", self.extra_vars),
            ("artifacts", self.artifacts),
            ("launch_type", self.launch_type),
            ("skip_tags", self.skip_tags),
            ("job_template", self.job_template),
            ("workflow_job_template", self.workflow_job_template),
            ("unified_job_template", self.unified_job_template),
            ("is_sliced_job", self.is_sliced_job),
            ("event_processing_finished", self.event_processing_finished),
            ("url", self.url),
        ];
        for (key, value) in fields {
            if let Some(value) = value {
                map.insert(key.to_owned(), value);
            }
        }
        if let Some(source) = self.summary_fields.and_then(|s| s.source_workflow_job) {
            map.insert(
                "summary_fields".to_owned(),
                serde_json::json!({ "source_workflow_job": source }),
            );
        }
        Value::Object(map)
    }
}

/// The body of a launch `POST` (only set fields are sent; `null` is never sent).
///
/// ```
/// use provkit_aap::LaunchRequest;
/// let req = LaunchRequest::new(serde_json::json!({"network_name": "net-a"}).as_object().unwrap().clone())
///     .limit("")
///     .verbosity(0);
/// let body = serde_json::to_value(&req).unwrap();
/// assert_eq!(body, serde_json::json!({"extra_vars": {"network_name": "net-a"}, "limit": "", "verbosity": 0}));
/// ```
#[derive(Clone, Default, PartialEq, Serialize)]
pub struct LaunchRequest {
    /// Extra variables, sent as a JSON object.
    pub extra_vars: Map<String, Value>,
    /// `limit` (`""` is meaningful: all hosts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// Inventory id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inventory: Option<u64>,
    /// `job_tags`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_tags: Option<String>,
    /// `skip_tags`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_tags: Option<String>,
    /// `verbosity` (0–5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<u8>,
    /// `diff_mode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_mode: Option<bool>,
    /// `scm_branch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scm_branch: Option<String>,
    /// Any other launch field, sent verbatim (`null` values are dropped).
    #[serde(flatten, serialize_with = "serialize_without_nulls")]
    pub other: Map<String, Value>,
    /// The latest time the request may leave the client (not part of the body). Checked after
    /// the client's own waits (circuit breaker admission, rate limiter), right before the
    /// request is written: past it the launch fails with [`Error::SendByPassed`](crate::Error::SendByPassed),
    /// certainly not sent. `None`: no limit.
    #[serde(skip)]
    pub send_by: Option<tokio::time::Instant>,
}

fn serialize_without_nulls<S: serde::Serializer>(
    map: &Map<String, Value>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut out = serializer.serialize_map(None)?;
    for (key, value) in map.iter().filter(|(_, v)| !v.is_null()) {
        out.serialize_entry(key, value)?;
    }
    out.end()
}

impl std::fmt::Debug for LaunchRequest {
    /// Shows only the extra_vars **keys**: values may hold kubeconfigs and passwords.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaunchRequest")
            .field(
                "extra_vars_keys",
                &self.extra_vars.keys().collect::<Vec<_>>(),
            )
            .field("limit", &self.limit)
            .field("inventory", &self.inventory)
            .field("job_tags", &self.job_tags)
            .field("skip_tags", &self.skip_tags)
            .field("verbosity", &self.verbosity)
            .field("diff_mode", &self.diff_mode)
            .field("scm_branch", &self.scm_branch)
            .field("other_keys", &self.other.keys().collect::<Vec<_>>())
            .field("send_by", &self.send_by)
            .finish()
    }
}

impl LaunchRequest {
    /// A launch with these extra variables.
    pub fn new(extra_vars: Map<String, Value>) -> Self {
        Self {
            extra_vars,
            ..Self::default()
        }
    }

    /// Sets [`send_by`](Self::send_by): the request must leave the client by `at`.
    #[must_use]
    pub fn send_by(mut self, at: tokio::time::Instant) -> Self {
        self.send_by = Some(at);
        self
    }

    /// Sets `limit`.
    #[must_use]
    pub fn limit(mut self, limit: impl Into<String>) -> Self {
        self.limit = Some(limit.into());
        self
    }

    /// Sets `verbosity`.
    #[must_use]
    pub fn verbosity(mut self, verbosity: u8) -> Self {
        self.verbosity = Some(verbosity);
        self
    }

    /// Sets `diff_mode`.
    #[must_use]
    pub fn diff_mode(mut self, on: bool) -> Self {
        self.diff_mode = Some(on);
        self
    }

    /// Sets `inventory`.
    #[must_use]
    pub fn inventory(mut self, id: u64) -> Self {
        self.inventory = Some(id);
        self
    }
}

/// What a launch created.
///
/// Its `Debug` output shows the **names** of the ignored fields only: AAP echoes ignored
/// `extra_vars` back whole, secrets included.
#[derive(Clone, PartialEq)]
pub struct Launched {
    /// The new job's id (`job`, `workflow_job` or `id`).
    pub id: u64,
    /// Job or workflow job (a sliced job template creates a workflow job).
    pub kind: JobKind,
    /// Initial status (normally `pending`, never treated as terminal by the launch).
    pub status: AapJobStatus,
    /// Prompts the server ignored (`{}` when none); also logged as a warning.
    pub ignored_fields: Map<String, Value>,
    /// Root-relative `url` of the new job.
    pub url: Option<String>,
    /// When AAP created the job (`created`, AAP's clock); the provider measures clock skew
    /// from it.
    pub created: Option<DateTime<Utc>>,
}

impl std::fmt::Debug for Launched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launched")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("status", &self.status)
            .field(
                "ignored_fields",
                &self.ignored_fields.keys().collect::<Vec<_>>(),
            )
            .field("url", &self.url)
            .finish()
    }
}

impl Launched {
    /// Decodes a launch response.
    pub(crate) fn from_value(value: &Value, default_kind: JobKind) -> Option<Self> {
        let obj = value.as_object()?;
        let kind = obj
            .get("type")
            .and_then(Value::as_str)
            .and_then(JobKind::from_type)
            .unwrap_or(
                if obj.contains_key("workflow_job") && !obj.contains_key("job") {
                    JobKind::WorkflowJob
                } else {
                    default_kind
                },
            );
        let id = match kind {
            JobKind::Job => obj.get("job").and_then(as_u64),
            JobKind::WorkflowJob => obj.get("workflow_job").and_then(as_u64),
        }
        .or_else(|| obj.get("id").and_then(as_u64))?;
        Some(Self {
            id,
            kind,
            status: AapJobStatus::parse(&as_string(obj.get("status"))),
            ignored_fields: obj
                .get("ignored_fields")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            url: obj.get("url").and_then(Value::as_str).map(str::to_owned),
            created: as_time(obj.get("created")),
        })
    }
}

/// The answer to a cancel `POST`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelOutcome {
    /// 202: cancellation requested; the job may stay `running` for a while.
    Accepted,
    /// 405: the job had already finished.
    AlreadyFinished,
}

/// One job event (`jobs/<id>/job_events/` item), the fields used to explain a failure.
///
/// A playbook failure leaves `job_explanation` and `result_traceback` empty (aap-observed.md
/// §13.2); what failed is only in the `runner_on_failed` events.
///
/// ```
/// use provkit_aap::AapJobEvent;
/// let e = AapJobEvent::from_value(&serde_json::json!({
///     "counter": 7, "event": "runner_on_failed", "failed": true, "task": "Create VM",
///     "host_name": "localhost", "event_data": {"res": {"msg": "quota exceeded"}},
/// })).unwrap();
/// assert!(e.is_task_failure());
/// assert_eq!(e.summary(), "Create VM on localhost: quota exceeded");
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AapJobEvent {
    /// Position in the job's event stream.
    pub counter: u64,
    /// Event name (`runner_on_failed`, `playbook_on_task_start`, …).
    pub event: String,
    /// `failed` (AWX also sets it on the parents of a failed event).
    pub failed: bool,
    /// Task name.
    pub task: String,
    /// Host name.
    pub host_name: String,
    /// The event's standard output (may hold ANSI colour codes).
    pub stdout: String,
    /// `event_data.res.msg` when it is a string.
    pub result_msg: Option<String>,
}

impl AapJobEvent {
    /// Decodes an event; `None` when `value` is not an object.
    pub fn from_value(value: &Value) -> Option<Self> {
        let obj = value.as_object()?;
        let text = |k: &str| as_string(obj.get(k));
        Some(Self {
            counter: obj.get("counter").and_then(as_u64).unwrap_or(0),
            event: text("event"),
            failed: obj.get("failed").and_then(Value::as_bool).unwrap_or(false),
            task: text("task"),
            host_name: text("host_name"),
            stdout: text("stdout"),
            result_msg: obj
                .get("event_data")
                .and_then(|d| d.get("res"))
                .and_then(|r| r.get("msg"))
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// A failed task on a host (`runner_on_failed`, `runner_item_on_failed`,
    /// `runner_on_unreachable`, `runner_on_async_failed`), not a parent event marked failed.
    pub fn is_task_failure(&self) -> bool {
        self.failed && self.event.starts_with("runner_")
    }

    /// `"<task> on <host>: <message>"`, the message being `event_data.res.msg` or else the
    /// event's stdout without colour codes.
    pub fn summary(&self) -> String {
        let message = self
            .result_msg
            .clone()
            .unwrap_or_else(|| strip_ansi(&self.stdout).trim().to_owned());
        let mut out = String::new();
        if !self.task.is_empty() {
            out.push_str(&self.task);
        }
        if !self.host_name.is_empty() {
            if !out.is_empty() {
                out.push_str(" on ");
            }
            out.push_str(&self.host_name);
        }
        if !message.is_empty() {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&message);
        }
        out
    }
}

/// Removes ANSI escape sequences (`ESC [ … letter`).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for n in chars.by_ref() {
                if n.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// One page of a list endpoint (items as JSON trees, or as a slim typed `T`).
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct Page<T = Value> {
    #[serde(default)]
    pub(crate) next: Option<String>,
    #[serde(default = "Vec::new")]
    pub(crate) results: Vec<T>,
}

/// A job of a list page: the slim [`JobWire`] in the usual case, the whole JSON tree when the
/// page did not fit the slim shape (the tolerant path).
#[allow(
    clippy::large_enum_variant,
    reason = "`Wire` is the usual variant; boxing it would cost one allocation per listed job"
)]
pub(crate) enum ListedJob {
    /// Decoded through [`JobWire`]; the rest of the item was skipped without being built.
    Wire(JobWire),
    /// Decoded as a plain JSON tree.
    Full(Value),
}

impl ListedJob {
    /// The object [`Job::from_value`] reads.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Self::Wire(wire) => wire.into_value(),
            Self::Full(value) => value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn job_decoding_is_tolerant() {
        let job = Job::from_value(
            &json!({"id": 2, "type": "job", "status": "error", "failed": true,
                "started": "2026-11-29T12:39:11.367421Z", "finished": "not a date", "elapsed": 1,
                "extra_vars": "---\nfoo: bar", "artifacts": "{\"k\": 1}", "result_traceback": "boom",
                "job_template": 9, "summary_fields": {"x": 1}}),
            JobKind::WorkflowJob,
        )
        .unwrap();
        assert_eq!(job.kind, JobKind::Job);
        assert_eq!(job.status, AapJobStatus::Error);
        assert!(job.started.is_some());
        assert!(job.finished.is_none());
        assert_eq!(job.elapsed, 1.0);
        assert!(job.extra_vars.is_empty());
        assert_eq!(job.extra_vars_raw.as_deref(), Some("---\nfoo: bar"));
        assert_eq!(job.artifacts, json!({"k": 1}));
        assert_eq!(job.job_template, Some(9));
        let no_log = Job::from_value(
            &json!({"id": 3, "artifacts": "**** hidden ****"}),
            JobKind::Job,
        )
        .unwrap();
        assert_eq!(no_log.artifacts, json!("**** hidden ****"));
        assert_eq!(no_log.status, AapJobStatus::Other(String::new()));
        assert!(Job::from_value(&json!({"status": "running"}), JobKind::Job).is_none());
        assert!(Job::from_value(&json!([1]), JobKind::Job).is_none());
    }

    #[test]
    fn wire_decoding_matches_value_decoding() {
        let body = json!({"id": 6, "type": "job", "status": "error", "failed": true, "elapsed": 0.302,
            "extra_vars": "{\"network_name\": \"wf-net\"}", "launch_type": "workflow", "started": null,
            "related": {"stdout": "/api/v2/jobs/6/stdout/"}, "job_env": {"HOME": "/root"},
            "summary_fields": {"source_workflow_job": {"id": 4, "name": "osac-workflow"}, "inventory": {"id": 2}}});
        let bytes = serde_json::to_vec(&body).unwrap();
        let wire: JobWire = serde_json::from_slice(&bytes).unwrap();
        let fast = Job::from_value(&wire.into_value(), JobKind::Job).unwrap();
        let slow = Job::from_value(&body, JobKind::Job).unwrap();
        assert_eq!(fast, slow);
        assert_eq!(fast.source_workflow_job, Some(4));
    }

    #[test]
    fn status_strings_round_trip_and_terminality() {
        for (raw, terminal) in [
            ("new", false),
            ("pending", false),
            ("waiting", false),
            ("running", false),
            ("successful", true),
            ("failed", true),
            ("error", true),
            ("canceled", true),
            ("Successful", false),
            ("approval", false),
        ] {
            let status = AapJobStatus::parse(raw);
            assert_eq!(status.as_str(), raw);
            assert_eq!(status.is_terminal(), terminal, "{raw}");
        }
    }

    #[test]
    fn launch_response_kinds() {
        let job = Launched::from_value(
            &json!({"job": 1, "id": 1, "type": "job", "status": "pending", "ignored_fields": {}}),
            JobKind::Job,
        )
        .unwrap();
        assert_eq!((job.id, job.kind), (1, JobKind::Job));
        let wf = Launched::from_value(
            &json!({"workflow_job": 4, "id": 4, "type": "workflow_job"}),
            JobKind::WorkflowJob,
        )
        .unwrap();
        assert_eq!((wf.id, wf.kind), (4, JobKind::WorkflowJob));
        let sliced = Launched::from_value(
            &json!({"workflow_job": 21, "ignored_fields": {"limit": "web"}, "id": 21, "type": "workflow_job", "is_sliced_job": true}),
            JobKind::Job,
        )
        .unwrap();
        assert_eq!((sliced.id, sliced.kind), (21, JobKind::WorkflowJob));
        assert_eq!(sliced.ignored_fields["limit"], "web");
        let bare = Launched::from_value(&json!({"id": 5}), JobKind::Job).unwrap();
        assert_eq!((bare.id, bare.kind), (5, JobKind::Job));
        let no_type = Launched::from_value(&json!({"workflow_job": 6}), JobKind::Job).unwrap();
        assert_eq!((no_type.id, no_type.kind), (6, JobKind::WorkflowJob));
        assert!(Launched::from_value(&json!({"status": "pending"}), JobKind::Job).is_none());
    }

    #[test]
    fn launch_request_never_sends_null() {
        let mut other = Map::new();
        other.insert("forks".into(), json!(0));
        other.insert("timeout".into(), Value::Null);
        let req = LaunchRequest {
            other,
            ..LaunchRequest::new(Map::new()).diff_mode(false)
        };
        assert_eq!(
            serde_json::to_value(&req).unwrap(),
            json!({"extra_vars": {}, "diff_mode": false, "forks": 0})
        );
    }
}
