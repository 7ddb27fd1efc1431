//! The provider conformance suite from provkit-testing, run against AapProvider + the fake.

use std::time::Duration;

use provkit_aap::AapProvider;
use provkit_lifecycle::{ResourceMeta, ResourceView};
use provkit_testing::conformance::{self, Capabilities};
use provkit_testing::fake_aap::Mode;

use crate::support::{client, server};

#[tokio::test]
async fn conformance_suite_passes_in_both_api_modes() {
    for mode in [Mode::Awx, Mode::Gateway] {
        let server = server(mode).await;
        let provider = AapProvider::with_prefix(client(&server), "osac");
        let resource = |uid: &str| {
            ResourceView::new(
                ResourceMeta {
                    kind: "VirtualNetwork".into(),
                    name: uid.into(),
                    namespace: Some("ns".into()),
                    uid: uid.into(),
                    ..Default::default()
                },
                serde_json::json!({"kind": "VirtualNetwork", "metadata": {"name": uid, "namespace": "ns", "uid": uid}, "spec": {}}),
            )
        };
        let caps = Capabilities::default().with_polling(200, Duration::from_millis(20));
        conformance::run_all(&provider, &resource, caps).await;
    }
}
