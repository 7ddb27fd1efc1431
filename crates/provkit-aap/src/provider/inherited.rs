//! The intents this provider did not launch (inherited after a restart or a leader handover),
//! looked up together: one read of the span of their overlapping windows answers all of them.
//!
//! Each such intent's window is read only once it has closed (a launch another process sent
//! under it may create its job until then). After a handover the new leader inherits every
//! attempt the old one had in flight: their windows overlap, each reaching a launch deadline
//! past its intent. Read one by one, every window costs its own pages — at a fleet's launch
//! rate, a whole launch deadline of the template's jobs — and the sum grows with the fleet. Read
//! together, the span costs its pages once: a lookup waits until every overlapping inherited
//! window known to this provider has closed (at most one launch deadline past its own), then one
//! read of their span, oldest first, notes the job of each intent it meets and, once read to its
//! end, proves the absence of every intent whose window it covers and had closed before the read
//! began. The read stops early once every intent it can answer has its job.
//!
//! The same reads answer this provider's own launches whose outcome is unknown once their
//! first read (between the send and the give-up) met no job: the rest of such a launch's
//! deadline is a window like an inherited one (see `windows.rs`).
//!
//! The read's cursor (the highest job id read) survives a failed call, so a read cut short by a
//! fault continues where it stopped; the answers stay until the intent's lookup takes them.
//!
//! Hand-written: bounded maps and a sweep over a few windows; no crate models this.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};

use crate::marker::IDEMPOTENCY_KEY_VAR;
use crate::types::{AapJobStatus, Job, JobKind};

/// How many inherited intents are remembered per template; past it the memory is dropped (the
/// lookups then register again and read again).
const REMEMBERED: usize = 16_384;

/// An intent: its idempotency key and its time.
type Intent = (String, DateTime<Utc>);

/// A window: `(since, until)` on AAP's clock.
pub(crate) type Window = (DateTime<Utc>, DateTime<Utc>);

/// The template a read lists: the job kind and the template's id.
pub(crate) type TemplateKey = (JobKind, u64);

/// What a lookup of an inherited intent does now.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Plan {
    /// The answer is known: its job, or `None` (absent).
    Answer(Option<SeenJob>),
    /// Wait until this time on AAP's clock: the intent's window, or one overlapping it, is
    /// still open. `others` counts the other inherited intents the read will answer too.
    Wait {
        /// When the read can begin (AAP's clock).
        until: DateTime<Utc>,
        /// The other unanswered intents whose windows overlap this one's.
        others: usize,
    },
    /// Read `range`, oldest first, after job id `after`.
    Read(ReadPlan),
}

/// A read of the span of closed inherited windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReadPlan {
    /// Which read (the ids of a provider's reads are never reused).
    pub(crate) id: u64,
    /// The span read: `created__gt` and `created__lt`.
    pub(crate) range: Window,
    /// The highest job id already read (the read continues above it).
    pub(crate) after: Option<u64>,
}

/// What a read keeps of a job it met: enough to answer a lookup (a few dozen bytes, not the
/// job's variables).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SeenJob {
    id: u64,
    kind: JobKind,
    created: Option<DateTime<Utc>>,
    status: AapJobStatus,
    /// `launch_type` when it is `workflow` (a sliced job template's child), else `None`.
    launch_type: Option<String>,
}

impl SeenJob {
    fn of(job: &Job) -> Self {
        Self {
            id: job.id,
            kind: job.kind,
            created: job.created,
            status: job.status.clone(),
            launch_type: job.launch_type.clone().filter(|t| t.as_str() == "workflow"),
        }
    }

    /// The job as the lookup answers it (its id, kind, status, creation and launch type).
    pub(crate) fn job(&self) -> Job {
        Job {
            created: self.created,
            launch_type: self.launch_type.clone(),
            ..Job::known(self.id, self.kind, self.status.clone())
        }
    }
}

