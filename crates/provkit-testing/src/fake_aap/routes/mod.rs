//! URL routing: which resource a path names, under which prefix, and which methods it allows.

pub(crate) mod common;
pub(crate) mod jobs;
pub(crate) mod launch;
pub(crate) mod lists;
pub(crate) mod options;
pub(crate) mod paths;
pub(crate) mod root;
pub(crate) mod templates;
pub(crate) mod tokens;

use super::app::{App, Ctx, Resp};
pub(crate) use paths::{AWX_PREFIX, Api, CONTROLLER_PREFIX, Route, route};

/// Dispatches a resource under a version root.
pub(crate) fn api(app: &App, ctx: &Ctx<'_>, prefix: &str, api: &Api) -> Resp {
    match api {
        Api::VersionRoot => root::version_root(prefix),
        Api::Ping => root::ping(app),
        Api::Me => root::me(app, ctx, prefix),
        Api::Config => root::config(app),
        Api::Users => root::users(app, ctx, prefix),
        Api::Organizations => root::organizations(app, ctx, prefix),
        Api::Tokens => tokens::tokens(app, ctx, prefix, None),
        Api::PersonalTokens(user) => tokens::tokens(app, ctx, prefix, Some(user)),
        Api::TokenDetail(id) => tokens::token_detail(app, ctx, prefix, *id),
        Api::Templates(kind) => lists::templates(app, ctx, prefix, Some(*kind)),
        Api::UnifiedJobTemplates => lists::templates(app, ctx, prefix, None),
        Api::Template(kind, r) => templates::detail(app, ctx, prefix, *kind, r),
        Api::SurveySpec(kind, r) => templates::survey_spec(app, ctx, *kind, r),
        Api::Launch(kind, r) if ctx.method == "POST" => launch::launch(app, ctx, prefix, *kind, r),
        Api::Launch(kind, r) => templates::launch_info(app, ctx, *kind, r),
        Api::TemplateJobs(kind, r) => lists::template_jobs(app, ctx, prefix, *kind, r),
        Api::Jobs(kind) => lists::jobs(app, ctx, prefix, Some(*kind), None),
        Api::UnifiedJobs => lists::jobs(app, ctx, prefix, None, None),
        Api::Job(kind, id) => jobs::detail(app, ctx, prefix, *kind, *id),
        Api::Cancel(kind, id) => jobs::cancel(app, ctx, *kind, *id),
        Api::Stdout(id) => jobs::stdout(app, ctx, *id),
        Api::WorkflowNodes(id) => jobs::workflow_nodes(app, ctx, prefix, *id),
        Api::JobEvents(id) => jobs::job_events(app, ctx, prefix, *id),
    }
}
