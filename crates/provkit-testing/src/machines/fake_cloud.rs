//! [`FakeCloudProvider`].

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use provkit_machines::cloud::{
    AddressType, CleanupProgress, CloudProvider, CreateIntent, DefaultedSpec, DynProgressHandle,
    Instance, InstanceStatus, MachineErrorReason, MachineView, NodeAddress, ProviderError,
};

/// A [`CloudProvider`] method, for error injection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// `add_defaults`.
    AddDefaults,
    /// `validate`.
    Validate,
    /// `get`.
    Get,
    /// `create`.
    Create,
    /// `cleanup`.
    Cleanup,
    /// `migrate_uid`.
    MigrateUid,
    /// `metrics_labels`.
    MetricsLabels,
}

/// Behaviour knobs of the [`FakeCloudProvider`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeCloudConfig {
    /// When false, every validation fails (a spec can also say `"passValidation": false`).
    pub pass_validation: bool,
    /// Eventual consistency: `get` misses a new instance for this many calls after `create`.
    pub get_misses_after_create: u32,
    /// Asynchronous deletion: `cleanup` returns `InProgress` this many times before `Done`.
    pub cleanup_calls_in_progress: u32,
    /// Addresses appear only after this many successful `get`s.
    pub address_delay_gets: u32,
    /// Deduplicate creates by the intent token, like AWS `ClientToken`
    /// ([`CloudProvider::idempotent_create`]).
    pub idempotent_create: bool,
    /// Sub-resources made before the instance (Azure-style public IP, NIC, disk), each guarded
    /// by a finalizer of the same name recorded through the progress handle.
    pub sub_resources: Vec<String>,
    /// A deliberate bug for tests of crash tests: record each sub-resource finalizer *after*
    /// creating the sub-resource (a crash in between orphans it).
    pub record_finalizer_after_create: bool,
}

impl Default for FakeCloudConfig {
    fn default() -> Self {
        Self {
            pass_validation: true,
            get_misses_after_create: 0,
            cleanup_calls_in_progress: 1,
            address_delay_gets: 0,
            idempotent_create: false,
            sub_resources: Vec::new(),
            record_finalizer_after_create: false,
        }
    }
}

#[derive(Debug)]
struct FakeInstance {
    instance: Instance,
    token: String,
    misses_left: u32,
    address_gets_left: u32,
    cleanup_left: Option<u32>,
    terminated: bool,
}

#[derive(Debug, Default)]
struct State {
    instances: BTreeMap<String, Vec<FakeInstance>>,
    sub_resources: BTreeMap<String, BTreeSet<String>>,
    next_errors: HashMap<Method, VecDeque<ProviderError>>,
    always_errors: HashMap<Method, ProviderError>,
    create_calls: u64,
    duplicates: u64,
    calls: HashMap<Method, u64>,
}

/// An in-memory [`CloudProvider`] keyed by machine UID.
///
/// Unlike the upstream Go fake it returns not-found before `create` and after cleanup, so the
/// controller's create and delete paths are testable. Knobs: [`FakeCloudConfig`] plus
/// per-method error injection ([`fail_next`](Self::fail_next), [`fail_always`](Self::fail_always)).
/// [`duplicate_instances`](Self::duplicate_instances) counts creates for a UID that already had
/// a live instance.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use chrono::{TimeZone, Utc};
/// use provkit_machines::cloud::{CleanupProgress, CloudProvider, CreateIntent, MachineView};
/// use provkit_testing::machines::{FakeCloudProvider, InMemoryProgress};
///
/// let cloud = FakeCloudProvider::default();
/// let progress = InMemoryProgress::default();
/// let m = MachineView::new("uid-1", "worker-1", serde_json::json!({"size": "small"}));
/// assert!(cloud.get(&m).await.unwrap_err().is_not_found());
/// let intent = CreateIntent::new(&m.uid, Utc.timestamp_opt(0, 0).unwrap());
/// cloud.create(&m, &intent, "#cloud-config", &progress).await.unwrap();
/// assert_eq!(cloud.get(&m).await.unwrap().name, "worker-1");
/// assert!(matches!(cloud.cleanup(&m, &progress).await.unwrap(), CleanupProgress::InProgress { .. }));
/// assert_eq!(cloud.cleanup(&m, &progress).await.unwrap(), CleanupProgress::Done);
/// assert!(cloud.get(&m).await.unwrap_err().is_not_found());
/// # });
/// ```
#[derive(Debug, Default)]
pub struct FakeCloudProvider {
    config: FakeCloudConfig,
    state: Mutex<State>,
}

impl FakeCloudProvider {
    /// A fake with the given knobs.
    ///
    /// ```
    /// use provkit_testing::machines::{FakeCloudConfig, FakeCloudProvider};
    /// let f = FakeCloudProvider::new(FakeCloudConfig { get_misses_after_create: 2, ..FakeCloudConfig::default() });
    /// assert_eq!(f.config().get_misses_after_create, 2);
    /// ```
    #[must_use]
    pub fn new(config: FakeCloudConfig) -> Self {
        Self {
            config,
            state: Mutex::new(State::default()),
        }
    }

