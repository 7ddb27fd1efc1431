//! Idempotency keys for launch attempts and the provider's answer to a key lookup.

use std::fmt;

use provkit_core::{JobState, JobStatus, JobType};

/// A deterministic key that identifies one launch attempt of one resource.
///
/// The engine derives it with [`IdempotencyKey::for_attempt`] from
/// - the resource uid,
/// - the job type,
/// - the desired config version (provision attempts; empty for deprovision), and
/// - the attempt's position in the history, expressed as **the job it follows**: the id and trigger
///   second of the latest job of the same type at the time of the attempt (or "first attempt").
///
/// Two attempts of the same resource therefore share a key only when they follow the same job with
/// the same desired version — that is, when they are the *same* attempt retried after a lost answer.
/// Because the predecessor is named by its (backend-unique) job id rather than by an index, trimming
/// old entries from the history never makes a new attempt reuse an older attempt's key.
///
/// Format: `pk1-<uid>-<p|d|o>-<16 hex digits>` (FNV-1a 64 over the version and the predecessor).
///
/// ```
/// use provkit_core::JobType;
/// use provkit_lifecycle::IdempotencyKey;
///
/// let a = IdempotencyKey::for_attempt("uid-1", &JobType::Provision, "v1", None);
/// let b = IdempotencyKey::for_attempt("uid-1", &JobType::Provision, "v1", None);
/// assert_eq!(a, b);
/// assert!(a.as_str().starts_with("pk1-uid-1-p-"));
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Wraps an existing key (for providers and tests).
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// Derives the key of the attempt that follows `predecessor` (the latest job of `job_type`, or
    /// `None` for the first attempt). A predecessor with an empty job id counts as "no predecessor".
    pub fn for_attempt(
        uid: &str,
        job_type: &JobType,
        desired_version: &str,
        predecessor: Option<&JobStatus>,
    ) -> Self {
        Self::for_target_attempt(uid, "", job_type, desired_version, predecessor)
    }

    /// [`for_attempt`](Self::for_attempt) for one target of a multi-target resource
    /// ([`JobStatus::target`]): two targets' first attempts get different keys, so a lookup for one
    /// target never finds the other's job. The empty target gives exactly
    /// [`for_attempt`](Self::for_attempt)'s key.
    ///
    /// ```
    /// use provkit_core::JobType;
    /// use provkit_lifecycle::IdempotencyKey;
    ///
    /// let plain = IdempotencyKey::for_attempt("uid-1", &JobType::Provision, "v1", None);
    /// let untagged = IdempotencyKey::for_target_attempt("uid-1", "", &JobType::Provision, "v1", None);
    /// let storage = IdempotencyKey::for_target_attempt("uid-1", "storage", &JobType::Provision, "v1", None);
    /// assert_eq!(plain, untagged);
    /// assert_ne!(plain, storage);
    /// ```
    pub fn for_target_attempt(
        uid: &str,
        target: &str,
        job_type: &JobType,
        desired_version: &str,
        predecessor: Option<&JobStatus>,
    ) -> Self {
        let type_tag = match job_type {
            JobType::Provision => "p",
            JobType::Deprovision => "d",
            JobType::Other(_) => "o",
        };
        let mut h = Fnv64::new();
        h.write(b"provkit-attempt-v1");
        h.write(&[0]);
        h.write(job_type.as_str().as_bytes());
        h.write(&[0]);
        h.write(desired_version.as_bytes());
        h.write(&[0]);
        if !target.is_empty() {
            h.write(b"target");
            h.write(&[0]);
            h.write(target.as_bytes());
            h.write(&[0]);
        }
        match predecessor.filter(|p| !p.job_id.is_empty()) {
            None => h.write(b"first"),
            Some(p) => {
                h.write(b"after");
                h.write(&[0]);
                h.write(p.job_id.as_bytes());
                h.write(&[0]);
                let secs = p.timestamp.map(|t| t.timestamp()).unwrap_or(i64::MIN);
                h.write(&secs.to_be_bytes());
            }
        }
        Self(format!("pk1-{uid}-{type_tag}-{:016x}", h.finish()))
    }

    /// The key as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdempotencyKey({})", self.0)
    }
}

impl AsRef<str> for IdempotencyKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A job the provider found by its idempotency key.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FoundJob {
    /// The backend's job id.
    pub job_id: String,
    /// The job's current state.
    pub state: JobState,
    /// The backend's status message (may be empty).
    pub message: String,
}

impl FoundJob {
    /// Builds a found job.
    pub fn new(job_id: impl Into<String>, state: JobState, message: impl Into<String>) -> Self {
        Self {
            job_id: job_id.into(),
            state,
            message: message.into(),
        }
    }
}

/// How a provider supports [`find_job_by_idempotency_key`](crate::ProvisioningProvider::find_job_by_idempotency_key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IdempotencySupport {
    /// No lookup: the engine cannot detect a job created by a launch whose answer was lost; after an
    /// unknown outcome it launches again (at-least-once, as Go).
    Unsupported,
    /// Lookup works but costs a backend query: the engine looks up only after an unknown outcome it
    /// observed itself.
    Lookup,
    /// Lookup is cheap: the engine looks up before **every** launch, which also covers a controller
    /// that crashed between the launch and the status flush.
    CheapLookup,
}

/// FNV-1a 64.
struct Fnv64(u64);

impl Fnv64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn new() -> Self {
        Self(Self::OFFSET)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_reference_vector() {
        let mut h = Fnv64::new();
        h.write(br#"{"key":"value"}"#);
        assert_eq!(format!("{:016x}", h.finish()), "90f31220e6080755");
    }
}
