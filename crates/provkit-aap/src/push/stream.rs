//! [`JobStatusStream`]: the websocket subscription kept open — reconnected with backoff and
//! resubscribed after every loss — as a typed stream of [`PushEvent`]s.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use super::connect::Socket;
use super::error::PushError;
use super::messages::{PushMessage, StatusChange};
use crate::client::AapClient;
use crate::inner::Inner;
use provkit_lifecycle::push::{PushSignal, PushTransition, ReconnectBackoff};

/// Settings of a [`JobStatusStream`].
#[derive(Clone, Debug)]
#[must_use]
pub struct PushConfig {
    backoff: ReconnectBackoff,
    handshake_timeout: Duration,
    keepalive: Duration,
    buffer: usize,
}

impl Default for PushConfig {
    /// Reconnect after 1 s doubling to 60 s (less up to half, at random); 10 s for the upgrade
    /// and each handshake answer; a ping after 30 s of silence, and the connection taken for
    /// dead after 30 s more; 4,096 events buffered.
    fn default() -> Self {
        Self {
            backoff: ReconnectBackoff::default(),
            handshake_timeout: Duration::from_secs(10),
            keepalive: Duration::from_secs(30),
            buffer: 4096,
        }
    }
}

impl PushConfig {
    /// The reconnection delays (a random part of up to half of each is taken off, so that
    /// replicas restarted together do not reconnect together).
    pub fn backoff(mut self, backoff: ReconnectBackoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// How long the upgrade, the `accept` and the subscription's answer may each take.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// After this long without a frame a ping is sent; after as long again without any frame
    /// the connection is taken for dead (a connection lost without FIN or RST shows nothing
    /// else).
    pub fn keepalive(mut self, interval: Duration) -> Self {
        self.keepalive = interval.max(Duration::from_millis(1));
        self
    }

    /// How many events wait for the consumer before the connection task waits for it.
    pub fn buffer(mut self, events: usize) -> Self {
        self.buffer = events.max(1);
        self
    }
}

/// What a [`JobStatusStream`] reports.
#[derive(Debug)]
#[non_exhaustive]
pub enum PushEvent {
    /// The upgrade succeeded and the server accepted the connection (`{"accept": true}`); the
    /// subscription is on its way.
    Connected {
        /// The authenticated user's id.
        user: Option<u64>,
    },
    /// The server confirmed the `jobs-status_changed` subscription: from now on every final
    /// status is announced. Nothing that happened before is replayed — poll every in-flight
    /// job once now.
    Subscribed,
    /// A job's status changed (any user's job: keep only the ids you launched).
    StatusChanged(StatusChange),
    /// The connection could not be made or ended; the next attempt follows after `retry_in`.
    Dropped {
        /// Why.
        error: PushError,
        /// The delay before the next attempt.
        retry_in: Duration,
    },
}

impl PushEvent {
    /// The stream transition this event is, if any.
    pub fn transition(&self) -> Option<PushTransition> {
        match self {
            Self::Connected { .. } => Some(PushTransition::Connected),
            Self::Subscribed => Some(PushTransition::Subscribed),
            Self::Dropped {
                error: PushError::Denied { .. },
                ..
            } => Some(PushTransition::Denied),
            Self::Dropped { .. } => Some(PushTransition::Dropped),
            Self::StatusChanged(_) => None,
        }
    }

    /// What this event tells a controller ([`PushSignal`]): a transition, or a job's final
    /// status (non-final changes tell nothing).
    pub fn signal(&self) -> Option<PushSignal> {
        match self {
            Self::StatusChanged(change) if change.is_final() => Some(PushSignal::JobFinished {
                job_id: change.job_id.to_string(),
            }),
            Self::StatusChanged(_) => None,
            // A refused subscription ends the connection: it is down until the next attempt.
            Self::Dropped { .. } => Some(PushSignal::Stream(PushTransition::Dropped)),
            other => other.transition().map(PushSignal::Stream),
        }
    }
}

/// Aborts the connection task when the stream is dropped.
#[derive(Debug)]
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// AWX's job status changes, pushed over its websocket: a [`Stream`](futures::Stream) of
/// [`PushEvent`]s that never ends while it is held. Dropping it closes the connection.
///
/// Made by [`AapClient::job_status_stream`]. A task on the current tokio runtime connects with
/// the client's origin, TLS trust and credentials, subscribes, forwards every message, and after
/// any loss reconnects with backoff and subscribes again. Events wait in a bounded buffer; while
/// it is full the task stops reading the socket.
#[derive(Debug)]
pub struct JobStatusStream {
    events: mpsc::Receiver<PushEvent>,
    _task: AbortOnDrop,
}

impl futures::Stream for JobStatusStream {
    type Item = PushEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<PushEvent>> {
        self.events.poll_recv(cx)
    }
}

impl JobStatusStream {
    /// Only the [`PushSignal`]s a controller acts on (transitions and final statuses).
    pub fn signals(self) -> impl futures::Stream<Item = PushSignal> + Send + Unpin {
        self.filter_map(|event| std::future::ready(event.signal()))
    }
}

impl AapClient {
    /// Subscribes to AWX's job status changes with [`PushConfig::default`] (see
    /// [`job_status_stream_with`](Self::job_status_stream_with)).
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn job_status_stream(&self) -> JobStatusStream {
        self.job_status_stream_with(PushConfig::default())
    }

