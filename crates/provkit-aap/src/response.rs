//! Turning HTTP responses into values or typed errors (pure; no IO).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use http::StatusCode;
use serde_json::Value;

use crate::error::{Error, RequestContext};
use crate::retry::parse_retry_after;

/// Longest summary kept from an error body.
pub(crate) const SUMMARY_CHARS: usize = 300;

/// A received response: status, the headers we use, and the (capped) body.
#[derive(Debug)]
pub(crate) struct RawResponse {
    pub(crate) status: StatusCode,
    pub(crate) content_type: Option<String>,
    pub(crate) location: Option<String>,
    pub(crate) retry_after: Option<String>,
    /// The `Date` header (the server's clock, whole seconds).
    pub(crate) date: Option<String>,
    pub(crate) body: Vec<u8>,
    pub(crate) ctx: RequestContext,
}

impl RawResponse {
    pub(crate) fn is_html(&self) -> bool {
        self.content_type
            .as_deref()
            .is_some_and(|c| c.to_ascii_lowercase().contains("text/html"))
            || looks_like_html(&self.body)
    }

    /// Decodes a JSON body into `T`.
    pub(crate) fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, Error> {
        if self.is_html() {
            return Err(html_instead_of_json(self));
        }
        serde_json::from_slice(&self.body).map_err(|source| Error::Decode {
            ctx: Box::new(self.ctx.clone()),
            message: format!(
                "body starts with {:?}",
                truncate(&String::from_utf8_lossy(&self.body), 120)
            ),
            source: Some(source),
        })
    }
}

fn looks_like_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(256)])
        .trim_start()
        .to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

fn html_instead_of_json(resp: &RawResponse) -> Error {
    let text = String::from_utf8_lossy(&resp.body).to_ascii_lowercase();
    if text.contains("migrat") || text.contains("upgrad") {
        Error::Migrating {
            ctx: Box::new(resp.ctx.clone()),
        }
    } else {
        Error::Decode {
            ctx: Box::new(resp.ctx.clone()),
            message: format!(
                "expected JSON, got an HTML page ({})",
                summarize_body(&resp.body, true)
            ),
            source: None,
        }
    }
}

/// Cuts `s` to at most `max` bytes (at a character boundary), marking the cut.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    let mut out = s.to_owned();
    if provkit_core::text::truncate_to_bytes(&mut out, max) {
        out.push('…');
    }
    out
}

/// A short, safe summary of a body: the JSON `detail`/`error`, an HTML page's title, or the
/// first characters of text.
pub(crate) fn summarize_body(body: &[u8], html: bool) -> String {
    if body.is_empty() {
        return "empty body".to_owned();
    }
    let text = String::from_utf8_lossy(body);
    if html || looks_like_html(body) {
        let lower = text.to_ascii_lowercase();
        let title = lower
            .find("<title>")
            .and_then(|start| {
                lower[start + 7..]
                    .find("</title>")
                    .map(|end| (start + 7, start + 7 + end))
            })
            .map(|(s, e)| text[s..e].trim().to_owned())
            .filter(|t| !t.is_empty());
        return match title {
            Some(title) => format!("HTML page {:?}", truncate(&title, 120)),
            None => format!("HTML page of {} bytes", body.len()),
        };
    }
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        if let Some(detail) = json_detail(&value) {
            return truncate(&detail, SUMMARY_CHARS);
        }
        let (fields, _) = field_errors(&value);
        if !fields.is_empty() {
            let joined = fields
                .iter()
                .map(|(k, v)| format!("{k}: {}", v.join(" ")))
                .collect::<Vec<_>>()
                .join("; ");
            return truncate(&joined, SUMMARY_CHARS);
        }
    }
    truncate(text.trim(), SUMMARY_CHARS)
}

fn json_detail(value: &Value) -> Option<String> {
    let obj = value.as_object()?;
    ["detail", "error"]
        .iter()
        .find_map(|key| match obj.get(*key)? {
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        })
}

fn value_messages(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().flat_map(value_messages).collect(),
        Value::Bool(_) | Value::Number(_) => vec![value.to_string()],
        Value::Object(_) => vec![truncate(&value.to_string(), SUMMARY_CHARS)],
        Value::Null => Vec::new(),
    }
}