/// One unanswered (or answered but not yet taken) inherited intent.
#[derive(Debug)]
struct Entry {
    window: Window,
    /// `Some(Some(job))` found, `Some(None)` proven absent.
    answer: Option<Option<SeenJob>>,
}

/// A read of a span of closed inherited windows: its cursor and the keyed jobs it met.
#[derive(Debug)]
struct Reading {
    id: u64,
    range: Window,
    /// AAP's clock (its low bound) when it began: it answers only the intents whose windows
    /// had closed by then (a job of such an intent was visible to every page it read).
    began: DateTime<Utc>,
    after: Option<u64>,
    /// Read to its end: an intent it can answer and did not meet is absent.
    complete: bool,
    /// A lookup is making a request of it now.
    claimed: bool,
    /// The intents it answers that have no job yet.
    unanswered: HashSet<Intent>,
    /// The jobs it met that carry an idempotency key (slimmed), by key: a lookup that comes
    /// later is answered from them for the ids already read.
    seen: HashMap<String, Vec<SeenJob>>,
}

/// How many reads of one template are kept (in progress, or over and answering later
/// lookups from what they met); past it the oldest is dropped (its intents start another).
const READS: usize = 8;

#[derive(Debug, Default)]
struct PerTemplate {
    intents: HashMap<Intent, Entry>,
    reads: Vec<Reading>,
    /// When (AAP's clock) the first of the unanswered intents was met: a hand-over's intents
    /// were written before about then.
    episode: Option<DateTime<Utc>>,
}

impl PerTemplate {
    /// Forgets the episode once no intent is left unanswered.
    fn settle(&mut self) {
        if self.intents.values().all(|e| e.answer.is_some()) {
            self.episode = None;
        }
    }
}

/// The inherited intents being looked up, per template.
#[derive(Debug, Default)]
pub(crate) struct Inherited {
    templates: HashMap<TemplateKey, PerTemplate>,
    /// The id of the next read.
    next: u64,
    /// How far a new read reaches past the windows it was begun for, on each side (bounded by
    /// the time it begins): a launch deadline, so that the windows of a hand-over's intents met
    /// after it began (whose attempts were in flight together) lie in its span too, and are
    /// answered from it rather than by another read of nearly the same span.
    margin: chrono::Duration,
    /// How long after the first inherited intent of an episode its lookups wait (capped at a
    /// launch deadline past their own window): the other intents of the same hand-over, all
    /// written before it began, have closed windows by then, and one read answers them all.
    hold: Option<chrono::Duration>,
}

impl Inherited {
    /// No intents yet; new reads reach `margin` (a launch deadline) past their windows on each
    /// side, and the lookups of an episode wait until `margin` plus two seconds (the clock
    /// offset's width, an older writer's truncated second) after its first intent was met.
    pub(crate) fn with_margin(margin: chrono::Duration) -> Self {
        Self {
            margin,
            hold: Some(margin + chrono::Duration::seconds(2)),
            ..Self::default()
        }
    }

    /// Remembers the intent with its (fixed) window.
    pub(crate) fn register(
        &mut self,
        template: TemplateKey,
        key: &str,
        at: DateTime<Utc>,
        window: Window,
    ) {
        let t = self.templates.entry(template).or_default();
        let id = (key.to_owned(), at);
        if t.intents.contains_key(&id) {
            return;
        }
        if t.intents.len() >= REMEMBERED {
            t.intents.clear();
            t.reads.clear();
        }
        t.intents.insert(
            id,
            Entry {
                window,
                answer: None,
            },
        );
    }

    /// The intent's answer, if a read gave it one.
    pub(crate) fn answer(
        &self,
        template: TemplateKey,
        key: &str,
        at: DateTime<Utc>,
    ) -> Option<Option<SeenJob>> {
        self.templates
            .get(&template)?
            .intents
            .get(&(key.to_owned(), at))?
            .answer
            .clone()
    }

