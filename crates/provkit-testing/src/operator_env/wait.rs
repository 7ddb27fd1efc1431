//! Waiting on outcomes: poll a predicate until it holds, with a generous real-time limit that
//! only catches hangs (the fakes run in virtual time; nothing here asserts a duration).

use std::future::Future;
use std::time::Duration;

use kube::{CustomResourceExt, Resource};
use provkit_kube::{NamespaceScope, ProvisionedResource};
use serde::de::DeserializeOwned;

use super::OperatorTestEnv;
use crate::fake_aap::FakeAapError;
use crate::fake_apiserver::FaultId;

/// How long a wait polls before it gives up (30 s of real time: a hang, not a timing claim).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(30);

/// How often a wait polls.
const POLL_EVERY: Duration = Duration::from_millis(20);

/// What went wrong in an [`OperatorTestEnv`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvError {
    /// A wait gave up.
    #[error("never happened within {waited:?}: {what}{}", last_seen.as_deref().map(|s| format!(" (last seen: {s})")).unwrap_or_default())]
    TimedOut {
        /// What was waited for.
        what: String,
        /// How long it was waited for.
        waited: Duration,
        /// The object's last state seen by an object wait (its JSON), for the failure message.
        last_seen: Option<String>,
    },
    /// A request to the fake API server failed.
    #[error("API server request failed")]
    Kube(#[from] kube::Error),
    /// The fake AAP could not be started.
    #[error("the fake AAP could not be started")]
    FakeAap(#[source] FakeAapError),
    /// The AAP client for the fake AAP could not be built.
    #[error("the AAP client could not be built")]
    AapClient(#[source] provkit_aap::Error),
    /// No job of this template was launched.
    #[error("no job of template {template} was launched")]
    NoJob {
        /// The template's name.
        template: String,
    },
    /// A job's extra_vars (or the part asked for) did not deserialize into the requested type.
    #[error("the extra_vars of job {job} do not fit the requested type")]
    ExtraVars {
        /// The job's id.
        job: u64,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
}

/// Polls `check` every 20 ms until it holds; after `limit` of real time, [`EnvError::TimedOut`].
///
/// # Errors
/// [`EnvError::TimedOut`] naming `what`.
pub async fn eventually<F, Fut>(what: &str, limit: Duration, mut check: F) -> Result<(), EnvError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if check().await {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(EnvError::TimedOut {
                what: what.to_owned(),
                waited: limit,
                last_seen: None,
            });
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

impl<K> OperatorTestEnv<K>
where
    K: Resource<DynamicType = ()>
        + CustomResourceExt
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    K::Scope: NamespaceScope,
{
    /// Polls `check` until it holds ([`eventually`] with [`DEFAULT_WAIT`]).
    ///
    /// # Errors
    /// [`EnvError::TimedOut`] naming `what`.
    pub async fn eventually<F, Fut>(&self, what: &str, check: F) -> Result<(), EnvError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        eventually(what, DEFAULT_WAIT, check).await
    }

    /// Reads the object `name` (as the user) until `holds` is true of it, and returns it. A
    /// missing object is waited for too.
    ///
    /// # Errors
    /// [`EnvError::TimedOut`] naming `what`, with the last state seen; [`EnvError::Kube`] for
    /// a read answered otherwise than with the object or 404.
    pub async fn wait_for(
        &self,
        name: &str,
        what: &str,
        holds: impl Fn(&K) -> bool,
    ) -> Result<K, EnvError> {
        let api = self.api();
        let deadline = tokio::time::Instant::now() + DEFAULT_WAIT;
        loop {
            let last_seen = match api.get_opt(name).await? {
                Some(obj) if holds(&obj) => return Ok(obj),
                Some(obj) => serde_json::to_string(&obj).ok(),
                None => Some("no such object".to_owned()),
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(EnvError::TimedOut {
                    what: format!("{name}: {what}"),
                    waited: DEFAULT_WAIT,
                    last_seen,
                });
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// Waits until the object `name` has the condition `type_` with status `status`
    /// (`"True"`, `"False"`, `"Unknown"`) and returns it.
    ///
    /// # Errors
    /// As [`wait_for`](Self::wait_for).
    pub async fn wait_condition(&self, name: &str, type_: &str, status: &str) -> Result<K, EnvError>
    where
        K: ProvisionedResource,
    {
        self.wait_for(name, &format!("condition {type_}={status}"), |o| {
            o.condition(type_).is_some_and(|c| c.status == status)
        })
        .await
    }

    /// Waits until the object `name` is gone (404): its finalizers were removed after deletion.
    ///
    /// # Errors
    /// As [`wait_for`](Self::wait_for).
    pub async fn wait_gone(&self, name: &str) -> Result<(), EnvError> {
        let api = self.api();
        let deadline = tokio::time::Instant::now() + DEFAULT_WAIT;
        loop {
            let Some(obj) = api.get_opt(name).await? else {
                return Ok(());
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(EnvError::TimedOut {
                    what: format!("{name}: deleted"),
                    waited: DEFAULT_WAIT,
                    last_seen: serde_json::to_string(&obj).ok(),
                });
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// Waits until the fake API server's fault `fault` struck `n` times (at least).
    ///
    /// # Errors
    /// [`EnvError::TimedOut`].
    pub async fn wait_fault_hits(&self, fault: FaultId, n: u64) -> Result<(), EnvError> {
        let what = format!("{n} hit(s) of fault {fault:?}");
        self.eventually(&what, || async { self.apiserver().fault_hits(fault) >= n })
            .await
    }

    /// Waits until the fake AAP counted `n` launches of `template` (at least).
    ///
    /// # Errors
    /// [`EnvError::TimedOut`].
    pub async fn wait_launches(&self, template: &str, n: u64) -> Result<(), EnvError> {
        let what = format!("{n} launch(es) of {template}");
        self.eventually(&what, || async { self.launches(template) >= n })
            .await
    }
}
