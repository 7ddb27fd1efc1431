//! [`ProviderError`] and [`MachineErrorReason`].

use std::fmt;
use std::sync::Arc;

/// The machine error reasons shared by Cluster API (v1beta1) and Kubermatic, plus free-form ones.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MachineErrorReason {
    /// The spec is invalid (bad credentials, unknown image, …).
    InvalidConfiguration,
    /// The requested change is not supported.
    UnsupportedChange,
    /// Quota or capacity exhausted.
    InsufficientResources,
    /// Creation failed.
    CreateError,
    /// Update failed.
    UpdateError,
    /// Deletion failed.
    DeleteError,
    /// The node did not join in time.
    JoinClusterTimeoutError,
    /// A provider-specific reason (e.g. "AMI terms not accepted").
    Other(String),
}

impl fmt::Display for MachineErrorReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::InvalidConfiguration => "InvalidConfiguration",
            Self::UnsupportedChange => "UnsupportedChange",
            Self::InsufficientResources => "InsufficientResources",
            Self::CreateError => "CreateError",
            Self::UpdateError => "UpdateError",
            Self::DeleteError => "DeleteError",
            Self::JoinClusterTimeoutError => "JoinClusterTimeoutError",
            Self::Other(s) => s,
        })
    }
}

/// Errors of a [`CloudProvider`](super::CloudProvider).
///
/// ```
/// use provkit_machines::cloud::{MachineErrorReason, ProviderError};
/// let e = ProviderError::terminal(MachineErrorReason::InsufficientResources, "quota exceeded");
/// assert!(e.is_terminal() && !e.is_not_found());
/// assert_eq!(e.to_string(), "An error of type = InsufficientResources, with message = quota exceeded occurred");
/// assert!(ProviderError::NotFound.is_not_found());
/// ```
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// No (non-terminated) instance belongs to the machine.
    #[error("instance not found")]
    NotFound,
    /// Retrying will not help without a change (reason kept structured).
    #[error("An error of type = {reason}, with message = {message} occurred")]
    Terminal {
        /// The structured reason.
        reason: MachineErrorReason,
        /// The provider's message.
        message: String,
    },
    /// A temporary failure; retry with backoff.
    #[error("transient provider error: {message}")]
    Transient {
        /// What failed.
        message: String,
        /// The underlying error, if any.
        #[source]
        source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
    },
    /// The operation was cancelled.
    #[error("operation cancelled")]
    Cancelled,
    /// The operation ran out of time.
    #[error("operation {operation} timed out")]
    DeadlineExceeded {
        /// The operation.
        operation: String,
    },
    /// The provider does not implement an optional operation.
    #[error("{operation} is not implemented by {implementer}")]
    NotImplemented {
        /// The operation.
        operation: &'static str,
        /// The provider.
        implementer: String,
    },
}

impl ProviderError {
    /// A terminal error.
    ///
    /// ```
    /// use provkit_machines::cloud::{MachineErrorReason, ProviderError};
    /// assert!(ProviderError::terminal(MachineErrorReason::CreateError, "x").is_terminal());
    /// ```
    #[must_use]
    pub fn terminal(reason: MachineErrorReason, message: impl Into<String>) -> Self {
        Self::Terminal {
            reason,
            message: message.into(),
        }
    }

    /// A transient error without a source.
    ///
    /// ```
    /// use provkit_machines::cloud::ProviderError;
    /// assert!(!ProviderError::transient("503").is_terminal());
    /// ```
    #[must_use]
    pub fn transient(message: impl Into<String>) -> Self {
        Self::Transient {
            message: message.into(),
            source: None,
        }
    }

    /// True for [`ProviderError::Terminal`].
    ///
    /// ```
    /// use provkit_machines::cloud::ProviderError;
    /// assert!(!ProviderError::Cancelled.is_terminal());
    /// ```
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Terminal { .. })
    }

    /// True for [`ProviderError::NotFound`].
    ///
    /// ```
    /// use provkit_machines::cloud::ProviderError;
    /// assert!(!ProviderError::transient("x").is_not_found());
    /// ```
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound)
    }

    /// True for cancellation and timeouts (never cached by the validation cache).
    ///
    /// ```
    /// use provkit_machines::cloud::ProviderError;
    /// assert!(ProviderError::Cancelled.is_cancellation_or_timeout());
    /// ```
    #[must_use]
    pub fn is_cancellation_or_timeout(&self) -> bool {
        matches!(self, Self::Cancelled | Self::DeadlineExceeded { .. })
    }

    /// The structured reason of a terminal error.
    ///
    /// ```
    /// use provkit_machines::cloud::{MachineErrorReason, ProviderError};
    /// let e = ProviderError::terminal(MachineErrorReason::DeleteError, "x");
    /// assert_eq!(e.terminal_reason(), Some(&MachineErrorReason::DeleteError));
    /// ```
    #[must_use]
    pub fn terminal_reason(&self) -> Option<&MachineErrorReason> {
        match self {
            Self::Terminal { reason, .. } => Some(reason),
            _ => None,
        }
    }
}
