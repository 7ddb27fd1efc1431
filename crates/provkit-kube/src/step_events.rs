//! The Kubernetes Events of the lifecycle steps of one reconcile ([`crate::events`] lists them),
//! shared by [`Provisioner`] and [`MultiTargetProvisioner`](crate::MultiTargetProvisioner).

use k8s_openapi::api::core::v1::ObjectReference;
use provkit_core::{JobState, JobStatus};
use provkit_lifecycle::{DeprovisionStep, ProvisionStep};

use crate::events::JobEvent;
use crate::reconcile::Provisioner;
use crate::resource::ProvisionedResource;

impl<K: ProvisionedResource> Provisioner<K> {
    /// Publishes the Event of a provisioning step (`failed`: the failure message the poll saw).
    pub(crate) async fn publish_provision_step(
        &self,
        step: &ProvisionStep,
        failed: Option<&str>,
        regarding: &ObjectReference,
    ) {
        match step {
            ProvisionStep::Launched { job_id } | ProvisionStep::Recovered { job_id } => {
                tracing::Span::current().record("job_id", job_id.as_str());
                tracing::info!(job_id = %job_id, "provision job triggered");
                self.events
                    .publish(
                        &JobEvent::ProvisionTriggered {
                            job_id: job_id.clone(),
                        },
                        regarding,
                    )
                    .await;
            }
            ProvisionStep::Polled { job_id, state } => {
                tracing::Span::current().record("job_id", job_id.as_str());
                if *state == JobState::Succeeded {
                    self.events
                        .publish(
                            &JobEvent::ProvisionSucceeded {
                                job_id: job_id.clone(),
                            },
                            regarding,
                        )
                        .await;
                } else if matches!(state, JobState::Failed | JobState::Canceled) {
                    let message = failed.map_or_else(|| state.as_str().to_owned(), str::to_owned);
                    self.publish_provision_failed(job_id, message, regarding)
                        .await;
                }
            }
            ProvisionStep::PurgedJobFailed { job_id } => {
                tracing::Span::current().record("job_id", job_id.as_str());
                let message = "the provider no longer knows this job".to_owned();
                self.publish_provision_failed(job_id, message, regarding)
                    .await;
            }
            _ => {}
        }
    }

    /// Publishes the Event of a deprovisioning step.
    pub(crate) async fn publish_deprovision_step(
        &self,
        step: &DeprovisionStep,
        regarding: &ObjectReference,
    ) {
        match step {
            DeprovisionStep::Launched { job_id } | DeprovisionStep::Recovered { job_id } => {
                tracing::Span::current().record("job_id", job_id.as_str());
                tracing::info!(job_id = %job_id, "deprovision job triggered");
                self.events
                    .publish(
                        &JobEvent::DeprovisionTriggered {
                            job_id: job_id.clone(),
                        },
                        regarding,
                    )
                    .await;
            }
            _ => {}
        }
    }

    /// Publishes `DeprovisionFailed` for a deprovision job seen failing in this reconcile.
    pub(crate) async fn publish_deprovision_failure(
        &self,
        failed: Option<JobStatus>,
        regarding: &ObjectReference,
    ) {
        if let Some(failed) = failed {
            tracing::Span::current().record("job_id", failed.job_id.as_str());
            let message = if failed.message.is_empty() {
                failed.state.as_str().to_owned()
            } else {
                failed.message.clone()
            };
            self.events
                .publish(
                    &JobEvent::DeprovisionFailed {
                        job_id: failed.job_id.clone(),
                        message,
                    },
                    regarding,
                )
                .await;
        }
    }

    async fn publish_provision_failed(
        &self,
        job_id: &str,
        message: String,
        regarding: &ObjectReference,
    ) {
        let event = JobEvent::ProvisionFailed {
            job_id: job_id.to_owned(),
            message,
        };
        self.events.publish(&event, regarding).await;
    }
}
