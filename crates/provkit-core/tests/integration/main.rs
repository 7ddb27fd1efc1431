//! Integration tests of provkit-core's public API (one test binary).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod config_version;
mod fuzz_props;
mod history;
mod job_json;
mod props;
#[cfg(feature = "schemars")]
mod schema;
