//! The negative template cache: a lookup that failed because the template does not exist, is
//! not visible to these credentials, or is ambiguous is answered from memory for a short TTL, so
//! a fleet of failing reconciles does not look the same name up again and again. Server and
//! transport errors are never cached (they say nothing about the template).

use chrono::{DateTime, Utc};

use crate::error::{Error, RequestContext, TemplateCandidate};

/// Why a lookup failed, kept to answer the same lookup again.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Why {
    NotFound {
        name: String,
        organization: Option<String>,
    },
    Forbidden {
        ctx: Box<RequestContext>,
        detail: Option<String>,
    },
    Ambiguous {
        name: String,
        candidates: Vec<TemplateCandidate>,
    },
}

/// A remembered failed lookup and when it expires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Miss {
    why: Why,
    until: DateTime<Utc>,
}

impl Miss {
    /// The miss to remember for `err` until `until`, when `err` says something about the
    /// template itself (not found, forbidden, ambiguous).
    pub(crate) fn of(err: &Error, until: DateTime<Utc>) -> Option<Self> {
        let why = match err {
            Error::TemplateNotFound { name, organization } => Why::NotFound {
                name: name.clone(),
                organization: organization.clone(),
            },
            Error::Forbidden { ctx, detail } => Why::Forbidden {
                ctx: ctx.clone(),
                detail: detail.clone(),
            },
            Error::AmbiguousTemplate { name, candidates } => Why::Ambiguous {
                name: name.clone(),
                candidates: candidates.clone(),
            },
            _ => return None,
        };
        Some(Self { why, until })
    }

    /// Still valid at `now`.
    pub(crate) fn live(&self, now: DateTime<Utc>) -> bool {
        now < self.until
    }

    /// The error the failed lookup returned.
    pub(crate) fn error(&self) -> Error {
        match &self.why {
            Why::NotFound { name, organization } => Error::TemplateNotFound {
                name: name.clone(),
                organization: organization.clone(),
            },
            Why::Forbidden { ctx, detail } => Error::Forbidden {
                ctx: ctx.clone(),
                detail: detail.clone(),
            },
            Why::Ambiguous { name, candidates } => Error::AmbiguousTemplate {
                name: name.clone(),
                candidates: candidates.clone(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_answers_about_the_template_are_remembered_and_replayed_as_they_were() {
        let t = DateTime::UNIX_EPOCH;
        let mut ctx = RequestContext::new(http::Method::GET, "/api/v2/unified_job_templates/");
        ctx.status = http::StatusCode::from_u16(403).ok();
        let cached = [
            Error::TemplateNotFound {
                name: "a".into(),
                organization: Some("o".into()),
            },
            Error::Forbidden {
                ctx: Box::new(ctx.clone()),
                detail: Some("no".into()),
            },
            Error::AmbiguousTemplate {
                name: "a".into(),
                candidates: vec![TemplateCandidate {
                    id: 1,
                    kind: "job_template".into(),
                    organization: None,
                }],
            },
        ];
        for err in &cached {
            let miss = Miss::of(err, t + chrono::Duration::seconds(5)).unwrap();
            assert_eq!(miss.error().to_string(), err.to_string());
            assert!(miss.live(t) && !miss.live(t + chrono::Duration::seconds(5)));
        }
        ctx.status = http::StatusCode::from_u16(503).ok();
        let server = Error::Server {
            ctx: Box::new(ctx),
            summary: "down".into(),
            retry_after: None,
        };
        assert_eq!(Miss::of(&server, t), None);
    }
}