    /// The knobs.
    ///
    /// ```
    /// assert!(provkit_testing::machines::FakeCloudProvider::default().config().pass_validation);
    /// ```
    #[must_use]
    pub fn config(&self) -> &FakeCloudConfig {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next call of `method` fails with `error` (queued; one error per call).
    ///
    /// ```
    /// use provkit_machines::cloud::ProviderError;
    /// use provkit_testing::machines::{FakeCloudProvider, Method};
    /// FakeCloudProvider::default().fail_next(Method::Get, ProviderError::transient("503"));
    /// ```
    pub fn fail_next(&self, method: Method, error: ProviderError) {
        self.lock()
            .next_errors
            .entry(method)
            .or_default()
            .push_back(error);
    }

    /// Every call of `method` fails with `error` until [`clear_failures`](Self::clear_failures).
    ///
    /// ```
    /// use provkit_machines::cloud::{MachineErrorReason, ProviderError};
    /// use provkit_testing::machines::{FakeCloudProvider, Method};
    /// let f = FakeCloudProvider::default();
    /// f.fail_always(Method::Create, ProviderError::terminal(MachineErrorReason::InsufficientResources, "quota"));
    /// f.clear_failures();
    /// ```
    pub fn fail_always(&self, method: Method, error: ProviderError) {
        self.lock().always_errors.insert(method, error);
    }

    /// Removes all injected failures.
    ///
    /// ```
    /// provkit_testing::machines::FakeCloudProvider::default().clear_failures();
    /// ```
    pub fn clear_failures(&self) {
        let mut s = self.lock();
        s.next_errors.clear();
        s.always_errors.clear();
    }

    /// Creates of a UID that already had a live instance (duplicates a controller would leak).
    ///
    /// ```
    /// assert_eq!(provkit_testing::machines::FakeCloudProvider::default().duplicate_instances(), 0);
    /// ```
    #[must_use]
    pub fn duplicate_instances(&self) -> u64 {
        self.lock().duplicates
    }

    /// Number of `create` calls that reached the cloud.
    ///
    /// ```
    /// assert_eq!(provkit_testing::machines::FakeCloudProvider::default().create_calls(), 0);
    /// ```
    #[must_use]
    pub fn create_calls(&self) -> u64 {
        self.lock().create_calls
    }

    /// Number of calls of `method` (including failed ones).
    ///
    /// ```
    /// use provkit_testing::machines::{FakeCloudProvider, Method};
    /// assert_eq!(FakeCloudProvider::default().calls(Method::Get), 0);
    /// ```
    #[must_use]
    pub fn calls(&self, method: Method) -> u64 {
        self.lock().calls.get(&method).copied().unwrap_or(0)
    }

    /// Live (not terminated) instances of a UID.
    ///
    /// ```
    /// assert_eq!(provkit_testing::machines::FakeCloudProvider::default().live_instances("u"), 0);
    /// ```
    #[must_use]
    pub fn live_instances(&self, uid: &str) -> usize {
        self.lock()
            .instances
            .get(uid)
            .map_or(0, |v| v.iter().filter(|i| !i.terminated).count())
    }

    /// Sub-resources of a UID that exist in the cloud.
    ///
    /// ```
    /// assert!(provkit_testing::machines::FakeCloudProvider::default().sub_resources("u").is_empty());
    /// ```
    #[must_use]
    pub fn sub_resources(&self, uid: &str) -> BTreeSet<String> {
        self.lock()
            .sub_resources
            .get(uid)
            .cloned()
            .unwrap_or_default()
    }

    fn enter(&self, method: Method) -> Result<MutexGuard<'_, State>, ProviderError> {
        let mut s = self.lock();
        *s.calls.entry(method).or_default() += 1;
        if let Some(e) = s.next_errors.get_mut(&method).and_then(VecDeque::pop_front) {
            return Err(e);
        }
        if let Some(e) = s.always_errors.get(&method) {
            return Err(e.clone());
        }
        Ok(s)
    }
}

#[async_trait::async_trait]
impl CloudProvider for FakeCloudProvider {
    fn add_defaults(&self, mut spec: serde_json::Value) -> Result<DefaultedSpec, ProviderError> {
        drop(self.enter(Method::AddDefaults)?);
        if let Some(obj) = spec.as_object_mut() {
            obj.entry("size")
                .or_insert_with(|| serde_json::json!("small"));
        }
        Ok(DefaultedSpec::new(spec))
    }

    async fn validate(&self, spec: &serde_json::Value) -> Result<(), ProviderError> {
        drop(self.enter(Method::Validate)?);
        let requested_fail = spec.get("passValidation") == Some(&serde_json::Value::Bool(false));
        if !self.config.pass_validation || requested_fail {
            return Err(ProviderError::terminal(
                MachineErrorReason::InvalidConfiguration,
                "failing validation as requested",
            ));
        }
        Ok(())
    }

