//! The lookup window of each launch intent, fixed at its first lookup.
//!
//! The window's ends come from the measured clock offset, which changes as launch answers
//! arrive; a lookup cut short is continued by the client only for the very same window (its
//! cursor is keyed by it). So the first lookup of an intent fixes the window, and every retry
//! reads that one until the lookup ends (found, or absence proven).
//!
//! It also remembers the intents that certainly have no job: their launch this provider
//! certainly did not send (refused before the request, by the circuit breaker, a 4xx or 429
//! answer, the launch deadline), or sent and then proved absent by reading its window to the
//! end. Every launch has an intent of its own, sent at most once and only by the process that
//! wrote it, so a lookup of such an intent needs no request — its answer is "no job". A process
//! that did not make the launch does not know and reads the window. What this provider knows
//! of its own launches stays after a lookup ends (a status write that records its outcome can
//! fail, and the intent is then looked up again).
//!
//! An own launch whose outcome is unknown is read in two steps: first its window up to the
//! launch's end (sent → answered or given up), where a job created by the request is expected;
//! if that read meets no job, the rest of the attempt's launch deadline, once it has closed,
//! with the inherited intents (AWX finishes a request whose client left: the job may appear
//! after the client gave up).
//!
//! Hand-written: bounded maps; no crate needed.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};

/// How many unfinished lookups are remembered; past it the memory is dropped.
const REMEMBERED: usize = 16_384;

/// An intent: its idempotency key and its time.
type Intent = (String, DateTime<Utc>);

/// A window: `(since, until)`.
type Window = (DateTime<Utc>, DateTime<Utc>);

/// The window of each intent being looked up, the launches this provider made, and the intents
/// that certainly have no job.
#[derive(Debug, Default)]
pub(crate) struct Windows {
    by_intent: HashMap<Intent, Window>,
    jobless: HashSet<Intent>,
    /// The local times this provider sent each intent's launch and had its answer (or gave up).
    launched: HashMap<Intent, Window>,
    /// Own launches whose window up to the launch's end held no job: the rest of the launch
    /// deadline is still to be read.
    read_to_answer: HashSet<Intent>,
}

impl Windows {
    /// The window fixed for the intent, or `fresh` (then fixed).
    pub(crate) fn fix(&mut self, key: &str, at: DateTime<Utc>, fresh: Window) -> Window {
        let id = (key.to_owned(), at);
        if let Some(window) = self.by_intent.get(&id) {
            return *window;
        }
        if self.by_intent.len() >= REMEMBERED {
            self.by_intent.clear();
        }
        self.by_intent.insert(id, fresh);
        fresh
    }

    /// The intent's lookup ended (what is known of its launch stays).
    pub(crate) fn done(&mut self, key: &str, at: DateTime<Utc>) {
        self.by_intent.remove(&(key.to_owned(), at));
    }

    /// This provider sent the intent's launch at `sent` and had its answer (or gave up) at
    /// `ended` (local clock): a job it created was created in between.
    pub(crate) fn launched(&mut self, key: &str, at: DateTime<Utc>, sent_ended: Window) {
        if self.launched.len() >= REMEMBERED {
            self.launched.clear();
        }
        let id = (key.to_owned(), at);
        // A new send: its lookup starts again from this launch's window.
        self.read_to_answer.remove(&id);
        self.by_intent.remove(&id);
        self.launched.insert(id, sent_ended);
    }

    /// This provider's own launch of the intent has no job up to the launch's end: the lookup
    /// continues with the rest of the launch deadline (a window of its own, fixed next).
    pub(crate) fn read_to_answer(&mut self, key: &str, at: DateTime<Utc>) {
        let id = (key.to_owned(), at);
        self.by_intent.remove(&id);
        if self.read_to_answer.len() >= REMEMBERED {
            self.read_to_answer.clear();
        }
        self.read_to_answer.insert(id);
    }

    /// Whether the intent's own launch was read up to its end without a job.
    pub(crate) fn was_read_to_answer(&self, key: &str, at: DateTime<Utc>) -> bool {
        self.read_to_answer.contains(&(key.to_owned(), at))
    }

