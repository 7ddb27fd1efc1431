//! provkit-kube integration tests: one binary, a module per area, against a `tower_test`
//! mocked API server or provkit-testing's `FakeApiServer` (`exactly_once`; no cluster).
#![allow(
    clippy::unwrap_used,
    clippy::needless_pass_by_value,
    missing_docs,
    unreachable_pub
)]

mod aap;
mod cutover;
mod event_recorder;
mod exactly_once;
mod fixtures;
mod flush;
mod leader;
mod leadership;
mod machines;
mod on_fake_apiserver;
mod production;
mod push;
mod scenarios;
mod schema;
mod stale_check;
