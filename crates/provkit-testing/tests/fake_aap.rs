//! Integration tests of the fake AAP server over real loopback sockets (and a few in-process).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

#[path = "fake_aap/aap27.rs"]
mod aap27;
#[path = "fake_aap/common.rs"]
mod common;
#[path = "fake_aap/faults.rs"]
mod faults;
#[path = "fake_aap/fidelity.rs"]
mod fidelity;
#[path = "fake_aap/fuzz.rs"]
mod fuzz;
#[path = "fake_aap/fuzz_props.rs"]
mod fuzz_props;
#[path = "fake_aap/jobs.rs"]
mod jobs;
#[path = "fake_aap/observed.rs"]
mod observed;
#[path = "fake_aap/oneshot.rs"]
mod oneshot;
#[path = "fake_aap/semantics.rs"]
mod semantics;
#[path = "fake_aap/sequence.rs"]
mod sequence;
#[path = "fake_aap/tls.rs"]
mod tls;
