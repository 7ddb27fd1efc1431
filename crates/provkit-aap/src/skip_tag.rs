//! The per-attempt skip tag: an exact, server-side filterable marker a launch can carry.
//!
//! A job template that prompts for skip tags (`ask_skip_tags_on_launch`) stores a launch's
//! `skip_tags` in the job's own column, which AWX's list filter reaches
//! (`jobs/?skip_tags__contains=…`; it refuses filters on `extra_vars`). A tag no task carries
//! skips nothing, so a launch that adds the attempt's idempotency key to the template's own
//! skip tags runs exactly as without it, and one query finds its job whatever the template's
//! launch rate. Workflow job templates keep their prompts in a JSON field the filter does not
//! reach: only job templates qualify. Written here rather than taken from a crate: one list
//! query and a comma split.

use crate::client::AapClient;
use crate::error::Result;
use crate::key_scan::LookupCall;
use crate::types::{Job, JobKind};

/// Jobs a tagged lookup reads per page: normally one job carries the tag; more appear only if
/// another tag contains it as a substring (`__contains` is a substring match), which the
/// exact check below skips.
const PAGE_SIZE: &str = "20";

/// The `skip_tags` of a launch carrying `tag` on top of the template's own `skip_tags`
/// (a launch's value replaces the template's, so they are repeated).
///
/// ```
/// # use provkit_aap::provider::with_skip_tag;
/// assert_eq!(with_skip_tag("", "pk1-u-p-0f"), "pk1-u-p-0f");
/// assert_eq!(with_skip_tag("slow, debug", "pk1-u-p-0f"), "slow, debug,pk1-u-p-0f");
/// ```
#[must_use]
pub fn with_skip_tag(own: &str, tag: &str) -> String {
    if own.trim().is_empty() {
        tag.to_owned()
    } else {
        format!("{own},{tag}")
    }
}

/// Whether `job`'s `skip_tags` hold `tag` as one of its comma-separated tags.
pub(crate) fn carries_skip_tag(job: &Job, tag: &str) -> bool {
    job.skip_tags.split(',').any(|t| t.trim() == tag)
}

/// What a lookup by skip tag answered (see [`AapApi::job_with_skip_tag`](crate::AapApi::job_with_skip_tag)).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TagLookup {
    /// The newest job carrying the tag.
    Found(Box<Job>),
    /// No job of the template carries it (now).
    Absent,
    /// The API offers no such lookup: read the attempt's window instead.
    Unsupported,
}

impl AapClient {
    /// The newest job of job template `template_id` whose `skip_tags` hold `tag`:
    /// `jobs/?job_template=<id>&skip_tags__contains=<tag>&order_by=-id&page_size=20`, one
    /// request in every case but a substring collision (then the next pages, up to
    /// [`lookup_pages_per_call`](crate::AapClientBuilder::lookup_pages_per_call)).
    ///
    /// # Errors
    /// HTTP/decoding errors; [`Error::LookupUnfinished`](crate::Error::LookupUnfinished) at the
    /// page budget.
    pub async fn job_with_skip_tag(&self, template_id: u64, tag: &str) -> Result<Option<Job>> {
        let id = template_id.to_string();
        let first = self
            .path(
                &[JobKind::Job.endpoint()],
                &[
                    ("job_template", id.as_str()),
                    ("skip_tags__contains", tag),
                    ("order_by", "-id"),
                    ("page_size", PAGE_SIZE),
                ],
            )
            .await?;
        let mut pages = 0;
        let found = crate::pagination::find_first(
            self.inner(),
            first,
            crate::client::decode_job_page,
            &mut pages,
            Some(self.inner().lookup_pages_per_call),
            |item| {
                let job = Job::from_value(&item.into_value(), JobKind::Job)?;
                carries_skip_tag(&job, tag).then_some(job)
            },
        )
        .await;
        let unfinished = matches!(found, Err(crate::Error::LookupUnfinished { .. }));
        self.inner().key_scans.stats.record(
            crate::client::read_pages(pages, &found),
            LookupCall::Tagged {
                found: matches!(found, Ok(Some(_))),
            },
            unfinished,
        );
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(skip_tags: &str) -> Job {
        Job::from_value(
            &serde_json::json!({"id": 1, "skip_tags": skip_tags}),
            JobKind::Job,
        )
        .unwrap()
    }

    #[test]
    fn a_tag_matches_whole_tags_only() {
        assert!(carries_skip_tag(&job("a,pk1-u-p-01"), "pk1-u-p-01"));
        assert!(carries_skip_tag(&job("pk1-u-p-01"), "pk1-u-p-01"));
        assert!(carries_skip_tag(&job("a, pk1-u-p-01 "), "pk1-u-p-01"));
        // A substring of another tag (what `__contains` also returns) is not the tag.
        assert!(!carries_skip_tag(&job("pk1-u-p-01-p-02"), "pk1-u-p-01"));
        assert!(!carries_skip_tag(&job(""), "pk1-u-p-01"));
    }
}
