//! The fake's websocket (served on a socket only): AWX's job status push as observed
//! (aap-observed.md §13.4), with faults.
//!
//! - Paths: `/websocket/` and `/api/websocket/` in the AWX layout, `/api/controller/v2/websocket/`
//!   behind the gateway, all three in [`Mode::Both`]. `/api/v2/websocket/` does not exist.
//! - The upgrade is authenticated like the API (bearer or basic); a bad or missing credential is
//!   a `403` with no frames. A `?token=` query parameter is ignored.
//! - Then `{"accept": true, "user": N}`; a subscribe message whose `xrftoken` equals the
//!   `csrftoken` cookie of the upgrade joins its groups (`{"groups": {"jobs": ["status_changed",
//!   "summary"]}}` → `jobs-status_changed`, `jobs-summary`) and is answered with
//!   `groups_current` / `groups_left` / `groups_joined`; each subscribe replaces the previous
//!   set. Without the cookie or with another `xrftoken`: `{"error": "access denied to
//!   channel"}` and nothing joined.
//! - Every `jobs-status_changed` subscriber receives every job's changes, whoever launched it
//!   (see the `announce` module for which messages). Nothing is replayed to a new connection.
//! - Faults ([`FakeAap::websocket_refuse`] and friends): a refused upgrade, connections dropped
//!   without a close frame (as a server restart does), delayed and duplicated messages, and
//!   injected messages (another user's job, a repeated `canceled`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use futures::{SinkExt as _, StreamExt as _};
use http::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;

use super::FakeAap;
use super::app::App;
use super::spec::Mode;

/// What a session is told to do.
#[derive(Debug)]
enum Out {
    /// Send this text when the time comes.
    Text(Instant, String),
    /// Drop the connection without a close frame.
    Drop,
}

#[derive(Debug)]
struct Session {
    tx: mpsc::UnboundedSender<Out>,
    /// Joined `jobs-status_changed`.
    subscribed: Arc<std::sync::atomic::AtomicBool>,
}

/// The websocket's faults.
#[derive(Debug, Default)]
struct Faults {
    refuse: Option<u16>,
    delay: Duration,
    duplicate: f64,
}

/// Counts of the websocket's activity (see [`FakeAap::websocket_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebsocketStats {
    /// Upgrades accepted (101).
    pub connections: u64,
    /// Upgrades refused (a bad credential, or [`FakeAap::websocket_refuse`]).
    pub refused: u64,
    /// Subscriptions refused (`xrftoken` ≠ cookie).
    pub denied: u64,
    /// Status messages sent (one per subscriber; duplicates included).
    pub messages: u64,
    /// Messages sent twice by the duplicate fault.
    pub duplicates: u64,
    /// Connections dropped by [`FakeAap::websocket_drop_connections`].
    pub dropped: u64,
    /// Open connections subscribed to `jobs-status_changed` now.
    pub subscribed: u64,
}

