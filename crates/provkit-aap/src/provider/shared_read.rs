//! The lookup of an inherited intent — or of the rest of an own launch's deadline — through
//! the provider's shared reads (the decisions are [`Inherited`](super::inherited::Inherited)'s;
//! the requests are made here).

use chrono::{DateTime, Utc};
use provkit_lifecycle::ProviderError;

use super::inherited::{Plan, Window};
use super::{AapProvider, query_error, window_open_for};
use crate::error::Error;
use crate::types::{Job, JobKind, Template};
use crate::window_read::{JobWindow, WindowEnd};

/// What a shared read answered for an inherited intent.
pub(super) enum Shared {
    /// Its job.
    Found(Box<Job>),
    /// No job in its window.
    Absent,
    /// The API offers no window read: read the intent's window on its own.
    Unsupported,
}

impl AapProvider {
    /// The job of the inherited intent `(key, at)` with the fixed `window` (AAP's clock), from a
    /// read of the span of every overlapping inherited window once they have all closed (at
    /// most one launch deadline past this one's). Before: an error with a
    /// [`RetryLater`](provkit_lifecycle::RetryLater) source, no request. A read cut short (a
    /// fault, the page budget) is an error; the next lookup of any intent it answers continues
    /// it.
    pub(super) async fn shared_lookup(
        &self,
        template: &Template,
        kind: JobKind,
        key: &str,
        at: DateTime<Utc>,
        window: Window,
        offset_low: chrono::Duration,
    ) -> Result<Shared, ProviderError> {
        let tk = (kind, template.id);
        let cap = window.1 + self.deadline();
        let mut reads = 0;
        for _ in 0..4 {
            let now = self.clock.now() + offset_low;
            let plan = {
                let mut inherited = self.inherited();
                inherited.register(tk, key, at, window);
                inherited.plan(tk, key, at, now, cap)
            };
            let read = match plan {
                None => continue,
                Some(Plan::Answer(answer)) => {
                    self.inherited().forget(tk, key, at);
                    return Ok(shared(answer));
                }
                Some(Plan::Wait { until, others }) => {
                    let wait = window_open_for(until, now).unwrap_or_default();
                    return Err(deferred(key, window.1, until, others, wait));
                }
                // This call read once; what is left of the read is for the next lookup.
                Some(Plan::Read(_)) if reads > 0 => return Err(unfinished()),
                Some(Plan::Read(read)) => read,
            };
            let (range, id) = (read.range, read.id);
            // One call of a read at a time, and no lookup waits for another's requests (it
            // would hold a worker of the caller's): while a call of its read is under way, it
            // asks again shortly.
            let Some((after, wanted)) = self.inherited().claim(tk, id) else {
                return Err(busy(key));
            };
            let _claim = Claim {
                provider: self,
                tk,
                read: id,
            };
            reads += 1;
            if wanted.is_empty() {
                // Other reads answered all its intents (this one's too).
                continue;
            }
            let window = JobWindow {
                kind,
                template_kind: template.kind,
                template_id: template.id,
                since: range.0,
                until: range.1,
            };
            let answer = self.api.jobs_between(&window, after, &wanted).await;
            let failure = match answer {
                Ok(got) => {
                    let mut inherited = self.inherited();
                    let mut all = false;
                    for job in &got.keyed {
                        all = inherited.saw(tk, id, job);
                    }
                    if let Some(last) = got.last {
                        inherited.advanced(tk, id, last);
                    }
                    match got.end {
                        WindowEnd::Ended => inherited.ended(tk, id),
                        // Every intent it answers has its job: it stops here, and a later
                        // lookup continues it.
                        _ if all => {}
                        WindowEnd::Unsupported => {
                            inherited.forget(tk, key, at);
                            return Ok(Shared::Unsupported);
                        }
                        WindowEnd::Failed(e) | WindowEnd::Paused(e) => {
                            drop(inherited);
                            return self.answered_or(tk, key, at, template.id, e);
                        }
                        // Met on another attempt's job: the next call continues.
                        _ => {}
                    }
                    continue;
                }
                Err(e) => e,
            };
            return self.answered_or(tk, key, at, template.id, failure);
        }
        Err(unfinished())
    }

    /// The intent's answer if a read met it before `failure`, else the failure.
    fn answered_or(
        &self,
        tk: (JobKind, u64),
        key: &str,
        at: DateTime<Utc>,
        template_id: u64,
        failure: Error,
    ) -> Result<Shared, ProviderError> {
        let mut inherited = self.inherited();
        if let Some(answer) = inherited.answer(tk, key, at) {
            inherited.forget(tk, key, at);
            return Ok(shared(answer));
        }
        Err(query_error(
            format!(
                "idempotency lookup: failed to read the jobs template {template_id} created in the inherited launch windows"
            ),
            failure,
        ))
    }

    fn inherited(&self) -> std::sync::MutexGuard<'_, super::inherited::Inherited> {
        self.inherited
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A known answer as the lookup gives it.
fn shared(answer: Option<super::inherited::SeenJob>) -> Shared {
    match answer {
        None => Shared::Absent,
        Some(seen) => Shared::Found(Box::new(seen.job())),
    }
}

/// The lookup waits (no request) until `until` on AAP's clock.
fn deferred(
    key: &str,
    own_end: DateTime<Utc>,
    until: DateTime<Utc>,
    others: usize,
    wait: std::time::Duration,
) -> ProviderError {
    let at = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let message = if until == own_end {
        format!(
            "the launch window of intent {key} ends at {} on AAP's clock, and a launch sent under it may still create its job until then (AWX finishes a request whose client left); its absence can be proven once the window has closed",
            at(own_end)
        )
    } else if others == 0 {
        format!(
            "the launch window of intent {key} ends at {} on AAP's clock, and a launch sent under it may still create its job until then (AWX finishes a request whose client left); it is read at {}, once any other intent of the same hand-over has closed too: one read answers them all",
            at(own_end),
            at(until)
        )
    } else {
        format!(
            "the launch window of intent {key} ends at {} on AAP's clock, and a launch sent under it may still create its job until then (AWX finishes a request whose client left); it is read at {} together with the {others} other intents whose windows overlap it: one read answers them all",
            at(own_end),
            at(until)
        )
    };
    ProviderError::other_with_source(
        "idempotency lookup deferred",
        provkit_lifecycle::RetryLater::new(message, wait),
    )
}

/// How long a lookup waits while another lookup's call of its shared read is under way.
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_millis(250);

/// Releases a claimed read when the call is over, however it ended (a dropped future too).
struct Claim<'a> {
    provider: &'a AapProvider,
    tk: (JobKind, u64),
    read: u64,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.provider.inherited().release(self.tk, self.read);
    }
}

/// Another lookup's shared read is under way; it may answer this intent too.
fn busy(key: &str) -> ProviderError {
    ProviderError::other_with_source(
        "idempotency lookup deferred",
        provkit_lifecycle::RetryLater::new(
            format!(
                "another lookup is reading the inherited launch windows of intent {key}; its read may answer it"
            ),
            BUSY_WAIT,
        ),
    )
}

/// A shared read made progress in this call and has more to read.
fn unfinished() -> ProviderError {
    ProviderError::other(
        "idempotency lookup unfinished: the shared read of the inherited launch windows continues at the next lookup",
    )
}
