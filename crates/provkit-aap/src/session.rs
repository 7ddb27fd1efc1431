//! Sending a call with the credentials in force, and explaining failures.
//!
//! With automatic gateway token minting, calls carry a token minted from the configured
//! username/password once the deployment is known to sit behind an AAP platform gateway (plain
//! AWX keeps Basic auth), renewed before it expires (mint the new one, then revoke the old one).
//! A 401 at the controller behind a gateway, with anything but a minted token, becomes
//! [`Error::GatewayTokenRequired`]: decided from where the 401 came from, never from its text.

use http::HeaderValue;
use secrecy::ExposeSecret as _;
use serde_json::Value;

use crate::call::{Call, CallAuth};
use crate::error::{Error, Result};
use crate::gateway_token::{Current, GatewayToken, GatewayTokenOptions, renew_at};
use crate::inner::Inner;
use crate::response::RawResponse;

/// Cap on a token document.
const TOKEN_CAP: usize = 256 * 1024;

fn bearer(token: &GatewayToken) -> Result<HeaderValue> {
    let mut header = HeaderValue::try_from(format!("Bearer {}", token.secret().expose_secret()))
        .map_err(|_| Error::Config {
            message: "the minted gateway token is not a valid HTTP header value".into(),
            source: None,
        })?;
    header.set_sensitive(true);
    Ok(header)
}

impl Inner {
    /// Sends `call` (2xx only), with the minted gateway token when automatic minting is on.
    pub(crate) async fn send(&self, call: &Call) -> Result<RawResponse> {
        let mut reminted = false;
        loop {
            let minted = self.minted_header(call).await?;
            let result = match &minted {
                Some(header) => {
                    let mut with_token = call.clone();
                    with_token.auth = CallAuth::Header(header.clone());
                    self.execute(&with_token).await
                }
                None => self.execute(call).await,
            };
            match result {
                Ok(resp) => return Ok(resp),
                // A 401 refuses the request before anything happens, so one more try with a
                // fresh token is safe even for a launch (the token may have been revoked).
                Err(Error::Unauthorized { .. }) if minted.is_some() && !reminted => {
                    reminted = true;
                    tracing::info!(path = %call.path, "the minted AAP gateway token was refused; minting a new one");
                    if let Some(minter) = &self.minter {
                        *minter.current.lock().await = None;
                    }
                }
                Err(err) => return Err(self.explain(err, minted.is_some()).await),
            }
        }
    }

    /// The minted token's header for a call with configured credentials, minting or renewing
    /// first when due; `None` without minting, or on plain AWX (Basic auth is used there).
    pub(crate) async fn minted_header(&self, call: &Call) -> Result<Option<HeaderValue>> {
        let Some(minter) = &self.minter else {
            return Ok(None);
        };
        if !matches!(call.auth, CallAuth::Configured) {
            return Ok(None);
        }
        let Some(gateway) = self.layout().await?.gateway.clone() else {
            return Ok(None);
        };
        let mut current = minter.current.lock().await;
        let now = self.clock.now();
        if let Some(cur) = current.as_ref()
            && cur.renew_at.is_none_or(|at| now < at)
        {
            return Ok(Some(cur.header.clone()));
        }
        let basic = minter.basic()?;
        let token = self
            .mint_at(&gateway, basic.clone(), &minter.options)
            .await?;
        let header = bearer(&token)?;
        let next = Current {
            renew_at: renew_at(now, token.expires(), minter.options.lead()),
            header: header.clone(),
            token,
        };
        tracing::info!(token_id = next.token.id(), expires = ?next.token.expires(), "minted an AAP gateway token");
        if let Some(old) = current.replace(next) {
            match self.revoke_with(&gateway, old.token.id(), basic).await {
                Ok(()) => {
                    tracing::info!(
                        token_id = old.token.id(),
                        "revoked the replaced AAP gateway token"
                    );
                }
                Err(err) => {
                    tracing::warn!(token_id = old.token.id(), error = %err, "could not revoke the replaced AAP gateway token");
                }
            }
        }
        Ok(Some(header))
    }

    /// `POST <gateway>v1/tokens/` with `auth` (never retried: a retry could mint twice).
    pub(crate) async fn mint_at(
        &self,
        gateway: &str,
        auth: HeaderValue,
        options: &GatewayTokenOptions,
    ) -> Result<GatewayToken> {
        let mut call = Call::post(
            format!("{gateway}v1/tokens/"),
            options.body(),
            false,
            TOKEN_CAP,
        );
        call.auth = CallAuth::Header(auth);
        let resp = self.execute(&call).await?;
        let value: Value = resp.json()?;
        GatewayToken::from_value(&value).ok_or_else(|| Error::Decode {
            ctx: Box::new(resp.ctx.clone()),
            message: "the token response has no `id` or `token`".into(),
            source: None,
        })
    }

    /// `DELETE <gateway>v1/tokens/<id>/` with the Basic header `auth`.
    async fn revoke_with(&self, gateway: &str, id: u64, auth: HeaderValue) -> Result<()> {
        let call = Call::delete(format!("{gateway}v1/tokens/{id}/"), CallAuth::Header(auth));
        self.execute(&call).await.map(drop)
    }

    /// The gateway root for explicit token calls (the default `/api/gateway/` when discovery
    /// found no gateway; the server then answers 404).
    pub(crate) async fn gateway_root(&self) -> Result<String> {
        Ok(self
            .layout()
            .await?
            .gateway
            .clone()
            .unwrap_or_else(|| "/api/gateway/".to_owned()))
    }

    /// A 401 at the controller behind a gateway, without a minted token → the typed "use a
    /// gateway token" error; a 404 → the wrong-base-path hint.
    async fn explain(&self, err: Error, minted: bool) -> Error {
        match err {
            Error::Unauthorized { ctx, detail } if !minted && self.behind_gateway(&ctx.path) => {
                Error::GatewayTokenRequired { ctx, detail }
            }
            other => self.with_hint(other).await,
        }
    }

    fn behind_gateway(&self, path: &str) -> bool {
        self.layout
            .get()
            .is_some_and(|l| l.gateway.is_some() && path.starts_with(l.base.as_str()))
    }
}
