//! A read of the jobs a template created in a window, looking for some idempotency keys
//! ([`AapClient::jobs_between`]): the window, and what one call of the read returns.
//!
//! [`AapClient::jobs_between`]: crate::AapClient::jobs_between

use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::types::{Job, JobKind, TemplateKind};

/// The jobs of `kind` that template `template_id` (of `template_kind`) created in
/// `(since, until)` on AAP's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobWindow {
    /// Jobs or workflow jobs.
    pub kind: JobKind,
    /// The template's kind (which filter names it).
    pub template_kind: TemplateKind,
    /// The template's id.
    pub template_id: u64,
    /// `created__gt`.
    pub since: DateTime<Utc>,
    /// `created__lt`.
    pub until: DateTime<Utc>,
}

/// What one call of [`AapApi::jobs_between`](crate::AapApi::jobs_between) read.
#[derive(Debug)]
pub struct WindowJobs {
    /// The jobs read that carry an idempotency key (any, not only those looked for), oldest
    /// first.
    pub keyed: Vec<Job>,
    /// The highest job id read: the next call continues above it.
    pub last: Option<u64>,
    /// How the call ended.
    pub end: WindowEnd,
}

impl WindowJobs {
    /// The answer of an API that offers no window read (the trait's default).
    #[must_use]
    pub fn unsupported() -> Self {
        Self {
            keyed: Vec::new(),
            last: None,
            end: WindowEnd::Unsupported,
        }
    }
}

/// How one call of a window read ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum WindowEnd {
    /// Every job of the window (above the cursor) was read.
    Ended,
    /// Every key looked for was met (a key may have been met on a job of another attempt, which
    /// the caller tells by its creation time): the read stopped there.
    Met,
    /// The call's page budget ran out with more pages to read; the error
    /// ([`Error::LookupUnfinished`]) says how many pages it read.
    Paused(Error),
    /// A page failed after others were read (a failure of the first page is the call's error):
    /// what was read stays; the next call continues above `last`.
    Failed(Error),
    /// The API offers no such read: read each key's window with
    /// [`first_job_with_key_between`](crate::AapApi::first_job_with_key_between) instead.
    Unsupported,
}
