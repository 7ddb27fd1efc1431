//! AAP 2.5+ platform gateway tokens: what to mint, the minted token (secret redacted), and when
//! to renew it (pure; the HTTP calls live in `session`).
//!
//! AAP 2.7 refuses basic auth, sessions and controller-issued tokens at the component APIs; only
//! tokens minted at `POST /api/gateway/v1/tokens/` work. Personal gateway tokens have no refresh
//! token, so "renewal" is: mint a new one, switch to it, revoke the old one
//! (`DELETE /api/gateway/v1/tokens/<id>/`). Written here because no crate speaks this API.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use http::HeaderValue;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

/// A token's scope.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenScope {
    /// Read-only: the gateway answers 403 to launches and cancels.
    Read,
    /// Read and write (what a provisioning client needs).
    #[default]
    Write,
}

impl TokenScope {
    /// The wire value (`read` / `write`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
        }
    }
}

/// What a minted gateway token looks like, and when automatic minting renews it.
///
/// ```
/// use std::time::Duration;
/// use provkit_aap::{GatewayTokenOptions, TokenScope};
/// let options = GatewayTokenOptions::new("osac-operator")
///     .scope(TokenScope::Write)
///     .renew_before(Duration::from_secs(7 * 24 * 3600));
/// assert_eq!(options.description_text(), "osac-operator");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct GatewayTokenOptions {
    description: String,
    scope: TokenScope,
    renew_before: Duration,
}

impl Default for GatewayTokenOptions {
    fn default() -> Self {
        Self::new(concat!("provkit-aap/", env!("CARGO_PKG_VERSION")))
    }
}

impl GatewayTokenOptions {
    /// Tokens with this description, scope `write`, renewed a day before they expire.
    pub fn new(description: impl Into<String>) -> Self {
        Self {
            description: description.into(),
            scope: TokenScope::Write,
            renew_before: Duration::from_secs(24 * 3600),
        }
    }

    /// The token's scope (default `write`).
    pub fn scope(mut self, scope: TokenScope) -> Self {
        self.scope = scope;
        self
    }

    /// Renew this long before `expires` (default one day). Capped at half the token's lifetime,
    /// so a short-lived token is not re-minted on every request.
    pub fn renew_before(mut self, lead: Duration) -> Self {
        self.renew_before = lead;
        self
    }

    /// The description sent when minting.
    pub fn description_text(&self) -> &str {
        &self.description
    }

    /// How long before expiry automatic minting renews.
    pub(crate) fn lead(&self) -> Duration {
        self.renew_before
    }

    /// The `POST …/tokens/` body.
    pub(crate) fn body(&self) -> Vec<u8> {
        json!({"description": self.description, "application": null, "scope": self.scope.as_str()})
            .to_string()
            .into_bytes()
    }
}

/// A token minted at the gateway. `Debug` never shows the secret.
#[derive(Clone)]
pub struct GatewayToken {
    id: u64,
    token: SecretString,
    expires: Option<DateTime<Utc>>,
    scope: String,
}

impl fmt::Debug for GatewayToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatewayToken")
            .field("id", &self.id)
            .field("token", &"[REDACTED]")
            .field("expires", &self.expires)
            .field("scope", &self.scope)
            .finish()
    }
}

impl GatewayToken {
    /// Reads the `201` body of `POST …/tokens/` (`id`, `token`, `expires`, `scope`).
    pub(crate) fn from_value(value: &Value) -> Option<Self> {
        let token = value.get("token")?.as_str()?.trim();
        if token.is_empty() {
            return None;
        }
        Some(Self {
            id: value.get("id")?.as_u64()?,
            token: SecretString::from(token.to_owned()),
            expires: value
                .get("expires")
                .and_then(Value::as_str)
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc)),
            scope: value
                .get("scope")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        })
    }

    /// The token's id (for revoking it).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The secret, to use as `Authorization: Bearer <token>`.
    pub fn secret(&self) -> &SecretString {
        &self.token
    }

    /// When the gateway says the token expires (`None` if it did not say).
    pub fn expires(&self) -> Option<DateTime<Utc>> {
        self.expires
    }

    /// The granted scope as the gateway reported it.
    pub fn scope(&self) -> &str {
        &self.scope
    }
}

