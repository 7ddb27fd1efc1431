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
        let st = State { slots: vec![Slot::default(); objects], ..State::default() };
        Self { clock, advance, state: Mutex::new(st), work: Notify::new(), driver: Notify::new() }
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
        st.heap.push(Reverse((at, seq, Entry::Object(key))));
        drop(st);
        self.driver.notify_one();
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
        if key < st.slots.len() && st.slots[key].in_flight {
            st.slots[key].in_flight = false;
            st.in_flight -= 1;
            if std::mem::take(&mut st.slots[key].rerun) {
                st.slots[key].scheduled = None;
                Self::release(&mut st, key);
            }
        }
        drop(st);
        if let Some(d) = requeue_after {
            let at = now + chrono::TimeDelta::from_std(d).unwrap_or(chrono::TimeDelta::MAX / 4);
            self.schedule(key, at);
        }
        self.work.notify_one();
        self.driver.notify_one();
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
