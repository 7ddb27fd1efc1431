//! Machine-side glue: a `MachineSetProvider` backed by a `kube::Client`. The trait has no
//! client parameter; a provider owns its fresh-read capability, so `refresh` re-lists
//! through the (uncached) `kube::Client` it holds. This shows the trait accepts one.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};
use provkit_core::k8s::{MachineInfo, ObjectRef};
use provkit_kube::object_ref;
use provkit_machines::set::{CreatableIndexes, MachineSetError, MachineSetProvider, parse_index};
use serde_json::json;

use crate::fixtures::*;

/// Machines modelled as ConfigMaps labelled `set=<name>` (the wiring, not the modelling, is
/// the point).
struct KubeMachineSet {
    client: Client,
    set: String,
    snapshot: Vec<ConfigMap>,
}

// `MachineSetProvider: Debug`, and `kube::Client` has no `Debug`: write it by hand.
impl std::fmt::Debug for KubeMachineSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeMachineSet")
            .field("set", &self.set)
            .field("machines", &self.snapshot.len())
            .finish()
    }
}

#[async_trait::async_trait]
impl MachineSetProvider for KubeMachineSet {
    async fn machine_infos(&self) -> Result<Vec<MachineInfo>, MachineSetError> {
        Ok(self
            .snapshot
            .iter()
            .filter_map(|cm| {
                parse_index(&cm.name_any()).map(|i| MachineInfo::new(object_ref(cm), i))
            })
            .collect())
    }

    async fn refresh(&self) -> Result<Box<dyn MachineSetProvider>, MachineSetError> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), NS);
        let list = api
            .list(&ListParams::default().labels(&format!("set={}", self.set)))
            .await
            .map_err(|e| MachineSetError::Refresh {
                source: Box::new(e),
            })?;
        Ok(Box::new(Self {
            client: self.client.clone(),
            set: self.set.clone(),
            snapshot: list.items,
        }))
    }

    async fn create_machine(&self, _index: i32) -> Result<(), MachineSetError> {
        Ok(())
    }

    async fn delete_machine(&self, _machine: &ObjectRef) -> Result<(), MachineSetError> {
        Ok(())
    }

    fn creatable_indexes(&self) -> CreatableIndexes {
        CreatableIndexes::Any
    }
}

#[tokio::test]
async fn refresh_reads_through_the_kube_client() {
    let (client, verifier) = testcontext();
    let list = json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"resourceVersion": "9"}, "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "workers-2", "namespace": NS}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "workers-0", "namespace": NS}}
    ]});
    let server = verifier.run(vec![Exchange::get(
        "/api/v1/namespaces/default/configmaps?&labelSelector=set%3Dworkers",
        list,
    )]);
    let empty: Box<dyn MachineSetProvider> = Box::new(KubeMachineSet {
        client,
        set: "workers".into(),
        snapshot: vec![],
    });
    assert!(empty.machine_infos().await.unwrap().is_empty());
    let fresh = empty.refresh().await.unwrap();
    timeout_after_1s(server).await;
    let infos = fresh.machine_infos().await.unwrap();
    let got: Vec<(String, i32, String)> = infos
        .iter()
        .map(|m| (m.name().to_owned(), m.index, m.machine.gvr.resource.clone()))
        .collect();
    assert_eq!(
        got,
        [
            ("workers-2".into(), 2, "configmaps".into()),
            ("workers-0".into(), 0, "configmaps".into())
        ]
    );
}
