//! API-root discovery: AWX (`/api/v2/`) versus the AAP 2.5+ gateway (`/api/controller/v2/`).
//!
//! `GET /api/` (no authentication needed): a gateway answers `{"apis": {"controller":
//! "/api/controller/", …}}`, whose own index gives `current_version`; plain AWX answers with
//! `current_version` directly. The discovered base is cached for the client's lifetime, with
//! the gateway's root (`apis.gateway`, else `<index>gateway/`) when the controller sits behind one.

use serde_json::Value;

use crate::call::{Call, CallAuth};
use crate::endpoints::root_relative;
use crate::error::{Error, Result};
use crate::inner::{ApiRoot, Inner, Layout};

const INDEX_CAP: usize = 1024 * 1024;

/// Picks the next index to read or the final base path from one discovery document.
pub(crate) enum Step {
    /// Follow to this root-relative controller index.
    Follow(String),
    /// The API base path.
    Base(String),
}

/// Interprets an API index document (pure).
pub(crate) fn interpret_index(
    origin: &str,
    doc: &Value,
    allow_follow: bool,
) -> std::result::Result<Step, String> {
    if allow_follow
        && let Some(controller) = doc.pointer("/apis/controller").and_then(Value::as_str)
    {
        let path = root_relative(origin, controller).ok_or_else(|| {
            format!("the gateway's controller link {controller:?} is not on this host")
        })?;
        return Ok(Step::Follow(path));
    }
    let version = doc
        .get("current_version")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            "the API index has neither `apis.controller` nor `current_version`; is this AWX / AAP?"
                .to_owned()
        })?;
    let path = root_relative(origin, version)
        .ok_or_else(|| format!("`current_version` {version:?} is not a path on this host"))?;
    Ok(Step::Base(if path.ends_with('/') {
        path
    } else {
        format!("{path}/")
    }))
}

/// The gateway root implied by a configured base: `<p>/api/controller/v2/` → `<p>/api/gateway/`.
fn gateway_of_fixed(base: &str) -> Option<String> {
    let at = base.find("/controller/")?;
    Some(format!("{}/gateway/", &base[..at]))
}

impl Inner {
    /// The API layout, discovering it on first use.
    pub(crate) async fn layout(&self) -> Result<&Layout> {
        self.layout
            .get_or_try_init(|| async {
                match &self.root {
                    ApiRoot::Fixed(base) => Ok(Layout {
                        base: base.clone(),
                        gateway: gateway_of_fixed(base),
                    }),
                    ApiRoot::Discover(index) => self.discover(index).await,
                }
            })
            .await
    }

    /// The API base path, discovering it on first use.
    pub(crate) async fn base(&self) -> Result<&str> {
        Ok(&self.layout().await?.base)
    }

    async fn index(&self, path: &str) -> Result<Value> {
        let url = format!("{}{path}", self.origin);
        let mut call = Call::get(path.to_owned(), INDEX_CAP);
        call.auth = CallAuth::Anonymous;
        let resp = self.execute(&call).await.map_err(|e| Error::Discovery {
            url: url.clone(),
            message: if e.is_not_found() {
                "no AAP/AWX API index here (404)".into()
            } else {
                "request failed".into()
            },
            source: Some(Box::new(e)),
        })?;
        resp.json::<Value>().map_err(|e| Error::Discovery {
            url,
            message: "not an API index".into(),
            source: Some(Box::new(e)),
        })
    }

