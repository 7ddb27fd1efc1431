//! One launch attempt's window read from both ends in turn until the key is met or the two
//! reads meet.
//!
//! The job of an attempt is expected near one end of its window: moments after the window
//! starts (another process's intent), or moments before it ends (a launch whose answer, or
//! failed answer, came back). But not always at the end guessed: a launch that ran into the
//! client's timeout has its job wherever AAP was slow — a request AWX took up late created it
//! near the end, one AWX answered slowly after creating the job (the fake AAP's chaos does
//! this) near the start. Read from one end only, a job at the other end costs the whole window:
//! at a fleet's launch rate, the 600–800 jobs of a 30 s window, 3–4 pages. So the pages
//! alternate: one from the expected end, one from the other, each a fresh query between the two
//! cursors (`id__gt` the highest id read from the start, `id__lt` the lowest read from the
//! end), until a page holds the key or a page holds the rest of the window (no `next` link).
//! A job at either end is on the first or second page, and proving absence costs the same pages
//! as a read from one end: every page but the last is full and no job is read twice.
//!
//! Hand-written: two cursors over AWX's id-ordered list queries; no crate models this.

use chrono::{DateTime, Utc};

use crate::client::{AapClient, decode_job_page};
use crate::error::{Error, Result};
use crate::key_scan::{Ends, ScanKey};
use crate::types::Job;
use crate::window_read::JobWindow;

impl AapClient {
    /// At most [`lookup_pages_per_call`](crate::AapClientBuilder::lookup_pages_per_call) pages
    /// of `scan`'s window `(scan.since, until)`, alternating ends (the first from the end with
    /// `from_end`) and continuing from `ends`, which it advances by every page read whole.
    /// `Ok(None)`: the whole window was read without the key. [`Error::LookupUnfinished`] at the
    /// budget; [`Error::ListIncomplete`] at the client's lookup item cap.
    pub(crate) async fn window_walk(
        &self,
        scan: &ScanKey,
        (until, from_end): (DateTime<Utc>, bool),
        ends: &mut Ends,
        pages: &mut u32,
    ) -> Result<Option<Job>> {
        let window = JobWindow {
            kind: scan.kind,
            template_kind: scan.template_kind,
            template_id: scan.template_id,
            since: scan.since,
            until,
        };
        let budget = self.inner().lookup_pages_per_call;
        let cap = self.inner().max_lookup_items;
        let mut seen = 0usize;
        for read in 0..budget {
            let newest_first = ends.next_from_end(from_end);
            let path = self
                .window_page(&window, (ends.low, ends.high), newest_first)
                .await?;
            let (items, next) =
                crate::pagination::read_page(self.inner(), path.clone(), decode_job_page).await?;
            *pages = pages.saturating_add(1);
            seen += items.len();
            let rest = next.is_none() || items.is_empty();
            let mut found = None;
            let mut ids = Vec::with_capacity(items.len());
            for item in items {
                let Some(job) = Job::from_value(&item.into_value(), scan.kind) else {
                    continue;
                };
                ids.push(job.id);
                if found.is_none() && crate::marker::carries_key(&job, &scan.key) {
                    found = Some(job);
                }
            }
            if found.is_some() {
                return Ok(found);
            }
            if rest {
                return Ok(None);
            }
            // A full page with more behind it: its ids are read, whatever order they came in.
            let (Some(&lowest), Some(&highest)) = (ids.iter().min(), ids.iter().max()) else {
                return Err(Error::Decode {
                    ctx: Box::new(crate::error::RequestContext::new(http::Method::GET, path)),
                    message: "a page of jobs without a job id: the walk cannot continue past it"
                        .into(),
                    source: None,
                });
            };
            if newest_first {
                ends.high = Some(lowest);
            } else {
                ends.low = Some(highest);
            }
            ends.pages = ends.pages.saturating_add(1);
            if seen >= cap {
                return Err(Error::ListIncomplete {
                    ctx: Box::new(crate::error::RequestContext::new(http::Method::GET, path)),
                    cap,
                });
            }
            if read + 1 == budget {
                return Err(Error::LookupUnfinished {
                    ctx: Box::new(crate::error::RequestContext::new(http::Method::GET, path)),
                    pages: budget,
                });
            }
        }
        Ok(None)
    }
}
