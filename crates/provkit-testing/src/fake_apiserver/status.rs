//! `metav1.Status` failure bodies, as the API server sends them for every refused request.
//!
//! Written here because the body is a handful of fields; the field names and `reason` values
//! follow the API conventions' "Response Status Kind" section, so `kube::Error::Api` decodes them
//! exactly like a real server's.

use serde_json::{Value, json};

/// One entry of `details.causes` (a field-level reason for a 422 `Invalid`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cause {
    /// `FieldValueRequired`, `FieldValueTypeInvalid`, `FieldValueForbidden`, …
    pub(crate) reason: &'static str,
    /// Human-readable text.
    pub(crate) message: String,
    /// The JSON path of the field, dotted (`spec.cidr`).
    pub(crate) field: String,
}

/// A refused request: the HTTP code and the `metav1.Status` body that goes with it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApiStatus {
    pub(crate) code: u16,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
    /// `details` (name, group, kind, causes, retryAfterSeconds), if any.
    pub(crate) details: Option<Box<Value>>,
    /// `Retry-After` header value in seconds (429 / 503 faults).
    pub(crate) retry_after: Option<u64>,
}

/// Which object a status is about: `details.{name, group, kind}` (kind is the plural resource
/// name, as the real server fills it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    pub(crate) group: &'a str,
    pub(crate) plural: &'a str,
    pub(crate) name: &'a str,
}

impl Subject<'_> {
    /// `plural.group "name"` (`plural "name"` for the core group), the server's wording.
    fn qualified(&self) -> String {
        if self.group.is_empty() {
            format!("{} \"{}\"", self.plural, self.name)
        } else {
            format!("{}.{} \"{}\"", self.plural, self.group, self.name)
        }
    }

    fn details(&self) -> Value {
        let mut d = json!({"name": self.name, "kind": self.plural});
        if !self.group.is_empty() {
            d["group"] = json!(self.group);
        }
        d
    }
}

impl ApiStatus {
    pub(crate) fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    pub(crate) fn with_details(mut self, details: Value) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    pub(crate) fn not_found(s: Subject<'_>) -> Self {
        Self::new(404, "NotFound", format!("{} not found", s.qualified())).with_details(s.details())
    }

    pub(crate) fn already_exists(s: Subject<'_>) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} already exists", s.qualified()),
        )
        .with_details(s.details())
    }

    /// The optimistic-concurrency refusal (stale `resourceVersion`, failed precondition).
    pub(crate) fn conflict(s: Subject<'_>, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {}: {why}", s.qualified()),
        )
        .with_details(s.details())
    }

    pub(crate) fn modified(s: Subject<'_>) -> Self {
        Self::conflict(
            s,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 `Invalid` with field causes; `kind` is the object's kind as in the real message.
    pub(crate) fn invalid(kind: &str, s: Subject<'_>, causes: &[Cause]) -> Self {
        let text: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let who = if s.group.is_empty() {
            format!("{kind} \"{}\"", s.name)
        } else {
            format!("{kind}.{} \"{}\"", s.group, s.name)
        };
        let message = if text.len() == 1 {
            format!("{who} is invalid: {}", text[0])
        } else {
            format!("{who} is invalid: [{}]", text.join(", "))
        };
        let mut details = s.details();
        details["kind"] = json!(kind);
        details["causes"] = causes
            .iter()
            .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
            .collect();
        Self::new(422, "Invalid", message).with_details(details)
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 410 `Expired`: the requested `resourceVersion` is older than the retained window.
    pub(crate) fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub(crate) fn unsupported_media(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: \
                 application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got {content_type})"
            ),
        )
    }

    pub(crate) fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    pub(crate) fn path_not_found(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }

    /// The JSON body of the status.
    pub(crate) fn body(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            v["details"] = (**d).clone();
        }
        if let Some(secs) = self.retry_after {
            let details = v
                .as_object_mut()
                .map(|o| o.entry("details").or_insert_with(|| json!({})));
            if let Some(d) = details {
                d["retryAfterSeconds"] = json!(secs);
            }
        }
        v
    }
}

/// The `Success` status a DELETE answers with once the object is gone.
pub(crate) fn success_deleted(s: Subject<'_>, uid: &str) -> Value {
    let mut details = s.details();
    details["uid"] = json!(uid);
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}
