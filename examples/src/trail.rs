//! What happened to each launch attempt — the status writes carrying its intent and its launch
//! `POST`s, by idempotency key, at each phase — kept for the whole run so that the report can
//! explain a duplicate launch. Every key of the run is kept (a duplicate is known only at the
//! end), so a step is a small fixed record (a few dozen bytes: milliseconds since the first
//! step, an interned client name, the intent's time, the phase and the status) and is rendered
//! as text only for the keys the report asks about.
//!
//! Hand-written: a map of small records; no crate models this.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, SecondsFormat, Utc};
use provkit_core::{Clock, SystemClock};
use provkit_testing::observe::Phase;

/// What a step was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A status write carrying the attempt's launch intent (its time, when it parsed).
    Intent(Option<DateTime<Utc>>),
    /// A launch `POST` under the attempt's key.
    LaunchPost,
}

/// One recorded step.
#[derive(Clone, Copy, Debug)]
struct Record {
    after_ms: u32,
    client: u16,
    step: Step,
    phase: Phase,
    status: Option<u16>,
}

#[derive(Debug, Default)]
struct Inner {
    /// When the first step was recorded.
    start: Option<DateTime<Utc>>,
    /// Client names, by the index a record holds.
    clients: Vec<String>,
    by_key: HashMap<String, Vec<Record>>,
}

/// The attempts' steps of a run, by idempotency key.
#[derive(Debug, Default)]
pub struct Trails {
    inner: Mutex<Inner>,
}

impl Trails {
    /// Records `step` of the attempt with idempotency key `key`, sent by `client`, seen at
    /// `phase` with `status` (now, on the wall clock).
    pub fn note(&self, key: &str, client: &str, step: Step, phase: Phase, status: Option<u16>) {
        let now = SystemClock.now();
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let start = *inner.start.get_or_insert(now);
        let after_ms = u32::try_from((now - start).num_milliseconds().max(0)).unwrap_or(u32::MAX);
        let client = match inner.clients.iter().position(|c| c == client) {
            Some(i) => i,
            None => {
                inner.clients.push(client.to_owned());
                inner.clients.len() - 1
            }
        };
        let record = Record {
            after_ms,
            client: u16::try_from(client).unwrap_or(u16::MAX),
            step,
            phase,
            status,
        };
        match inner.by_key.get_mut(key) {
            Some(steps) => steps.push(record),
            None => {
                inner.by_key.insert(key.to_owned(), vec![record]);
            }
        }
    }

    /// The steps of the attempts of `key`, in order, one line each.
    pub fn render(&self, key: &str) -> Vec<String> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(start) = inner.start else {
            return Vec::new();
        };
        let Some(steps) = inner.by_key.get(key) else {
            return Vec::new();
        };
        steps
            .iter()
            .map(|r| {
                let at = (start + chrono::Duration::milliseconds(i64::from(r.after_ms)))
                    .to_rfc3339_opts(SecondsFormat::Millis, true);
                let client = inner
                    .clients
                    .get(usize::from(r.client))
                    .map_or("?", String::as_str);
                let what = match r.step {
                    Step::Intent(Some(t)) => {
                        format!("intent {}", t.to_rfc3339_opts(SecondsFormat::Micros, true))
                    }
                    Step::Intent(None) => "intent ?".to_owned(),
                    Step::LaunchPost => "launch POST".to_owned(),
                };
                format!("{at} {client} {what} ({:?}, {:?})", r.phase, r.status)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_rendered_in_order_by_key() {
        let t = Trails::default();
        let intent = DateTime::from_timestamp(1_700_000_000, 1_000).unwrap_or_default();
        t.note(
            "k",
            "replica-a.1",
            Step::Intent(Some(intent)),
            Phase::Received,
            None,
        );
        t.note(
            "k",
            "replica-a.1",
            Step::LaunchPost,
            Phase::Answered,
            Some(201),
        );
        t.note(
            "other",
            "replica-b.2",
            Step::LaunchPost,
            Phase::Handled,
            Some(0),
        );
        let lines = t.render("k");
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].ends_with("replica-a.1 intent 2023-11-14T22:13:20.000001Z (Received, None)"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].ends_with("replica-a.1 launch POST (Answered, Some(201))"),
            "{}",
            lines[1]
        );
        assert_eq!(t.render("other").len(), 1);
        assert!(t.render("none").is_empty());
    }
}
