//! A controller whose watch events and push wake-ups feed one queue, on kube-runtime's stable
//! API (`Controller::reconcile_on` needs an unstable kube feature, which a library must not turn
//! on for its users: features unify into their builds).

use std::fmt::Debug;
use std::sync::Arc;

use futures::{Stream, StreamExt as _};
use kube::api::Api;
use kube::runtime::controller::{self, Action, Config, ReconcileRequest, trigger_self};
use kube::runtime::reflector::{self, ObjectRef, reflector};
use kube::runtime::{WatchStreamExt as _, applier, watcher};
use serde::de::DeserializeOwned;

/// Runs `reconcile` for every object of `api` as kube-runtime's `Controller` does (a reflector
/// store, a watch with the default backoff, one reconcile per object at a time, requeues from
/// the returned [`Action`], `config`'s concurrency and debounce) and, in addition, for every
/// object `wakeups` names (for example [`PushWakeups::triggers`](super::PushWakeups::triggers)):
/// the two are merged into one queue handed to kube-runtime's stable
/// [`applier`](kube::runtime::applier()).
///
/// Unlike `Controller::run` the reconcile futures are polled on the task that polls this stream,
/// not spawned: run the stream on its own task if reconciles do CPU-heavy work. No owner or
/// related-object triggers are set up (add them to `wakeups` if needed).
///
/// ```no_run
/// # use std::sync::Arc;
/// # use futures::StreamExt as _;
/// # use kube::runtime::{controller::{Action, Config}, watcher};
/// # use provkit_kube::push::{PushWakeups, controller_with_wakeups};
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # async fn reconcile(_: Arc<ConfigMap>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::await_change()) }
/// # fn error_policy(_: Arc<ConfigMap>, _: &kube::Error, _: Arc<()>) -> Action { Action::await_change() }
/// # async fn run(client: kube::Client, wakeups: PushWakeups) {
/// let api = kube::Api::<ConfigMap>::all(client);
/// controller_with_wakeups(
///     api,
///     watcher::Config::default(),
///     wakeups.triggers(),
///     reconcile,
///     error_policy,
///     Arc::new(()),
///     Config::default(),
/// )
/// .for_each(|_| async {})
/// .await;
/// # }
/// ```
pub fn controller_with_wakeups<K, R, Fut, E, Ctx>(
    api: Api<K>,
    watch: watcher::Config,
    wakeups: impl Stream<Item = ObjectRef<K>> + Send + 'static,
    mut reconcile: R,
    error_policy: impl Fn(Arc<K>, &E, Arc<Ctx>) -> Action,
    context: Arc<Ctx>,
    config: Config,
) -> impl Stream<Item = Result<(ObjectRef<K>, Action), controller::Error<E, watcher::Error>>>
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    R: FnMut(Arc<K>, Arc<Ctx>) -> Fut,
    Fut: std::future::Future<Output = Result<Action, E>> + Send + 'static,
    E: std::error::Error + Send + 'static,
{
    let writer = reflector::store::Writer::<K>::default();
    let reader = writer.as_reader();
    let watched = trigger_self(
        reflector(writer, watcher(api, watch))
            .default_backoff()
            .applied_objects(),
        (),
    );
    let woken = wakeups.map(|r| Ok(ReconcileRequest::from(r)));
    let queue = futures::stream::select(watched, woken);
    applier(
        move |obj, ctx| Box::pin(reconcile(obj, ctx)),
        error_policy,
        context,
        reader,
        queue,
        config,
    )
}
