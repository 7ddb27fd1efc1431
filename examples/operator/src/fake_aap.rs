//! The `--fake-aap` demo backend: provkit-testing's fake AAP in the operator's process, with
//! its jobs optionally kept in a JSON file (`--fake-aap-state FILE`) so a restarted operator
//! finds the jobs it launched instead of marking them purged.
//!
//! The file is rewritten (to a temporary file, then renamed) every [`SAVE_INTERVAL`] and once
//! more when the operator stops; a `kill -9` loses at most the jobs of the last interval.

use std::path::{Path, PathBuf};
use std::time::Duration;

use provkit_aap::provider::Envelope;
use provkit_testing::fake_aap::{FakeAap, FakeAapServer, JobScript, JobTemplateSpec, JobsSnapshot};

/// How often the state file is rewritten.
pub const SAVE_INTERVAL: Duration = Duration::from_secs(1);

/// A `--fake-aap` failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FakeAapStateError {
    /// Reading or writing the state file failed.
    #[error("fake AAP state file {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The state file is not a jobs snapshot.
    #[error("fake AAP state file {path} is not a jobs snapshot")]
    Decode {
        /// The file.
        path: PathBuf,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// Starting the fake or restoring its jobs failed.
    #[error("starting the fake AAP failed")]
    Fake(#[source] provkit_testing::fake_aap::FakeAapError),
}

/// Starts the fake with the operator's two templates (`<prefix>-create-virtual-network`,
/// `<prefix>-delete-virtual-network`, 10 s jobs) and, with `state`, the jobs saved there. Their
/// playbooks read the resource's spec where `envelope` puts it (`osac_job_vars.resource.spec`
/// for OSAC's current playbooks): a job launched with another envelope fails as Ansible does on
/// an undefined variable.
///
/// # Errors
/// [`FakeAapStateError`].
pub async fn start(
    prefix: &str,
    envelope: Envelope,
    state: Option<&Path>,
) -> Result<FakeAapServer, FakeAapStateError> {
    let spec = format!("{}.spec", envelope.resource_path());
    let template = |action: &str| JobTemplateSpec {
        script: Some(JobScript::successful(Duration::from_secs(10))),
        ..JobTemplateSpec::new(format!("{prefix}-{action}-virtual-network"), "osac")
            .reading([spec.as_str()])
    };
    let server = FakeAap::builder()
        .organization("osac")
        .job_template(template("create"))
        .job_template(template("delete"))
        .start()
        .await
        .map_err(FakeAapStateError::Fake)?;
    match state {
        Some(path) => {
            if let Some(snap) = load(path)? {
                server
                    .aap()
                    .restore_jobs(&snap)
                    .map_err(FakeAapStateError::Fake)?;
            }
            tracing::info!(
                url = %server.api_base(),
                state = %path.display(),
                jobs = server.aap().jobs().len(),
                "started in-process fake AAP; its jobs are kept in the state file"
            );
        }
        None => tracing::warn!(
            url = %server.api_base(),
            "started in-process fake AAP; its jobs live in memory only and are lost on restart (--fake-aap-state FILE keeps them)"
        ),
    }
    Ok(server)
}

fn load(path: &Path) -> Result<Option<JobsSnapshot>, FakeAapStateError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(FakeAapStateError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|source| FakeAapStateError::Decode {
            path: path.to_owned(),
            source,
        })
}

/// Writes the fake's jobs to `path` (through a temporary file next to it, then a rename).
///
/// # Errors
/// [`FakeAapStateError::Io`].
pub fn save(aap: &FakeAap, path: &Path) -> Result<(), FakeAapStateError> {
    let io = |source| FakeAapStateError::Io {
        path: path.to_owned(),
        source,
    };
    let text =
        serde_json::to_string(&aap.snapshot_jobs()).map_err(|e| io(std::io::Error::other(e)))?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// Saves the fake's jobs every [`SAVE_INTERVAL`] until dropped (spawn it); failures are logged.
pub async fn save_periodically(aap: FakeAap, path: PathBuf) {
    let mut tick = tokio::time::interval(SAVE_INTERVAL);
    loop {
        tick.tick().await;
        if let Err(e) = save(&aap, &path) {
            tracing::warn!(error = %provkit_kube::ErrorChain(&e), "saving the fake AAP state failed");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use provkit_aap::{AapClient, LaunchRequest};

    fn client(server: &FakeAapServer) -> AapClient {
        AapClient::builder(server.base_url())
            .token(server.token())
            .build()
            .unwrap()
    }

    /// A job launched before a restart is still known after it (same id, payload and
    /// status), so the restarted operator polls it instead of marking it purged; without a
    /// state file it is gone (404).
    #[tokio::test]
    async fn a_restart_with_a_state_file_keeps_the_jobs() {
        // One test per process writes this file: the process id keeps parallel runs apart.
        let path = std::env::temp_dir().join(format!(
            "provkit-fake-aap-state-{}.json",
            std::process::id()
        ));
        let first = start("osac", Envelope::OsacJobVars, Some(&path))
            .await
            .unwrap();
        let aap = client(&first);
        let template = aap
            .get_template("osac-create-virtual-network")
            .await
            .unwrap();
        let mut request = LaunchRequest::default();
        request
            .extra_vars
            .insert("cidr".into(), serde_json::json!("10.0.0.0/24"));
        let launched = aap.launch(&template, &request).await.unwrap();
        save(first.aap(), &path).unwrap();
        let before = first.aap().jobs();
        first.shutdown().await;

        let restarted = start("osac", Envelope::OsacJobVars, Some(&path))
            .await
            .unwrap();
        assert_eq!(restarted.aap().jobs(), before);
        let job = client(&restarted).get_job(launched.id).await.unwrap();
        assert_eq!(job.id, launched.id);
        assert!(
            restarted.aap().jobs()[0].extra_vars.contains("10.0.0.0/24"),
            "{:?}",
            restarted.aap().jobs()
        );
        restarted.shutdown().await;

        let forgetful = start("osac", Envelope::OsacJobVars, None).await.unwrap();
        let err = client(&forgetful).get_job(launched.id).await.unwrap_err();
        assert!(err.is_no_match(), "{err}");
        forgetful.shutdown().await;
        std::fs::remove_file(&path).unwrap();
    }
}
