//! Which object waits for which job, and what a push signal wakes (no IO, no clock reads: the
//! caller passes `now`).
//!
//! Hand-written because it is a few maps: job id → object uid, uid → the object and its
//! in-flight jobs, the final statuses of jobs not (yet) known (a job can end before the
//! reconcile that launched it has recorded it), the objects woken since their last reconcile,
//! and the wake-ups spread over one normal poll interval when the stream stops being healthy.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use provkit_lifecycle::push::{PushHealth, PushTransition};
use tokio::time::Instant;

/// An object to reconcile.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) name: String,
    pub(crate) namespace: Option<String>,
}

#[derive(Debug)]
struct Tracked {
    key: Key,
    jobs: Vec<String>,
}

/// Counts for reports and tests (see [`PushStats`](super::PushStats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) woken: u64,
    pub(crate) unknown: u64,
    pub(crate) late: u64,
    pub(crate) bursts: u64,
    pub(crate) repolled: u64,
    pub(crate) largest_burst: u64,
    pub(crate) last_burst: u64,
    pub(crate) spread: u64,
    pub(crate) drops: u64,
}

/// The registry.
#[derive(Debug)]
pub(crate) struct Registry {
    health: PushHealth,
    by_job: HashMap<String, String>,
    objects: HashMap<String, Tracked>,
    /// Final statuses of unknown jobs, oldest first, kept for `recent_window` (at most
    /// `recent_cap`): every user's jobs are announced, so most are never claimed.
    recent: VecDeque<(Instant, String)>,
    recent_ids: HashSet<String>,
    recent_window: Duration,
    recent_cap: usize,
    /// Woken by push since their last reconcile started: their next reconcile must run the
    /// lifecycle even if the object is exactly as this controller last wrote it.
    woken: HashSet<String>,
    /// Wake-ups due at a time (uid), after the stream stopped being healthy.
    spread: Vec<(Instant, String)>,
    pub(crate) counts: Counts,
}

impl Registry {
    pub(crate) fn new(recent_window: Duration, recent_cap: usize) -> Self {
        Self {
            health: PushHealth::Down,
            by_job: HashMap::new(),
            objects: HashMap::new(),
            recent: VecDeque::new(),
            recent_ids: HashSet::new(),
            recent_window,
            recent_cap,
            woken: HashSet::new(),
            spread: Vec::new(),
            counts: Counts::default(),
        }
    }

    pub(crate) fn health(&self) -> PushHealth {
        self.health
    }

    /// How many objects wait for a job.
    pub(crate) fn tracked(&self) -> usize {
        self.objects.len()
    }

    /// Records that object `uid` (`key`) waits for the jobs `in_flight` (replacing what it
    /// waited for). True when one of them was already announced final: wake it now.
    pub(crate) fn track(&mut self, uid: &str, key: Key, in_flight: Vec<String>) -> bool {
        if uid.is_empty() {
            return false;
        }
        if let Some(old) = self.objects.remove(uid) {
            for job in old.jobs {
                if self.by_job.get(&job).is_some_and(|owner| owner == uid) {
                    self.by_job.remove(&job);
                }
            }
        }
        if in_flight.is_empty() {
            return false;
        }
        let mut ended = false;
        for job in &in_flight {
            if self.recent_ids.remove(job) {
                ended = true;
            }
            self.by_job.insert(job.clone(), uid.to_owned());
        }
        self.objects.insert(
            uid.to_owned(),
            Tracked {
                key,
                jobs: in_flight,
            },
        );
        if ended {
            self.counts.late += 1;
            self.woken.insert(uid.to_owned());
        }
        ended
    }

    /// A job ended: the object waiting for it (now woken and no longer waiting for that job),
    /// or `None` for a job nobody here waits for (remembered for a while: its launch may not
    /// be recorded yet).
    pub(crate) fn finished(&mut self, job: &str, now: Instant) -> Option<Key> {
        if let Some(uid) = self.by_job.remove(job) {
            let key = self.objects.get_mut(&uid).map(|t| {
                t.jobs.retain(|j| j != job);
                t.key.clone()
            });
            if self.objects.get(&uid).is_some_and(|t| t.jobs.is_empty()) {
                self.objects.remove(&uid);
            }
            if key.is_some() {
                self.counts.woken += 1;
                self.woken.insert(uid);
            }
            return key;
        }
        self.counts.unknown += 1;
        while let Some((at, old)) = self.recent.front() {
            let expired = now.saturating_duration_since(*at) > self.recent_window;
            if !expired && self.recent.len() < self.recent_cap {
                break;
            }
            self.recent_ids.remove(old);
            self.recent.pop_front();
        }
        if self.recent_cap > 0 && self.recent_ids.insert(job.to_owned()) {
            self.recent.push_back((now, job.to_owned()));
        }
        None
    }

    /// Whether `uid` was woken since its last reconcile started (and forgets it).
    pub(crate) fn take_woken(&mut self, uid: &str) -> bool {
        self.woken.remove(uid)
    }

