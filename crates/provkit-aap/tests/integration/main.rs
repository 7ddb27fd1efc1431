//! HTTP integration tests of provkit-aap against the fake AAP server over loopback.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod support;

mod bounded_lookup;
mod client_auth;
mod client_circuit;
mod client_discovery;
mod client_faults;
mod client_gateway_tokens;
mod client_jobs;
mod client_launch;
mod client_lookup;
mod client_tls;
mod conformance;
mod contract;
mod envelopes;
mod error_chains;
mod extra_vars_vectors;
mod late_send;
#[cfg(feature = "metrics")]
mod metrics;
mod multi_target;
mod outputs;
mod provider;
mod push;
mod retry_after;
mod tagged_lookup;
mod template_misses;
mod window_walk;
// `MockAapApi` exists only with the `mock` feature; `cargo test -p provkit-aap` must build without it.
#[cfg(feature = "mock")]
mod provider_mock;
