//! What a template's playbook reads from a job's `extra_vars` ([`JobTemplateSpec::reads`]).
//!
//! Ansible resolves `{{ a.b.c }}` against the extra variables: an undefined top-level name fails
//! the task with `'a' is undefined`, a missing key of a dictionary with
//! `'dict object' has no attribute 'b'`. Both are reported as "The task includes an option with an
//! undefined variable. The error was: …". The fake reproduces that message (without the
//! file/line part Ansible appends, which names the playbook's own source) as the failed task's
//! `msg`, and a successful read as the output of a `debug: var=<path>` task.
//!
//! [`JobTemplateSpec::reads`]: super::JobTemplateSpec::reads

use std::sync::Arc;

use serde_json::Value;

use super::script::{JobScript, Outcome};

/// The value at dotted `path` in `vars`, or Ansible's undefined-variable error.
pub(crate) fn read(vars: &Value, path: &str) -> Result<Value, String> {
    let mut parts = path.split('.');
    let first = parts.next().unwrap_or_default();
    let Some(mut current) = vars.get(first) else {
        return Err(format!("'{first}' is undefined"));
    };
    for part in parts {
        current = match current {
            Value::Object(map) => match map.get(part) {
                Some(v) => v,
                None => return Err(format!("'dict object' has no attribute '{part}'")),
            },
            Value::String(_) => return Err(format!("'str object' has no attribute '{part}'")),
            Value::Array(_) => return Err(format!("'list object' has no attribute '{part}'")),
            _ => return Err(format!("'{current}' has no attribute '{part}'")),
        };
    }
    Ok(current.clone())
}

/// Every read of `paths` in `vars`, in order.
pub(crate) fn reads(vars: &Value, paths: &[String]) -> Vec<(String, Result<Value, String>)> {
    paths.iter().map(|p| (p.clone(), read(vars, p))).collect()
}

/// `script` as the playbook runs it on `vars`: failed at the first undefined read, otherwise with
/// each read's `debug` output in front of the script's own output.
pub(crate) fn run(script: Arc<JobScript>, paths: &[String], vars: &Value) -> Arc<JobScript> {
    if paths.is_empty() {
        return script;
    }
    let mut stdout = String::from(
        "\r\nPLAY [localhost] ***************************************************************\r\n",
    );
    for (path, value) in reads(vars, paths) {
        stdout.push_str(&format!(
            "\r\nTASK [Read {path}] ****************************************************\r\n"
        ));
        match value {
            Ok(value) => {
                let shown = serde_json::to_string_pretty(&serde_json::json!({ path: value }))
                    .unwrap_or_default();
                stdout.push_str(&format!("ok: [localhost] => {shown}\r\n"));
            }
            Err(undefined) => {
                let msg = format!(
                    "The task includes an option with an undefined variable. The error was: {undefined}"
                );
                stdout.push_str(&format!(
                    "fatal: [localhost]: FAILED! => {}\r\n",
                    serde_json::json!({ "msg": msg })
                ));
                let failed = JobScript {
                    outcome: Outcome::Failed,
                    stdout: stdout + &script.stdout,
                    ..(*script).clone()
                }
                .with_failed_event(format!("Read {path}"), "localhost", msg);
                return Arc::new(failed);
            }
        }
    }
    Arc::new(JobScript {
        stdout: stdout + &script.stdout,
        ..(*script).clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_like_jinja() {
        let vars =
            json!({"osac_job_vars": {"resource": {"spec": {"cidr": "10.0.0.0/24"}}, "s": "x"}});
        let cases = [
            (
                "osac_job_vars.resource.spec",
                Ok(json!({"cidr": "10.0.0.0/24"})),
            ),
            (
                "ansible_eda.event.payload",
                Err("'ansible_eda' is undefined".to_owned()),
            ),
            (
                "osac_job_vars.payload",
                Err("'dict object' has no attribute 'payload'".to_owned()),
            ),
            (
                "osac_job_vars.s.x",
                Err("'str object' has no attribute 'x'".to_owned()),
            ),
        ];
        for (path, want) in cases {
            assert_eq!(read(&vars, path), want, "{path}");
        }
    }
}
