//! Errors of the fake AAP server.

/// What can go wrong setting up or running the fake AAP server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FakeAapError {
    /// Binding the listening socket failed.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// The fake only listens on loopback addresses.
    #[error("refusing to listen on non-loopback address {addr}")]
    NotLoopback {
        /// The address.
        addr: std::net::SocketAddr,
    },
    /// A YAML fixture file is invalid.
    #[error("invalid fixtures")]
    Fixtures {
        /// The parse error.
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// A JSON fixture file is invalid.
    #[error("invalid JSON fixtures")]
    FixturesJson {
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// The fixtures are inconsistent (unknown organization, duplicate name, …).
    #[error("invalid fixtures: {reason}")]
    InvalidFixtures {
        /// What is wrong.
        reason: String,
    },
    /// Generating the self-signed certificate failed.
    #[error("cannot generate TLS certificate")]
    Certificate {
        /// The rcgen error.
        #[source]
        source: rcgen::Error,
    },
    /// Building the TLS configuration failed.
    #[error("cannot build TLS configuration")]
    Tls {
        /// The rustls error.
        #[source]
        source: rustls::Error,
    },
    /// No job or template with that id.
    #[error("no {kind} with id {id}")]
    NotFound {
        /// Object kind.
        kind: &'static str,
        /// The id.
        id: u64,
    },
}
