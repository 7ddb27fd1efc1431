//! The fake's shared internals and the request/response types every handler uses (no routing
//! here, so handlers depend on this module and the pipeline in `http` depends on both).

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use chrono::{DateTime, Utc};
use http::HeaderMap;
use serde_json::json;

use super::clock::OffsetClock;
use super::faults::Installed;
use super::query::base64_decode;
use super::request_log::{Counters, RequestRing};
use super::spec::{Mode, Scope};
use super::state::{State, User};

/// Marker extension: the serving loop resets the connection instead of answering.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResetConnection;

pub(crate) const UNAUTHENTICATED: &str = "Authentication credentials were not provided. To establish a login session, visit /api/login/.";
pub(crate) const WWW_AUTHENTICATE: &str = "Bearer realm=api authorization_url=/api/o/authorize/";
pub(crate) const FORBIDDEN: &str = "You do not have permission to perform this action.";
pub(crate) const NOT_FOUND: &str = "The requested resource could not be found.";

/// Shared server internals.
#[derive(Debug)]
pub(crate) struct App {
    pub state: Mutex<State>,
    pub clock: OffsetClock,
    pub counters: Counters,
    pub ring: RequestRing,
    pub faults: RwLock<Arc<Vec<Arc<Installed>>>>,
    pub faults_on: AtomicBool,
    pub next_fault_id: AtomicU64,
    pub fault_seed: AtomicU64,
    pub mode: Mode,
    pub version: String,
    pub node: String,
    pub max_body: usize,
    pub observer: crate::observe::ObserverSlot,
    /// The websocket's sessions, faults and counters.
    pub websocket: super::websocket::Hub,
}

/// A response under construction.
#[derive(Debug)]
pub(crate) struct Resp {
    pub status: u16,
    pub body: Vec<u8>,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    /// Answered by Django itself (unknown path, trailing-slash redirect), before AWX's
    /// middleware: no `X-API-Product-Name` / `X-API-Node` (§13.3).
    pub django: bool,
}

impl Resp {
    /// A JSON body serialised straight from `v` (a `serde_json::Value` or any borrowed structure).
    pub(crate) fn json(status: u16, v: &impl serde::Serialize) -> Resp {
        Resp {
            status,
            body: serde_json::to_vec(v).unwrap_or_default(),
            content_type: "application/json",
            headers: Vec::new(),
            django: false,
        }
    }
    pub(crate) fn detail(status: u16, text: &str) -> Resp {
        Resp::json(status, &json!({ "detail": text }))
    }
    pub(crate) fn empty(status: u16) -> Resp {
        Resp {
            status,
            body: Vec::new(),
            content_type: "application/json",
            headers: Vec::new(),
            django: false,
        }
    }
    pub(crate) fn text(status: u16, text: String, content_type: &'static str) -> Resp {
        Resp {
            status,
            body: text.into_bytes(),
            content_type,
            headers: Vec::new(),
            django: false,
        }
    }
    pub(crate) fn header(mut self, name: &'static str, value: String) -> Resp {
        self.headers.push((name, value));
        self
    }
    /// Marks a response as Django's own (see [`Resp::django`]).
    pub(crate) fn django_level(mut self) -> Resp {
        self.django = true;
        self
    }
    pub(crate) fn method_not_allowed(method: &str) -> Resp {
        Resp::detail(405, &format!("Method \"{method}\" not allowed."))
    }
}

/// The authenticated caller.
#[derive(Clone, Debug)]
pub(crate) struct Caller {
    pub user: User,
    pub scope: Scope,
}

/// Everything a handler needs about the request.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
    pub now: DateTime<Utc>,
    pub caller: Option<Caller>,
}

impl App {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn product_name(&self) -> &'static str {
        match self.mode {
            Mode::Gateway | Mode::Aap27 => "Red Hat Ansible Automation Platform",
            Mode::Awx | Mode::Both => "AWX",
        }
    }

    /// The caller, if the credentials are accepted; `component`: the request is for a component
    /// API (`/api/v2/`, `/api/controller/v2/`), where AAP 2.7 accepts gateway tokens only.
    pub(crate) fn authenticate(
        &self,
        headers: &HeaderMap,
        now: DateTime<Utc>,
        component: bool,
    ) -> Option<Caller> {
        let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
        let (scheme, cred) = value.split_once(' ')?;
        let gateway_only = component && self.mode == Mode::Aap27;
        let st = self.lock();
        if scheme.eq_ignore_ascii_case("bearer") {
            let tok = st.tokens.get(cred.trim())?;
            if tok.expires <= now || (gateway_only && tok.controller_issued) {
                return None;
            }
            let user = st.user(tok.user_id)?.clone();
            Some(Caller {
                user,
                scope: tok.scope,
            })
        } else if scheme.eq_ignore_ascii_case("basic") && !gateway_only {
            let raw = base64_decode(cred.trim())?;
            let text = String::from_utf8(raw).ok()?;
            let (u, p) = text.split_once(':')?;
            let user = st.check_password(u, p)?.clone();
            Some(Caller {
                user,
                scope: Scope::Write,
            })
        } else {
            None
        }
    }
}
