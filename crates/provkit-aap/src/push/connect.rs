//! Opening one websocket connection: TCP, TLS with the client's own rustls configuration, the
//! HTTP upgrade with the client's credentials and a `csrftoken` cookie, and AWX's handshake
//! (`accept`, then the subscription echoing the cookie as `xrftoken`).

use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use http::HeaderValue;
use http::header::{AUTHORIZATION, COOKIE, ORIGIN, USER_AGENT};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use super::error::PushError;
use super::messages::{PushMessage, subscribe_message};
use super::path::websocket_path;
use crate::call::Call;
use crate::inner::Inner;

/// The byte stream under the websocket: plain TCP or TLS over TCP.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// An open websocket.
pub(crate) type Socket = WebSocketStream<Box<dyn Io>>;

/// Where and how to connect, derived from the client once per attempt (the API root may be
/// discovered, and a token file or a minted token may change between attempts).
struct Target {
    tls: bool,
    host: String,
    port: u16,
    path: String,
    authorization: Option<HeaderValue>,
}

impl Inner {
    async fn push_target(&self) -> Result<Target, PushError> {
        let base = self.base().await.map_err(PushError::Client)?;
        let path = websocket_path(base).ok_or_else(|| PushError::UnknownPath {
            base: base.to_owned(),
        })?;
        // The same credentials as a request to the API: a minted gateway token behind a
        // gateway with minting on, else the configured ones (token file re-read when due).
        let probe = Call::get(path.clone(), 0);
        let authorization = match self.minted_header(&probe).await {
            Ok(Some(header)) => Some(header),
            Ok(None) => self.auth.header().map_err(PushError::Client)?,
            Err(e) => return Err(PushError::Client(e)),
        };
        let url = url::Url::parse(&self.origin).map_err(|_| PushError::Url {
            url: self.origin.clone(),
        })?;
        let tls = url.scheme() == "https";
        let host = url
            .host_str()
            .ok_or_else(|| PushError::Url {
                url: self.origin.clone(),
            })?
            .to_owned();
        let port = url
            .port_or_known_default()
            .unwrap_or(if tls { 443 } else { 80 });
        Ok(Target {
            tls,
            host,
            port,
            path,
            authorization,
        })
    }

