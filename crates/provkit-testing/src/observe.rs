//! Request observers: a test sees every request a fake receives at three points of its
//! handling and may **abandon** it there, so crash-point tests are driven from the fakes' side
//! with no hook in the code under test.
//!
//! Both fakes take one: [`FakeAap::observe`](crate::fake_aap::FakeAap::observe) and, with feature
//! `kube`, `FakeApiServer::observe`. The observer runs synchronously on the request's task;
//! keep it short (record, decide, signal another task).
//!
//! A typical use kills the controller under test at a chosen point — e.g. *the launch was
//! handled (the job exists) but its answer never arrives* — by signalling the test to drop the
//! controller and answering [`Verdict::Abandon`]:
//!
//! ```
//! use std::sync::Arc;
//! use provkit_testing::observe::{Phase, RequestObserver, Verdict};
//!
//! let observer: RequestObserver = Arc::new(|req, phase| {
//!     if phase == Phase::Handled && req.method == "POST" && req.path.ends_with("/launch/") {
//!         // … tell the test to drop the controller …
//!         return Verdict::Abandon;
//!     }
//!     Verdict::Continue
//! });
//! # let _ = observer;
//! ```

use std::sync::Arc;

/// Where in its handling a request is observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Received (its body read), before the fake acted on it: no state has changed yet.
    Received,
    /// Acted on (e.g. the job was created, the object written), before the answer is sent;
    /// [`ObservedRequest::status`] is the status about to be answered.
    Handled,
    /// The answer was handed to the transport (over HTTP it is being written to the socket;
    /// in-process it is being returned to the caller). The verdict is ignored.
    Answered,
}

impl Phase {
    /// `received`, `handled` or `answered`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Received => "received",
            Self::Handled => "handled",
            Self::Answered => "answered",
        }
    }
}

/// What the fake does with the request after the observer saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Carry on as usual.
    Continue,
    /// Never answer: at [`Phase::Received`] the fake does not act on the request either, at
    /// [`Phase::Handled`] its effect stays. The request's future stays pending until the client
    /// gives up on it (drops it, or closes the connection), as when the client process died
    /// while waiting.
    Abandon,
}

/// A request as an observer sees it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ObservedRequest<'a> {
    /// HTTP method (`GET`, `POST`, …).
    pub method: &'a str,
    /// Path without the query.
    pub path: &'a str,
    /// The query string (empty when none).
    pub query: &'a str,
    /// Who sent it: for the fake API server its client name (a named client, else the
    /// User-Agent up to its first `/`); for the fake AAP the User-Agent up to its first `/`;
    /// empty when unknown.
    pub client: &'a str,
    /// The request body.
    pub body: &'a [u8],
    /// The status answered ([`Phase::Handled`] and [`Phase::Answered`]; `None` at
    /// [`Phase::Received`], and `Some(0)` for a fake AAP connection reset).
    pub status: Option<u16>,
}

/// A request observer: called at each [`Phase`] of every request.
pub type RequestObserver = Arc<dyn Fn(&ObservedRequest<'_>, Phase) -> Verdict + Send + Sync>;

/// Calls `observer` (if any) and returns its verdict.
pub(crate) fn verdict(
    observer: Option<&RequestObserver>,
    req: &ObservedRequest<'_>,
    phase: Phase,
) -> Verdict {
    observer.map_or(Verdict::Continue, |o| o(req, phase))
}

/// The slot a fake keeps its observer in.
#[derive(Default)]
pub(crate) struct ObserverSlot(std::sync::RwLock<Option<RequestObserver>>);

impl std::fmt::Debug for ObserverSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.get().is_some() {
            "ObserverSlot(set)"
        } else {
            "ObserverSlot(empty)"
        })
    }
}

impl ObserverSlot {
    pub(crate) fn get(&self) -> Option<RequestObserver> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set(&self, observer: Option<RequestObserver>) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = observer;
    }
}
