//! What an idempotency-key lookup that failed part-way had already read, so the next lookup of
//! the same key and window continues instead of starting again from the newest job.
//!
//! A lookup whose launch never reached AAP must read its whole window (every job of the template
//! created since the attempt, newest first, up to 200 a page) to prove there is no match. Under
//! a steady rate of faults a long window is rarely read in one go (one timed-out or refused page
//! ends the walk), and each retry used to start again at page one, while the window only grew:
//! in the 10,000-resource chaos run, 73 objects were still blocked on their lookups when the run
//! ended. Now a failed walk leaves the ids it read, `[bottom, top]` (pages are read whole, newest
//! first, so no job of the window between the two was missed), and the next lookup reads only
//! the jobs above `top` (created since) and those below `bottom`.
//!
//! A lookup bounded on both sides (an attempt's intent time and its launch deadline, see
//! [`AapClient::first_job_with_key_between`](crate::AapClient::first_job_with_key_between)) reads
//! its window from both ends in turn; what it keeps is the two cursors (every job of the fixed
//! window up to the one, and from the other up, was read), and the next attempt reads only
//! between them. The window does not grow, so each page read is progress that no later fault
//! takes back.
//!
//! Hand-written: a bounded map of spans keyed by the lookup; no crate models this.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};

use crate::types::{JobKind, TemplateKind};

/// How many unfinished lookups are remembered; past it the memory is dropped (a lookup then
/// reads its window again, as every lookup once did).
const REMEMBERED: usize = 16_384;

/// Which lookup a span belongs to: the job kind, the template, the window's start and the key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ScanKey {
    pub(crate) kind: JobKind,
    pub(crate) template_kind: TemplateKind,
    pub(crate) template_id: u64,
    pub(crate) since: DateTime<Utc>,
    /// The window's end (`created__lt`) for a bounded lookup, and whether it reads from there
    /// (newest first) rather than from the start.
    pub(crate) until: Option<(DateTime<Utc>, bool)>,
    pub(crate) key: String,
}

/// The ids read without a match: every job of the window with an id in `bottom..=top`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) top: u64,
    pub(crate) bottom: u64,
}

/// The ids a walk has read so far (whole pages only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Read(Option<Span>);

impl Read {
    /// Notes a job id the walk read.
    pub(crate) fn saw(&mut self, id: u64) {
        self.0 = Some(match self.0 {
            None => Span {
                top: id,
                bottom: id,
            },
            Some(s) => Span {
                top: s.top.max(id),
                bottom: s.bottom.min(id),
            },
        });
    }

    /// The span read, if any page was.
    pub(crate) fn span(self) -> Option<Span> {
        self.0
    }
}

/// What a walk of a window has read: every job of the window with an id up to `low` (pages
/// read oldest first) and from `high` up (newest first), and which end the next page reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ends {
    /// The highest id read from the window's start.
    pub(crate) low: Option<u64>,
    /// The lowest id read from the window's end.
    pub(crate) high: Option<u64>,
    /// Pages read so far (the next one reads from the other end than the last).
    pub(crate) pages: u32,
}

impl Ends {
    /// Whether the next page reads newest first, for a walk that begins at the end when
    /// `from_end`.
    pub(crate) fn next_from_end(&self, from_end: bool) -> bool {
        from_end == self.pages.is_multiple_of(2)
    }
}

/// What the lookups that failed part-way had read, shared by all clones of a client: the span
/// of an unbounded lookup, the two ends of a bounded one.
#[derive(Debug, Default)]
pub(crate) struct KeyScans {
    pub(crate) spans: Memo<Span>,
    pub(crate) ends: Memo<Ends>,
    pub(crate) stats: KeyLookupMeter,
}

/// A handle on the lookup counters of a client and its clones
/// ([`AapClient::key_lookup_meter`](crate::AapClient::key_lookup_meter)); it stays readable
/// after the client is dropped.
#[derive(Clone, Debug, Default)]
pub struct KeyLookupMeter(std::sync::Arc<LookupCounters>);

impl KeyLookupMeter {
    /// The counts so far.
    #[must_use]
    pub fn stats(&self) -> KeyLookupStats {
        self.0.read()
    }

    pub(crate) fn record(&self, pages: u32, call: LookupCall, unfinished: bool) {
        self.0.record(pages, call, unfinished);
    }
}

/// What kind of lookup call is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LookupCall {
    /// Without an end to its window (`newest_job_with_key`).
    Unbounded,
    /// One attempt's window (`first_job_with_key_between`); `found`: it met the key.
    Window {
        /// It met the key.
        found: bool,
    },
    /// A shared read of inherited windows ([`jobs_between`](crate::AapClient::jobs_between));
    /// `answered`: the keys it was made for that it answered (met, or read to the end without).
    Shared {
        /// Keys answered by this call.
        answered: u64,
    },
    /// A lookup by the attempt's skip tag ([`job_with_skip_tag`](crate::AapClient::job_with_skip_tag)).
    Tagged {
        /// It found the job.
        found: bool,
    },
}

