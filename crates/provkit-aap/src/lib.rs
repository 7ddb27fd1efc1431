#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod api;
mod auth;
mod call;
mod circuit;
mod client;
mod config;
mod discovery;
pub mod endpoints;
mod error;
mod gateway_token;
mod inner;
mod key_scan;
mod launch_check;
mod marker;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
mod pagination;
pub mod provider;
pub mod push;
mod rate_limit;
mod response;
pub mod retry;
mod session;
mod skip_tag;
mod telemetry;
mod template_miss;
mod tls;
mod transport;
mod types;
mod window_read;
mod window_walk;

pub use api::AapApi;
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub use api::MockAapApi;
pub use auth::Credentials;
pub use circuit::{CircuitBreakerConfig, CircuitState};
pub use client::AapClient;
pub use config::{AapClientBuilder, DEFAULT_LOOKUP_PAGES_PER_CALL};
pub use error::{Error, RequestContext, Result, TemplateCandidate};
pub use gateway_token::{GatewayToken, GatewayTokenOptions, TokenScope};
pub use key_scan::{KeyLookupMeter, KeyLookupStats};
pub use launch_check::LaunchRequirements;
pub use provider::{AapProvider, AapProviderBuilder};
pub use rate_limit::RateLimit;
pub use retry::RetryConfig;
pub use skip_tag::TagLookup;
pub use types::{
    AapJobEvent, AapJobStatus, CancelOutcome, Job, JobKind, LaunchRequest, Launched, Template,
    TemplateKind,
};
pub use window_read::{JobWindow, WindowEnd, WindowJobs};

/// The `async_trait` attribute macro, re-exported so that implementing [`AapApi`] (for a test
/// double) needs no `async-trait` dependency of your own: `#[provkit_aap::async_trait]`.
#[doc(no_inline)]
pub use async_trait::async_trait;
