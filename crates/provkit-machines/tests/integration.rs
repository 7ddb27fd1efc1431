//! Integration tests of provkit-machines (one binary; modules under `it/`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::type_complexity,
    missing_docs
)]

#[path = "it/cloud.rs"]
mod cloud;
#[path = "it/conformance.rs"]
mod conformance;
#[path = "it/crash_points.rs"]
mod crash_points;
#[path = "it/executor.rs"]
mod executor;
#[path = "it/mapping_tables.rs"]
mod mapping_tables;
#[path = "it/planner_tables.rs"]
mod planner_tables;
#[path = "it/properties.rs"]
mod properties;
#[path = "it/regressions.rs"]
mod regressions;
#[path = "it/status_validation.rs"]
mod status_validation;
#[path = "it/typed.rs"]
mod typed;