/// Field errors of a 400 body (field → messages) and its `detail`/`error` text.
pub(crate) fn field_errors(value: &Value) -> (BTreeMap<String, Vec<String>>, Option<String>) {
    let mut fields = BTreeMap::new();
    match value {
        Value::Object(obj) => {
            for (key, val) in obj {
                if key == "detail" || key == "error" {
                    continue;
                }
                let messages: Vec<String> = value_messages(val)
                    .into_iter()
                    .map(|m| truncate(&m, SUMMARY_CHARS))
                    .collect();
                fields.insert(key.clone(), messages);
            }
        }
        Value::Array(_) => {
            fields.insert("__all__".to_owned(), value_messages(value));
        }
        _ => {}
    }
    (
        fields,
        json_detail(value).map(|d| truncate(&d, SUMMARY_CHARS)),
    )
}

/// AWX's detail for a filter it refuses (`Filtering on <field> is not allowed.`).
fn is_refused_filter(detail: &str) -> bool {
    detail.starts_with("Filtering on ") && detail.contains(" is not allowed")
}

/// Maps a non-2xx response to an error (the context must already hold status and request id).
pub(crate) fn classify(resp: &RawResponse, now: SystemTime) -> Error {
    let ctx = Box::new(resp.ctx.clone());
    let html = resp.is_html();
    let detail = || {
        if html {
            Some(summarize_body(&resp.body, true))
        } else {
            serde_json::from_slice::<Value>(&resp.body)
                .ok()
                .and_then(|v| json_detail(&v))
                .map(|d| truncate(&d, SUMMARY_CHARS))
        }
    };
    let retry_after: Option<Duration> = resp
        .retry_after
        .as_deref()
        .and_then(|v| parse_retry_after(v, now));
    // AWX refuses some filters (`Filtering on extra_vars is not allowed.`): 403 with production
    // settings, 400 with development settings. Either way a request error, not an auth failure.
    if matches!(resp.status.as_u16(), 400 | 403)
        && let Some(d) = detail().filter(|d| is_refused_filter(d))
    {
        return Error::FilterRefused {
            ctx,
            detail: Some(d),
        };
    }
    match resp.status.as_u16() {
        300..=399 => {
            let location = resp.location.clone();
            if location
                .as_deref()
                .is_some_and(|l| l.contains("/migrations_notran"))
            {
                Error::Migrating { ctx }
            } else {
                Error::Redirect { ctx, location }
            }
        }
        400 => {
            let value = serde_json::from_slice::<Value>(&resp.body).unwrap_or(Value::Null);
            let (fields, detail_text) = field_errors(&value);
            let detail_text = if value.is_null() {
                Some(summarize_body(&resp.body, html))
            } else {
                detail_text
            };
            Error::BadRequest {
                ctx,
                detail: detail_text,
                fields,
            }
        }
        401 => Error::Unauthorized {
            ctx,
            detail: detail(),
        },
        403 => Error::Forbidden {
            ctx,
            detail: detail(),
        },
        404 => Error::NotFound {
            ctx,
            detail: detail(),
            hint: None,
        },
        405 => Error::MethodNotAllowed {
            ctx,
            detail: detail(),
        },
        429 => Error::RateLimited { ctx, retry_after },
        500..=599 => Error::Server {
            ctx,
            summary: summarize_body(&resp.body, html),
            retry_after,
        },
        _ => Error::Status {
            ctx,
            summary: summarize_body(&resp.body, html),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(status: u16, content_type: &str, body: &str) -> RawResponse {
        let mut ctx = RequestContext::new(http::Method::GET, "/api/v2/jobs/1/");
        ctx.status = StatusCode::from_u16(status).ok();
        ctx.request_id = Some("abc123".into());
        RawResponse {
            status: StatusCode::from_u16(status).unwrap(),
            content_type: Some(content_type.into()),
            location: None,
            retry_after: None,
            date: None,
            body: body.as_bytes().to_vec(),
            ctx,
        }
    }

    type Check = fn(&Error) -> bool;

    #[test]
    fn status_mapping_table() {
        let json = "application/json";
        let cases: Vec<(u16, &str, Check)> = vec![
            (
                401,
                r#"{"detail":"Authentication credentials were not provided."}"#,
                |e| matches!(e, Error::Unauthorized { .. }),
            ),
            (
                403,
                r#"{"detail":"You do not have permission to perform this action."}"#,
                |e| matches!(e, Error::Forbidden { .. }),
            ),
            (404, r#"{"detail":"Not found."}"#, |e| e.is_not_found()),
            (405, r#"{"detail":"Method \"POST\" not allowed."}"#, |e| {
                e.is_method_not_allowed()
            }),
            (429, "", |e| {
                matches!(e, Error::RateLimited { .. }) && e.is_retryable()
            }),
            (500, r#"{"detail":"A server error has occurred."}"#, |e| {
                matches!(e, Error::Server { .. }) && !e.is_retryable()
            }),
            (502, "", |e| e.is_retryable()),
            (503, "", |e| e.is_retryable()),
            (504, "", |e| e.is_retryable()),
            (
                409,
                r#"{"error":"Resource is being used by running jobs."}"#,
                |e| matches!(e, Error::Status { .. }),
            ),
            (413, "too big", |e| {
                matches!(e, Error::Status { .. }) && !e.is_outcome_unknown()
            }),
        ];
        for (status, body, check) in cases {
            let err = classify(&resp(status, json, body), SystemTime::now());
            assert!(check(&err), "{status}: {err:?}");
            assert_eq!(err.status().map(|s| s.as_u16()), Some(status));
            assert_eq!(err.request_id(), Some("abc123"));
            let text = err.to_string();
            assert!(text.contains("GET /api/v2/jobs/1/"), "{text}");
            assert!(text.contains(&status.to_string()), "{text}");
        }
    }

    #[test]
    fn refused_filters_are_request_errors_not_auth() {
        let body = r#"{"detail":"Filtering on extra_vars is not allowed."}"#;
        for status in [403, 400] {
            let err = classify(&resp(status, "application/json", body), SystemTime::now());
            assert!(
                matches!(err, Error::FilterRefused { .. }),
                "{status}: {err:?}"
            );
            assert!(!err.is_auth(), "{status}");
            assert!(!err.is_outcome_unknown());
            assert!(err.to_string().contains("refuses this filter"), "{err}");
        }
        let plain = classify(
            &resp(
                403,
                "application/json",
                r#"{"detail":"You do not have permission to perform this action."}"#,
            ),
            SystemTime::now(),
        );
        assert!(plain.is_auth());
    }

    #[test]
    fn detail_only_bad_request_has_no_double_colon() {
        let err = classify(
            &resp(
                400,
                "application/json",
                r#"{"detail": "Job has no field named 'no_such_field'"}"#,
            ),
            SystemTime::now(),
        );
        let text = err.to_string();
        assert!(
            text.ends_with("bad request: Job has no field named 'no_such_field'"),
            "{text}"
        );
        assert!(!text.contains(": :"), "{text}");
        let both = classify(
            &resp(
                400,
                "application/json",
                r#"{"limit": ["x"], "detail": "y"}"#,
            ),
            SystemTime::now(),
        );
        assert!(
            both.to_string().ends_with("bad request: limit: x; y"),
            "{both}"
        );
    }

    /// A 404 as AWX's API answers it (with its product header), to `path`.
    fn awx_404(path: &str, content_type: &str, body: &str) -> RawResponse {
        let mut r = resp(404, content_type, body);
        r.ctx.path = path.to_owned();
        r.ctx.product = Some("AWX".into());
        r
    }

    /// Issue 27 (4): what makes a 404 proof that a job is gone is who answered it and to what
    /// request, not its message: both Django REST framework messages count when AWX's API
    /// answered a detail path; a proxy's 404, an HTML page and a list's `Invalid page.` do not.
    #[test]
    fn only_404s_answered_by_the_api_on_a_detail_path_are_authoritative() {
        let json = "application/json";
        for body in [
            r#"{"detail": "No Job matches the given query."}"#,
            r#"{"detail": "Not found."}"#,
        ] {
            for path in ["/api/v2/jobs/7/", "/api/controller/v2/jobs/7/cancel/"] {
                let gone = classify(&awx_404(path, json, body), SystemTime::now());
                assert!(gone.is_no_match() && gone.is_not_found(), "{path} {body}");
            }
            // The same body from a proxy (no product header): not proof.
            let proxied = classify(&resp(404, json, body), SystemTime::now());
            assert!(proxied.is_not_found() && !proxied.is_no_match(), "{body}");
        }
        let invalid_page = classify(
            &awx_404(
                "/api/v2/jobs/?page=9999&page_size=10",
                json,
                r#"{"detail": "Invalid page."}"#,
            ),
            SystemTime::now(),
        );
        assert!(!invalid_page.is_no_match());
        let empty = classify(&awx_404("/api/v2/jobs/7/", json, ""), SystemTime::now());
        assert!(empty.is_not_found() && !empty.is_no_match());
        let html = classify(
            &resp(
                404,
                "text/html",
                "<html><title>Page not found</title></html>",
            ),
            SystemTime::now(),
        );
        assert!(!html.is_no_match());
    }

    #[test]
    fn unauthorized_mentions_token_expiry() {
        let err = classify(
            &resp(401, "application/json", r#"{"detail":"x"}"#),
            SystemTime::now(),
        );
        assert!(err.to_string().contains("expired"), "{err}");
    }

    #[test]
    fn bad_request_renders_field_errors() {
        let body = r#"{"limit": ["Field is not configured to prompt on launch."], "extra_vars": ["Variables foo are not allowed on launch."]}"#;
        let err = classify(&resp(400, "application/json", body), SystemTime::now());
        let Error::BadRequest { fields, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(
            fields["limit"],
            vec!["Field is not configured to prompt on launch."]
        );
        let text = err.to_string();
        assert!(text.contains("limit: Field is not configured"), "{text}");
        assert!(text.contains("extra_vars: Variables foo"), "{text}");
        let list = classify(
            &resp(400, "application/json", r#"["a","b"]"#),
            SystemTime::now(),
        );
        let Error::BadRequest { fields, .. } = &list else {
            panic!()
        };
        assert_eq!(fields["__all__"], vec!["a", "b"]);
    }

    #[test]
    fn html_bodies_are_summarised_not_dumped() {
        let filler = "x".repeat(100_000);
        let body = format!(
            "<html><head><title>502 Bad Gateway</title></head><body>{filler}</body></html>"
        );
        let err = classify(&resp(502, "text/html", &body), SystemTime::now());
        let text = err.to_string();
        assert!(text.contains("502 Bad Gateway"), "{text}");
        assert!(text.len() < 400, "{}", text.len());
        let untitled = summarize_body(format!("<!DOCTYPE html><p>{filler}</p>").as_bytes(), false);
        assert!(untitled.starts_with("HTML page of"), "{untitled}");
        let plain = summarize_body(filler.as_bytes(), false);
        assert!(plain.chars().count() <= SUMMARY_CHARS + 1);
    }

    #[test]
    fn redirects() {
        let mut r = resp(302, "text/html", "");
        r.location = Some("/migrations_notran/".into());
        assert!(matches!(
            classify(&r, SystemTime::now()),
            Error::Migrating { .. }
        ));
        r.location = Some("/api/v2/jobs/1/".into());
        assert!(matches!(
            classify(&r, SystemTime::now()),
            Error::Redirect { .. }
        ));
        let page = resp(
            200,
            "text/html",
            "<html><title>Upgrading</title>AWX is migrating</html>",
        );
        assert!(matches!(page.json::<Value>(), Err(Error::Migrating { .. })));
    }

    #[test]
    fn retry_after_both_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let mut r = resp(429, "text/plain", "slow down");
        r.retry_after = Some("3".into());
        assert_eq!(
            classify(&r, now).retry_after(),
            Some(Duration::from_secs(3))
        );
        r.retry_after = Some("Wed, 21 Oct 2015 07:28:07 GMT".into());
        assert_eq!(
            classify(&r, now).retry_after(),
            Some(Duration::from_secs(7))
        );
    }

    #[test]
    fn malformed_json_is_a_decode_error_with_a_short_message() {
        let r = resp(200, "application/json", "{\"id\": 1, \"status\": ");
        let err = r.json::<Value>().unwrap_err();
        assert!(matches!(err, Error::Decode { .. }));
        assert!(err.is_outcome_unknown());
    }
}
