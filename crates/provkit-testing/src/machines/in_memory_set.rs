//! [`InMemoryMachineSetProvider`].

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use provkit_machines::set::{
    CreatableIndexes, MachineSetError, MachineSetProvider, RANDOM_SUFFIX_ALPHABET,
};
use provkit_machines::{GroupVersionResource, MachineInfo, ObjectRef, UpdateState};

use super::builders::{machine_gvr, node_gvr};

/// One recorded call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// `machine_infos()`.
    MachineInfos,
    /// `refresh()`.
    Refresh,
    /// `create_machine(index)`.
    Create(i32),
    /// `delete_machine(ref)` with the referenced name.
    Delete(String),
}

#[derive(Debug)]
struct Shared {
    machines: Vec<MachineInfo>,
    calls: Vec<Call>,
    stale_refreshes: usize,
    create_failures: VecDeque<String>,
    delete_failures: VecDeque<String>,
    gvr: GroupVersionResource,
    creatable: CreatableIndexes,
    prefix: String,
    counter: u64,
}

/// An in-memory [`MachineSetProvider`].
///
/// Clones share the machines, call log and knobs; each value has its own snapshot (what
/// [`MachineSetProvider::machine_infos`] returns), taken at construction or by
/// [`MachineSetProvider::refresh`]. Created machines are pending (not ready, up to date) and
/// named `<prefix>-<5 chars>-<index>`; deleted machines get a deletion timestamp and linger
/// until [`advance`](Self::advance).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use provkit_machines::set::MachineSetProvider;
/// use provkit_testing::machines::{Call, InMemoryMachineSetProvider, MachineInfoBuilder};
///
/// let p = InMemoryMachineSetProvider::new(vec![MachineInfoBuilder::updated(0, "machine-0").build()]);
/// p.create_machine(1).await.unwrap();
/// assert_eq!(p.machine_infos().await.unwrap().len(), 1); // snapshot unchanged
/// let fresh = p.refresh().await.unwrap();
/// assert_eq!(fresh.machine_infos().await.unwrap().len(), 2);
/// assert_eq!(p.calls()[0], Call::Create(1));
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct InMemoryMachineSetProvider {
    shared: Arc<Mutex<Shared>>,
    snapshot: Vec<MachineInfo>,
}

