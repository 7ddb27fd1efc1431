//! Dispatch on the update strategy (§A.6.1 step 5): RollingUpdate and OnDelete plan; Recreate
//! and unknown strategies degrade the set without acting.

use super::buckets::IndexBucket;
use super::plan::{Plan, PlanEvent};
use super::planner::{RollingUpdateConfig, plan_on_delete, plan_rolling_update};
use super::validation::{Degradation, UpdateStrategy, strategy_degradation};

/// The outcome of [`plan_for_strategy`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StrategyPlan {
    /// The plan; idle (no actions, no requeue) when the strategy is invalid.
    pub plan: Plan,
    /// `Some(InvalidStrategy)` for Recreate and unknown strategies: set the Degraded condition
    /// and wait for a human. This is deliberately not an error, so the caller does not retry.
    pub degradation: Option<Degradation>,
}

/// Plans one pass with the planner the strategy selects: [`plan_rolling_update`] for
/// RollingUpdate, [`plan_on_delete`] for OnDelete. Recreate (unsupported) and unknown strategies
/// produce an idle plan with a [`PlanEvent::InvalidStrategy`] event and an `InvalidStrategy`
/// degradation.
///
/// ```
/// use provkit_machines::set::{plan_for_strategy, RollingUpdateConfig, UpdateStrategy};
/// let out = plan_for_strategy(&UpdateStrategy::Recreate, &[], 3, RollingUpdateConfig::default());
/// assert!(out.plan.is_idle());
/// assert!(out.degradation.is_some());
/// ```
#[must_use]
pub fn plan_for_strategy(
    strategy: &UpdateStrategy,
    buckets: &[IndexBucket],
    replicas: i32,
    config: RollingUpdateConfig,
) -> StrategyPlan {
    match strategy {
        UpdateStrategy::RollingUpdate => StrategyPlan {
            plan: plan_rolling_update(buckets, replicas, config),
            degradation: None,
        },
        UpdateStrategy::OnDelete => StrategyPlan {
            plan: plan_on_delete(buckets),
            degradation: None,
        },
        UpdateStrategy::Recreate | UpdateStrategy::Other(_) => {
            let degradation = strategy_degradation(strategy);
            let events = degradation
                .iter()
                .map(|d| PlanEvent::InvalidStrategy {
                    message: d.message.clone(),
                })
                .collect();
            StrategyPlan {
                plan: Plan {
                    events,
                    ..Plan::default()
                },
                degradation,
            }
        }
    }
}
