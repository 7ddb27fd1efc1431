//! A controller whose watch events and push wake-ups feed one queue, on kube-runtime's stable
//! API (`Controller::reconcile_on` needs an unstable kube feature, which a library must not turn
//! on for its users: features unify into their builds).

use std::fmt::{self, Debug};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt as _};
use kube::api::Api;
use kube::runtime::controller::{self, Action, Config, ReconcileRequest, trigger_self};
use kube::runtime::reflector::{self, ObjectRef, reflector};
use kube::runtime::{WatchStreamExt as _, applier, watcher};
use serde::de::DeserializeOwned;

type Wakeups<K> = Pin<Box<dyn Stream<Item = ObjectRef<K>> + Send>>;
type Shutdown = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Runs a reconcile function for every object of an [`Api`] as kube-runtime's `Controller` does
/// (a reflector store, a watch with the default backoff, one reconcile per object at a time,
/// requeues from the returned [`Action`], the [`Config`]'s concurrency and debounce) and, in
/// addition, for every object a wake-up stream names (for example
/// [`PushWakeups::triggers`](super::PushWakeups::triggers)): the two are merged into one queue
/// handed to kube-runtime's stable [`applier`](kube::runtime::applier()).
///
/// Unlike `Controller::run` the reconcile futures are polled on the task that polls the stream
/// [`run`](Self::run) returns, not spawned: run it on its own task if reconciles do CPU-heavy
/// work. No owner or related-object triggers are set up (add them to the wake-ups if needed).
///
/// ```no_run
/// # use std::sync::Arc;
/// # use futures::StreamExt as _;
/// # use kube::runtime::{controller::Action, watcher};
/// # use provkit_kube::push::{PushWakeups, WakeupController};
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # async fn reconcile(_: Arc<ConfigMap>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::await_change()) }
/// # fn error_policy(_: Arc<ConfigMap>, _: &kube::Error, _: Arc<()>) -> Action { Action::await_change() }
/// # async fn run(client: kube::Client, wakeups: PushWakeups) {
/// let api = kube::Api::<ConfigMap>::all(client);
/// WakeupController::new(api, watcher::Config::default(), wakeups.triggers())
///     .run(reconcile, error_policy, Arc::new(()))
///     .for_each(|_| async {})
///     .await;
/// # }
/// ```
pub struct WakeupController<K: kube::Resource + 'static> {
    api: Api<K>,
    watch: watcher::Config,
    wakeups: Wakeups<K>,
    config: Config,
    shutdown: Shutdown,
}

impl<K: kube::Resource + 'static> Debug for WakeupController<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WakeupController")
            .field("watch", &self.watch)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<K> WakeupController<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// A controller of `api`'s objects (watched with `watch`), also woken by `wakeups`.
    pub fn new(
        api: Api<K>,
        watch: watcher::Config,
        wakeups: impl Stream<Item = ObjectRef<K>> + Send + 'static,
    ) -> Self {
        Self {
            api,
            watch,
            wakeups: Box::pin(wakeups),
            config: Config::default(),
            shutdown: Box::pin(std::future::pending()),
        }
    }

    /// kube-runtime's controller settings (concurrency, debounce).
    #[must_use]
    pub fn with_config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Once `shutdown` resolves no new reconcile starts, and the stream ends when the running
    /// ones have finished (as `Controller::graceful_shutdown_on`). Without it the stream runs
    /// until dropped (which cancels running reconciles).
    #[must_use]
    pub fn graceful_shutdown_on(
        mut self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Self {
        self.shutdown = Box::pin(shutdown);
        self
    }

    /// Runs `reconcile` (with `error_policy` for its errors and `context`): the stream of
    /// results, as `Controller::run` returns it.
    pub fn run<R, Fut, E, Ctx>(
        self,
        mut reconcile: R,
        error_policy: impl Fn(Arc<K>, &E, Arc<Ctx>) -> Action,
        context: Arc<Ctx>,
    ) -> impl Stream<Item = Result<(ObjectRef<K>, Action), controller::Error<E, watcher::Error>>>
    where
        R: FnMut(Arc<K>, Arc<Ctx>) -> Fut,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: std::error::Error + Send + 'static,
    {
        let writer = reflector::store::Writer::<K>::default();
        let reader = writer.as_reader();
        let watched = trigger_self(
            reflector(writer, watcher(self.api, self.watch))
                .default_backoff()
                .applied_objects(),
            (),
        );
        let woken = self.wakeups.map(|r| Ok(ReconcileRequest::from(r)));
        let queue = futures::stream::select(watched, woken).take_until(self.shutdown);
        applier(
            move |obj, ctx| Box::pin(reconcile(obj, ctx)),
            error_policy,
            context,
            reader,
            queue,
            self.config,
        )
    }
}