    /// Subscribes to AWX's job status changes: connects to the websocket beside the API root in
    /// use (`/websocket/` for `/api/v2/`, `/api/controller/v2/websocket/` for the controller
    /// behind a gateway) with this client's credentials, TLS trust and user agent, and keeps
    /// the subscription up (see [`JobStatusStream`]). The HTTP proxy settings do not apply to
    /// the websocket.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), provkit_aap::Error> {
    /// use futures::StreamExt as _;
    /// use provkit_aap::AapClient;
    /// use provkit_aap::push::PushEvent;
    /// let client = AapClient::from_env()?;
    /// let mut stream = client.job_status_stream();
    /// while let Some(event) = stream.next().await {
    ///     if let PushEvent::StatusChanged(change) = event {
    ///         println!("job {} is {}", change.job_id, change.status.as_str());
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn job_status_stream_with(&self, config: PushConfig) -> JobStatusStream {
        let (tx, rx) = mpsc::channel(config.buffer);
        let task = tokio::spawn(run(self.inner().clone(), config, tx));
        JobStatusStream {
            events: rx,
            _task: AbortOnDrop(task),
        }
    }
}

/// Connects, forwards, reconnects — until the consumer is gone.
async fn run(inner: Arc<Inner>, config: PushConfig, tx: mpsc::Sender<PushEvent>) {
    let mut backoff = config.backoff;
    loop {
        let accepted = std::sync::Mutex::new(None);
        let connected = inner
            .push_connect(config.handshake_timeout, |user| {
                *accepted
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(user);
            })
            .await;
        let user = accepted
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(user) = user
            && tx.send(PushEvent::Connected { user }).await.is_err()
        {
            return;
        }
        let error = match connected {
            Ok(socket) => {
                backoff.reset();
                tracing::info!("subscribed to AAP job status changes");
                if tx.send(PushEvent::Subscribed).await.is_err() {
                    return;
                }
                match forward(socket, &config, &tx).await {
                    Some(error) => error,
                    None => return,
                }
            }
            Err(error) => error,
        };
        let delay = backoff.next_delay();
        let retry_in = provkit_core::backoff::Jitter::Shorten { max_fraction: 0.5 }.apply(delay);
        tracing::warn!(error = %provkit_lifecycle::ErrorChain(&error), ?retry_in, "AAP job status websocket down; polling at the normal interval");
        if tx
            .send(PushEvent::Dropped { error, retry_in })
            .await
            .is_err()
        {
            return;
        }
        tokio::time::sleep(retry_in).await;
    }
}

/// Forwards the messages of a subscribed socket until it fails (the error) or the consumer is
/// gone (`None`).
async fn forward(
    mut socket: Socket,
    config: &PushConfig,
    tx: &mpsc::Sender<PushEvent>,
) -> Option<PushError> {
    let mut last_frame = Instant::now();
    let mut pinged = false;
    loop {
        let wait = if pinged {
            config.keepalive.saturating_mul(2)
        } else {
            config.keepalive
        };
        let deadline = last_frame + wait;
        let frame = tokio::select! {
            frame = socket.next() => frame,
            () = tokio::time::sleep_until(deadline) => {
                if pinged {
                    return Some(PushError::Silent { after: wait });
                }
                pinged = true;
                if let Err(e) = socket.send(Message::Ping(Vec::new().into())).await {
                    return Some(PushError::from_ws(e));
                }
                continue;
            }
            () = tx.closed() => return None,
        };
        last_frame = Instant::now();
        pinged = false;
        let text = match frame {
            None => return Some(PushError::Closed { code: None }),
            Some(Err(e)) => return Some(PushError::from_ws(e)),
            Some(Ok(Message::Close(frame))) => {
                return Some(PushError::Closed {
                    code: frame.map(|f| u16::from(f.code)),
                });
            }
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(_)) => continue,
        };
        match PushMessage::parse(text.as_str()) {
            Ok(PushMessage::StatusChanged(change)) => {
                if tx.send(PushEvent::StatusChanged(change)).await.is_err() {
                    return None;
                }
            }
            // A later refusal (the server re-checked the subscription) ends the confirmation.
            Ok(PushMessage::Denied(message)) => return Some(PushError::Denied { message }),
            Ok(other) => tracing::trace!(frame = ?other, "websocket frame ignored"),
            Err(e) => tracing::debug!(error = %e, "websocket frame not understood"),
        }
    }
}