/// The websocket's shared state in [`App`].
#[derive(Debug, Default)]
pub(crate) struct Hub {
    sessions: Mutex<Vec<Session>>,
    faults: Mutex<Faults>,
    rng: Mutex<fastrand::Rng>,
    connections: AtomicU64,
    refused: AtomicU64,
    denied: AtomicU64,
    messages: AtomicU64,
    duplicates: AtomicU64,
    dropped: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether `path` is the websocket in `mode`.
pub(crate) fn is_websocket_path(mode: Mode, path: &str) -> bool {
    let awx = path == "/websocket/" || path == "/api/websocket/";
    let controller = path == "/api/controller/v2/websocket/";
    match mode {
        Mode::Awx => awx,
        Mode::Gateway | Mode::Aap27 => controller,
        Mode::Both => awx || controller,
    }
}

impl Hub {
    /// Sends `messages` to every `jobs-status_changed` subscriber (with the delay and duplicate
    /// faults); forgets closed sessions.
    fn broadcast(&self, messages: &[Value]) {
        if messages.is_empty() {
            return;
        }
        let (delay, duplicate) = {
            let f = lock(&self.faults);
            (f.delay, f.duplicate)
        };
        let at = Instant::now() + delay;
        let texts: Vec<String> = messages.iter().map(Value::to_string).collect();
        let mut sessions = lock(&self.sessions);
        let mut rng = lock(&self.rng);
        sessions.retain(|s| {
            if !s.subscribed.load(Ordering::Acquire) {
                return !s.tx.is_closed();
            }
            for text in &texts {
                let twice = duplicate > 0.0 && rng.f64() < duplicate;
                for _ in 0..if twice { 2 } else { 1 } {
                    if s.tx.send(Out::Text(at, text.clone())).is_err() {
                        return false;
                    }
                    self.messages.fetch_add(1, Ordering::Relaxed);
                }
                if twice {
                    self.duplicates.fetch_add(1, Ordering::Relaxed);
                }
            }
            true
        });
    }
}

/// The cookie `name` of a request.
fn cookie(headers: &http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

fn status_only(status: u16) -> Response<Body> {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN);
    r
}

/// Answers an upgrade request to the websocket path: 101 and a session, or a refusal.
pub(crate) fn upgrade(app: &Arc<App>, mut req: Request<Body>) -> Response<Body> {
    let hub = &app.websocket;
    if let Some(status) = lock(&hub.faults).refuse {
        hub.refused.fetch_add(1, Ordering::Relaxed);
        return status_only(status);
    }
    let now = app.clock.now();
    let Some(caller) = app.authenticate(req.headers(), now, true) else {
        hub.refused.fetch_add(1, Ordering::Relaxed);
        return status_only(403);
    };
    let headers = req.headers();
    let is_upgrade = headers
        .get(http::header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let Some(key) = headers
        .get("sec-websocket-key")
        .map(|k| k.as_bytes().to_vec())
    else {
        return status_only(400);
    };
    if !is_upgrade {
        return status_only(400);
    }
    let csrf = cookie(headers, "csrftoken");
    let Some(on_upgrade) = req.extensions_mut().remove::<hyper::upgrade::OnUpgrade>() else {
        return status_only(400);
    };
    hub.connections.fetch_add(1, Ordering::Relaxed);
    let app = app.clone();
    let user = caller.user.id;
    tokio::spawn(async move {
        if let Ok(upgraded) = on_upgrade.await {
            let socket =
                WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
            session(app, socket, user, csrf).await;
        }
    });
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(
        http::header::UPGRADE,
        http::HeaderValue::from_static("websocket"),
    );
    h.insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("Upgrade"),
    );
    if let Ok(accept) = http::HeaderValue::try_from(derive_accept_key(&key)) {
        h.insert("sec-websocket-accept", accept);
    }
    r
}

/// The groups a subscribe message asks for (`{"jobs": ["status_changed"]}` →
/// `jobs-status_changed`), sorted.
fn groups_of(message: &Value) -> Vec<String> {
    let mut groups: Vec<String> = message
        .get("groups")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .flat_map(|(name, subs)| {
                    subs.as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(move |sub| format!("{name}-{sub}"))
                })
                .collect()
        })
        .unwrap_or_default();
    groups.sort();
    groups.dedup();
    groups
}

