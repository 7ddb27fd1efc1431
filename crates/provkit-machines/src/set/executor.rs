//! Applying a [`Plan`] through a [`MachineSetProvider`].

use super::error::MachineSetError;
use super::plan::{Action, Plan};
use super::provider::MachineSetProvider;

/// What the executor did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecutionEvent {
    /// A machine deletion was requested.
    Deleted {
        /// Index.
        index: i32,
        /// The machine.
        name: String,
    },
    /// A replacement was created.
    CreatedReplacement {
        /// Index.
        index: i32,
    },
    /// The uncached re-check found an up-to-date, live machine at the index; nothing created.
    ReplacementAlreadyPresent {
        /// Index.
        index: i32,
        /// The machine found.
        name: String,
    },
}

/// The result of [`execute_plan`]: what was done, and the error that stopped execution.
#[derive(Debug, Default)]
pub struct ExecutionReport {
    /// Events of the actions that ran, in order.
    pub events: Vec<ExecutionEvent>,
    /// The first error; later actions were not attempted.
    pub error: Option<MachineSetError>,
}

impl ExecutionReport {
    /// `Ok(events)` or the error.
    ///
    /// # Errors
    /// The error that stopped execution.
    ///
    /// ```
    /// use provkit_machines::set::ExecutionReport;
    /// assert!(ExecutionReport::default().into_result().unwrap().is_empty());
    /// ```
    pub fn into_result(self) -> Result<Vec<ExecutionEvent>, MachineSetError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.events),
        }
    }
}

/// Applies `plan` in order and stops at the first error (upstream semantics).
///
/// Before each create the executor calls [`MachineSetProvider::refresh`] and reads the fresh
/// machines; if any machine at the index is up to date and not deleting, the create is skipped
/// ([`ExecutionEvent::ReplacementAlreadyPresent`]). This defeats informer staleness that would
/// otherwise create a duplicate replacement (OCPBUGS-4297).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use provkit_machines::set::{execute_plan, Action, ExecutionEvent, Plan};
/// use provkit_testing::machines::{InMemoryMachineSetProvider, MachineInfoBuilder};
///
/// let provider = InMemoryMachineSetProvider::new(vec![
///     MachineInfoBuilder::updated(0, "master-0").build(),
/// ]);
/// let plan = Plan {
///     actions: vec![
///         Action::CreateIfNoFreshReplacement { index: 0 }, // index 0 is healthy: skipped
///         Action::CreateIfNoFreshReplacement { index: 1 },
///     ],
///     ..Plan::default()
/// };
/// let events = execute_plan(&provider, &plan).await.into_result().unwrap();
/// assert!(matches!(events[0], ExecutionEvent::ReplacementAlreadyPresent { index: 0, .. }));
/// assert_eq!(events[1], ExecutionEvent::CreatedReplacement { index: 1 });
/// # });
/// ```
pub async fn execute_plan(provider: &dyn MachineSetProvider, plan: &Plan) -> ExecutionReport {
    let mut report = ExecutionReport::default();
    for action in &plan.actions {
        let step = match action {
            Action::Delete { index, machine } => {
                provider
                    .delete_machine(machine)
                    .await
                    .map(|()| ExecutionEvent::Deleted {
                        index: *index,
                        name: machine.name().to_owned(),
                    })
            }
            Action::CreateIfNoFreshReplacement { index } => create_checked(provider, *index).await,
        };
        match step {
            Ok(ev) => report.events.push(ev),
            Err(e) => {
                report.error = Some(e);
                break;
            }
        }
    }
    report
}

async fn create_checked(
    provider: &dyn MachineSetProvider,
    index: i32,
) -> Result<ExecutionEvent, MachineSetError> {
    let fresh = provider.refresh().await?;
    let infos = fresh.machine_infos().await?;
    if let Some(present) = infos
        .iter()
        .find(|i| i.index == index && !i.needs_update() && !i.is_deleting())
    {
        return Ok(ExecutionEvent::ReplacementAlreadyPresent {
            index,
            name: present.name().to_owned(),
        });
    }
    provider.create_machine(index).await?;
    Ok(ExecutionEvent::CreatedReplacement { index })
}