impl InMemoryMachineSetProvider {
    /// A provider over `machines` (OpenShift machine GVR, any index creatable, prefix `machine`).
    ///
    /// ```
    /// let p = provkit_testing::machines::InMemoryMachineSetProvider::new(vec![]);
    /// assert!(p.machines().is_empty());
    /// ```
    #[must_use]
    pub fn new(machines: Vec<MachineInfo>) -> Self {
        let shared = Shared {
            machines: machines.clone(),
            calls: Vec::new(),
            stale_refreshes: 0,
            create_failures: VecDeque::new(),
            delete_failures: VecDeque::new(),
            gvr: machine_gvr(),
            creatable: CreatableIndexes::Any,
            prefix: "machine".into(),
            counter: 0,
        };
        Self {
            shared: Arc::new(Mutex::new(shared)),
            snapshot: machines,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Restricts the creatable indexes (as a failure-domain mapping would).
    ///
    /// ```
    /// use std::collections::BTreeSet;
    /// use provkit_machines::set::{CreatableIndexes, MachineSetProvider};
    /// let p = provkit_testing::machines::InMemoryMachineSetProvider::new(vec![])
    ///     .with_creatable_indexes(BTreeSet::from([3, 4, 5]));
    /// assert!(!p.creatable_indexes().contains(0));
    /// ```
    #[must_use]
    pub fn with_creatable_indexes(self, indexes: std::collections::BTreeSet<i32>) -> Self {
        self.lock().creatable = CreatableIndexes::Only(indexes);
        self
    }

    /// Sets the name prefix of created machines.
    ///
    /// ```
    /// let p = provkit_testing::machines::InMemoryMachineSetProvider::new(vec![]).with_name_prefix("cp");
    /// # let _ = p;
    /// ```
    #[must_use]
    pub fn with_name_prefix(self, prefix: impl Into<String>) -> Self {
        self.lock().prefix = prefix.into();
        self
    }

    /// The current (true) machines, not the snapshot.
    ///
    /// ```
    /// let p = provkit_testing::machines::InMemoryMachineSetProvider::new(vec![]);
    /// assert!(p.machines().is_empty());
    /// ```
    #[must_use]
    pub fn machines(&self) -> Vec<MachineInfo> {
        self.lock().machines.clone()
    }

    /// The call log.
    ///
    /// ```
    /// assert!(provkit_testing::machines::InMemoryMachineSetProvider::new(vec![]).calls().is_empty());
    /// ```
    #[must_use]
    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// Clears the call log.
    ///
    /// ```
    /// provkit_testing::machines::InMemoryMachineSetProvider::new(vec![]).clear_calls();
    /// ```
    pub fn clear_calls(&self) {
        self.lock().calls.clear();
    }

    /// Scripted stale-snapshot mode: the next `n` calls to `refresh` return the receiver's own
    /// (stale) snapshot instead of a fresh read, as a lagging informer cache would.
    ///
    /// ```
    /// provkit_testing::machines::InMemoryMachineSetProvider::new(vec![]).script_stale_refreshes(2);
    /// ```
    pub fn script_stale_refreshes(&self, n: usize) {
        self.lock().stale_refreshes = n;
    }

    /// The next `create_machine` fails with `message`.
    ///
    /// ```
    /// provkit_testing::machines::InMemoryMachineSetProvider::new(vec![]).fail_next_create("boom");
    /// ```
    pub fn fail_next_create(&self, message: impl Into<String>) {
        self.lock().create_failures.push_back(message.into());
    }

    /// The next `delete_machine` fails with `message`.
    ///
    /// ```
    /// provkit_testing::machines::InMemoryMachineSetProvider::new(vec![]).fail_next_delete("boom");
    /// ```
    pub fn fail_next_delete(&self, message: impl Into<String>) {
        self.lock().delete_failures.push_back(message.into());
    }

    /// Marks every live machine outdated (a template change).
    ///
    /// ```
    /// use provkit_testing::machines::{InMemoryMachineSetProvider, MachineInfoBuilder};
    /// let p = InMemoryMachineSetProvider::new(vec![MachineInfoBuilder::updated(0, "machine-0").build()]);
    /// p.mark_all_outdated("image: new != old");
    /// assert!(p.machines()[0].needs_update());
    /// ```
    pub fn mark_all_outdated(&self, diff: &str) {
        for m in &mut self.lock().machines {
            if !m.is_deleting() {
                m.update = UpdateState::needs_update([diff]);
            }
        }
    }

    /// Lets the world move on: pending machines become ready (with a node) and deleting
    /// machines disappear. Returns whether anything changed.
    ///
    /// ```
    /// use provkit_testing::machines::{InMemoryMachineSetProvider, MachineInfoBuilder};
    /// let p = InMemoryMachineSetProvider::new(vec![MachineInfoBuilder::pending(0, "machine-0").build()]);
    /// assert!(p.advance());
    /// assert!(p.machines()[0].ready);
    /// assert!(!p.advance());
    /// ```
    pub fn advance(&self) -> bool {
        let mut shared = self.lock();
        let before = shared.machines.len();
        shared.machines.retain(|m| !m.is_deleting());
        let mut changed = shared.machines.len() != before;
        for m in &mut shared.machines {
            if !m.ready {
                m.ready = true;
                if m.node.is_none() {
                    m.node = Some(ObjectRef::named(
                        node_gvr(),
                        format!("{}-node", m.name()),
                        None,
                    ));
                }
                changed = true;
            }
        }
        changed
    }

    fn random5(counter: u64) -> String {
        let alphabet: Vec<char> = RANDOM_SUFFIX_ALPHABET.chars().collect();
        let n = alphabet.len() as u64;
        let mut x = counter.wrapping_mul(2_654_435_761).wrapping_add(12_345);
        (0..5)
            .map(|_| {
                let c = alphabet[usize::try_from(x % n).unwrap_or(0)];
                x /= n;
                c
            })
            .collect()
    }

    fn created_time(counter: u64) -> DateTime<Utc> {
        let base = Utc
            .timestamp_opt(1_767_225_600, 0)
            .single()
            .unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
        base + TimeDelta::seconds(i64::try_from(counter).unwrap_or(0) + 60)
    }
}

#[async_trait::async_trait]
impl MachineSetProvider for InMemoryMachineSetProvider {
    async fn machine_infos(&self) -> Result<Vec<MachineInfo>, MachineSetError> {
        self.lock().calls.push(Call::MachineInfos);
        Ok(self.snapshot.clone())
    }

    async fn refresh(&self) -> Result<Box<dyn MachineSetProvider>, MachineSetError> {
        let mut shared = self.lock();
        shared.calls.push(Call::Refresh);
        let snapshot = if shared.stale_refreshes > 0 {
            shared.stale_refreshes -= 1;
            self.snapshot.clone()
        } else {
            shared.machines.clone()
        };
        Ok(Box::new(Self {
            shared: Arc::clone(&self.shared),
            snapshot,
        }))
    }

    async fn create_machine(&self, index: i32) -> Result<(), MachineSetError> {
        let mut shared = self.lock();
        shared.calls.push(Call::Create(index));
        if let Some(msg) = shared.create_failures.pop_front() {
            return Err(MachineSetError::Create {
                index,
                source: msg.into(),
            });
        }
        if !shared.creatable.contains(index) {
            return Err(MachineSetError::IndexNotCreatable {
                index,
                reason: "no failure domain is mapped to this index".into(),
            });
        }
        shared.counter += 1;
        let counter = shared.counter;
        let name = format!("{}-{}-{index}", shared.prefix, Self::random5(counter));
        let namespace = shared
            .machines
            .first()
            .and_then(|m| m.machine.namespace().map(str::to_owned))
            .or_else(|| Some("openshift-machine-api".into()));
        let machine = ObjectRef::named(shared.gvr.clone(), name, namespace)
            .with_creation_timestamp(Self::created_time(counter));
        shared.machines.push(MachineInfo::new(machine, index));
        Ok(())
    }

    async fn delete_machine(&self, machine: &ObjectRef) -> Result<(), MachineSetError> {
        let mut shared = self.lock();
        shared.calls.push(Call::Delete(machine.name().to_owned()));
        if machine.gvr != shared.gvr {
            return Err(MachineSetError::WrongGvr {
                expected: Box::new(shared.gvr.clone()),
                actual: Box::new(machine.gvr.clone()),
                name: machine.name().to_owned(),
            });
        }
        if let Some(msg) = shared.delete_failures.pop_front() {
            return Err(MachineSetError::Delete {
                namespace: machine.namespace().unwrap_or_default().to_owned(),
                name: machine.name().to_owned(),
                source: msg.into(),
            });
        }
        let now = Self::created_time(shared.counter);
        if let Some(m) = shared.machines.iter_mut().find(|m| {
            m.name() == machine.name()
                && m.machine.namespace() == machine.namespace()
                && !m.is_deleting()
        }) {
            m.machine = m.machine.clone().with_deletion_timestamp(now);
        }
        Ok(())
    }

    fn creatable_indexes(&self) -> CreatableIndexes {
        self.lock().creatable.clone()
    }
}
