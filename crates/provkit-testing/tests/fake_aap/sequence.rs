//! The README's curl sequence, done with reqwest against the real `fake-aap` binary in both
//! modes: discover → find template by name → launch with extra_vars → poll until terminal →
//! cancel a running one → Ctrl-C.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{Auth, client, send};

const FIXTURES: &str = r#"
organizations: [{name: osac}]
tokens: [{token: seq-token, user: admin}]
job_templates:
  - name: osac-create-virtual-network
    organization: osac
    ask: {variables: true}
    allow_simultaneous: true
    script: {pending: 0.1, waiting: 0.1, running: 0.3, outcome: successful, stdout: "ok: [localhost]\n"}
  - name: osac-long-running
    organization: osac
    script: {hold: running, pending: 0.05, waiting: 0.05}
"#;

async fn poll_until_terminal(c: &reqwest::Client, url: &str, token: &str) -> Value {
    for _ in 0..400 {
        let r = send(c, "GET", url, Auth::Bearer(token), None).await;
        if matches!(
            r.json["status"].as_str(),
            Some("successful" | "failed" | "error" | "canceled")
        ) {
            return r.json;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("job at {url} never finished");
}

async fn poll_until_status(c: &reqwest::Client, url: &str, token: &str, want: &str) {
    for _ in 0..400 {
        if send(c, "GET", url, Auth::Bearer(token), None).await.json["status"] == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("job at {url} never reached {want}");
}

/// Kills the spawned server if the test fails before its clean shutdown.
struct Guard(Option<std::process::Child>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[tokio::test]
async fn documented_sequence_against_the_binary_in_both_modes() {
    let dir = std::env::temp_dir().join(format!("fake-aap-seq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fixtures = dir.join("fixtures.yaml");
    std::fs::write(&fixtures, FIXTURES).unwrap();
    for mode in ["awx", "gateway"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fake-aap"))
            .args(["--listen", "127.0.0.1:0", "--mode", mode, "--fixtures"])
            .arg(&fixtures)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut guard = Guard(Some(child));
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().unwrap().unwrap();
        let base = first.split_whitespace().nth(3).unwrap().to_owned();
        let api_line = lines.next().unwrap().unwrap();
        let token_line = lines.next().unwrap().unwrap();
        let token = token_line.strip_prefix("token: ").unwrap().to_owned();
        assert_eq!(token, "seq-token");
        let c = client();
        // Discover the API base like a client would.
        let root = send(&c, "GET", &format!("{base}/api/"), Auth::None, None)
            .await
            .json;
        let api = match root["apis"]["controller"].as_str() {
            Some(controller) => send(&c, "GET", &format!("{base}{controller}"), Auth::None, None)
                .await
                .json["current_version"]
                .as_str()
                .unwrap()
                .to_owned(),
            None => root["current_version"].as_str().unwrap().to_owned(),
        };
        assert_eq!(api_line, format!("API base: {base}{api}"));
        // Find the template by name.
        let found = send(&c, "GET", &format!("{base}{api}unified_job_templates/?name=osac-create-virtual-network&type=job_template,workflow_job_template"), Auth::Bearer(&token), None).await.json;
        assert_eq!(found["count"], 1);
        let launch = found["results"][0]["related"]["launch"]
            .as_str()
            .unwrap()
            .to_owned();
        // Launch with extra_vars.
        let r = send(
            &c,
            "POST",
            &format!("{base}{launch}"),
            Auth::Bearer(&token),
            Some(r#"{"extra_vars":{"network_name":"net-a"}}"#),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text);
        let job_url = r.json["url"].as_str().unwrap().to_owned();
        assert_eq!(r.header("location"), Some(job_url.as_str()));
        // Poll until terminal.
        let done = poll_until_terminal(&c, &format!("{base}{job_url}"), &token).await;
        assert_eq!(done["status"], "successful");
        assert_eq!(done["extra_vars"], "{\"network_name\": \"net-a\"}");
        let out = send(
            &c,
            "GET",
            &format!("{base}{job_url}stdout/?format=txt"),
            Auth::Bearer(&token),
            None,
        )
        .await;
        assert_eq!(out.text, "ok: [localhost]\n");
        // Cancel a running one.
        let r = send(
            &c,
            "POST",
            &format!("{base}{api}job_templates/osac-long-running++osac/launch/"),
            Auth::Bearer(&token),
            Some("{}"),
        )
        .await;
        let long = format!("{base}{}", r.json["url"].as_str().unwrap());
        poll_until_status(&c, &long, &token, "running").await;
        assert_eq!(
            send(
                &c,
                "GET",
                &format!("{long}cancel/"),
                Auth::Bearer(&token),
                None
            )
            .await
            .json["can_cancel"],
            true
        );
        assert_eq!(
            send(
                &c,
                "POST",
                &format!("{long}cancel/"),
                Auth::Bearer(&token),
                None
            )
            .await
            .status,
            202
        );
        let done = poll_until_terminal(&c, &long, &token).await;
        assert_eq!(done["status"], "canceled");
        assert_eq!(
            send(
                &c,
                "POST",
                &format!("{long}cancel/"),
                Auth::Bearer(&token),
                None
            )
            .await
            .status,
            405
        );
        // Ctrl-C → clean exit.
        let mut child = guard.0.take().unwrap();
        let status = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = child.wait().unwrap();
        assert!(exit.success(), "{mode}: {exit:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
