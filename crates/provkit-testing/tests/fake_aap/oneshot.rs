//! oneshot tests.