    /// Applies a stream transition; returns the objects to wake now (every waiting object after
    /// a confirmed (re)subscription: nothing is replayed). When the stream stops being healthy,
    /// every waiting object is given a wake-up at a random point of the next `normal` interval
    /// (`roll` picks it, one call per object), so that polling resumes at the normal cadence at
    /// once without a burst.
    pub(crate) fn transition(
        &mut self,
        transition: PushTransition,
        now: Instant,
        normal: Duration,
        mut roll: impl FnMut() -> f64,
    ) -> Vec<Key> {
        let was = self.health;
        let step = was.apply(transition);
        self.health = step.health;
        if step.repoll_in_flight {
            // The re-poll covers whatever the spread had not reached yet.
            self.spread.clear();
            let keys: Vec<Key> = self.objects.values().map(|t| t.key.clone()).collect();
            self.woken.extend(self.objects.keys().cloned());
            let n = keys.len() as u64;
            self.counts.bursts += 1;
            self.counts.repolled += n;
            self.counts.last_burst = n;
            self.counts.largest_burst = self.counts.largest_burst.max(n);
            return keys;
        }
        if was == PushHealth::Healthy && step.health != PushHealth::Healthy {
            self.counts.drops += 1;
            self.spread = self
                .objects
                .keys()
                .map(|uid| (now + normal.mul_f64(roll().clamp(0.0, 1.0)), uid.clone()))
                .collect();
            self.spread.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
        }
        Vec::new()
    }

    /// When the next spread wake-up is due.
    pub(crate) fn next_spread(&self) -> Option<Instant> {
        self.spread.last().map(|(at, _)| *at)
    }

    /// The spread wake-ups due by `now` (of objects still waiting).
    pub(crate) fn due_spread(&mut self, now: Instant) -> Vec<Key> {
        let mut keys = Vec::new();
        while let Some((at, _)) = self.spread.last() {
            if *at > now {
                break;
            }
            let Some((_, uid)) = self.spread.pop() else {
                break;
            };
            if let Some(t) = self.objects.get(&uid) {
                keys.push(t.key.clone());
                self.woken.insert(uid);
                self.counts.spread += 1;
            }
        }
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Key {
        Key {
            name: name.to_owned(),
            namespace: Some("ns".to_owned()),
        }
    }

    fn jobs(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| (*s).to_owned()).collect()
    }

    fn registry() -> Registry {
        Registry::new(Duration::from_secs(60), 100)
    }

    #[tokio::test(start_paused = true)]
    async fn a_final_status_wakes_exactly_the_object_that_waits_for_the_job() {
        let mut r = registry();
        let now = Instant::now();
        assert!(!r.track("u1", key("a"), jobs(&["11"])));
        assert!(!r.track("u2", key("b"), jobs(&["12"])));
        assert_eq!(r.finished("12", now), Some(key("b")));
        assert!(r.take_woken("u2"));
        assert!(!r.take_woken("u2"), "once");
        assert!(!r.take_woken("u1"));
        // A second final message (canceled twice) finds nobody.
        assert_eq!(r.finished("12", now), None);
        // Unknown jobs (every user's) wake nothing.
        assert_eq!(r.finished("999", now), None);
        assert_eq!(r.counts.woken, 1);
        assert_eq!(r.counts.unknown, 2);
        assert_eq!(r.tracked(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_job_that_ended_before_it_was_recorded_wakes_at_once_when_recorded() {
        let mut r = registry();
        let now = Instant::now();
        assert_eq!(r.finished("21", now), None);
        assert!(r.track("u1", key("a"), jobs(&["21"])));
        assert!(r.take_woken("u1"));
        // Only once: tracking it again (a stale copy) does not wake again.
        assert!(!r.track("u1", key("a"), jobs(&["21"])));
        // Remembered only for the window.
        assert_eq!(r.finished("22", now), None);
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(r.finished("23", Instant::now()), None);
        assert!(!r.track("u2", key("b"), jobs(&["22"])));
    }

    #[tokio::test(start_paused = true)]
    async fn retracking_replaces_the_jobs_an_object_waits_for() {
        let mut r = registry();
        let now = Instant::now();
        r.track("u1", key("a"), jobs(&["31"]));
        r.track("u1", key("a"), jobs(&["32"]));
        assert_eq!(r.finished("31", now), None);
        r.track("u1", key("a"), Vec::new());
        assert_eq!(r.finished("32", now), None);
        assert_eq!(r.tracked(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn every_confirmation_re_polls_all_and_a_drop_spreads_the_normal_cadence() {
        let mut r = registry();
        let now = Instant::now();
        let normal = Duration::from_secs(30);
        r.track("u1", key("a"), jobs(&["41"]));
        r.track("u2", key("b"), jobs(&["42"]));
        assert!(
            r.transition(PushTransition::Connected, now, normal, || 0.5)
                .is_empty()
        );
        let mut burst = r.transition(PushTransition::Subscribed, now, normal, || 0.5);
        burst.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(burst, [key("a"), key("b")]);
        assert!(r.take_woken("u1") && r.take_woken("u2"));
        assert_eq!(r.health(), PushHealth::Healthy);
        // Dropped: nothing at once, each object within one normal interval.
        let mut rolls = [0.1, 0.9].into_iter();
        assert!(
            r.transition(PushTransition::Dropped, now, normal, || rolls
                .next()
                .unwrap_or(0.0))
                .is_empty()
        );
        assert_eq!(r.health(), PushHealth::Down);
        assert_eq!(
            r.due_spread(now + Duration::from_secs(2)),
            Vec::<Key>::new()
        );
        assert_eq!(r.due_spread(now + Duration::from_secs(3)).len(), 1);
        // A reconnect before the rest is due: the burst replaces the spread.
        r.transition(PushTransition::Connected, now, normal, || 0.5);
        let burst = r.transition(PushTransition::Subscribed, now, normal, || 0.5);
        assert_eq!(burst.len(), 2);
        assert_eq!(r.next_spread(), None);
        assert_eq!(r.counts.bursts, 2);
        assert_eq!(r.counts.largest_burst, 2);
    }
}
