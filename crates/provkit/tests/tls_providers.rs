//! The TLS crypto-provider trap (rust-conventions.md A1, convention 12): with rustls, building
//! a client panics with "could not determine the process-level CryptoProvider" when the
//! process cannot tell which provider to use. A `kube::Client` (kube's rustls + ring) and an
//! `AapClient` (reqwest with `rustls-no-provider`) must build in one process, in either order.
//!
//! The process-level default is global, so each order runs in a fresh child process: the
//! parent tests re-run this test binary with one `#[ignore]`d child test selected.
#![cfg(all(feature = "aap", feature = "kube"))]
#![allow(clippy::unwrap_used, missing_docs)]

use std::process::Command;

fn build_kube_client() {
    let config = kube::Config::new("https://127.0.0.1:6443".parse().unwrap());
    let client = kube::Client::try_from(config).expect("kube client builds");
    assert_eq!(client.default_namespace(), "default");
}

fn build_aap_client() {
    provkit_aap::AapClient::builder("https://127.0.0.1:1/api/controller")
        .token("not-a-real-token")
        .build()
        .expect("AAP client builds");
}

fn no_provider_installed_yet() {
    assert!(
        rustls::crypto::CryptoProvider::get_default().is_none(),
        "a child must start without a process-level provider, or it proves nothing"
    );
}

#[tokio::test]
#[ignore = "run in a child process by kube_then_aap"]
async fn child_kube_then_aap() {
    no_provider_installed_yet();
    build_kube_client();
    build_aap_client();
}

#[tokio::test]
#[ignore = "run in a child process by aap_then_kube"]
async fn child_aap_then_kube() {
    no_provider_installed_yet();
    build_aap_client();
    // The AAP client carries ring inside its own TLS configuration: no process default
    // (docs/aap.md, "TLS").
    assert!(
        rustls::crypto::CryptoProvider::get_default().is_none(),
        "building an AapClient installed a process-level CryptoProvider"
    );
    build_kube_client();
    // kube builds its config through rustls, which installs the only compiled-in provider
    // (ring) as the process default.
    assert!(rustls::crypto::CryptoProvider::get_default().is_some());
}

fn run_child(name: &str) {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([
            "--ignored",
            "--exact",
            name,
            "--test-threads=1",
            "--nocapture",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "child {name} failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("1 passed"),
        "child {name} did not run:\n{stdout}\n{stderr}"
    );
    assert!(!stderr.contains("CryptoProvider"), "{stderr}");
}

#[test]
fn kube_then_aap() {
    run_child("child_kube_then_aap");
}

#[test]
fn aap_then_kube() {
    run_child("child_aap_then_kube");
}
