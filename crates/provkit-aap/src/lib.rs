#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod api;
mod auth;
mod client;
mod config;
mod discovery;
pub mod endpoints;
mod error;
mod launch_check;
mod pagination;
pub mod provider;
mod rate_limit;
mod response;
pub mod retry;
mod tls;
mod transport;
mod types;

pub use api::AapApi;
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub use api::MockAapApi;
pub use auth::Credentials;
pub use client::AapClient;
pub use config::AapClientBuilder;
pub use error::{Error, RequestContext, Result, TemplateCandidate};
pub use launch_check::LaunchRequirements;
pub use provider::{AapProvider, AapProviderBuilder};
pub use rate_limit::RateLimit;
pub use retry::RetryConfig;
pub use types::{
    AapJobStatus, CancelOutcome, Job, JobKind, LaunchRequest, Launched, Template, TemplateKind,
};
