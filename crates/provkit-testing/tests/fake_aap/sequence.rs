//! sequence tests.
