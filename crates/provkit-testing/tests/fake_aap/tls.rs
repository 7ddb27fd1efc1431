//! tls tests.
