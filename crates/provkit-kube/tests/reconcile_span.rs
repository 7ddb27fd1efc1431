//! Every reconcile runs in a `provkit.reconcile` span with the object, the lifecycle's action
//! and the job id, on the path users run (`Provisioner::reconcile` over a `kube::Client`, the
//! fake API server, a scripted provider).
//!
//! Its own test binary on purpose: it installs a thread-local tracing subscriber, and tracing
//! caches callsite interest process-wide, so a concurrently running test that hits the same
//! callsites first (with no subscriber) could disable them for this one.
#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

mod common;
use common::{Network, NetworkSpec};

use std::io::Write;
use std::sync::{Arc, Mutex};

use chrono::{TimeZone, Utc};
use kube::api::{Api, PostParams};
use provkit_core::{Clock, ManualClock};
use provkit_kube::{NoCallbacks, Provisioner};
use provkit_lifecycle::Lifecycle;
use provkit_testing::fake_apiserver::FakeApiServer;
use provkit_testing::scripted::ScriptedProvider;
use tracing_subscriber::fmt::format::FmtSpan;

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl Buffer {
    fn take(&self) -> String {
        String::from_utf8(std::mem::take(&mut *self.0.lock().unwrap())).unwrap()
    }
}

/// The closed `provkit.reconcile` spans in `text` (one line each with `FmtSpan::CLOSE`).
fn reconcile_spans(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.contains("provkit.reconcile") && l.contains("close"))
        .collect()
}

#[tokio::test]
async fn the_reconcile_span_names_object_action_and_job() {
    let buffer = Buffer::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(buffer.clone())
        .with_max_level(tracing::Level::INFO)
        .with_span_events(FmtSpan::CLOSE)
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(
        Utc.with_ymd_and_hms(2026, 6, 29, 12, 0, 0).unwrap(),
    ));
    let server = FakeApiServer::builder()
        .crd::<Network>()
        .clock(clock.clone())
        .build();
    let api: Api<Network> = Api::default_namespaced(server.client());
    let net = Network::new(
        "net-a",
        NetworkSpec {
            cidr: "10.0.0.0/24".into(),
        },
    );
    api.create(&PostParams::default(), &net).await.unwrap();
    let provider = ScriptedProvider::new();
    // Reconciled by hand, one right after the other: none is taken for the echo of the
    // previous one's status write.
    let provisioner = Provisioner::new(
        server.client(),
        Lifecycle::new(Arc::new(provider), clock),
        "test.provkit.dev/network-finalizer",
    )
    .with_own_write_window(std::time::Duration::ZERO);
    let reconcile = async || {
        let obj = Arc::new(api.get("net-a").await.unwrap());
        provisioner.reconcile(obj, &NoCallbacks).await.unwrap();
        buffer.take()
    };

    // 1: the finalizer is added (no lifecycle action yet).
    let text = reconcile().await;
    let spans = reconcile_spans(&text);
    assert_eq!(spans.len(), 1, "{text}");
    assert!(spans[0].contains("object.ref=default/net-a"), "{text}");
    assert!(spans[0].contains("object.kind=Network"), "{text}");
    // 2: the launch: action Trigger and the new job's id, on the span of the reconcile.
    let text = reconcile().await;
    let spans = reconcile_spans(&text);
    assert_eq!(spans.len(), 1, "{text}");
    assert!(spans[0].contains("object.ref=default/net-a"), "{text}");
    assert!(spans[0].contains("action=Trigger"), "{text}");
    assert!(spans[0].contains(r#"job_id="1""#), "{text}");
    // The launch's log line is inside that span.
    assert!(
        text.lines()
            .any(|l| l.contains("provkit.reconcile") && l.contains("provision job triggered")),
        "{text}"
    );
    // 3: the poll.
    let text = reconcile().await;
    let spans = reconcile_spans(&text);
    assert!(spans[0].contains("action=Poll"), "{text}");
    assert!(spans[0].contains(r#"job_id="1""#), "{text}");
}