    async fn discover(&self, index: &str) -> Result<Layout> {
        let mut path = index.to_owned();
        let mut gateway = None;
        for allow_follow in [true, false] {
            let doc = self.index(&path).await?;
            match interpret_index(&self.origin, &doc, allow_follow) {
                Ok(Step::Base(base)) => {
                    tracing::info!(base = %base, gateway = gateway.as_deref(), "discovered the AAP controller API base");
                    return Ok(Layout { base, gateway });
                }
                Ok(Step::Follow(next)) => {
                    gateway = Some(
                        doc.pointer("/apis/gateway")
                            .and_then(Value::as_str)
                            .and_then(|g| root_relative(&self.origin, g))
                            .map(|g| if g.ends_with('/') { g } else { format!("{g}/") })
                            .unwrap_or_else(|| format!("{index}gateway/")),
                    );
                    path = next;
                }
                Err(message) => {
                    return Err(Error::Discovery {
                        url: format!("{}{path}", self.origin),
                        message,
                        source: None,
                    });
                }
            }
        }
        Err(Error::Discovery {
            url: format!("{}{path}", self.origin),
            message: "no current_version found".into(),
            source: None,
        })
    }

    /// Adds a "wrong API path on a gateway" hint to a 404 under a configured (not discovered)
    /// AWX-style base path. Costs one unauthenticated `GET /api/` per client, once.
    pub(crate) async fn with_hint(&self, err: Error) -> Error {
        let Error::NotFound {
            ctx,
            detail,
            hint: None,
        } = err
        else {
            return err;
        };
        let ApiRoot::Fixed(base) = &self.root else {
            return Error::NotFound {
                ctx,
                detail,
                hint: None,
            };
        };
        if base.contains("/controller/") || !ctx.path.starts_with(base.as_str()) {
            return Error::NotFound {
                ctx,
                detail,
                hint: None,
            };
        }
        let gateway = self
            .gateway_hint
            .get_or_init(|| async {
                let mut call = Call::get("/api/".to_owned(), INDEX_CAP);
                call.auth = CallAuth::Anonymous;
                call.idempotent = false;
                match self.execute_plain(&call).await {
                    Ok(doc) => doc
                        .pointer("/apis/controller")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    Err(_) => None,
                }
            })
            .await
            .clone();
        let hint = gateway.map(|controller| {
            format!(
                "this host is an AAP 2.5+ platform gateway: the controller API is under {controller}v2/, not {base}; \
                 configure the bare host URL (discovery) or <host>{controller}"
            )
        });
        Error::NotFound { ctx, detail, hint }
    }

    async fn execute_plain(&self, call: &Call) -> Result<Value> {
        Box::pin(self.execute(call)).await?.json()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn index_interpretation() {
        let o = "https://h";
        let awx = json!({"description": "AWX REST API", "current_version": "/api/v2/", "available_versions": {"v2": "/api/v2/"}});
        assert!(matches!(interpret_index(o, &awx, true), Ok(Step::Base(b)) if b == "/api/v2/"));
        let gw = json!({"apis": {"gateway": "/api/gateway/", "controller": "/api/controller/", "eda": "/api/eda/"}});
        assert!(
            matches!(interpret_index(o, &gw, true), Ok(Step::Follow(p)) if p == "/api/controller/")
        );
        let ctrl = json!({"current_version": "/api/controller/v2/"});
        assert!(
            matches!(interpret_index(o, &ctrl, false), Ok(Step::Base(b)) if b == "/api/controller/v2/")
        );
        let absolute = json!({"current_version": "https://h/api/eda/v1"});
        assert!(
            matches!(interpret_index(o, &absolute, false), Ok(Step::Base(b)) if b == "/api/eda/v1/")
        );
        assert!(
            interpret_index(
                o,
                &json!({"apis": {"controller": "https://elsewhere/api/controller/"}}),
                true
            )
            .is_err()
        );
        assert!(interpret_index(o, &json!({"hello": 1}), true).is_err());
        // A controller index that again lists apis is not followed twice.
        assert!(interpret_index(o, &gw, false).is_err());
    }

    #[test]
    fn gateway_root_of_a_configured_base() {
        assert_eq!(
            gateway_of_fixed("/api/controller/v2/").as_deref(),
            Some("/api/gateway/")
        );
        assert_eq!(
            gateway_of_fixed("/aap/api/controller/v2/").as_deref(),
            Some("/aap/api/gateway/")
        );
        assert_eq!(gateway_of_fixed("/api/v2/"), None);
    }
}
