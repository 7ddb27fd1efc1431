//! The `fake-apiserver` binary driven by the `kubectl` binary: `kubectl get` of a custom
//! resource shows the CRD's `additionalPrinterColumns`, as against a real API server (the fake
//! answers kubectl's `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` with a Table).
//! Skipped, with a note, where no `kubectl` is installed.
#![cfg(feature = "fake-apiserver-bin")]
#![allow(clippy::unwrap_used, missing_docs)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {"group": "example.com", "scope": "Namespaced",
    "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
    "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
      "additionalPrinterColumns": [
        {"name": "Cores", "type": "integer", "jsonPath": ".spec.cores"},
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"cores": {"type": "integer"}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}}"#;

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn kubectl_get_shows_the_crds_printer_columns() {
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        eprintln!("kubectl is not installed: skipped");
        return;
    }
    let dir = std::env::temp_dir().join(format!("provkit-kubectl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (crd, kubeconfig) = (dir.join("crd.json"), dir.join("kubeconfig"));
    std::fs::write(&crd, CRD).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-apiserver"))
        .arg("--crd")
        .arg(&crd)
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = Server(child);
    // The server prints the kubeconfig path, then its URL once it listens.
    let mut lines = BufReader::new(stdout).lines();
    assert!(
        lines
            .by_ref()
            .map_while(Result::ok)
            .any(|l| l.starts_with("fake-apiserver listening on"))
    );

    let widget = dir.join("widget.json");
    std::fs::write(
        &widget,
        r#"{"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w-1", "namespace": "default"}, "spec": {"cores": 4}}"#,
    )
    .unwrap();
    kubectl(
        &kubeconfig,
        &["create", "--validate=false", "-f", widget.to_str().unwrap()],
    );
    let status =
        r#"{"status": {"phase": "Ready", "conditions": [{"type": "Ready", "status": "True"}]}}"#;
    kubectl(
        &kubeconfig,
        &[
            "patch",
            "widget",
            "w-1",
            "--subresource=status",
            "--type=merge",
            "-p",
            status,
        ],
    );

    let table = kubectl(&kubeconfig, &["get", "widgets"]);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        ["NAME", "CORES", "PHASE", "READY", "AGE"],
        "{table}"
    );
    assert_eq!(rows[1][..4], ["w-1", "4", "Ready", "True"], "{table}");
    assert_eq!(rows.len(), 2, "{table}");
    // One object, by name, is a one-row Table too; `-o wide` keeps the same columns.
    let one = kubectl(&kubeconfig, &["get", "widget", "w-1", "-o", "wide"]);
    assert!(one.starts_with("NAME"), "{one}");
    assert!(
        one.contains("CORES") && one.lines().nth(1).unwrap().starts_with("w-1"),
        "{one}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
