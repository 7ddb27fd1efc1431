//! A controller work queue on a virtual clock, with kube-runtime's guarantees.
//!
//! - **One reconcile per object at a time.** An object scheduled while its reconcile runs is
//!   run again right after that reconcile ends (kube-runtime's runner does the same).
//! - **Earliest schedule wins.** Scheduling an object that is already scheduled keeps the earlier
//!   time (kube-runtime's scheduler does the same), so an event never delays a requeue.
//! - **Requeues are honoured on the virtual clock.** No object runs before its time; the clock
//!   driver ([`WorkQueue::drive`]) moves the shared [`VirtualClock`] to the next due time when
//!   there is no ready work, and runs scheduled *actions* (spec changes, deletions, purges).
//! - **Bounded concurrency.** The caller runs a fixed number of workers that take objects with
//!   [`WorkQueue::next`] and hand them back with [`WorkQueue::done`].

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use provkit_core::Clock;
use tokio::sync::Notify;

use crate::clock::VirtualClock;

/// When the clock driver may move virtual time forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advance {
    /// Only when nothing is ready and no reconcile is running: a pure discrete-event simulation,
    /// reconciles take no virtual time (deterministic timelines; the demo).
    WhenIdle,
    /// Whenever nothing is ready, even while reconciles run, so the workers never wait for the
    /// clock (throughput runs; the fleet). A reconcile may then see time pass while it runs, as a
    /// real controller does.
    Pipelined,
}

/// Why [`WorkQueue::drive`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriveEnd {
    /// Nothing is scheduled, ready or running.
    Quiescent,
    /// The next due entry lies beyond the virtual deadline.
    Deadline,
    /// [`WorkQueue::close`] was called.
    Closed,
}

/// A scheduled action (runs on the driver, at its virtual time).
pub type Action = Box<dyn FnOnce() + Send>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Entry {
    Object(usize),
    Action(u64),
}

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    scheduled: Option<i64>,
    in_flight: bool,
    rerun: bool,
    queued: bool,
}

#[derive(Default)]
struct State {
    heap: BinaryHeap<Reverse<(i64, u64, Entry)>>,
    slots: Vec<Slot>,
    ready: VecDeque<usize>,
    actions: HashMap<u64, Action>,
    seq: u64,
    in_flight: usize,
    closed: bool,
    reconciles: u64,
}

/// The work queue. Share it in an `Arc`.
pub struct WorkQueue {
    clock: VirtualClock,
    advance: Advance,
    state: Mutex<State>,
    work: Notify,
    driver: Notify,
}

impl fmt::Debug for WorkQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct("WorkQueue")
            .field("advance", &self.advance)
            .field("scheduled", &st.heap.len())
            .field("ready", &st.ready.len())
            .field("in_flight", &st.in_flight)
            .finish()
    }
}

fn micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

