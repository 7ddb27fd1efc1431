//! `POST /aap-webhook`: AWX webhook notifications (a notification template of type `webhook`
//! attached to the job templates for started / success / failure) as a second wake-up source
//! beside the websocket.
//!
//! AWX signs nothing (aap-observed.md §13.5): the notification template is configured to send
//! a shared secret in the [`SECRET_HEADER`] header, and a request without it is refused (401).
//! A notification is never trusted for the job's outcome: a final `status` only wakes the object
//! waiting for job `id` (through [`PushWakeups`]), whose reconcile reads the job from AAP. AWX
//! makes **one** attempt per notification (no retry when the operator is down), and a standby
//! replica (which has no reconciles, so no known jobs) drops what it receives: the websocket and
//! polling remain the sources that cannot miss a completion.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use provkit_kube::push::PushWakeups;
use provkit_lifecycle::push::PushSignal;
use serde_json::Value;

/// The header carrying the shared secret (configure it in the notification template's
/// `headers`).
pub const SECRET_HEADER: &str = "x-provkit-webhook-secret";

/// The path the notification template posts to.
pub const PATH: &str = "/aap-webhook";

/// Why a notification was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// The secret header is missing or wrong.
    #[error("the webhook secret is missing or wrong")]
    Unauthorized,
    /// The body is not an AWX notification (JSON with a numeric `id`).
    #[error("the body is not an AWX job notification")]
    Malformed,
}

impl Rejection {
    /// The HTTP status answered.
    pub fn status(self) -> StatusCode {
        match self {
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Malformed => StatusCode::BAD_REQUEST,
        }
    }
}

/// Compares without an early exit on the first differing byte.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Decides on one notification (pure): the job to wake (a final status), `None` for a
/// notification that wakes nothing (`started`), or why it is refused.
///
/// # Errors
/// [`Rejection`].
pub fn decide(headers: &HeaderMap, body: &[u8], secret: &str) -> Result<Option<String>, Rejection> {
    let given = headers
        .get(SECRET_HEADER)
        .map(axum::http::HeaderValue::as_bytes)
        .ok_or(Rejection::Unauthorized)?;
    if secret.is_empty() || !same(given, secret.as_bytes()) {
        return Err(Rejection::Unauthorized);
    }
    let doc: Value = serde_json::from_slice(body).map_err(|_| Rejection::Malformed)?;
    let id = doc
        .get("id")
        .and_then(Value::as_u64)
        .ok_or(Rejection::Malformed)?;
    let status = doc
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let ended = matches!(status, "successful" | "failed" | "error" | "canceled");
    Ok(ended.then(|| id.to_string()))
}

struct Hook {
    secret: String,
    wakeups: PushWakeups,
}

async fn handle(State(hook): State<Arc<Hook>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    match decide(&headers, &body, &hook.secret) {
        Ok(Some(job_id)) => {
            tracing::debug!(job_id, "AAP webhook: a job ended");
            hook.wakeups.apply(PushSignal::JobFinished { job_id });
            StatusCode::ACCEPTED
        }
        Ok(None) => StatusCode::ACCEPTED,
        Err(rejection) => {
            tracing::debug!(%rejection, "AAP webhook refused");
            rejection.status()
        }
    }
}

/// The route: `POST /aap-webhook` waking `wakeups` for notifications carrying `secret`.
pub fn router(secret: String, wakeups: PushWakeups) -> Router {
    Router::new()
        .route(PATH, post(handle))
        .with_state(Arc::new(Hook { secret, wakeups }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(secret: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(s) = secret {
            h.insert(SECRET_HEADER, s.parse().unwrap());
        }
        h
    }

    /// The default success body AWX sent in the capture (§13.5), trimmed.
    const SUCCESS: &str = r#"{"id": 122, "name": "osac-create-virtual-network", "url": "https://platformhost/jobs/playbook/122", "created_by": "admin", "finished": "2026-12-01T19:26:45.541838+00:00", "status": "successful", "traceback": "", "extra_vars": "{\"network_name\": \"hook-ok-1\"}"}"#;

    #[test]
    fn notifications_table() {
        // (secret header, body, decision)
        type Case<'a> = (Option<&'a str>, &'a str, Result<Option<String>, Rejection>);
        let cases: [Case<'_>; 7] = [
            (Some("s3cret"), SUCCESS, Ok(Some("122".into()))),
            (
                Some("s3cret"),
                r#"{"id": 5, "status": "error"}"#,
                Ok(Some("5".into())),
            ),
            (
                Some("s3cret"),
                r#"{"id": 5, "status": "running"}"#,
                Ok(None),
            ),
            (None, SUCCESS, Err(Rejection::Unauthorized)),
            (Some("wrong!"), SUCCESS, Err(Rejection::Unauthorized)),
            (Some("s3cret"), "not json", Err(Rejection::Malformed)),
            (
                Some("s3cret"),
                r#"{"status": "successful"}"#,
                Err(Rejection::Malformed),
            ),
        ];
        for (secret, body, want) in cases {
            assert_eq!(
                decide(&headers(secret), body.as_bytes(), "s3cret"),
                want,
                "{secret:?} {body}"
            );
        }
        // An empty configured secret accepts nothing.
        assert_eq!(
            decide(&headers(Some("")), SUCCESS.as_bytes(), ""),
            Err(Rejection::Unauthorized)
        );
    }

    #[tokio::test]
    async fn a_final_notification_wakes_the_object_waiting_for_the_job_and_nothing_else() {
        use futures::StreamExt as _;
        let wakeups = PushWakeups::new(provkit_lifecycle::push::PollCadence::new(
            std::time::Duration::from_secs(30),
        ));
        let obj = crate::crd::VirtualNetwork {
            metadata: kube::api::ObjectMeta {
                name: Some("net-a".into()),
                namespace: Some("default".into()),
                uid: Some("uid-a".into()),
                ..Default::default()
            },
            spec: crate::crd::VirtualNetworkSpec {
                cidr: "10.0.0.0/24".into(),
                region: None,
            },
            status: None,
        };
        wakeups.record_jobs(
            &obj,
            &[provkit_core::JobStatus::new(
                "122".to_owned(),
                provkit_core::JobType::Provision,
                provkit_core::JobState::Running,
                chrono::DateTime::UNIX_EPOCH,
            )],
        );
        let mut triggers = Box::pin(wakeups.triggers::<crate::crd::VirtualNetwork>());
        let hook = Arc::new(Hook {
            secret: "s3cret".into(),
            wakeups: wakeups.clone(),
        });
        let refused = handle(
            State(hook.clone()),
            headers(Some("nope")),
            Bytes::from_static(SUCCESS.as_bytes()),
        )
        .await;
        assert_eq!(refused, StatusCode::UNAUTHORIZED);
        assert_eq!(wakeups.stats().woken, 0);
        let ok = handle(
            State(hook),
            headers(Some("s3cret")),
            Bytes::from_static(SUCCESS.as_bytes()),
        )
        .await;
        assert_eq!(ok, StatusCode::ACCEPTED);
        let woken = triggers.next().await.unwrap();
        assert_eq!(woken.name, "net-a");
        assert_eq!(wakeups.stats().woken, 1);
    }
}