    async fn get(&self, machine: &MachineView) -> Result<Instance, ProviderError> {
        let mut s = self.enter(Method::Get)?;
        let Some(live) = s
            .instances
            .get_mut(&machine.uid)
            .and_then(|v| v.iter_mut().find(|i| !i.terminated))
        else {
            return Err(ProviderError::NotFound);
        };
        if live.misses_left > 0 {
            live.misses_left -= 1;
            return Err(ProviderError::NotFound);
        }
        if live.address_gets_left > 0 {
            live.address_gets_left -= 1;
            let mut without = live.instance.clone();
            without.addresses.clear();
            return Ok(without);
        }
        Ok(live.instance.clone())
    }

    async fn create(
        &self,
        machine: &MachineView,
        intent: &CreateIntent,
        _user_data: &str,
        progress: &DynProgressHandle,
    ) -> Result<Instance, ProviderError> {
        drop(self.enter(Method::Create)?);
        for name in &self.config.sub_resources {
            if !self.config.record_finalizer_after_create {
                progress.add_finalizer(name).await?;
            }
            self.lock()
                .sub_resources
                .entry(machine.uid.clone())
                .or_default()
                .insert(name.clone());
            if self.config.record_finalizer_after_create {
                progress.add_finalizer(name).await?;
            }
        }
        let mut s = self.lock();
        s.create_calls += 1;
        let n = s.create_calls;
        let entry = s.instances.entry(machine.uid.clone()).or_default();
        if self.config.idempotent_create
            && let Some(same) = entry
                .iter()
                .find(|i| !i.terminated && i.token == intent.token)
        {
            return Ok(same.instance.clone());
        }
        let duplicate = entry.iter().any(|i| !i.terminated);
        let id = format!("fake-{n}");
        let instance = Instance::new(machine.name.clone(), id.clone(), InstanceStatus::Running)
            .with_provider_id(format!("fake:///{id}"))
            .with_addresses(vec![NodeAddress::new(
                AddressType::InternalIP,
                format!("10.0.{}.{}", n / 250, n % 250 + 1),
            )]);
        entry.push(FakeInstance {
            instance: instance.clone(),
            token: intent.token.clone(),
            misses_left: self.config.get_misses_after_create,
            address_gets_left: self.config.address_delay_gets,
            cleanup_left: None,
            terminated: false,
        });
        if duplicate {
            s.duplicates += 1;
        }
        Ok(instance)
    }

    async fn cleanup(
        &self,
        machine: &MachineView,
        progress: &DynProgressHandle,
    ) -> Result<CleanupProgress, ProviderError> {
        if self.cleanup_instances(machine)? == CleanupProgress::Done {
            // The instance is gone: delete the recorded sub-resources, each finalizer after
            // its sub-resource.
            for name in progress.load().await?.finalizers {
                if let Some(set) = self.lock().sub_resources.get_mut(&machine.uid) {
                    set.remove(&name);
                }
                progress.remove_finalizer(&name).await?;
            }
            return Ok(CleanupProgress::Done);
        }
        Ok(CleanupProgress::InProgress { retry_after: None })
    }

    async fn migrate_uid(&self, machine: &MachineView, new_uid: &str) -> Result<(), ProviderError> {
        let mut s = self.enter(Method::MigrateUid)?;
        if let Some(list) = s.instances.remove(&machine.uid) {
            s.instances
                .entry(new_uid.to_owned())
                .or_default()
                .extend(list);
        }
        if let Some(subs) = s.sub_resources.remove(&machine.uid) {
            s.sub_resources
                .entry(new_uid.to_owned())
                .or_default()
                .extend(subs);
        }
        Ok(())
    }

    fn metrics_labels(
        &self,
        machine: &MachineView,
    ) -> Result<BTreeMap<String, String>, ProviderError> {
        drop(self.enter(Method::MetricsLabels)?);
        let size = machine
            .provider_spec
            .get("size")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("unknown");
        Ok(BTreeMap::from([("size".to_owned(), size.to_owned())]))
    }

    fn idempotent_create(&self) -> bool {
        self.config.idempotent_create
    }
}

impl FakeCloudProvider {
    /// The instance part of `cleanup`: terminates live instances (asynchronously).
    fn cleanup_instances(&self, machine: &MachineView) -> Result<CleanupProgress, ProviderError> {
        let mut s = self.enter(Method::Cleanup)?;
        let in_progress = self.config.cleanup_calls_in_progress;
        let Some(list) = s.instances.get_mut(&machine.uid) else {
            return Ok(CleanupProgress::Done);
        };
        let mut any_pending = false;
        for inst in list.iter_mut().filter(|i| !i.terminated) {
            let left = inst.cleanup_left.get_or_insert(in_progress);
            if *left > 0 {
                *left -= 1;
                inst.instance.status = InstanceStatus::Deleting;
                any_pending = true;
            } else {
                inst.terminated = true;
                inst.instance.status = InstanceStatus::Deleted;
            }
        }
        Ok(if any_pending {
            CleanupProgress::InProgress { retry_after: None }
        } else {
            CleanupProgress::Done
        })
    }
}
