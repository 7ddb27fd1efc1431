//! Credentials: a bearer token, Basic credentials, or a token file re-read when it changes.
//!
//! Secrets are held as [`secrecy::SecretString`]; `Debug` prints `[REDACTED]`, and the header
//! values built from them are marked sensitive so HTTP-level logging does not show them either.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use http::HeaderValue;
use secrecy::{ExposeSecret, SecretString};
use tokio::time::Instant;

use crate::error::{Error, Result};

/// How the client authenticates.
#[derive(Clone)]
pub enum Credentials {
    /// `Authorization: Bearer <token>` (preferred; AAP 2.5+ gateway tokens or AWX PATs).
    Token(SecretString),
    /// HTTP Basic (local users).
    Basic {
        /// User name.
        username: String,
        /// Password.
        password: SecretString,
    },
    /// A bearer token read from a file (e.g. a mounted Kubernetes secret) and re-read when the
    /// file changes; AAP 2.5+ tokens expire, and rotating the secret must not need a restart.
    TokenFile(PathBuf),
    /// No credentials (only `ping/` and discovery work).
    None,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Token(_) => f.write_str("Token([REDACTED])"),
            Self::Basic { username, .. } => write!(
                f,
                "Basic {{ username: {username:?}, password: [REDACTED] }}"
            ),
            Self::TokenFile(path) => write!(f, "TokenFile({path:?})"),
            Self::None => f.write_str("None"),
        }
    }
}

fn sensitive(value: String) -> Result<HeaderValue> {
    let mut header = HeaderValue::try_from(value).map_err(|_| Error::Config {
        message: "credentials contain characters not allowed in an HTTP header".into(),
        source: None,
    })?;
    header.set_sensitive(true);
    Ok(header)
}

fn bearer(token: &str) -> Result<HeaderValue> {
    sensitive(format!("Bearer {token}"))
}

pub(crate) fn basic_header(username: &str, password: &str) -> Result<HeaderValue> {
    sensitive(format!(
        "Basic {}",
        base64(format!("{username}:{password}").as_bytes())
    ))
}

fn base64(input: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(TABLE[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[derive(Debug)]
struct FileState {
    checked: Option<Instant>,
    stamp: Option<(SystemTime, u64)>,
    header: Option<HeaderValue>,
}

/// Produces the `Authorization` header for each request.
#[derive(Debug)]
pub(crate) struct Authenticator {
    kind: AuthKind,
}

#[derive(Debug)]
enum AuthKind {
    Static(Option<HeaderValue>),
    File {
        path: PathBuf,
        interval: Duration,
        state: Mutex<FileState>,
    },
}

impl Authenticator {
    pub(crate) fn new(credentials: &Credentials, reload_interval: Duration) -> Result<Self> {
        let kind = match credentials {
            Credentials::Token(token) => {
                AuthKind::Static(Some(bearer(token.expose_secret().trim())?))
            }
            Credentials::Basic { username, password } => {
                AuthKind::Static(Some(basic_header(username, password.expose_secret())?))
            }
            Credentials::None => AuthKind::Static(None),
            Credentials::TokenFile(path) => AuthKind::File {
                path: path.clone(),
                interval: reload_interval,
                state: Mutex::new(FileState {
                    checked: None,
                    stamp: None,
                    header: None,
                }),
            },
        };
        Ok(Self { kind })
    }

    /// The header to send now (re-reading the token file if it changed).
    pub(crate) fn header(&self) -> Result<Option<HeaderValue>> {
        match &self.kind {
            AuthKind::Static(header) => Ok(header.clone()),
            AuthKind::File {
                path,
                interval,
                state,
            } => {
                let mut state = state
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let now = Instant::now();
                let due = state.header.is_none()
                    || state
                        .checked
                        .is_none_or(|at| now.saturating_duration_since(at) >= *interval);
                if due {
                    reload(path, &mut state, false)?;
                    state.checked = Some(now);
                }
                Ok(state.header.clone())
            }
        }
    }

    /// After a 401: re-reads the token file; true when the token changed (worth one more try).
    pub(crate) fn refresh_after_unauthorized(&self) -> bool {
        match &self.kind {
            AuthKind::Static(_) => false,
            AuthKind::File { path, state, .. } => {
                let mut state = state
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let before = state.header.clone();
                if reload(path, &mut state, true).is_err() {
                    return false;
                }
                state.checked = Some(Instant::now());
                state.header.as_ref().map(HeaderValue::as_bytes)
                    != before.as_ref().map(HeaderValue::as_bytes)
            }
        }
    }
}

fn reload(path: &Path, state: &mut FileState, force: bool) -> Result<()> {
    let io = |source| Error::TokenFile {
        path: path.to_owned(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    let stamp = (
        meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        meta.len(),
    );
    if !force && state.header.is_some() && state.stamp == Some(stamp) {
        return Ok(());
    }
    let token = SecretString::from(std::fs::read_to_string(path).map_err(io)?);
    let trimmed = token.expose_secret().trim();
    if trimmed.is_empty() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the token file is empty",
        )));
    }
    state.header = Some(bearer(trimmed)?);
    state.stamp = Some(stamp);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_vectors() {
        for (raw, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("admin:pa:ss", "YWRtaW46cGE6c3M="),
        ] {
            assert_eq!(base64(raw.as_bytes()), want);
        }
    }

    #[test]
    fn debug_never_shows_secrets() {
        let creds = [
            Credentials::Token(SecretString::from("s3cr3t-token")),
            Credentials::Basic {
                username: "admin".into(),
                password: SecretString::from("hunter2"),
            },
        ];
        for c in creds {
            let text = format!("{c:?}");
            assert!(
                !text.contains("s3cr3t") && !text.contains("hunter2"),
                "{text}"
            );
            let auth = Authenticator::new(&c, Duration::ZERO).unwrap();
            let text = format!("{auth:?}");
            assert!(
                !text.contains("s3cr3t") && !text.contains("hunter2"),
                "{text}"
            );
            assert!(auth.header().unwrap().unwrap().is_sensitive());
        }
    }

    #[tokio::test]
    async fn token_file_is_reread_when_it_changes() {
        let dir = std::env::temp_dir().join(format!("provkit-aap-token-{}", fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "first\n").unwrap();
        let auth =
            Authenticator::new(&Credentials::TokenFile(path.clone()), Duration::ZERO).unwrap();
        assert_eq!(auth.header().unwrap().unwrap().as_bytes(), b"Bearer first");
        std::fs::write(&path, "second-longer\n").unwrap();
        assert_eq!(
            auth.header().unwrap().unwrap().as_bytes(),
            b"Bearer second-longer"
        );
        std::fs::write(&path, "third-longer!\n").unwrap();
        assert!(auth.refresh_after_unauthorized());
        assert!(!auth.refresh_after_unauthorized());
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(auth.header(), Err(Error::TokenFile { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
