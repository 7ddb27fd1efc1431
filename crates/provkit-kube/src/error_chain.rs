//! [`ErrorChain`]: an error and all its causes on one line, for log fields.
//!
//! `tracing`'s `%error` prints only the outermost `Display` ("status patch of ha-3 failed"),
//! which hides the API server's answer (a 403 and its message) behind `source()`. Every log
//! line provkit-kube writes for a failed API call uses [`ErrorChain`] instead. Hand-written
//! because the de-duplication below is specific to kube's errors: `kube::Error::Api` (and
//! kube-runtime's finalizer error) already repeat their source in their own `Display`, so a
//! cause whose text the previous message already contains is skipped rather than printed
//! twice.

use std::error::Error;
use std::fmt;

/// Displays an error followed by each cause not already contained in the text before it,
/// joined with `": "`.
///
/// ```
/// use provkit_kube::ErrorChain;
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("status patch of ha-3 failed")]
/// struct Outer(#[source] std::io::Error);
///
/// let e = Outer(std::io::Error::other("forbidden"));
/// assert_eq!(ErrorChain(&e).to_string(), "status patch of ha-3 failed: forbidden");
/// ```
#[derive(Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Debug for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut previous = self.0.to_string();
        f.write_str(&previous)?;
        let mut cause = self.0.source();
        while let Some(e) = cause {
            let text = e.to_string();
            if !text.is_empty() && !previous.contains(&text) {
                write!(f, ": {text}")?;
            }
            previous = text;
            cause = e.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("finalizer handling failed")]
    struct Outer(#[source] kube::Error);

    #[test]
    fn api_status_code_reason_and_message_are_kept_once() {
        let status = kube::core::Status::failure(
            "virtualnetworks.osac.openshift.io \"ha-3\" is forbidden: User cannot patch",
            "Forbidden",
        )
        .with_code(403);
        let e = Outer(kube::Error::Api(Box::new(status)));
        let text = ErrorChain(&e).to_string();
        assert!(
            text.starts_with("finalizer handling failed: ApiError: "),
            "{text}"
        );
        assert!(text.contains("is forbidden: User cannot patch"), "{text}");
        assert!(text.contains("Forbidden") && text.contains("403"), "{text}");
        assert_eq!(
            text.matches("User cannot patch").count(),
            // `kube::Error::Api` prints the status message with Display and Debug.
            2,
            "{text}"
        );
    }
}