    /// When this provider sent the intent's launch and when it ended, if it did.
    pub(crate) fn launch_of(&self, key: &str, at: DateTime<Utc>) -> Option<Window> {
        self.launched.get(&(key.to_owned(), at)).copied()
    }

    /// Whether the intent's launch is (still) certainly not sent; a send makes it possibly
    /// created again.
    pub(crate) fn not_sent(&mut self, key: &str, at: DateTime<Utc>, not_sent: bool) {
        if not_sent {
            self.jobless(key, at);
        } else {
            self.jobless.remove(&(key.to_owned(), at));
        }
    }

    /// This provider's own (ended) launch of the intent was proven to have created no job.
    pub(crate) fn own_launch_absent(&mut self, key: &str, at: DateTime<Utc>) {
        if self.launched.contains_key(&(key.to_owned(), at)) {
            self.jobless(key, at);
        }
    }

    fn jobless(&mut self, key: &str, at: DateTime<Utc>) {
        if self.jobless.len() >= REMEMBERED {
            self.jobless.clear();
        }
        self.jobless.insert((key.to_owned(), at));
    }

    /// The intent certainly has no job: its launch was not sent by this provider, or this
    /// provider's own launch of it was proven absent.
    pub(crate) fn is_jobless(&self, key: &str, at: DateTime<Utc>) -> bool {
        self.jobless.contains(&(key.to_owned(), at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(s, 0).unwrap_or_default()
    }

    #[test]
    fn the_first_window_stays_until_done() {
        let mut w = Windows::default();
        assert_eq!(w.fix("k", t(10), (t(9), t(70))), (t(9), t(70)));
        assert_eq!(w.fix("k", t(10), (t(8), t(75))), (t(9), t(70)));
        assert_eq!(
            w.fix("k", t(11), (t(8), t(75))),
            (t(8), t(75)),
            "another intent"
        );
        w.done("k", t(10));
        assert_eq!(w.fix("k", t(10), (t(8), t(75))), (t(8), t(75)));
    }

    #[test]
    fn a_launch_is_remembered_after_its_lookup_ends() {
        let mut w = Windows::default();
        w.launched("k", t(10), (t(11), t(12)));
        assert_eq!(w.launch_of("k", t(10)), Some((t(11), t(12))));
        assert_eq!(w.launch_of("k", t(9)), None);
        w.done("k", t(10));
        assert_eq!(w.launch_of("k", t(10)), Some((t(11), t(12))));
    }

    #[test]
    fn a_launch_read_to_its_answer_gets_a_new_window_until_sent_again() {
        let mut w = Windows::default();
        w.launched("k", t(10), (t(11), t(12)));
        assert_eq!(w.fix("k", t(10), (t(11), t(12))), (t(11), t(12)));
        assert!(!w.was_read_to_answer("k", t(10)));
        w.read_to_answer("k", t(10));
        assert!(w.was_read_to_answer("k", t(10)));
        assert!(!w.was_read_to_answer("k", t(11)));
        assert_eq!(
            w.fix("k", t(10), (t(11), t(70))),
            (t(11), t(70)),
            "the rest of the deadline"
        );
        w.launched("k", t(10), (t(13), t(14)));
        assert!(!w.was_read_to_answer("k", t(10)), "sent again");
    }

    #[test]
    fn not_sent_is_per_intent_and_undone_by_a_send() {
        let mut w = Windows::default();
        w.not_sent("k", t(10), true);
        assert!(w.is_jobless("k", t(10)));
        assert!(!w.is_jobless("k", t(11)));
        assert!(!w.is_jobless("j", t(10)));
        w.not_sent("k", t(10), false);
        assert!(!w.is_jobless("k", t(10)));
    }

    #[test]
    fn only_an_own_launch_proven_absent_is_jobless() {
        let mut w = Windows::default();
        w.own_launch_absent("k", t(10));
        assert!(!w.is_jobless("k", t(10)), "no launch of this provider");
        w.launched("k", t(10), (t(11), t(12)));
        w.own_launch_absent("k", t(10));
        assert!(w.is_jobless("k", t(10)));
        // Sent again under the same intent (a clock that did not move): possibly created.
        w.not_sent("k", t(10), false);
        assert!(!w.is_jobless("k", t(10)));
    }
}
