//! What a path names, under which prefix, and which methods it allows (pure).

use super::super::query::percent_decode;
use super::super::request_log::Endpoint;
use super::super::spec::Mode;

/// A template named by id or by named URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TplRef {
    Id(u64),
    /// `name++org`, or a bare name (legacy: first template with that name).
    Named {
        name: String,
        org: Option<String>,
    },
}

/// Template kind in a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TplKind {
    Job,
    Workflow,
}

/// Job kind in a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobKind {
    Job,
    Workflow,
}

/// A resource under a version root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Api {
    VersionRoot,
    Ping,
    Me,
    Config,
    Organizations,
    Users,
    Tokens,
    TokenDetail(u64),
    PersonalTokens(String),
    Templates(TplKind),
    Template(TplKind, TplRef),
    Launch(TplKind, TplRef),
    SurveySpec(TplKind, TplRef),
    TemplateJobs(TplKind, TplRef),
    UnifiedJobTemplates,
    Jobs(JobKind),
    Job(JobKind, u64),
    Cancel(JobKind, u64),
    Stdout(u64),
    WorkflowNodes(u64),
    /// `jobs/<id>/job_events/`
    JobEvents(u64),
    UnifiedJobs,
}

/// A routed path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// `GET /api/`
    ApiRoot,
    /// `GET /api/controller/`
    ControllerRoot,
    /// `/api/gateway/v1/`
    GatewayRoot,
    /// `/api/gateway/v1/tokens/`
    GatewayTokens,
    /// `/api/gateway/v1/tokens/<id>/`
    GatewayToken(u64),
    /// A controller resource under `prefix` (`/api/v2/` or `/api/controller/v2/`).
    Api { prefix: &'static str, api: Api },
    /// Nothing here.
    NotFound,
}

pub(crate) const AWX_PREFIX: &str = "/api/v2/";
pub(crate) const CONTROLLER_PREFIX: &str = "/api/controller/v2/";

