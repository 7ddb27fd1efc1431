//! fuzz tests.
