//! `provkit-lifecycle`: the provisioning lifecycle engine.
#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod decide;
pub mod dispatch;
mod engine;
pub mod engine_error;
pub mod error;
pub mod hooks;
pub mod idempotency;
pub mod intent;
pub mod launch_context;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
pub mod outcome;
pub mod policy;
pub mod provider;
pub mod push;
pub mod redact;
pub mod resource;

#[doc(inline)]
pub use decide::{Action, Backoff, LegacyJobs};
#[doc(inline)]
pub use engine::Lifecycle;
#[doc(inline)]
pub use engine::multi_target::{
    IntentHeldByTarget, JobTarget, MultiTargetDeprovisionOutcome, MultiTargetError,
    MultiTargetHooks, MultiTargetLifecycle, MultiTargetOutcome, MultiTargetProvisionOutcome,
    TargetError, TargetResult,
};
#[doc(inline)]
pub use engine_error::LifecycleError;
#[doc(inline)]
pub use error::{
    BoxError, ErrorChain, GoDuration, LaunchCertainty, ProviderError, RateLimitError, RetryLater,
    find_not_found, find_rate_limit, find_retry_later,
};
#[doc(inline)]
pub use hooks::{
    DeprovisionHooks, ProvisionHooks, StaleCacheCheck, StatusFlush, stale_check_fn, status_flush_fn,
};
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub use hooks::{MockStaleCacheCheck, MockStatusFlush};
#[doc(inline)]
pub use idempotency::{FoundJob, IdempotencyKey, IdempotencySupport};
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
pub use intent::MockIntentStore;
#[doc(inline)]
pub use intent::{IntentStore, LaunchIntent, MemoryIntentStore};
#[doc(inline)]
pub use launch_context::{
    BackendConnection, LaunchContext, ResolvedStorageClass, SecretText, TierDefinition,
    TierQosLimits,
};
#[doc(inline)]
pub use outcome::{
    DeprovisionOutcome, DeprovisionStep, FinalizerDecision, FlushReport, Outcome, ProvisionOutcome,
    ProvisionStep,
};
#[doc(inline)]
pub use policy::{Jitter, LifecyclePolicy, LookupBeforeLaunch};
#[cfg(feature = "mock")]
#[cfg_attr(docsrs, doc(cfg(feature = "mock")))]
#[doc(inline)]
pub use provider::MockProvisioningProvider;
#[doc(inline)]
pub use provider::{
    DeprovisionAction, DeprovisionResult, ProvisionResult, ProvisionStatus, ProvisioningProvider,
};
#[doc(inline)]
pub use redact::{REDACTED, RedactedError, Redactor};
#[doc(inline)]
pub use resource::{ResourceMeta, ResourceView, ViewError};

/// The `async_trait` attribute macro, re-exported so that implementing
/// [`ProvisioningProvider`], [`StaleCacheCheck`] or [`StatusFlush`] needs no `async-trait`
/// dependency of your own: `#[provkit_lifecycle::async_trait]`.
#[doc(no_inline)]
pub use async_trait::async_trait;