    /// What the lookup of the intent does now, on AAP's clock `now` (its low bound); `cap` is
    /// the latest it waits for overlapping windows to close. A `Read` plan begins (or
    /// continues) a read of the template; the caller reports its progress with
    /// [`saw`](Self::saw), [`advanced`](Self::advanced) and [`ended`](Self::ended). `None`: the
    /// intent is not registered (the memory was dropped).
    pub(crate) fn plan(
        &mut self,
        template: TemplateKey,
        key: &str,
        at: DateTime<Utc>,
        now: DateTime<Utc>,
        cap: DateTime<Utc>,
    ) -> Option<Plan> {
        let (next, margin, hold) = (&mut self.next, self.margin, self.hold);
        let t = self.templates.entry(template).or_default();
        let id = (key.to_owned(), at);
        let own = t.intents.get(&id)?;
        let episode = *t.episode.get_or_insert(now);
        if let Some(answer) = &own.answer {
            return Some(Plan::Answer(answer.clone()));
        }
        let own = own.window;
        // A read that began once this window had closed and spans it: its jobs so far answer
        // the intent, or it continues.
        if let Some(r) = t
            .reads
            .iter_mut()
            .find(|r| within(own, r.range) && own.1 <= r.began)
        {
            let met = r
                .seen
                .get(key)
                .and_then(|jobs| jobs.iter().find(|j| created_in(j, own)))
                .cloned();
            let answer = match met {
                Some(job) => Some(Some(job)),
                None if r.complete => Some(None),
                None => None,
            };
            if let Some(answer) = answer {
                if let Some(e) = t.intents.get_mut(&id) {
                    e.answer = Some(answer.clone());
                }
                return Some(Plan::Answer(answer));
            }
            r.unanswered.insert(id);
            return Some(Plan::Read(ReadPlan {
                id: r.id,
                range: r.range,
                after: r.after,
            }));
        }
        let cluster = cluster_of(&t.intents, own);
        let last = cluster.iter().map(|w| w.1).max().unwrap_or(own.1);
        let horizon = hold.map_or(last, |hold| last.max(episode + hold));
        let ready = horizon.min(cap).max(own.1);
        if ready > now {
            return Some(Plan::Wait {
                until: ready,
                others: cluster.len().saturating_sub(1),
            });
        }
        // Every closed window of the cluster, read as one span.
        let closed: Vec<Window> = cluster.into_iter().filter(|w| w.1 <= now).collect();
        let range = (
            closed.iter().map(|w| w.0).min().unwrap_or(own.0) - margin,
            (closed.iter().map(|w| w.1).max().unwrap_or(own.1) + margin).min(now),
        );
        let unanswered = t
            .intents
            .iter()
            .filter(|(_, e)| e.answer.is_none() && within(e.window, range) && e.window.1 <= now)
            .map(|(id, _)| id.clone())
            .collect();
        if t.reads.len() >= READS {
            t.reads.remove(0);
        }
        *next += 1;
        let id = *next;
        t.reads.push(Reading {
            id,
            range,
            began: now,
            after: None,
            complete: false,
            claimed: false,
            unanswered,
            seen: HashMap::new(),
        });
        Some(Plan::Read(ReadPlan {
            id,
            range,
            after: None,
        }))
    }

    /// Claims the read of `template` `read` for one call: where it continues and the keys
    /// it still looks for; `None` while another lookup's call of it is under way (or it is
    /// over). [`release`](Self::release) ends the claim.
    pub(crate) fn claim(
        &mut self,
        template: TemplateKey,
        read: u64,
    ) -> Option<(Option<u64>, Vec<String>)> {
        let r = self
            .templates
            .get_mut(&template)?
            .reads
            .iter_mut()
            .find(|r| r.id == read && !r.claimed && !r.complete)?;
        r.claimed = true;
        let mut keys: Vec<String> = r.unanswered.iter().map(|(k, _)| k.clone()).collect();
        keys.sort();
        keys.dedup();
        Some((r.after, keys))
    }

