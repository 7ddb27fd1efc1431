//! Over loopback HTTP: kube::Config, discovery, Retry-After, and kubectl when installed.

use std::process::Command;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::discovery::Discovery;
use provkit_testing::fake_apiserver::{Fault, FaultEffect, Verb};

use super::common::{Widget, server, widget};

/// `.serve()` binds 127.0.0.1:0; a kube::Client from its Config works; Discovery (the
/// "Discovery API" concept page, unaggregated form) finds the built-ins and the CRD.
#[tokio::test]
async fn serve_config_client_and_discovery() {
    let s = server();
    let handle = s.serve().await.unwrap();
    assert!(handle.addr().ip().is_loopback());
    let client = kube::Client::try_from(handle.config()).unwrap();
    let api: Api<Widget> = Api::default_namespaced(client.clone());
    api.create(&PostParams::default(), &widget("w", 3))
        .await
        .unwrap();
    assert_eq!(s.objects::<Widget>()[0].spec.size, 3);
    let discovery = Discovery::new(client).run().await.unwrap();
    let groups: Vec<String> = discovery.groups().map(|g| g.name().to_owned()).collect();
    for want in [
        "",
        "coordination.k8s.io",
        "events.k8s.io",
        "test.provkit.dev",
    ] {
        assert!(
            groups.iter().any(|g| g == want),
            "{want} missing from {groups:?}"
        );
    }
    let (ar, caps) = discovery
        .groups()
        .find(|g| g.name() == "test.provkit.dev")
        .unwrap()
        .recommended_kind("Widget")
        .unwrap();
    assert_eq!(ar.plural, "widgets");
    assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
    assert!(
        caps.subresources
            .iter()
            .any(|(sub, _)| sub.plural == "status")
    );
    handle.shutdown().await;
}

/// 429 carries a Retry-After header over HTTP.
#[tokio::test]
async fn too_many_requests_carries_retry_after() {
    let s = server();
    s.inject(
        Fault::new(FaultEffect::TooManyRequests {
            retry_after_secs: 7,
        })
        .verb(Verb::List),
    );
    let handle = s.serve().await.unwrap();
    let mut conn = tokio::net::TcpStream::connect(handle.addr()).await.unwrap();
    conn.write_all(
        b"GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: fake\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let mut raw = String::new();
    conn.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let head = head.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 429"), "{head}");
    assert!(head.contains("\r\nretry-after: 7"), "{head}");
    let body: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["details"]["retryAfterSeconds"], 7);
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// kubectl get / apply (validation on) / patch --type merge / replace / delete against the
/// served fake; skipped (with a note) where kubectl is not on PATH.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_round_trip_when_installed() {
    if !kubectl_available() {
        eprintln!("note: kubectl not on PATH; skipping kubectl_round_trip_when_installed");
        return;
    }
    let s = server();
    let handle = s.serve().await.unwrap();
    let dir = std::env::temp_dir().join(format!("provkit-fake-kubectl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, handle.kubeconfig()).unwrap();
    let manifest = dir.join("w.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: test.provkit.dev/v1\nkind: Widget\nmetadata:\n  name: k\nspec:\n  size: 1\n",
    )
    .unwrap();
    let kc = kubeconfig.clone();
    let run = move |args: Vec<String>| {
        let kc = kc.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                let out = Command::new("kubectl")
                    .arg("--kubeconfig")
                    .arg(&kc)
                    .args(&args)
                    .output()
                    .unwrap();
                let text = String::from_utf8_lossy(&out.stdout).into_owned()
                    + &String::from_utf8_lossy(&out.stderr);
                assert!(out.status.success(), "kubectl {args:?} failed: {text}");
                text
            })
            .await
            .unwrap()
        }
    };
    let m = manifest.display().to_string();
    let sv = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    run(sv(&["apply", "-f", &m])).await;
    assert_eq!(s.objects::<Widget>()[0].spec.size, 1);
    let got = run(sv(&["get", "widgets"])).await;
    assert!(got.contains('k'), "{got}");
    run(sv(&[
        "patch",
        "widget",
        "k",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"size":2}}"#,
    ]))
    .await;
    assert_eq!(s.objects::<Widget>()[0].spec.size, 2);
    std::fs::write(
        &manifest,
        "apiVersion: test.provkit.dev/v1\nkind: Widget\nmetadata:\n  name: k\nspec:\n  size: 3\n",
    )
    .unwrap();
    run(sv(&["apply", "-f", &m])).await;
    assert_eq!(s.objects::<Widget>()[0].spec.size, 3);
    let yaml = run(sv(&["get", "widget", "k", "-o", "yaml"])).await;
    std::fs::write(&manifest, yaml.replace("size: 3", "size: 4")).unwrap();
    run(sv(&["replace", "-f", &m])).await;
    assert_eq!(s.objects::<Widget>()[0].spec.size, 4);
    run(sv(&["delete", "widget", "k"])).await;
    assert!(s.objects::<Widget>().is_empty());
    let cms: Api<ConfigMap> =
        Api::namespaced(kube::Client::try_from(handle.config()).unwrap(), "default");
    assert!(
        cms.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    std::fs::remove_dir_all(&dir).ok();
}
