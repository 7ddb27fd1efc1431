//! When this process first launched each idempotency key, pruned in amortized O(1).

use std::collections::HashMap;

use chrono::{DateTime, Utc};

/// Below this size the map is never pruned.
const MIN_PRUNE_LEN: usize = 1024;

/// Launch attempts by idempotency key. Entries at or before the horizon are treated as absent
/// and dropped in bulk once the map has doubled since the last prune, so a launch costs O(1)
/// amortized instead of a scan of the whole map.
#[derive(Debug, Default)]
pub(crate) struct Attempts {
    by_key: HashMap<String, DateTime<Utc>>,
    prune_at: usize,
}

impl Attempts {
    /// Records the first attempt of `key` at `now` (a live earlier attempt is kept).
    pub(crate) fn record(&mut self, key: &str, now: DateTime<Utc>, horizon: DateTime<Utc>) {
        if self.by_key.len() >= self.prune_at.max(MIN_PRUNE_LEN) {
            self.by_key.retain(|_, at| *at > horizon);
            self.prune_at = self.by_key.len().saturating_mul(2);
        }
        match self.by_key.get_mut(key) {
            Some(at) if *at > horizon => {}
            Some(at) => *at = now,
            None => {
                self.by_key.insert(key.to_owned(), now);
            }
        }
    }

    /// When `key` was first attempted, unless that is at or before `horizon`.
    pub(crate) fn get(&self, key: &str, horizon: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.by_key.get(key).copied().filter(|at| *at > horizon)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_key.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(secs, 0).unwrap_or_default()
    }

    #[test]
    fn keeps_the_first_live_attempt_and_restarts_an_expired_one() {
        let mut a = Attempts::default();
        a.record("k", t(100), t(0));
        a.record("k", t(200), t(50));
        assert_eq!(a.get("k", t(50)), Some(t(100)));
        assert_eq!(a.get("k", t(100)), None, "at the horizon counts as expired");
        a.record("k", t(300), t(150));
        assert_eq!(a.get("k", t(150)), Some(t(300)));
        assert_eq!(a.get("other", t(0)), None);
    }

    #[test]
    fn prunes_expired_entries_in_bulk_and_stays_bounded() {
        let mut a = Attempts::default();
        // Keys live for 100 s; one launch a second for 10,000 s.
        let mut peak = 0;
        for i in 0..10_000_i64 {
            a.record(&format!("k{i}"), t(i), t(i - 100));
            peak = peak.max(a.len());
            assert_eq!(a.get(&format!("k{i}"), t(i - 100)), Some(t(i)));
        }
        assert!(peak <= 2 * MIN_PRUNE_LEN, "peak {peak}");
        assert!(a.get("k0", t(9_999 - 100)).is_none());
    }
}
