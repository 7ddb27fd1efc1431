//! The objects whose newest versions are this controller's own status writes, and when the
//! reconcile that made them asked to come back.
//!
//! A status write comes back at once as a watch event, and kube-runtime reconciles the object
//! again. Running the lifecycle then would poll AAP a second time within milliseconds of the
//! poll the write recorded (about one extra poll per job state change: 4.9 polls per job
//! instead of 2.8 in the 1,000-resource fleet run). When the object a reconcile receives
//! carries exactly one of the `resourceVersion`s the last writing reconcile's writes returned
//! (a launch writes the intent, then the flush: either event can arrive first and alone),
//! within a short window after those writes ([`Provisioner::with_own_write_window`](crate::Provisioner::with_own_write_window),
//! 5 s by default), nothing but those writes happened since: the reconcile answers with the
//! requeue its predecessor asked for (the remaining time) and sends nothing. Any other
//! change — a spec edit, a deletion, another writer, a finalizer patch — carries another
//! `resourceVersion` and reconciles normally. The window bounds what an extra trigger with no
//! change to the object (`Controller::reconcile_on`, a push notification) can miss: a job that
//! ends within it after a poll is seen at the next poll instead.
//!
//! A **failed** reconcile's writes echo too (a launch intent, the write that clears a refused
//! launch's intent, the desired version): its versions are noted when its status is persisted
//! ([`OwnWrites::note_unsettled`]) and settled with the error backoff's delay when the
//! reconcile fails ([`OwnWrites::settle`]), so the echo keeps the backoff instead of running
//! the failing launch again at once.
//!
//! Hand-written because it is a few lines over a `HashMap`. Entries are keyed by uid and
//! dropped once their time has come, when the object changes, or by an amortised sweep; the
//! memory is per process, which is all it needs: a restarted controller reconciles everything
//! once (and polls once) before its own writes are recorded again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Until when a reconcile of the versions written is taken for an echo, and when the requeue
/// is due.
type Timing = (Instant, Instant);

#[derive(Debug, Default)]
struct Entries {
    /// uid → (the versions written, and once known: until when a reconcile of one of them is
    /// taken for an echo, when the requeue is due).
    by_uid: HashMap<String, (Vec<String>, Option<Timing>)>,
    /// Sweep expired entries when the map reaches this size.
    sweep_at: usize,
}

/// Per uid: the `resourceVersion` of this controller's last status write and when the
/// reconcile that made it asked to be requeued.
#[derive(Debug, Default)]
pub(crate) struct OwnWrites {
    entries: Mutex<Entries>,
}

impl OwnWrites {
    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records that the reconcile of `uid` wrote the versions `written` (its last write last)
    /// and asked for a requeue after `after`; a reconcile of one of them within `window` is an
    /// echo of those writes.
    pub(crate) fn record(
        &self,
        uid: &str,
        written: Vec<String>,
        after: Duration,
        window: Duration,
    ) {
        let written: Vec<String> = written.into_iter().filter(|v| !v.is_empty()).collect();
        if uid.is_empty() || written.is_empty() || window.is_zero() {
            self.forget(uid);
            return;
        }
        let now = Instant::now();
        self.insert(uid, written, Some((now + window.min(after), now + after)));
    }

    fn insert(&self, uid: &str, written: Vec<String>, timing: Option<Timing>) {
        let now = Instant::now();
        let mut e = self.lock();
        if e.by_uid.len() >= e.sweep_at {
            // Unsettled entries go too: at worst a failing reconcile's echo runs it once more.
            e.by_uid
                .retain(|_, (_, timing)| timing.is_some_and(|(echo_until, _)| echo_until > now));
            e.sweep_at = (e.by_uid.len() * 2).max(1024);
        }
        e.by_uid.insert(uid.to_owned(), (written, timing));
    }

    /// Notes the versions `written` by the running reconcile of `uid` before its outcome is
    /// known: [`settle`](Self::settle) (it failed) or [`record`](Self::record) (it succeeded)
    /// decides; until then a reconcile of them is not an echo.
    pub(crate) fn note_unsettled(&self, uid: &str, written: Vec<String>) {
        let written: Vec<String> = written.into_iter().filter(|v| !v.is_empty()).collect();
        if uid.is_empty() || written.is_empty() {
            self.forget(uid);
            return;
        }
        self.insert(uid, written, None);
    }

    /// The running reconcile of `uid` failed and comes back after `after`: the versions it
    /// noted are its echo within `window`, as for [`record`](Self::record). Without noted
    /// versions, nothing is recorded.
    pub(crate) fn settle(&self, uid: &str, after: Duration, window: Duration) {
        let now = Instant::now();
        let mut e = self.lock();
        let Some((_, timing)) = e.by_uid.get_mut(uid) else {
            return;
        };
        if timing.is_some() || window.is_zero() {
            e.by_uid.remove(uid);
            return;
        }
        *timing = Some((now + window.min(after), now + after));
    }

