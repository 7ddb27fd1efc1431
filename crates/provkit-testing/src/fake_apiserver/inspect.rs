//! What the server records for tests to inspect: the bounded request log and the per-verb
//! counters.

use std::collections::{BTreeMap, VecDeque};

use super::faults::Verb;

/// One request the server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// The client: a [`FakeApiServer::client_named`](super::FakeApiServer::client_named)
    /// name, else the User-Agent up to its first `/`, else `unknown`.
    pub client: String,
    /// The verb, `None` for discovery and unknown paths.
    pub verb: Option<Verb>,
    /// HTTP method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// HTTP status answered.
    pub status: u16,
    /// The field manager a write was recorded under (writes only).
    pub field_manager: Option<String>,
}

/// The bounded log plus counters.
#[derive(Debug, Default)]
pub(crate) struct RequestLog {
    pub(crate) limit: usize,
    pub(crate) records: VecDeque<RequestRecord>,
    pub(crate) counters: BTreeMap<Verb, u64>,
}

impl RequestLog {
    pub(crate) fn push(&mut self, record: RequestRecord) {
        if let Some(v) = record.verb {
            *self.counters.entry(v).or_default() += 1;
        }
        if self.limit == 0 {
            return;
        }
        while self.records.len() >= self.limit {
            self.records.pop_front();
        }
        self.records.push_back(record);
    }
}
