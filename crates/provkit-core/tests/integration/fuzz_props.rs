//! Bounded proptest counterparts of the cargo-fuzz targets `config_version` and
//! `job_status_json` (see `fuzz/` at the repository root): arbitrary and near-JSON bytes must
//! never panic the decoders or the hasher, and whatever decodes must re-encode stably.

use std::num::NonZeroUsize;

use proptest::prelude::*;
use provkit_core::{
    ConfigHasher, JobState, JobStatus, JobType, append_job, compute_desired_config_version,
    find_latest_job_by_type, to_go_json,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The part of a CRD status the lifecycle reads.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Status {
    #[serde(rename = "provisioningJobs", default)]
    jobs: Vec<JobStatus>,
    #[serde(rename = "desiredConfigVersion", default)]
    desired: String,
}

fn fnv1a64(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        prop_oneof![
            Just("2026-06-29T12:00:00Z"),
            Just("2026-06-29T12:00:00.999+02:00"),
            Just("9999-12-31T23:59:59Z"),
            Just("not a date"),
            Just("Succeeded"),
            Just("provision"),
            Just("<&>\u{2028}"),
        ]
        .prop_map(Value::from),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            prop::collection::vec((any::<String>(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A job-shaped object whose known keys hold values of any type.
fn job_object() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("jobID".to_owned()),
        Just("type".to_owned()),
        Just("timestamp".to_owned()),
        Just("state".to_owned()),
        Just("message".to_owned()),
        Just("blockDeletionOnFailure".to_owned()),
        Just("configVersion".to_owned()),
        "[a-z]{1,4}",
    ];
    prop::collection::vec((key, leaf()), 0..8)
        .prop_map(|kv| Value::Object(kv.into_iter().collect()))
}

fn status_object() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(job_object(), 0..6),
        prop_oneof![Just(Value::from("")), leaf()],
    )
        .prop_map(|(jobs, desired)| {
            serde_json::json!({ "provisioningJobs": jobs, "desiredConfigVersion": desired })
        })
}

/// Fuzzer-like input: raw bytes, or JSON text that may be truncated or have one byte changed.
fn fuzz_bytes() -> impl Strategy<Value = Vec<u8>> {
    let json_text = prop_oneof![value(), job_object(), status_object()]
        .prop_map(|v| serde_json::to_vec(&v).unwrap());
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..128),
        3 => json_text.clone(),
        2 => (json_text, any::<prop::sample::Index>(), any::<u8>(), any::<bool>()).prop_map(
            |(mut bytes, at, byte, truncate)| {
                if !bytes.is_empty() {
                    let i = at.index(bytes.len());
                    if truncate { bytes.truncate(i) } else { bytes[i] = byte }
                }
                bytes
            }
        ),
    ]
}

fn assert_stable<T>(v: &T)
where
    T: Serialize + for<'de> Deserialize<'de> + std::fmt::Debug,
{
    let first = serde_json::to_vec(v).unwrap();
    let again: T = serde_json::from_slice(&first).unwrap();
    assert_eq!(serde_json::to_vec(&again).unwrap(), first);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Counterpart of `fuzz/fuzz_targets/config_version.rs`.
    #[test]
    fn config_version_of_arbitrary_bytes_never_panics(data in fuzz_bytes()) {
        let text = Value::String(String::from_utf8_lossy(&data).into_owned());
        let bytes = to_go_json(&text).unwrap();
        prop_assert_eq!(compute_desired_config_version(&text).unwrap(), fnv1a64(&bytes));
        prop_assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), text);

        if let Ok(value) = serde_json::from_slice::<Value>(&data) {
            let version = compute_desired_config_version(&value).unwrap();
            let bytes = to_go_json(&value).unwrap();
            prop_assert_eq!(&version, &fnv1a64(&bytes));
            prop_assert_eq!(ConfigHasher::Sha256.compute(&value).unwrap().len(), 64);
            let reparsed: Value = serde_json::from_slice(&bytes).unwrap();
            prop_assert_eq!(compute_desired_config_version(&reparsed).unwrap(), version);
        }
    }

    /// Counterpart of `fuzz/fuzz_targets/job_status_json.rs` (the provkit-core half).
    #[test]
    fn status_json_decoding_never_panics_and_reencodes_stably(data in fuzz_bytes()) {
        if let Ok(job) = serde_json::from_slice::<JobStatus>(&data) {
            assert_stable(&job);
            prop_assert!(!job.state.is_successful() || job.state.is_terminal());
        }
        if let Ok(text) = std::str::from_utf8(&data) {
            let (state, ty) = (JobState::from(text), JobType::from(text));
            prop_assert_eq!(state.as_str(), text);
            prop_assert_eq!(ty.as_str(), text);
        }
        if let Ok(status) = serde_json::from_slice::<Status>(&data) {
            assert_stable(&status);
            let mut jobs = status.jobs.clone();
            let _ = find_latest_job_by_type(&jobs, &JobType::Provision);
            let cap = NonZeroUsize::new(data.len() % 12 + 1).unwrap();
            append_job(&mut jobs, JobStatus::default(), cap);
            prop_assert!(jobs.len() <= cap.get());
        }
    }
}
