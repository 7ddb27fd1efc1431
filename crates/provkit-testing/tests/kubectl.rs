//! The `fake-apiserver` binary driven by the installed `kubectl` (skipped, with a note, where
//! kubectl is not on PATH): client-side `kubectl apply` with validation on (the server
//! validates, kubectl having found the `fieldValidation` parameter in the OpenAPI v3
//! document), `kubectl apply --server-side` with its conflict and `--force-conflicts`, and
//! `kubectl explain` from the OpenAPI v3 document, and `kubectl get` showing the CRD's
//! `additionalPrinterColumns` (the fake answers kubectl's
//! `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` with a Table).
#![cfg(feature = "fake-apiserver-bin")]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servers.test.provkit.dev
spec:
  group: test.provkit.dev
  scope: Namespaced
  names: {kind: Server, plural: servers, singular: server}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        description: A server the operator runs.
        properties:
          spec:
            type: object
            description: What the server should be.
            required: [image]
            properties:
              image: {type: string, description: The container image to run.}
              replicas: {type: integer, minimum: 1, default: 1}
          status:
            type: object
            properties:
              phase: {type: string}
"#;

fn manifest(image: &str, extra: &str) -> String {
    format!(
        "apiVersion: test.provkit.dev/v1\nkind: Server\nmetadata:\n  name: web\nspec:\n  image: {image}\n{extra}"
    )
}

/// The server process, stopped when dropped.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
}

struct Kubectl {
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Kubectl {
    /// Runs kubectl; (success, stdout + stderr).
    fn run(&self, args: &[&str]) -> (bool, String) {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            .output()
            .expect("kubectl runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    }

    fn ok(&self, args: &[&str]) -> String {
        let (ok, text) = self.run(args);
        assert!(ok, "kubectl {args:?} failed: {text}");
        text
    }

    fn fails(&self, args: &[&str]) -> String {
        let (ok, text) = self.run(args);
        assert!(!ok, "kubectl {args:?} should fail: {text}");
        text
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("a temp file");
    p.display().to_string()
}

/// Starts the `fake-apiserver` binary with one CRD in a fresh temp dir: the server (stopped
/// when dropped), kubectl configured for it, and the dir.
fn start(test: &str, crd_file: &str, crd: &str) -> (Served, Kubectl, PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "provkit-fake-apiserver-bin-{test}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let crd = write(&dir, crd_file, crd);
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-apiserver"))
        .args(["--listen", "127.0.0.1:0", "--crd", &crd, "--kubeconfig-out"])
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the fake-apiserver binary starts");
    let stdout = child.stdout.take().expect("its stdout");
    let served = Served(child);
    let mut lines = BufReader::new(stdout).lines();
    let listening = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.starts_with("fake-apiserver listening on "))
        .expect("the binary says where it listens");
    assert!(listening.contains("http://127.0.0.1:"), "{listening}");
    let k = Kubectl {
        kubeconfig,
        cache: dir.join("cache"),
    };
    (served, k, dir)
}

#[test]
fn kubectl_apply_server_side_apply_and_explain_against_the_binary() {
    if !kubectl_available() {
        eprintln!("note: kubectl not on PATH; skipping the fake-apiserver binary's kubectl test");
        return;
    }
    let (_served, k, dir) = start("apply", "crd.yaml", CRD);

    // Client-side apply with validation on (kubectl's default).
    let m = write(&dir, "web.yaml", &manifest("nginx:1", ""));
    assert!(
        k.ok(&["apply", "-f", &m])
            .contains("server.test.provkit.dev/web created")
    );
    let bad = write(
        &dir,
        "bad.yaml",
        &manifest("nginx:1", "  bogus: 1\n").replace("name: web", "name: bad"),
    );
    let refused = k.fails(&["apply", "-f", &bad]);
    assert!(
        refused.contains("Server in version \"v1\" cannot be handled as a Server: strict decoding error: unknown field \"spec.bogus\""),
        "{refused}"
    );
    let m = write(&dir, "web.yaml", &manifest("nginx:2", ""));
    assert!(
        k.ok(&["apply", "-f", &m])
            .contains("server.test.provkit.dev/web configured")
    );

    // Server-side apply after client-side apply: kubectl may change what its last
    // client-side apply set (the last-applied annotation) without a conflict; another
    // manager changing a field kubectl now owns conflicts until it forces.
    let m = write(&dir, "web.yaml", &manifest("nginx:3", ""));
    assert!(
        k.ok(&["apply", "--server-side", "-f", &m])
            .contains("serverside-applied")
    );
    let other = write(&dir, "other.yaml", &manifest("nginx:4", ""));
    let conflict = k.fails(&[
        "apply",
        "--server-side",
        "--field-manager",
        "other",
        "-f",
        &other,
    ]);
    assert!(
        conflict.contains("Apply failed with 1 conflict: conflict with \"kubectl\": .spec.image"),
        "{conflict}"
    );
    k.ok(&[
        "apply",
        "--server-side",
        "--field-manager",
        "other",
        "--force-conflicts",
        "-f",
        &other,
    ]);
    let json: serde_json::Value = serde_json::from_str(&k.ok(&[
        "get",
        "server",
        "web",
        "-o",
        "json",
        "--show-managed-fields",
    ]))
    .expect("JSON");
    assert_eq!(
        json["spec"],
        serde_json::json!({"image": "nginx:4", "replicas": 1})
    );
    // kubectl's server-side apply upgraded the client-side apply entry into its own
    // (`kubectl-client-side-apply` is gone, the annotation is `kubectl-last-applied`'s), and
    // the forced apply took `.spec.image`, kubectl's last field.
    let mut managers: Vec<&str> = json["metadata"]["managedFields"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["manager"].as_str()).collect())
        .unwrap_or_default();
    managers.sort_unstable();
    assert_eq!(managers, ["kubectl-last-applied", "other"]);

    // kubectl explain reads the OpenAPI v3 document.
    let explained = k.ok(&["explain", "servers"]);
    assert!(
        explained.contains("A server the operator runs."),
        "{explained}"
    );
    assert!(explained.contains("spec\t<Object>"), "{explained}");
    let field = k.ok(&["explain", "servers.spec.image"]);
    assert!(field.contains("The container image to run."), "{field}");
    std::fs::remove_dir_all(&dir).ok();
}

const WIDGET_CRD: &str = r#"{
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

#[test]
fn kubectl_get_shows_the_crds_printer_columns() {
    if !kubectl_available() {
        eprintln!("note: kubectl not on PATH; skipping the fake-apiserver binary's kubectl test");
        return;
    }
    let (_served, k, dir) = start("columns", "crd.json", WIDGET_CRD);
    let widget = write(
        &dir,
        "widget.json",
        r#"{"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w-1", "namespace": "default"}, "spec": {"cores": 4}}"#,
    );
    k.ok(&["create", "-f", &widget]);
    let status =
        r#"{"status": {"phase": "Ready", "conditions": [{"type": "Ready", "status": "True"}]}}"#;
    k.ok(&[
        "patch",
        "widget",
        "w-1",
        "--subresource=status",
        "--type=merge",
        "-p",
        status,
    ]);

    let table = k.ok(&["get", "widgets"]);
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
    let one = k.ok(&["get", "widget", "w-1", "-o", "wide"]);
    assert!(one.starts_with("NAME"), "{one}");
    assert!(
        one.contains("CORES") && one.lines().nth(1).is_some_and(|l| l.starts_with("w-1")),
        "{one}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