async fn session<S>(app: Arc<App>, mut socket: WebSocketStream<S>, user: u64, csrf: Option<String>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let hub = &app.websocket;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let subscribed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    lock(&hub.sessions).push(Session {
        tx,
        subscribed: subscribed.clone(),
    });
    let accept = json!({"accept": true, "user": user}).to_string();
    if socket.send(Message::text(accept)).await.is_err() {
        return;
    }
    let mut current: Vec<String> = Vec::new();
    loop {
        tokio::select! {
            frame = socket.next() => {
                let text = match frame {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                    Some(Ok(_)) => continue,
                };
                let Ok(message) = serde_json::from_str::<Value>(text.as_str()) else { continue };
                if message.get("groups").is_none() {
                    continue;
                }
                let xrf = message.get("xrftoken").and_then(Value::as_str);
                if csrf.is_none() || xrf != csrf.as_deref() {
                    hub.denied.fetch_add(1, Ordering::Relaxed);
                    let denied = json!({"error": "access denied to channel"}).to_string();
                    if socket.send(Message::text(denied)).await.is_err() {
                        break;
                    }
                    continue;
                }
                let wanted = groups_of(&message);
                let left: Vec<&String> = current.iter().filter(|g| !wanted.contains(g)).collect();
                let joined: Vec<&String> = wanted.iter().filter(|g| !current.contains(g)).collect();
                let answer = json!({
                    "groups_current": wanted,
                    "groups_left": left,
                    "groups_joined": joined,
                })
                .to_string();
                subscribed.store(
                    wanted.iter().any(|g| g == "jobs-status_changed"),
                    Ordering::Release,
                );
                current = wanted;
                if socket.send(Message::text(answer)).await.is_err() {
                    break;
                }
            }
            out = rx.recv() => match out {
                Some(Out::Text(at, text)) => {
                    tokio::time::sleep_until(at).await;
                    if socket.send(Message::text(text)).await.is_err() {
                        break;
                    }
                }
                // No close frame: the peer sees the connection end (code 1006).
                Some(Out::Drop) | None => return,
            },
        }
    }
    subscribed.store(false, Ordering::Release);
}

/// Announces due status changes until `shutdown` flips (runs beside the accept loop).
pub(crate) async fn announce_loop(app: Arc<App>, mut shutdown: watch::Receiver<bool>) {
    /// The longest sleep: a test may move the fake's clock forward at any time.
    const TICK: Duration = Duration::from_millis(50);
    loop {
        let now = app.clock.now();
        let (messages, next) = {
            let mut st = app.lock();
            let messages = st.announcements(now);
            (messages, st.announcer.next_due())
        };
        app.websocket.broadcast(&messages);
        let wait = next
            .and_then(|t| (t - now).to_std().ok())
            .map_or(TICK, |d| d.min(TICK));
        tokio::select! {
            _ = shutdown.changed() => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

impl FakeAap {
    /// Refuses every websocket upgrade with HTTP `status` (`None`: accept them again).
    pub fn websocket_refuse(&self, status: Option<u16>) {
        lock(&self.app.websocket.faults).refuse = status;
    }

    /// Delays every status message by `delay` (zero: none).
    pub fn websocket_delay(&self, delay: Duration) {
        lock(&self.app.websocket.faults).delay = delay;
    }

    /// Sends this fraction of status messages twice (at random; 0: none, 1: all).
    pub fn websocket_duplicates(&self, fraction: f64) {
        lock(&self.app.websocket.faults).duplicate = fraction.clamp(0.0, 1.0);
    }

    /// Drops every open websocket connection without a close frame (as a server restart does);
    /// returns how many. Nothing sent meanwhile is replayed to the clients when they reconnect.
    pub fn websocket_drop_connections(&self) -> usize {
        let hub = &self.app.websocket;
        let sessions = std::mem::take(&mut *lock(&hub.sessions));
        let n = sessions
            .iter()
            .filter(|s| s.tx.send(Out::Drop).is_ok())
            .count();
        hub.dropped.fetch_add(n as u64, Ordering::Relaxed);
        n
    }

    /// Sends `message` to every `jobs-status_changed` subscriber as if AWX had (e.g. a status
    /// change of a job some other user launched, or a repeated `canceled`), with the delay and
    /// duplicate faults.
    pub fn websocket_inject(&self, message: Value) {
        self.app.websocket.broadcast(&[message]);
    }

    /// The websocket's counters.
    pub fn websocket_stats(&self) -> WebsocketStats {
        let hub = &self.app.websocket;
        let subscribed = lock(&hub.sessions)
            .iter()
            .filter(|s| s.subscribed.load(Ordering::Acquire) && !s.tx.is_closed())
            .count() as u64;
        WebsocketStats {
            connections: hub.connections.load(Ordering::Relaxed),
            refused: hub.refused.load(Ordering::Relaxed),
            denied: hub.denied.load(Ordering::Relaxed),
            messages: hub.messages.load(Ordering::Relaxed),
            duplicates: hub.duplicates.load(Ordering::Relaxed),
            dropped: hub.dropped.load(Ordering::Relaxed),
            subscribed,
        }
    }
}
