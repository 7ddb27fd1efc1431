//! The reconcile paths' hooks into [`PushWakeups`](crate::push::PushWakeups) (no-ops without
//! [`Provisioner::with_push`]): track the in-flight jobs of an object as its reconcile starts and
//! ends, let a push wake-up bypass the own-write echo shortcut, and stretch the poll requeue of
//! an in-flight job while the push stream is healthy.

use std::time::Duration;

use provkit_core::JobStatus;

use crate::reconcile::Provisioner;
use crate::resource::ProvisionedResource;

impl<K: ProvisionedResource> Provisioner<K> {
    /// As a reconcile starts: records the in-flight jobs of the object as read (the jobs of a
    /// restarted controller become known here) and tells whether push woke the object since
    /// its last reconcile (then the lifecycle must run, whatever the own-write memory says).
    pub(crate) fn push_started(&self, obj: &K) -> bool {
        let Some(push) = &self.push else {
            return false;
        };
        let late = push.track(obj, obj.provisioning_jobs(), false);
        let uid = obj.meta().uid.as_deref().unwrap_or_default();
        push.take_woken(uid) || late
    }

    /// As a reconcile ends: records the in-flight jobs it left (a launch adds its job); an
    /// object whose job was announced final already is woken at once.
    pub(crate) fn push_ended(&self, obj: &K, jobs: &[JobStatus]) {
        if let Some(push) = &self.push {
            push.track(obj, jobs, true);
        }
    }

    /// The requeue of a step: `in_flight` steps (a launch, a poll that found the job running)
    /// come back at the long interval while the push stream is healthy.
    pub(crate) fn push_requeue(
        &self,
        requeue: Option<Duration>,
        in_flight: bool,
    ) -> Option<Duration> {
        match (&self.push, requeue) {
            (Some(push), Some(after)) if in_flight => Some(push.stretch(after)),
            _ => requeue,
        }
    }
}