    /// The call that claimed the read of `template` `read` is over.
    pub(crate) fn release(&mut self, template: TemplateKey, read: u64) {
        if let Some(r) = self
            .templates
            .get_mut(&template)
            .and_then(|t| t.reads.iter_mut().find(|r| r.id == read))
        {
            r.claimed = false;
        }
    }

    /// The read `read` of `template` met `job` (one carrying an idempotency key): it answers
    /// each intent of the read whose key it carries if it was created in that intent's window,
    /// and is kept for the lookups that come later. Returns whether every intent the read
    /// answers now has its job (it may stop there; a later lookup continues it).
    pub(crate) fn saw(&mut self, template: TemplateKey, read: u64, job: &Job) -> bool {
        let Some(t) = self.templates.get_mut(&template) else {
            return false;
        };
        let Some(r) = t.reads.iter_mut().find(|r| r.id == read) else {
            return false;
        };
        let Some(key) = job
            .extra_vars
            .get(IDEMPOTENCY_KEY_VAR)
            .and_then(serde_json::Value::as_str)
        else {
            return r.unanswered.is_empty();
        };
        let job = SeenJob::of(job);
        let found: Vec<Intent> = r
            .unanswered
            .iter()
            .filter(|(k, _)| k == key)
            .filter(|id| {
                t.intents
                    .get(*id)
                    .is_some_and(|e| created_in(&job, e.window))
            })
            .cloned()
            .collect();
        let jobs = r.seen.entry(key.to_owned()).or_default();
        if !jobs.iter().any(|j| j.id == job.id) {
            jobs.push(job.clone());
        }
        for id in found {
            for r in &mut t.reads {
                r.unanswered.remove(&id);
            }
            if let Some(e) = t.intents.get_mut(&id) {
                e.answer = Some(Some(job.clone()));
            }
        }
        t.reads
            .iter()
            .find(|r| r.id == read)
            .is_none_or(|r| r.unanswered.is_empty())
    }

    /// The read of `template` `read` has read every job of it up to id `after`.
    pub(crate) fn advanced(&mut self, template: TemplateKey, read: u64, after: u64) {
        if let Some(r) = self
            .templates
            .get_mut(&template)
            .and_then(|t| t.reads.iter_mut().find(|r| r.id == read))
        {
            r.after = Some(r.after.map_or(after, |a| a.max(after)));
        }
    }

    /// The read `read` of `template` was read to its end: every intent it answers and did not
    /// meet is absent, and so is every later one it spans and did not meet.
    pub(crate) fn ended(&mut self, template: TemplateKey, read: u64) {
        let Some(t) = self.templates.get_mut(&template) else {
            return;
        };
        let Some(r) = t.reads.iter_mut().find(|r| r.id == read) else {
            return;
        };
        r.complete = true;
        let absent: Vec<Intent> = r.unanswered.drain().collect();
        for id in absent {
            if let Some(e) = t.intents.get_mut(&id) {
                e.answer = Some(None);
            }
            for other in &mut t.reads {
                other.unanswered.remove(&id);
            }
        }
    }

    /// The intent's lookup took its answer (or gave up on it).
    pub(crate) fn forget(&mut self, template: TemplateKey, key: &str, at: DateTime<Utc>) {
        if let Some(t) = self.templates.get_mut(&template) {
            let id = (key.to_owned(), at);
            t.intents.remove(&id);
            for r in &mut t.reads {
                r.unanswered.remove(&id);
            }
            t.settle();
        }
    }
}

/// Whether `job` was created inside `window` (both ends open, as `created__gt`/`created__lt`).
fn created_in(job: &SeenJob, window: Window) -> bool {
    job.created
        .is_some_and(|created| window.0 < created && created < window.1)
}

