//! Integration tests of the lifecycle engine (one binary; modules under `tests/engine/`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod support;

mod bad_input;
mod conformance;
mod conformance_broken;
mod dispatch;
mod duplicate_launch;
mod go_changes;
mod intents;
mod keys;
mod mock;
mod multi_target;
mod properties;
mod rate_limit_jitter;
mod vectors_backoff;
mod vectors_deprovision;
mod vectors_evaluate;
mod vectors_history;
mod vectors_lifecycle;
mod virtual_time;
