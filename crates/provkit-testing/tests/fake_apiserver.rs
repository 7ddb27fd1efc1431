//! The fake Kubernetes API server, driven through `kube::Client` (in-process and over
//! loopback HTTP). Each test names the documented API-server rule it covers.
#![cfg(feature = "kube")]

mod fake_apiserver {
    mod apply;
    pub(crate) mod common;
    mod faults;
    mod http;
    mod lifecycle;
    mod validation;
    mod verbs;
    mod watch;
}
