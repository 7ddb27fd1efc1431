//! The error of config-version hashing.

use std::fmt;

/// Why a value could not be turned into Go `encoding/json` bytes (and so hashed).
///
/// Go's `json.Marshal` fails in the same situations (NaN/±Inf, map keys it cannot render);
/// Go's `ComputeDesiredConfigVersion` then returns `"failed to marshal spec to JSON: …"`.
///
/// ```
/// use provkit_core::{compute_desired_config_version, ConfigVersionError};
///
/// let err = compute_desired_config_version(&f64::NAN).unwrap_err();
/// assert!(matches!(err, ConfigVersionError::NonFiniteFloat { .. }));
/// assert!(err.to_string().contains("NaN"));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigVersionError {
    /// A float was NaN or infinite; JSON (and Go's encoder) cannot represent it.
    #[error("failed to marshal spec to JSON: unsupported float value {value}")]
    NonFiniteFloat {
        /// The offending value.
        value: f64,
    },
    /// A map key of a kind Go cannot use as a JSON object key (floats, sequences, maps,
    /// structs, `None`, bytes).
    #[error("failed to marshal spec to JSON: unsupported map key type {kind}")]
    UnsupportedMapKey {
        /// What the key was (e.g. `"f64"`, `"sequence"`).
        kind: &'static str,
    },
    /// A value serde_json can carry but Go-identical bytes cannot be promised for
    /// (`serde_json::value::RawValue`).
    #[error("failed to marshal spec to JSON: unsupported value {kind}")]
    UnsupportedValue {
        /// What the value was.
        kind: &'static str,
    },
    /// The value's own `Serialize` implementation reported an error.
    #[error("failed to marshal spec to JSON: {message}")]
    Custom {
        /// The message it gave.
        message: String,
    },
}

impl serde::ser::Error for ConfigVersionError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self::Custom {
            message: msg.to_string(),
        }
    }
}