/// When a token minted at `minted_at` that expires at `expires` should be replaced: `lead`
/// before expiry, but no earlier than half-way through its life. `None`: never.
pub(crate) fn renew_at(
    minted_at: DateTime<Utc>,
    expires: Option<DateTime<Utc>>,
    lead: Duration,
) -> Option<DateTime<Utc>> {
    let expires = expires?;
    let life = (expires - minted_at).max(chrono::TimeDelta::zero());
    let lead = chrono::TimeDelta::from_std(lead)
        .unwrap_or(chrono::TimeDelta::MAX)
        .min(life / 2);
    Some(expires - lead)
}

/// The token in use by automatic minting.
#[derive(Debug)]
pub(crate) struct Current {
    pub(crate) token: GatewayToken,
    pub(crate) header: HeaderValue,
    pub(crate) renew_at: Option<DateTime<Utc>>,
}

/// Automatic minting: the username/password it mints with and the token in use.
pub(crate) struct GatewayMinter {
    pub(crate) username: String,
    pub(crate) password: SecretString,
    pub(crate) options: GatewayTokenOptions,
    pub(crate) current: tokio::sync::Mutex<Option<Current>>,
}

impl fmt::Debug for GatewayMinter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatewayMinter")
            .field("username", &self.username)
            .field("password", &"[REDACTED]")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl GatewayMinter {
    pub(crate) fn new(
        username: String,
        password: SecretString,
        options: GatewayTokenOptions,
    ) -> Self {
        Self {
            username,
            password,
            options,
            current: tokio::sync::Mutex::new(None),
        }
    }

    /// The Basic header minting and revoking use.
    pub(crate) fn basic(&self) -> crate::error::Result<HeaderValue> {
        crate::auth::basic_header(&self.username, self.password.expose_secret())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap_or_default()
    }

    #[test]
    fn renewal_point() {
        let day = Duration::from_secs(86_400);
        // A year-long token renews a day before expiry.
        assert_eq!(
            renew_at(t(0), Some(t(365 * 86_400)), day),
            Some(t(364 * 86_400))
        );
        // A one-hour token renews half-way, not on every request.
        assert_eq!(renew_at(t(0), Some(t(3600)), day), Some(t(1800)));
        // Already expired when minted (clock skew): renew now.
        assert_eq!(renew_at(t(10), Some(t(0)), day), Some(t(0)));
        assert_eq!(renew_at(t(0), None, day), None);
    }

    #[test]
    fn minted_token_parses_and_hides_its_secret() {
        let v = json!({"id": 7, "token": "s3cr3t", "expires": "2027-12-01T19:00:00.123456Z",
                       "scope": "write", "refresh_token": null});
        let tok = GatewayToken::from_value(&v).unwrap();
        assert_eq!((tok.id(), tok.scope()), (7, "write"));
        assert_eq!(tok.secret().expose_secret(), "s3cr3t");
        assert!(tok.expires().is_some());
        assert!(!format!("{tok:?}").contains("s3cr3t"));
        assert!(GatewayToken::from_value(&json!({"id": 1, "token": "$encrypted$x"})).is_some());
        assert!(GatewayToken::from_value(&json!({"id": 1, "token": ""})).is_none());
        assert!(GatewayToken::from_value(&json!({"token": "x"})).is_none());
        let minter = GatewayMinter::new(
            "admin".into(),
            SecretString::from("hunter2"),
            GatewayTokenOptions::default(),
        );
        assert!(!format!("{minter:?}").contains("hunter2"));
        assert!(minter.basic().unwrap().is_sensitive());
        let body: Value =
            serde_json::from_slice(&GatewayTokenOptions::new("d").scope(TokenScope::Read).body())
                .unwrap();
        assert_eq!(
            body,
            json!({"description": "d", "application": null, "scope": "read"})
        );
    }
}
