//! The provkit example operator: a `VirtualNetwork` CRD provisioned through AAP job templates
//! (`<prefix>-create-virtual-network` / `<prefix>-delete-virtual-network`) with provkit-kube.
//!
//! The binary is `main.rs` (`cargo run --example operator -- --help`); this library holds the
//! pieces so they are unit-tested: the CRD ([`crd`]), the phase/condition callbacks
//! ([`callbacks`]), the controller wiring ([`controller`]), the command line ([`cli`]),
//! the log setup ([`logging`]), the `--fake-aap` backend ([`fake_aap`]), the `/metrics` +
//! `/healthz` server ([`metrics_server`]) and the AWX webhook receiver ([`webhook`]). Leader election is provkit-kube's
//! ([`provkit_kube::LeaderElector::run`]).

pub mod callbacks;
pub mod cli;
pub mod controller;
pub mod crd;
pub mod fake_aap;
pub mod logging;
pub mod metrics_server;
pub mod webhook;

// The README's wiring snippet is compiled here, so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
