//! What the server records for tests to inspect: the bounded request log, the per-verb
//! counters, and the store's footprint.

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

/// The objects of one type the store holds, and their size as JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TypeFootprint {
    /// Objects stored.
    pub objects: usize,
    /// Their size, serialized as the server answers them.
    pub json_bytes: u64,
}

/// What a [`FakeApiServer`](super::FakeApiServer) holds in memory, as
/// [`footprint`](super::FakeApiServer::footprint) measures it: every stored object, plus the
/// versions only the retained change history still holds (older versions of objects, deleted
/// objects), each counted once however many changes share it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreFootprint {
    /// By type: `group/plural`, or `plural` for the core group.
    pub by_type: BTreeMap<String, TypeFootprint>,
    /// Versions only the change history holds.
    pub history_objects: usize,
    /// Their JSON size.
    pub history_json_bytes: u64,
}

impl StoreFootprint {
    /// Stored objects of every type.
    #[must_use]
    pub fn objects(&self) -> usize {
        self.by_type.values().map(|t| t.objects).sum()
    }

    /// JSON size of the stored objects and of the versions only the history holds.
    #[must_use]
    pub fn json_bytes(&self) -> u64 {
        self.by_type.values().map(|t| t.json_bytes).sum::<u64>() + self.history_json_bytes
    }
}
