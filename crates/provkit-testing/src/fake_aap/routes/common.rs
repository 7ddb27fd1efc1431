//! AWX's texts shared by the handlers.

use super::super::app::Resp;
use super::paths::{JobKind, TplKind};

/// AWX's 404 text for an unknown object of a kind.
pub(crate) fn no_match(kind: &str) -> Resp {
    Resp::detail(404, &format!("No {kind} matches the given query."))
}

pub(crate) fn tpl_model(kind: TplKind) -> &'static str {
    match kind {
        TplKind::Job => "JobTemplate",
        TplKind::Workflow => "WorkflowJobTemplate",
    }
}

pub(crate) fn job_model(kind: JobKind) -> &'static str {
    match kind {
        JobKind::Job => "Job",
        JobKind::Workflow => "WorkflowJob",
    }
}