/// Counters of the idempotency-key lookups a client made (every call, failed ones included).
#[derive(Debug, Default)]
struct LookupCounters {
    lookups: AtomicU64,
    pages: AtomicU64,
    max_pages: AtomicU64,
    unbounded_lookups: AtomicU64,
    unbounded_pages: AtomicU64,
    unfinished: AtomicU64,
    shared_reads: AtomicU64,
    shared_pages: AtomicU64,
    shared_answered: AtomicU64,
    found_lookups: AtomicU64,
    found_pages: AtomicU64,
    tagged_lookups: AtomicU64,
    tagged_pages: AtomicU64,
    tagged_found: AtomicU64,
}

impl LookupCounters {
    /// One lookup call of kind `call` that requested `pages` pages (a failed page counts); a
    /// call that sent nothing (refused by the circuit breaker) is not counted.
    fn record(&self, pages: u32, call: LookupCall, unfinished: bool) {
        if pages == 0 {
            return;
        }
        if unfinished {
            self.unfinished.fetch_add(1, Ordering::Relaxed);
        }
        let pages = u64::from(pages);
        self.lookups.fetch_add(1, Ordering::Relaxed);
        self.pages.fetch_add(pages, Ordering::Relaxed);
        self.max_pages.fetch_max(pages, Ordering::Relaxed);
        let (calls, their_pages) = match call {
            LookupCall::Unbounded => (&self.unbounded_lookups, &self.unbounded_pages),
            LookupCall::Window { found: true } => (&self.found_lookups, &self.found_pages),
            LookupCall::Window { found: false } => return,
            LookupCall::Shared { answered } => {
                self.shared_answered.fetch_add(answered, Ordering::Relaxed);
                (&self.shared_reads, &self.shared_pages)
            }
            LookupCall::Tagged { found } => {
                if found {
                    self.tagged_found.fetch_add(1, Ordering::Relaxed);
                }
                (&self.tagged_lookups, &self.tagged_pages)
            }
        };
        calls.fetch_add(1, Ordering::Relaxed);
        their_pages.fetch_add(pages, Ordering::Relaxed);
    }

    /// The counts so far.
    fn read(&self) -> KeyLookupStats {
        KeyLookupStats {
            lookups: self.lookups.load(Ordering::Relaxed),
            pages: self.pages.load(Ordering::Relaxed),
            max_pages: self.max_pages.load(Ordering::Relaxed),
            unbounded_lookups: self.unbounded_lookups.load(Ordering::Relaxed),
            unbounded_pages: self.unbounded_pages.load(Ordering::Relaxed),
            unfinished: self.unfinished.load(Ordering::Relaxed),
            shared_reads: self.shared_reads.load(Ordering::Relaxed),
            shared_pages: self.shared_pages.load(Ordering::Relaxed),
            shared_answered: self.shared_answered.load(Ordering::Relaxed),
            found_lookups: self.found_lookups.load(Ordering::Relaxed),
            found_pages: self.found_pages.load(Ordering::Relaxed),
            tagged_lookups: self.tagged_lookups.load(Ordering::Relaxed),
            tagged_pages: self.tagged_pages.load(Ordering::Relaxed),
            tagged_found: self.tagged_found.load(Ordering::Relaxed),
        }
    }
}

/// What the idempotency-key lookups of a client (and its clones) cost so far
/// ([`AapClient::key_lookup_stats`](crate::AapClient::key_lookup_stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyLookupStats {
    /// Lookup calls that sent at least one request (of `newest_job_with_key` /
    /// `first_job_with_key_between`).
    pub lookups: u64,
    /// Job-list pages they requested (a page that failed counts).
    pub pages: u64,
    /// The most pages one call requested.
    pub max_pages: u64,
    /// Of those, the calls without an end to their window (`newest_job_with_key`: no intent).
    pub unbounded_lookups: u64,
    /// The pages of those calls.
    pub unbounded_pages: u64,
    /// Calls of a bounded lookup that stopped at their page budget
    /// ([`lookup_pages_per_call`](crate::AapClientBuilder::lookup_pages_per_call)): their window
    /// was continued by a later call.
    pub unfinished: u64,
    /// Of the bounded calls, those of shared reads of inherited windows
    /// ([`jobs_between`](crate::AapClient::jobs_between)); the rest read one attempt's window.
    pub shared_reads: u64,
    /// The pages of those calls.
    pub shared_pages: u64,
    /// The inherited intents' keys those calls answered (met, or read their whole window
    /// without): one read answers many. With the calls that read one attempt's window, the
    /// number of intents looked up — what the pages were spent on.
    pub shared_answered: u64,
    /// Of the bounded calls that read one attempt's window, those that met the key (the rest
    /// proved absence, or stopped early).
    pub found_lookups: u64,
    /// The pages of those calls.
    pub found_pages: u64,
    /// Calls that looked an attempt up by its skip tag
    /// ([`job_with_skip_tag`](crate::AapClient::job_with_skip_tag)): each answers one intent.
    pub tagged_lookups: u64,
    /// The pages of those calls.
    pub tagged_pages: u64,
    /// Of those calls, the ones that found the job.
    pub tagged_found: u64,
}

