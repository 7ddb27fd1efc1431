//! Why a websocket connection could not be made or ended.

use std::time::Duration;

/// Why the push connection could not be opened, or why it ended. The stream reconnects after
/// each one (see [`JobStatusStream`](super::JobStatusStream)); none of them carries a credential.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PushError {
    /// The client could not tell where the websocket is, or produce its credentials (API root
    /// discovery failed, the token file is unreadable, minting a gateway token failed).
    #[error("the AAP client could not prepare the websocket connection")]
    Client(#[source] crate::Error),
    /// The API root in use has no known websocket path.
    #[error("no websocket is known for the API base {base:?}")]
    UnknownPath {
        /// The controller API base path.
        base: String,
    },
    /// The websocket URL could not be formed from the client's origin.
    #[error("the websocket URL {url:?} is invalid")]
    Url {
        /// The URL (no credentials: they travel in headers).
        url: String,
    },
    /// The TCP connection failed.
    #[error("could not connect to {authority}")]
    Connect {
        /// `host:port`.
        authority: String,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// The TLS handshake failed (certificate not trusted, protocol error).
    #[error("TLS handshake with {authority} failed")]
    Tls {
        /// `host:port`.
        authority: String,
        /// The IO error carrying the rustls error.
        #[source]
        source: std::io::Error,
    },
    /// A step of the connection took longer than allowed.
    #[error("the websocket {stage} timed out after {after:?}")]
    Timeout {
        /// `connect`, `upgrade`, `accept` or `subscription`.
        stage: &'static str,
        /// The limit.
        after: Duration,
    },
    /// The server answered the HTTP upgrade with another status (403: credentials refused; AWX
    /// sends no frame then).
    #[error("the websocket upgrade was refused with HTTP {status}")]
    Refused {
        /// The HTTP status.
        status: u16,
    },
    /// The subscription was refused (`{"error": "access denied to channel"}`: the `xrftoken`
    /// did not match the `csrftoken` cookie, e.g. a proxy dropped the cookie).
    #[error("the job status subscription was refused: {message}")]
    Denied {
        /// The server's text.
        message: String,
    },
    /// A frame that does not belong at this point of the handshake.
    #[error("unexpected websocket frame during the handshake: {frame}")]
    Unexpected {
        /// The frame, cut to 200 characters.
        frame: String,
    },
    /// The server closed the connection with a close frame.
    #[error("the server closed the websocket (code {code:?})")]
    Closed {
        /// The close code, when sent.
        code: Option<u16>,
    },
    /// The connection was lost without a close frame (a server restart: code 1006) or the
    /// websocket protocol failed.
    #[error("the websocket connection was lost")]
    Lost(#[source] tokio_tungstenite::tungstenite::Error),
    /// Nothing arrived, not even the answer to a ping, for this long.
    #[error("the websocket was silent for {after:?}; taken for dead")]
    Silent {
        /// How long nothing arrived.
        after: Duration,
    },
}

impl PushError {
    pub(crate) fn unexpected(frame: &str) -> Self {
        Self::Unexpected {
            frame: frame.chars().take(200).collect(),
        }
    }

    /// Maps a websocket error: an HTTP answer to the upgrade is a refusal, anything else a loss.
    pub(crate) fn from_ws(error: tokio_tungstenite::tungstenite::Error) -> Self {
        match error {
            tokio_tungstenite::tungstenite::Error::Http(response) => Self::Refused {
                status: response.status().as_u16(),
            },
            other => Self::Lost(other),
        }
    }
}
