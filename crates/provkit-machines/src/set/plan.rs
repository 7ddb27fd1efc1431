//! Plans: what a rollout pass wants done.

use std::time::Duration;

use provkit_core::k8s::ObjectRef;

/// Requeue delay requested while waiting for a replacement or for readiness (node readiness
/// changes do not retrigger the controller): 5 seconds.
pub const WAIT_REQUEUE: Duration = Duration::from_secs(5);

/// One action of a plan. Actions run in order; execution stops at the first error.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Delete this machine (not-found counts as success).
    Delete {
        /// The bucket index.
        index: i32,
        /// The machine to delete.
        machine: Box<ObjectRef>,
    },
    /// Re-read the machines uncached; create a machine at `index` unless a fresh, up-to-date,
    /// not-deleting machine already holds it.
    CreateIfNoFreshReplacement {
        /// The index to fill.
        index: i32,
    },
}

/// Something the planner wants logged. `name` is `None` for an empty bucket
/// (upstream logs `"<Unknown>"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanEvent {
    /// Nothing to do in any bucket.
    NoUpdatesRequired,
    /// An outdated machine is being removed because its replacement is ready.
    RemovingOldMachine {
        /// Index.
        index: i32,
        /// The machine planned for deletion.
        name: String,
    },
    /// An outdated machine is deleting and its replacement is ready.
    WaitingForRemoved {
        /// Index.
        index: i32,
        /// The deleting machine.
        name: String,
    },
    /// An outdated machine waits for its pending replacement.
    WaitingForReplacement {
        /// Index.
        index: i32,
        /// The outdated machine.
        name: String,
        /// The pending replacement.
        replacement: String,
    },
    /// A machine is pending and nothing in the index is ready.
    WaitingForReady {
        /// Index.
        index: i32,
        /// The pending machine.
        name: String,
    },
    /// A replacement is needed but the surge budget is used up (not an error).
    NoCapacityForExpansion {
        /// Index.
        index: i32,
        /// The outdated machine, or `None` for an empty index.
        name: Option<String>,
    },
    /// OnDelete: the machine is outdated; delete it to trigger a replacement.
    MachineRequiresUpdate {
        /// Index.
        index: i32,
        /// The outdated machine.
        name: String,
        /// Why it is outdated.
        diff: Vec<String>,
    },
    /// A replacement is planned (created by the executor after its re-check).
    ReplacementPlanned {
        /// Index.
        index: i32,
        /// The machine being replaced, or `None` for an empty index.
        name: Option<String>,
    },
    /// The update strategy is unsupported or unknown; nothing is planned (log as an error).
    InvalidStrategy {
        /// Why the strategy is invalid (same text as the degradation message).
        message: String,
    },
}

/// The outcome of a planner: actions, an optional requeue and events to log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Actions, in execution order.
    pub actions: Vec<Action>,
    /// Requeue after this delay (even without an error).
    pub requeue_after: Option<Duration>,
    /// Events to log, in order.
    pub events: Vec<PlanEvent>,
}

impl Plan {
    /// True when the plan neither acts nor requeues.
    ///
    /// ```
    /// use provkit_machines::set::Plan;
    /// assert!(Plan::default().is_idle());
    /// ```
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.actions.is_empty() && self.requeue_after.is_none()
    }
}
