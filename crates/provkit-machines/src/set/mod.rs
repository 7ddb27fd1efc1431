//! Set level: the [`MachineSetProvider`] port and the pure algorithms around it
//! (index naming, failure-domain mapping, readiness, grouping, status, validation, planners)
//! plus the plan executor, [`execute_plan`].

mod buckets;
mod dispatch;
mod error;
mod executor;
mod failure_domain;
mod index;
mod plan;
mod planner;
mod provider;
mod readiness;
mod status;
mod validation;

pub use buckets::{IndexBucket, group_by_index};
pub use dispatch::{StrategyPlan, plan_for_strategy};
pub use error::{BoxError, MachineSetError, MappingError};
pub use executor::{ExecutionEvent, ExecutionReport, execute_plan};
pub use failure_domain::{
    MachineDomain, MachineMapping, MappingEvent, MappingOutcome, base_mapping, index_for_machine,
    machine_mapping, map_indexes_to_failure_domains, map_indexes_to_failure_domains_with_template,
    reconcile_indexes, reconcile_mappings,
};
pub use index::{MachineNamePrefix, RANDOM_SUFFIX_ALPHABET, machine_name, parse_index};
pub use plan::{Action, Plan, PlanEvent, WAIT_REQUEUE};
pub use planner::{RollingUpdateConfig, plan_on_delete, plan_rolling_update};
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub use provider::MockMachineSetProvider;
pub use provider::{CreatableIndexes, MachineSetProvider};
pub use readiness::{
    DEFAULT_READY_GRACE, MachinePhase, NodeReadyCondition, NodeReadyStatus, is_ready,
};
pub use status::{SetCondition, SetStatus, compute_status};
pub use validation::{Degradation, DegradationReason, UpdateStrategy, validate_cluster_state};
