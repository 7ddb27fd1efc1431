//! Every request runs in a span with method, path, status and request id; no secret appears.
//!
//! This test is its own test binary on purpose: it installs a thread-local tracing subscriber,
//! and tracing caches callsite interest process-wide, so a concurrently running test that hits
//! the same callsites first (with no subscriber) could disable them for this one.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use provkit_aap::AapClient;
use provkit_testing::fake_aap::{FakeAap, FakeAapServer, Mode};
use tracing_subscriber::fmt::format::FmtSpan;

async fn server(mode: Mode) -> FakeAapServer {
    FakeAap::builder().mode(mode).start().await.unwrap()
}

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

#[tokio::test]
async fn spans_carry_request_details_but_no_credentials() {
    let server = server(Mode::Awx).await;
    let buffer = Buffer::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(buffer.clone())
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(FmtSpan::CLOSE)
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let client = AapClient::builder(server.base_url())
        .token(server.token())
        .build()
        .unwrap();
    client.me().await.unwrap();
    let basic = AapClient::builder(server.base_url())
        .basic_auth("admin", "password")
        .build()
        .unwrap();
    let _ = basic.get_job(404_404).await.unwrap_err();
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    assert!(text.contains("aap.request"), "{text}");
    assert!(text.contains("http.path=/api/v2/me/"), "{text}");
    assert!(text.contains("http.method=GET"), "{text}");
    assert!(text.contains("http.status_code=404"), "{text}");
    assert!(text.contains("http.status_code=200"), "{text}");
    assert!(text.contains("aap.request_id="), "{text}");
    assert!(!text.contains(&server.token()), "token leaked into traces");
    assert!(
        !text.contains("password") && !text.contains("YWRtaW46cGFzc3dvcmQ"),
        "basic credentials leaked"
    );
}
