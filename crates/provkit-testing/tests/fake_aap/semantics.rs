//! semantics tests.