/// Whether `inner` lies within `outer`.
fn within(inner: Window, outer: Window) -> bool {
    outer.0 <= inner.0 && inner.1 <= outer.1
}

/// The windows of the unanswered intents connected to `own` through overlaps (`own` included).
fn cluster_of(intents: &HashMap<Intent, Entry>, own: Window) -> Vec<Window> {
    let mut windows: Vec<Window> = intents
        .values()
        .filter(|e| e.answer.is_none())
        .map(|e| e.window)
        .collect();
    windows.sort();
    // Sweep: runs of windows, each overlapping the run before it.
    let mut run: Vec<Window> = Vec::new();
    let mut end = DateTime::<Utc>::MIN_UTC;
    for w in windows {
        if !run.is_empty() && w.0 > end {
            if run.contains(&own) {
                return run;
            }
            run.clear();
        }
        end = if run.is_empty() { w.1 } else { end.max(w.1) };
        run.push(w);
    }
    if run.contains(&own) { run } else { vec![own] }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: TemplateKey = (JobKind::Job, 7);

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(s, 0).unwrap_or_default()
    }

    fn job(id: u64, key: &str, created: i64) -> Job {
        let mut job = Job::from_value(
            &serde_json::json!({"id": id, "extra_vars": {IDEMPOTENCY_KEY_VAR: key}}),
            JobKind::Job,
        )
        .unwrap_or_else(|| unreachable!("a job"));
        job.created = Some(t(created));
        job
    }

    fn read(plan: Option<Plan>) -> ReadPlan {
        match plan {
            Some(Plan::Read(read)) => read,
            other => panic!("expected a read, got {other:?}"),
        }
    }

    #[test]
    fn overlapping_windows_wait_for_the_last_and_share_one_read() {
        let mut i = Inherited::default();
        i.register(T, "a", t(100), (t(99), t(170)));
        i.register(T, "b", t(103), (t(102), t(173)));
        i.register(T, "c", t(105), (t(104), t(175)));
        // A window far away is not part of the cluster.
        i.register(T, "far", t(900), (t(899), t(970)));
        assert_eq!(
            i.plan(T, "a", t(100), t(171), t(300)),
            Some(Plan::Wait {
                until: t(175),
                others: 2
            }),
            "a's window closed, the cluster's last not yet"
        );
        assert_eq!(
            i.plan(T, "a", t(100), t(171), t(172)),
            Some(Plan::Wait {
                until: t(172),
                others: 2
            }),
            "capped"
        );
        let r = read(i.plan(T, "a", t(100), t(176), t(300)));
        assert_eq!(
            r,
            ReadPlan {
                id: r.id,
                range: (t(99), t(175)),
                after: None
            }
        );
        assert_eq!(
            i.claim(T, r.id),
            Some((None, vec!["a".into(), "b".into(), "c".into()]))
        );
        // b's lookup continues the same read.
        assert_eq!(read(i.plan(T, "b", t(103), t(176), t(300))), r);
        assert!(!i.saw(T, r.id, &job(40, "b", 104)));
        // A job of another attempt of c (created before c's window) does not answer c.
        assert!(!i.saw(T, r.id, &job(41, "c", 100)));
        i.advanced(T, r.id, 41);
        assert_eq!(
            read(i.plan(T, "c", t(105), t(177), t(300))),
            ReadPlan {
                id: r.id,
                range: r.range,
                after: Some(41)
            }
        );
        i.ended(T, r.id);
        assert_eq!(
            i.plan(T, "b", t(103), t(177), t(300)),
            Some(Plan::Answer(Some(SeenJob::of(&job(40, "b", 104)))))
        );
        assert_eq!(
            i.plan(T, "a", t(100), t(177), t(300)),
            Some(Plan::Answer(None))
        );
        assert_eq!(
            i.plan(T, "c", t(105), t(177), t(300)),
            Some(Plan::Answer(None))
        );
        i.forget(T, "a", t(100));
        assert_eq!(i.plan(T, "a", t(100), t(177), t(300)), None, "taken");
        assert_eq!(
            i.plan(T, "far", t(900), t(177), t(1200)),
            Some(Plan::Wait {
                until: t(970),
                others: 0
            })
        );
    }

    #[test]
    fn a_read_stopped_early_is_continued_for_a_later_lookup_it_spans() {
        let mut i = Inherited::default();
        i.register(T, "a", t(100), (t(99), t(170)));
        let r = read(i.plan(T, "a", t(100), t(171), t(171)));
        assert_eq!(i.claim(T, r.id), Some((None, vec!["a".into()])));
        assert!(i.saw(T, r.id, &job(50, "a", 120)), "all it answers");
        i.advanced(T, r.id, 50);
        i.release(T, r.id);
        assert_eq!(
            i.plan(T, "a", t(100), t(171), t(171)),
            Some(Plan::Answer(Some(SeenJob::of(&job(50, "a", 120)))))
        );
        // Its window closed before the read began: the read continues for it, past id 50.
        i.register(T, "b", t(101), (t(100), t(169)));
        let b = read(i.plan(T, "b", t(101), t(172), t(172)));
        assert_eq!((b.id, b.after), (r.id, Some(50)));
        // Its window was still open when the read began: another read, once it has closed.
        i.register(T, "late", t(102), (t(101), t(174)));
        assert_eq!(
            i.plan(T, "late", t(102), t(172), t(172)),
            Some(Plan::Wait {
                until: t(174),
                others: 1
            })
        );
        let late = read(i.plan(T, "late", t(102), t(175), t(175)));
        assert_ne!(late.id, r.id);
        assert_eq!(late.after, None);
    }

    #[test]
    fn a_read_ended_proves_absence_only_within_its_range() {
        let mut i = Inherited::default();
        i.register(T, "a", t(100), (t(99), t(170)));
        let r = read(i.plan(T, "a", t(100), t(171), t(171)));
        i.register(T, "b", t(150), (t(149), t(220)));
        i.ended(T, r.id);
        assert_eq!(
            i.plan(T, "a", t(100), t(171), t(171)),
            Some(Plan::Answer(None))
        );
        assert_eq!(
            i.plan(T, "b", t(150), t(171), t(290)),
            Some(Plan::Wait {
                until: t(220),
                others: 0
            })
        );
        assert_eq!(i.answer(T, "b", t(150)), None);
    }

    #[test]
    fn a_read_is_claimed_by_one_call_at_a_time() {
        let mut i = Inherited::default();
        i.register(T, "a", t(100), (t(99), t(170)));
        i.register(T, "b", t(101), (t(100), t(171)));
        let r = read(i.plan(T, "a", t(100), t(172), t(172)));
        assert_eq!(i.claim(T, r.id), Some((None, vec!["a".into(), "b".into()])));
        assert_eq!(i.claim(T, r.id), None, "claimed");
        i.advanced(T, r.id, 9);
        i.release(T, r.id);
        assert_eq!(
            i.claim(T, r.id),
            Some((Some(9), vec!["a".into(), "b".into()]))
        );
        i.ended(T, r.id);
        i.release(T, r.id);
        assert_eq!(i.claim(T, r.id), None, "over");
    }

    /// A lookup that comes after a read spanning its window began is answered from the jobs the
    /// read met (no request), or continues the read from its cursor, or — the read complete —
    /// is absent.
    #[test]
    fn a_later_lookup_is_answered_from_what_the_read_met() {
        let mut i = Inherited::default();
        i.register(T, "a", t(100), (t(99), t(170)));
        let r = read(i.plan(T, "a", t(100), t(172), t(172)));
        assert!(i.claim(T, r.id).is_some());
        // It meets b's job (and one of b's earlier attempt, outside b's window) before b asks.
        assert!(!i.saw(T, r.id, &job(40, "b", 95)));
        assert!(!i.saw(T, r.id, &job(41, "b", 130)));
        i.advanced(T, r.id, 60);
        i.release(T, r.id);
        i.register(T, "b", t(129), (t(128), t(168)));
        assert_eq!(
            i.plan(T, "b", t(129), t(173), t(173)),
            Some(Plan::Answer(Some(SeenJob::of(&job(41, "b", 130)))))
        );
        i.register(T, "c", t(129), (t(128), t(168)));
        let c = read(i.plan(T, "c", t(129), t(173), t(173)));
        assert_eq!((c.id, c.after), (r.id, Some(60)), "continued above 60");
        assert_eq!(
            i.claim(T, r.id),
            Some((Some(60), vec!["a".into(), "c".into()]))
        );
        i.ended(T, r.id);
        i.release(T, r.id);
        assert_eq!(i.answer(T, "c", t(129)), Some(None));
        i.register(T, "d", t(130), (t(129), t(169)));
        assert_eq!(
            i.plan(T, "d", t(130), t(174), t(174)),
            Some(Plan::Answer(None)),
            "complete"
        );
        assert_eq!(i.claim(T, r.id), None, "over");
    }

    /// A read reaches a margin past its windows (not past the time it begins): an intent of the
    /// same hand-over met later is answered by it.
    #[test]
    fn a_read_reaches_a_margin_past_its_windows() {
        let mut i = Inherited::with_margin(chrono::Duration::seconds(10));
        i.register(T, "a", t(100), (t(99), t(170)));
        let r = read(i.plan(T, "a", t(100), t(175), t(175)));
        assert_eq!(r.range, (t(89), t(175)), "ends at the time it began");
        i.register(T, "b", t(95), (t(94), t(165)));
        assert_eq!(read(i.plan(T, "b", t(95), t(176), t(176))).id, r.id);
    }

    /// After a hand-over, the lookups wait until the intents written before the first was met
    /// have closed (a margin past that moment), but never a launch deadline past their own
    /// window; an old intent does not wait.
    #[test]
    fn an_episodes_lookups_wait_for_the_intents_written_before_it_began() {
        let mut i = Inherited::with_margin(chrono::Duration::seconds(10));
        i.register(T, "recent", t(195), (t(194), t(205)));
        assert_eq!(
            i.plan(T, "recent", t(195), t(200), t(215)),
            Some(Plan::Wait {
                until: t(212),
                others: 0
            }),
            "the episode began at 200: 10 s and 2 s later"
        );
        i.register(T, "old", t(100), (t(99), t(170)));
        assert!(matches!(
            i.plan(T, "old", t(100), t(201), t(180)),
            Some(Plan::Read(_))
        ));
        i.register(T, "capped", t(196), (t(195), t(200)));
        assert_eq!(
            i.plan(T, "capped", t(196), t(201), t(203)),
            Some(Plan::Wait {
                until: t(203),
                others: 1
            })
        );
    }

    #[test]
    fn clusters_are_runs_of_overlapping_windows() {
        let mut intents = HashMap::new();
        for (k, w) in [
            ("a", (1, 5)),
            ("b", (4, 8)),
            ("c", (8, 9)),
            ("d", (10, 12)),
            ("e", (11, 11)),
        ] {
            intents.insert(
                (k.to_owned(), t(w.0)),
                Entry {
                    window: (t(w.0), t(w.1)),
                    answer: None,
                },
            );
        }
        let mut a = cluster_of(&intents, (t(1), t(5)));
        a.sort();
        assert_eq!(a, vec![(t(1), t(5)), (t(4), t(8)), (t(8), t(9))]);
        let mut d = cluster_of(&intents, (t(11), t(11)));
        d.sort();
        assert_eq!(d, vec![(t(10), t(12)), (t(11), t(11))]);
    }
}