    /// Connects, upgrades and subscribes. `on_accept` is told the authenticated user as soon as
    /// the server accepted the connection (before the subscription is confirmed).
    pub(crate) async fn push_connect(
        &self,
        handshake_timeout: Duration,
        on_accept: impl FnOnce(Option<u64>),
    ) -> Result<Socket, PushError> {
        let target = self.push_target().await?;
        // `[::1]` for IPv6 literals, in the authority and the Host header alike.
        let host_part = if target.host.contains(':') && !target.host.starts_with('[') {
            format!("[{}]", target.host)
        } else {
            target.host.clone()
        };
        let authority = format!("{host_part}:{}", target.port);
        let connect_timeout = self.push.connect_timeout;
        let tcp = tokio::time::timeout(
            connect_timeout,
            TcpStream::connect((target.host.trim_matches(['[', ']']), target.port)),
        )
        .await
        .map_err(|_| PushError::Timeout {
            stage: "connect",
            after: connect_timeout,
        })?
        .map_err(|source| PushError::Connect {
            authority: authority.clone(),
            source,
        })?;
        let _ = tcp.set_nodelay(true);
        let io: Box<dyn Io> = if target.tls {
            let name = rustls::pki_types::ServerName::try_from(
                target.host.trim_matches(['[', ']']).to_owned(),
            )
            .map_err(|_| PushError::Url {
                url: self.origin.clone(),
            })?;
            let connector = tokio_rustls::TlsConnector::from(self.push.tls.clone());
            let stream = tokio::time::timeout(connect_timeout, connector.connect(name, tcp))
                .await
                .map_err(|_| PushError::Timeout {
                    stage: "connect",
                    after: connect_timeout,
                })?
                .map_err(|source| PushError::Tls {
                    authority: authority.clone(),
                    source,
                })?;
            Box::new(stream)
        } else {
            Box::new(tcp)
        };
        let scheme = if target.tls { "wss" } else { "ws" };
        let url = format!("{scheme}://{authority}{}", target.path);
        let uri: http::Uri = url
            .parse()
            .map_err(|_| PushError::Url { url: url.clone() })?;
        let mut request = uri
            .into_client_request()
            .map_err(|_| PushError::Url { url: url.clone() })?;
        // Any value works as long as the subscription echoes it (aap-observed §13.4).
        let csrf: String = std::iter::repeat_with(fastrand::alphanumeric)
            .take(32)
            .collect();
        let headers = request.headers_mut();
        if let Some(authorization) = target.authorization {
            headers.insert(AUTHORIZATION, authorization);
        }
        let cookie = HeaderValue::try_from(format!("csrftoken={csrf}"))
            .map_err(|_| PushError::Url { url: url.clone() })?;
        headers.insert(COOKIE, cookie);
        if let Ok(agent) = HeaderValue::try_from(self.push.user_agent.as_str()) {
            headers.insert(USER_AGENT, agent);
        }
        if let Ok(origin) = HeaderValue::try_from(self.origin.as_str()) {
            headers.insert(ORIGIN, origin);
        }
        let (mut socket, _response) = tokio::time::timeout(
            handshake_timeout,
            tokio_tungstenite::client_async(request, io),
        )
        .await
        .map_err(|_| PushError::Timeout {
            stage: "upgrade",
            after: handshake_timeout,
        })?
        .map_err(PushError::from_ws)?;

        // ← {"accept": true, "user": N}
        match next_message(&mut socket, "accept", handshake_timeout).await? {
            PushMessage::Accepted { user } => on_accept(user),
            other => return Err(PushError::unexpected(&format!("{other:?}"))),
        }
        // → {"groups": {"jobs": [...]}, "xrftoken": X}
        socket
            .send(Message::text(subscribe_message(&csrf)))
            .await
            .map_err(PushError::from_ws)?;
        // ← {"groups_current": [...], ...} or {"error": "access denied to channel"}
        loop {
            match next_message(&mut socket, "subscription", handshake_timeout).await? {
                message @ PushMessage::Subscribed { .. } => {
                    if message.confirms_status_changes() {
                        return Ok(socket);
                    }
                    return Err(PushError::Denied {
                        message: format!("not joined to jobs-status_changed: {message:?}"),
                    });
                }
                PushMessage::Denied(message) => return Err(PushError::Denied { message }),
                // Nothing else is sent before the answer to the subscription; tolerate it.
                other => {
                    tracing::debug!(frame = ?other, "websocket frame before the subscription's answer");
                }
            }
        }
    }
}

/// The next JSON message (pings and pongs are answered or skipped), within `limit`.
async fn next_message(
    socket: &mut Socket,
    stage: &'static str,
    limit: Duration,
) -> Result<PushMessage, PushError> {
    let read = async {
        loop {
            match socket.next().await {
                None => return Err(PushError::Closed { code: None }),
                Some(Err(e)) => return Err(PushError::from_ws(e)),
                Some(Ok(Message::Text(text))) => {
                    return PushMessage::parse(text.as_str())
                        .map_err(|_| PushError::unexpected(text.as_str()));
                }
                Some(Ok(Message::Close(frame))) => {
                    return Err(PushError::Closed {
                        code: frame.map(|f| u16::from(f.code)),
                    });
                }
                Some(Ok(
                    Message::Binary(_) | Message::Ping(_) | Message::Pong(_) | Message::Frame(_),
                )) => {}
            }
        }
    };
    tokio::time::timeout(limit, read)
        .await
        .map_err(|_| PushError::Timeout {
            stage,
            after: limit,
        })?
}
