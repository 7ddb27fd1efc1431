//! A template's launch requirements (`GET <template>/launch/`) and the check that it will
//! keep the launch's `extra_vars`.
//!
//! Written here rather than taken from a crate: it is one GET and five fields of AWX's answer.

use serde_json::Value;

use crate::client::AapClient;
use crate::error::{Error, Result};
use crate::types::Template;

/// What `GET job_templates/<id>/launch/` (or `workflow_job_templates/<id>/launch/`) reports.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LaunchRequirements {
    /// `ask_variables_on_launch`: the template accepts arbitrary `extra_vars` at launch.
    pub ask_variables_on_launch: bool,
    /// `survey_enabled`: a survey is attached (it accepts only its own variables).
    pub survey_enabled: bool,
    /// `variables_needed_to_start`: survey variables without a default.
    pub variables_needed_to_start: Vec<String>,
    /// `ask_skip_tags_on_launch`: the template takes a launch's `skip_tags` (else AWX puts them
    /// in the answer's `ignored_fields` and launches without them).
    pub ask_skip_tags_on_launch: bool,
    /// `defaults.skip_tags`: the template's own skip tags (a launch's `skip_tags` replaces them).
    pub skip_tags: String,
}

impl LaunchRequirements {
    /// Reads the fields from a launch-endpoint body (missing flags read as `false`).
    pub fn from_value(value: &Value) -> Self {
        let flag = |key: &str| value.get(key).and_then(Value::as_bool).unwrap_or(false);
        Self {
            ask_variables_on_launch: flag("ask_variables_on_launch"),
            survey_enabled: flag("survey_enabled"),
            variables_needed_to_start: value
                .get("variables_needed_to_start")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            ask_skip_tags_on_launch: flag("ask_skip_tags_on_launch"),
            skip_tags: value
                .pointer("/defaults/skip_tags")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// Whether a launch's own `extra_vars` reach the playbook. A survey accepts only its own
    /// questions' variables, so it does not help: only `ask_variables_on_launch` does.
    pub fn keeps_extra_vars(&self) -> bool {
        self.ask_variables_on_launch
    }

    /// `Ok` when the template keeps the launch's `extra_vars`, otherwise
    /// [`Error::TemplateIgnoresExtraVars`] naming the template and the setting to change.
    ///
    /// # Errors
    /// [`Error::TemplateIgnoresExtraVars`].
    ///
    /// ```
    /// use provkit_aap::{LaunchRequirements, Template, TemplateKind};
    /// let t = Template { id: 10, name: "osac-no-ask-vars".into(), kind: TemplateKind::JobTemplate, organization: None, organization_name: None };
    /// let req = LaunchRequirements::from_value(&serde_json::json!({"ask_variables_on_launch": false}));
    /// let err = req.check(&t).unwrap_err();
    /// assert!(err.to_string().contains("ask_variables_on_launch"), "{err}");
    /// assert!(err.to_string().contains("osac-no-ask-vars"), "{err}");
    /// ```
    pub fn check(&self, template: &Template) -> Result<()> {
        if self.keeps_extra_vars() {
            Ok(())
        } else {
            Err(Error::TemplateIgnoresExtraVars {
                name: template.name.clone(),
                id: template.id,
                kind: template.kind,
            })
        }
    }
}

impl AapClient {
    /// `GET <template kind>/<id>/launch/`: what a launch of `template` needs and accepts.
    ///
    /// # Errors
    /// HTTP/decoding errors.
    pub async fn launch_requirements(&self, template: &Template) -> Result<LaunchRequirements> {
        let id = template.id.to_string();
        let path = self
            .path(&[template.kind.endpoint(), &id, "launch"], &[])
            .await?;
        let value = self.get_value(path).await?;
        Ok(LaunchRequirements::from_value(&value))
    }
}