impl WorkQueue {
    /// A queue for objects `0..objects` on `clock`.
    pub fn new(clock: VirtualClock, objects: usize, advance: Advance) -> Self {
        let st = State {
            slots: vec![Slot::default(); objects],
            ..State::default()
        };
        Self {
            clock,
            advance,
            state: Mutex::new(st),
            work: Notify::new(),
            driver: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The clock.
    pub fn clock(&self) -> &VirtualClock {
        &self.clock
    }

    /// Reconciles handed out so far.
    pub fn reconciles(&self) -> u64 {
        self.lock().reconciles
    }

    /// Schedules object `key` at `at` (earliest schedule wins; a time not after now means "now").
    pub fn schedule(&self, key: usize, at: DateTime<Utc>) {
        let now = micros(self.clock.now());
        let at = micros(at);
        let mut st = self.lock();
        if key >= st.slots.len() || st.closed {
            return;
        }
        if at <= now {
            st.slots[key].scheduled = None;
            Self::release(&mut st, key);
            drop(st);
            self.work.notify_one();
            return;
        }
        if st.slots[key].scheduled.is_some_and(|t| t <= at) {
            return;
        }
        st.slots[key].scheduled = Some(at);
        st.seq += 1;
        let seq = st.seq;
        // The driver only cares about a new earliest entry.
        let earliest = st.heap.peek().is_none_or(|Reverse((t, _, _))| at < *t);
        st.heap.push(Reverse((at, seq, Entry::Object(key))));
        drop(st);
        if earliest {
            self.driver.notify_one();
        }
    }

    /// Schedules object `key` after `d`.
    pub fn schedule_after(&self, key: usize, d: Duration) {
        self.schedule(key, self.clock.after(d));
    }

    /// Runs `action` on the driver at virtual time `at`.
    pub fn at(&self, at: DateTime<Utc>, action: Action) {
        let mut st = self.lock();
        if st.closed {
            return;
        }
        st.seq += 1;
        let seq = st.seq;
        st.actions.insert(seq, action);
        st.heap.push(Reverse((micros(at), seq, Entry::Action(seq))));
        drop(st);
        self.driver.notify_one();
    }

    fn release(st: &mut State, key: usize) {
        let slot = &mut st.slots[key];
        if slot.in_flight {
            slot.rerun = true;
        } else if !slot.queued {
            slot.queued = true;
            st.ready.push_back(key);
        }
    }

    /// The next object to reconcile; `None` once the queue is closed.
    pub async fn next(&self) -> Option<usize> {
        loop {
            let notified = self.work.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.lock();
                if st.closed {
                    return None;
                }
                if let Some(key) = st.ready.pop_front() {
                    let slot = &mut st.slots[key];
                    slot.queued = false;
                    slot.in_flight = true;
                    st.in_flight += 1;
                    st.reconciles += 1;
                    let more = !st.ready.is_empty();
                    drop(st);
                    if more {
                        self.work.notify_one();
                    } else {
                        self.driver.notify_one();
                    }
                    return Some(key);
                }
            }
            notified.await;
        }
    }

    /// Hands object `key` back after a reconcile, with its requeue (`None` = wait for a change).
    pub fn done(&self, key: usize, requeue_after: Option<Duration>) {
        let now = self.clock.now();
        let mut st = self.lock();
        let mut rerun = false;
        if key < st.slots.len() && st.slots[key].in_flight {
            st.slots[key].in_flight = false;
            st.in_flight -= 1;
            if std::mem::take(&mut st.slots[key].rerun) {
                st.slots[key].scheduled = None;
                Self::release(&mut st, key);
                rerun = true;
            }
        }
        // The driver waits for an empty ready queue (and, when idle-driven, no running reconcile).
        let wake_driver =
            st.ready.is_empty() && (self.advance == Advance::Pipelined || st.in_flight == 0);
        drop(st);
        if let Some(d) = requeue_after {
            let at = now + chrono::TimeDelta::from_std(d).unwrap_or(chrono::TimeDelta::MAX / 4);
            self.schedule(key, at);
        }
        if rerun {
            self.work.notify_one();
        }
        if wake_driver {
            self.driver.notify_one();
        }
    }

    /// Stops the queue: workers get `None`, the driver returns.
    pub fn close(&self) {
        self.lock().closed = true;
        self.work.notify_waiters();
        self.driver.notify_waiters();
        self.driver.notify_one();
    }

    /// Drives the clock until nothing is left to do, the next entry is due after `deadline`, or
    /// the queue is closed. Closes the queue when it returns.
    pub async fn drive(&self, deadline: DateTime<Utc>) -> DriveEnd {
        let end = self.drive_inner(micros(deadline)).await;
        self.close();
        end
    }

    async fn drive_inner(&self, deadline: i64) -> DriveEnd {
        loop {
            let notified = self.driver.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let mut actions = Vec::new();
            let mut released = false;
            {
                let mut st = self.lock();
                if st.closed {
                    return DriveEnd::Closed;
                }
                let may_advance = st.ready.is_empty()
                    && match self.advance {
                        Advance::WhenIdle => st.in_flight == 0,
                        Advance::Pipelined => true,
                    };
                if may_advance {
                    // Drop stale heap entries (objects rescheduled earlier).
                    while let Some(Reverse((due, _, Entry::Object(k)))) = st.heap.peek().copied() {
                        if st.slots[k].scheduled == Some(due) {
                            break;
                        }
                        st.heap.pop();
                    }
                    match st.heap.peek().copied() {
                        None if st.in_flight == 0 => return DriveEnd::Quiescent,
                        None => {}
                        Some(Reverse((due, _, _))) if due > deadline => return DriveEnd::Deadline,
                        Some(Reverse((due, _, _))) => {
                            if let Some(t) = DateTime::from_timestamp_micros(due) {
                                self.clock.advance_to(t);
                            }
                            let now = micros(self.clock.now());
                            while let Some(Reverse((due, _, entry))) = st.heap.peek().copied() {
                                if due > now {
                                    break;
                                }
                                st.heap.pop();
                                match entry {
                                    Entry::Object(k) => {
                                        if st.slots[k].scheduled == Some(due) {
                                            st.slots[k].scheduled = None;
                                            Self::release(&mut st, k);
                                            released = true;
                                        }
                                    }
                                    Entry::Action(id) => {
                                        if let Some(a) = st.actions.remove(&id) {
                                            actions.push(a);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            let acted = !actions.is_empty();
            for action in actions {
                action();
            }
            if released {
                self.work.notify_one();
            }
            if released || acted {
                tokio::task::yield_now().await;
                continue;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn earliest_schedule_wins_and_requeues_wait_for_the_virtual_clock() {
        let clock = VirtualClock::new();
        let q = Arc::new(WorkQueue::new(clock.clone(), 2, Advance::WhenIdle));
        q.schedule_after(0, Duration::from_secs(10));
        q.schedule_after(0, Duration::from_secs(5));
        q.schedule_after(0, Duration::from_secs(7));
        q.schedule_after(1, Duration::from_secs(60));
        let driver = tokio::spawn({
            let q = q.clone();
            async move { q.drive(q.clock().after(Duration::from_secs(3600))).await }
        });
        let mut seen = Vec::new();
        while let Some(key) = q.next().await {
            seen.push((key, clock.elapsed().as_secs()));
            q.done(key, None);
        }
        assert_eq!(seen, [(0, 5), (1, 60)]);
        assert_eq!(driver.await.unwrap(), DriveEnd::Quiescent);
    }

    #[tokio::test]
    async fn an_object_is_never_handed_out_twice_at_once() {
        let clock = VirtualClock::new();
        let q = WorkQueue::new(clock.clone(), 1, Advance::WhenIdle);
        q.schedule(0, clock.now());
        assert_eq!(q.next().await, Some(0));
        // An event while the reconcile runs: not handed out now...
        q.schedule(0, clock.now());
        assert!(q.lock().ready.is_empty());
        // ...but right after the running reconcile ends, even though it asked for a later requeue.
        q.done(0, Some(Duration::from_secs(30)));
        assert_eq!(q.next().await, Some(0));
        q.done(0, Some(Duration::from_secs(30)));
        assert_eq!(
            q.lock().slots[0].scheduled,
            Some(micros(clock.after(Duration::from_secs(30))))
        );
    }

    #[tokio::test]
    async fn drive_stops_at_the_deadline_and_runs_actions_in_time_order() {
        let clock = VirtualClock::new();
        let q = Arc::new(WorkQueue::new(clock.clone(), 1, Advance::Pipelined));
        let log = Arc::new(Mutex::new(Vec::new()));
        for secs in [30, 10, 20] {
            let (log, c) = (log.clone(), clock.clone());
            q.at(
                clock.after(Duration::from_secs(secs)),
                Box::new(move || log.lock().unwrap().push(c.elapsed().as_secs())),
            );
        }
        q.schedule_after(0, Duration::from_secs(500));
        assert_eq!(
            q.drive(clock.after(Duration::from_secs(100))).await,
            DriveEnd::Deadline
        );
        assert_eq!(*log.lock().unwrap(), [10, 20, 30]);
        assert_eq!(q.next().await, None, "closed");
    }
}