/// A bounded map from a lookup to what it read.
#[derive(Debug)]
pub(crate) struct Memo<V>(Mutex<HashMap<ScanKey, V>>);

impl<V> Default for Memo<V> {
    fn default() -> Self {
        Self(Mutex::default())
    }
}

impl<V: Copy> Memo<V> {
    fn with<R>(&self, f: impl FnOnce(&mut HashMap<ScanKey, V>) -> R) -> R {
        f(&mut self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// What an earlier, unfinished lookup of `key` read.
    pub(crate) fn get(&self, key: &ScanKey) -> Option<V> {
        self.with(|m| m.get(key).copied())
    }

    /// Remembers what an unfinished lookup of `key` has read in all.
    pub(crate) fn keep(&self, key: ScanKey, read: V) {
        self.with(|m| {
            if m.len() >= REMEMBERED && !m.contains_key(&key) {
                m.clear();
            }
            m.insert(key, read);
        });
    }

    /// The lookup of `key` finished (found, or proved there is no match).
    pub(crate) fn done(&self, key: &ScanKey) {
        self.with(|m| m.remove(key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> ScanKey {
        ScanKey {
            kind: JobKind::Job,
            template_kind: TemplateKind::JobTemplate,
            template_id: 7,
            since: DateTime::<Utc>::UNIX_EPOCH,
            until: None,
            key: k.to_owned(),
        }
    }

    #[test]
    fn a_read_spans_the_ids_it_saw() {
        let mut read = Read::default();
        assert_eq!(read.span(), None);
        for id in [40, 39, 41, 12] {
            read.saw(id);
        }
        assert_eq!(
            read.span(),
            Some(Span {
                top: 41,
                bottom: 12
            })
        );
    }

    #[test]
    fn counters_sum_pages_and_keep_the_largest() {
        let c = LookupCounters::default();
        for pages in [1, 3, 0, 1, 4] {
            let call = if pages == 3 {
                LookupCall::Unbounded
            } else {
                LookupCall::Window { found: false }
            };
            c.record(pages, call, pages == 4);
        }
        let meter = KeyLookupMeter(std::sync::Arc::new(c));
        meter.record(2, LookupCall::Shared { answered: 5 }, false);
        meter.record(0, LookupCall::Shared { answered: 7 }, false);
        meter.record(3, LookupCall::Window { found: true }, false);
        meter.record(1, LookupCall::Tagged { found: true }, false);
        meter.record(1, LookupCall::Tagged { found: false }, false);
        assert_eq!(
            meter.stats(),
            KeyLookupStats {
                lookups: 8,
                pages: 16,
                max_pages: 4,
                unbounded_lookups: 1,
                unbounded_pages: 3,
                unfinished: 1,
                shared_reads: 1,
                shared_pages: 2,
                shared_answered: 5,
                found_lookups: 1,
                found_pages: 3,
                tagged_lookups: 2,
                tagged_pages: 2,
                tagged_found: 1,
            }
        );
    }

    #[test]
    fn spans_are_kept_per_lookup_until_done_and_bounded() {
        let scans = Memo::default();
        let span = Span { top: 9, bottom: 3 };
        scans.keep(key("a"), span);
        assert_eq!(scans.get(&key("a")), Some(span));
        assert_eq!(scans.get(&key("b")), None);
        scans.done(&key("a"));
        assert_eq!(scans.get(&key("a")), None);
        for i in 0..REMEMBERED {
            scans.keep(key(&i.to_string()), span);
        }
        scans.keep(key("0"), span);
        assert_eq!(
            scans.get(&key("1")),
            Some(span),
            "replacing one does not drop the rest"
        );
        scans.keep(key("new"), span);
        assert_eq!(scans.get(&key("1")), None, "full: the memory was dropped");
        assert_eq!(scans.get(&key("new")), Some(span));
    }

    #[test]
    fn pages_alternate_from_the_expected_end() {
        let mut ends = Ends::default();
        let order: Vec<bool> = (0..4)
            .map(|_| {
                let from_end = ends.next_from_end(true);
                ends.pages += 1;
                from_end
            })
            .collect();
        assert_eq!(order, [true, false, true, false]);
        let ends = Ends {
            pages: 1,
            ..Ends::default()
        };
        assert!(
            ends.next_from_end(false),
            "the second page of a start-first walk"
        );
    }
}