fn parse_id(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 18 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn parse_tpl_ref(seg: &str) -> TplRef {
    if let Some(id) = parse_id(seg) {
        return TplRef::Id(id);
    }
    let decode = |s: &str| percent_decode(s, false).replace("[+]", "+");
    match seg.split_once("++") {
        Some((name, org)) => TplRef::Named {
            name: decode(name),
            org: Some(decode(org)),
        },
        None => TplRef::Named {
            name: decode(seg),
            org: None,
        },
    }
}

fn parse_api(segs: &[&str]) -> Option<Api> {
    use Api as A;
    Some(match segs {
        [] => A::VersionRoot,
        ["ping"] => A::Ping,
        ["me"] => A::Me,
        ["config"] => A::Config,
        ["organizations"] => A::Organizations,
        ["users"] => A::Users,
        ["tokens"] => A::Tokens,
        ["tokens", id] => A::TokenDetail(parse_id(id)?),
        ["users", u, "personal_tokens"] => A::PersonalTokens(percent_decode(u, false)),
        ["job_templates"] => A::Templates(TplKind::Job),
        ["workflow_job_templates"] => A::Templates(TplKind::Workflow),
        [
            kind @ ("job_templates" | "workflow_job_templates"),
            t,
            rest @ ..,
        ] => {
            let k = if *kind == "job_templates" {
                TplKind::Job
            } else {
                TplKind::Workflow
            };
            let r = parse_tpl_ref(t);
            match rest {
                [] => A::Template(k, r),
                ["launch"] => A::Launch(k, r),
                ["survey_spec"] => A::SurveySpec(k, r),
                ["jobs"] if k == TplKind::Job => A::TemplateJobs(k, r),
                ["workflow_jobs"] if k == TplKind::Workflow => A::TemplateJobs(k, r),
                _ => return None,
            }
        }
        ["unified_job_templates"] => A::UnifiedJobTemplates,
        ["jobs"] => A::Jobs(JobKind::Job),
        ["workflow_jobs"] => A::Jobs(JobKind::Workflow),
        ["unified_jobs"] => A::UnifiedJobs,
        ["jobs", id] => A::Job(JobKind::Job, parse_id(id)?),
        ["workflow_jobs", id] => A::Job(JobKind::Workflow, parse_id(id)?),
        ["jobs", id, "cancel"] => A::Cancel(JobKind::Job, parse_id(id)?),
        ["workflow_jobs", id, "cancel"] => A::Cancel(JobKind::Workflow, parse_id(id)?),
        ["jobs", id, "stdout"] => A::Stdout(parse_id(id)?),
        ["workflow_jobs", id, "workflow_nodes"] => A::WorkflowNodes(parse_id(id)?),
        ["jobs", id, "job_events"] => A::JobEvents(parse_id(id)?),
        _ => return None,
    })
}

/// Routes a path that ends with `/` (callers handle the trailing-slash redirect).
pub(crate) fn route(mode: Mode, path: &str) -> Route {
    let Some(inner) = path.strip_prefix("/api/") else {
        return Route::NotFound;
    };
    if !path.ends_with('/') {
        return Route::NotFound;
    }
    let segs: Vec<&str> = inner
        .trim_end_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    if inner.contains("//") {
        return Route::NotFound;
    }
    let awx = matches!(mode, Mode::Awx | Mode::Both);
    let controller = matches!(mode, Mode::Gateway | Mode::Both | Mode::Aap27);
    let gateway = controller;
    match segs.as_slice() {
        [] => Route::ApiRoot,
        ["controller"] if controller => Route::ControllerRoot,
        ["gateway", "v1"] if gateway => Route::GatewayRoot,
        ["gateway", "v1", "tokens"] if gateway => Route::GatewayTokens,
        ["gateway", "v1", "tokens", id] if gateway => {
            parse_id(id).map_or(Route::NotFound, Route::GatewayToken)
        }
        ["v2", rest @ ..] if awx => parse_api(rest).map_or(Route::NotFound, |api| Route::Api {
            prefix: AWX_PREFIX,
            api,
        }),
        ["controller", "v2", rest @ ..] if controller => {
            parse_api(rest).map_or(Route::NotFound, |api| Route::Api {
                prefix: CONTROLLER_PREFIX,
                api,
            })
        }
        _ => Route::NotFound,
    }
}

impl Route {
    /// Methods the resource allows (the `Allow` header).
    pub(crate) fn allow(&self) -> &'static str {
        match self {
            Route::ApiRoot | Route::ControllerRoot | Route::GatewayRoot => "GET, HEAD, OPTIONS",
            Route::GatewayTokens => "GET, POST, HEAD, OPTIONS",
            Route::GatewayToken(_) => "GET, DELETE, HEAD, OPTIONS",
            Route::NotFound => "",
            Route::Api { api, .. } => match api {
                Api::Tokens | Api::PersonalTokens(_) | Api::Organizations => {
                    "GET, POST, HEAD, OPTIONS"
                }
                Api::TokenDetail(_) => "GET, DELETE, HEAD, OPTIONS",
                Api::Launch(..) | Api::Cancel(..) => "GET, POST, HEAD, OPTIONS",
                Api::Job(..) => "GET, DELETE, HEAD, OPTIONS",
                _ => "GET, HEAD, OPTIONS",
            },
        }
    }

    /// Whether anonymous requests are served.
    pub(crate) fn anonymous_ok(&self) -> bool {
        matches!(
            self,
            Route::ApiRoot
                | Route::ControllerRoot
                | Route::GatewayRoot
                | Route::Api {
                    api: Api::VersionRoot | Api::Ping,
                    ..
                }
        )
    }

    /// The counter bucket.
    pub(crate) fn endpoint(&self, method: &str) -> Endpoint {
        match self {
            Route::ApiRoot | Route::ControllerRoot | Route::GatewayRoot => Endpoint::Root,
            Route::GatewayTokens | Route::GatewayToken(_) => Endpoint::Tokens,
            Route::NotFound => Endpoint::Other,
            Route::Api { api, .. } => match api {
                Api::VersionRoot | Api::Config => Endpoint::Root,
                Api::Ping => Endpoint::Ping,
                Api::Me | Api::Users | Api::Organizations => Endpoint::Me,
                Api::Tokens | Api::TokenDetail(_) | Api::PersonalTokens(_) => Endpoint::Tokens,
                Api::Templates(_) | Api::UnifiedJobTemplates => Endpoint::TemplateList,
                Api::Template(..) | Api::SurveySpec(..) => Endpoint::TemplateDetail,
                Api::Launch(..) if method == "POST" => Endpoint::Launch,
                Api::Launch(..) => Endpoint::LaunchInfo,
                Api::TemplateJobs(..) | Api::Jobs(_) | Api::UnifiedJobs => Endpoint::JobList,
                Api::Job(..) => Endpoint::JobDetail,
                Api::Cancel(..) => Endpoint::Cancel,
                Api::Stdout(_) => Endpoint::Stdout,
                Api::WorkflowNodes(_) => Endpoint::WorkflowNodes,
                Api::JobEvents(_) => Endpoint::JobEvents,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_by_mode() {
        assert_eq!(
            route(Mode::Awx, "/api/v2/ping/"),
            Route::Api {
                prefix: AWX_PREFIX,
                api: Api::Ping
            }
        );
        assert_eq!(route(Mode::Gateway, "/api/v2/ping/"), Route::NotFound);
        assert_eq!(
            route(Mode::Gateway, "/api/controller/v2/ping/"),
            Route::Api {
                prefix: CONTROLLER_PREFIX,
                api: Api::Ping
            }
        );
        assert_eq!(
            route(Mode::Awx, "/api/controller/v2/ping/"),
            Route::NotFound
        );
        assert_eq!(route(Mode::Both, "/api/controller/"), Route::ControllerRoot);
        assert_eq!(
            route(Mode::Awx, "/api/v2/job_templates/a%20b[+]c++osac/launch/"),
            Route::Api {
                prefix: AWX_PREFIX,
                api: Api::Launch(
                    TplKind::Job,
                    TplRef::Named {
                        name: "a b+c".into(),
                        org: Some("osac".into())
                    }
                )
            }
        );
        assert_eq!(route(Mode::Awx, "/api/v2/jobs/x/"), Route::NotFound);
        assert_eq!(route(Mode::Awx, "/api/v2/jobs/1"), Route::NotFound);
        assert_eq!(route(Mode::Awx, "/api/v2//jobs/"), Route::NotFound);
    }
}
