//! Push notifications of job status changes from AWX's websocket (protocol pieces, no IO).
//!
//! AWX pushes every unified job's status changes to websocket subscribers of the
//! `jobs-status_changed` group (observed on a real AWX 24.6.2; see the crate's `docs/aap.md`,
//! section "Push"). This module holds the parts of that protocol that need no network, so that
//! they can be tested against the captured frames verbatim:
//!
//! - [`websocket_path`]: where the websocket lives for an API root (`/websocket/` beside
//!   `/api/v2/`; `/api/controller/v2/websocket/` under the controller prefix);
//! - [`subscribe_message`] and [`PushMessage`]: the handshake (`csrftoken` cookie echoed as
//!   `xrftoken`) and the typed frames ([`StatusChange`] for `jobs-status_changed`);
//! - [`PushHealth`] and [`PollCadence`]: when the stream may stand in for polling, and at which
//!   interval in-flight jobs are polled as the safety net;
//! - [`ReconnectBackoff`]: the delays between reconnection attempts.
//!
//! A status change is only ever a wake-up: it lacks the job's artifacts, may arrive twice
//! (`canceled` is sent twice), and carries every user's jobs, so a consumer filters by the ids it
//! launched and confirms the final state with one `GET` of the job.

mod connect;
mod error;
mod messages;
mod path;
mod stream;

pub use error::PushError;
pub use messages::{PushMessage, PushMessageError, StatusChange, subscribe_message};
pub use path::websocket_path;
pub use provkit_lifecycle::push::{
    PollCadence, PushHealth, PushSignal, PushStep, PushTransition, ReconnectBackoff,
};
pub use stream::{JobStatusStream, PushConfig, PushEvent};
