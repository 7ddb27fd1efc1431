//! A `User-Agent` naming the controller on every request of a `kube::Client`.
//!
//! The API server records the field manager of a write from `?fieldManager=`; without one it
//! takes the User-Agent up to the first `/`. kube-rs sends no User-Agent, and kube-runtime's
//! finalizer patches and Event writes (`EventRecorder`, like kube-runtime's `Recorder`) pass no
//! field manager, so those writes show
//! up in `managedFields` as manager `unknown`. Set the User-Agent on the client's
//! [`kube::Config`] before building the client:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let mut config = kube::Config::infer().await?;
//! provkit_kube::user_agent(&mut config, "my-operator", env!("CARGO_PKG_VERSION"))?;
//! let client = kube::Client::try_from(config)?;
//! # let _ = client; Ok(()) }
//! ```
//!
//! and pass the same name to [`Provisioner::with_field_manager`](crate::Provisioner::with_field_manager)
//! and [`LeaderElector::with_field_manager`](crate::LeaderElector::with_field_manager) for the
//! writes provkit-kube makes itself.

use http::HeaderValue;
use http::header::USER_AGENT;

/// The controller name or version cannot be sent as a header value.
#[derive(Debug, thiserror::Error)]
#[error("{value:?} is not a valid User-Agent header value")]
pub struct InvalidUserAgent {
    /// The rejected value.
    pub value: String,
    /// The header error.
    #[source]
    pub source: http::header::InvalidHeaderValue,
}

/// Sets `User-Agent: <controller>/<version>` on every request made with clients built from
/// `config` (replacing any User-Agent already configured). The API server then names the
/// field manager of writes without `?fieldManager=` `<controller>`.
///
/// # Errors
/// [`InvalidUserAgent`] when the value contains characters a header cannot hold.
pub fn user_agent(
    config: &mut kube::Config,
    controller: &str,
    version: &str,
) -> Result<(), InvalidUserAgent> {
    let value = if version.is_empty() {
        controller.to_owned()
    } else {
        format!("{controller}/{version}")
    };
    let header = HeaderValue::from_str(&value).map_err(|source| InvalidUserAgent {
        value: value.clone(),
        source,
    })?;
    config.headers.retain(|(name, _)| name != USER_AGENT);
    config.headers.push((USER_AGENT, header));
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn replaces_any_previous_user_agent() {
        let mut config = kube::Config::new("https://127.0.0.1:6443".parse().unwrap());
        user_agent(&mut config, "a", "1").unwrap();
        user_agent(&mut config, "my-operator", "0.1.0").unwrap();
        let agents: Vec<_> = config
            .headers
            .iter()
            .filter(|(n, _)| n == USER_AGENT)
            .map(|(_, v)| v.to_str().unwrap().to_owned())
            .collect();
        assert_eq!(agents, ["my-operator/0.1.0"]);
        assert!(user_agent(&mut config, "bad\nname", "1").is_err());
    }
}