    /// If `resource_version` is one this controller's last writing reconcile of `uid`
    /// produced, within the echo window: the time left until the requeue that reconcile asked
    /// for. Otherwise `None`, and the entry is gone.
    pub(crate) fn pending(&self, uid: &str, resource_version: Option<&str>) -> Option<Duration> {
        let mut e = self.lock();
        let (written, timing) = e.by_uid.get(uid)?;
        let now = Instant::now();
        if let Some((echo_until, due)) = timing
            && resource_version.is_some_and(|rv| written.iter().any(|w| w == rv))
            && now < *echo_until
        {
            return Some(due.saturating_duration_since(now));
        }
        e.by_uid.remove(uid);
        None
    }

    /// Forgets `uid` (its reconcile failed, or wrote nothing new).
    pub(crate) fn forget(&self, uid: &str) {
        self.lock().by_uid.remove(uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(version: &str) -> Vec<String> {
        vec![version.to_owned()]
    }

    #[tokio::test(start_paused = true)]
    async fn answers_only_for_the_versions_written_and_until_the_requeue_is_due() {
        let w = OwnWrites::default();
        let window = Duration::from_secs(15);
        w.record("u1", v("7"), Duration::from_secs(30), window);
        assert_eq!(w.pending("u1", Some("7")), Some(Duration::from_secs(30)));
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(w.pending("u1", Some("7")), Some(Duration::from_secs(20)));
        // Another uid, no version, another version: nothing pending.
        assert_eq!(w.pending("u2", Some("7")), None);
        assert_eq!(w.pending("u1", None), None);
        // The mismatch dropped the entry: the old version no longer matches either.
        assert_eq!(w.pending("u1", Some("7")), None);

        // Every version the reconcile wrote is an echo (the first event may arrive alone).
        w.record(
            "u1",
            vec!["5".into(), "6".into()],
            Duration::from_secs(30),
            window,
        );
        assert_eq!(w.pending("u1", Some("5")), Some(Duration::from_secs(30)));
        assert_eq!(w.pending("u1", Some("6")), Some(Duration::from_secs(30)));

        w.record("u1", v("8"), Duration::from_secs(5), window);
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(w.pending("u1", Some("8")), None, "due: reconcile normally");

        // Past the window (15 s) the same version reconciles normally: a trigger that late
        // is not the write's echo.
        w.record("u1", v("8"), Duration::from_secs(30), window);
        tokio::time::advance(Duration::from_secs(16)).await;
        assert_eq!(w.pending("u1", Some("8")), None, "outside the echo window");

        w.record("u1", v("9"), Duration::from_secs(5), window);
        w.forget("u1");
        assert_eq!(w.pending("u1", Some("9")), None);

        // Empty uids or versions, or a zero window, are never recorded.
        w.record("", v("9"), Duration::from_secs(5), window);
        w.record("u3", v(""), Duration::from_secs(5), window);
        w.record("u4", v("1"), Duration::from_secs(5), Duration::ZERO);
        assert_eq!(w.pending("", Some("9")), None);
        assert_eq!(w.pending("u3", Some("")), None);
        assert_eq!(w.pending("u4", Some("1")), None);
    }

    /// A failed reconcile's writes: noted unsettled (no echo yet), settled with the error
    /// backoff's delay (an echo within the window, keeping that requeue).
    #[tokio::test(start_paused = true)]
    async fn a_failed_reconciles_writes_echo_once_settled() {
        let w = OwnWrites::default();
        let window = Duration::from_secs(5);
        w.note_unsettled("u1", v("3"));
        assert_eq!(w.pending("u1", Some("3")), None, "unsettled: not an echo");
        w.settle("u1", Duration::from_secs(8), window);
        assert_eq!(
            w.pending("u1", Some("3")),
            None,
            "the note went with the check"
        );
        w.note_unsettled("u1", v("4"));
        w.settle("u1", Duration::from_secs(8), window);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(w.pending("u1", Some("4")), Some(Duration::from_secs(6)));
        tokio::time::advance(Duration::from_secs(4)).await;
        assert_eq!(w.pending("u1", Some("4")), None, "past the window");
        // Nothing noted: settling records nothing; a settled entry is not settled again.
        w.settle("u2", Duration::from_secs(8), window);
        assert_eq!(w.pending("u2", Some("4")), None);
        w.record("u3", v("7"), Duration::from_secs(30), window);
        w.settle("u3", Duration::from_secs(1), window);
        assert_eq!(
            w.pending("u3", Some("7")),
            None,
            "an older reconcile's entry is dropped"
        );
        w.note_unsettled("u4", v(""));
        w.settle("u4", Duration::from_secs(8), window);
        assert_eq!(w.pending("u4", Some("")), None);
    }

    #[tokio::test(start_paused = true)]
    async fn expired_entries_are_swept() {
        let w = OwnWrites::default();
        for i in 0..1500 {
            w.record(
                &format!("old{i}"),
                v("1"),
                Duration::from_secs(1),
                Duration::from_secs(1),
            );
        }
        tokio::time::advance(Duration::from_secs(2)).await;
        for i in 0..600 {
            w.record(
                &format!("new{i}"),
                v("1"),
                Duration::from_secs(10),
                Duration::from_secs(10),
            );
        }
        // The map reached 2048 entries (the threshold after the sweep at 1024): the 1500
        // expired ones went, the fresh ones stayed.
        assert_eq!(w.lock().by_uid.len(), 600);
        assert_eq!(w.pending("new0", Some("1")), Some(Duration::from_secs(10)));
        assert_eq!(w.pending("old0", Some("1")), None);
    }
}
