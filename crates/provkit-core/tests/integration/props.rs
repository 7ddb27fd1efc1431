//! Property tests: history invariants, JSON identity, hash determinism and key-order
//! independence.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use provkit_core::{
    ConfigHasher, JobState, JobStatus, JobType, append_job, compute_desired_config_version,
    find_latest_job_by_type, to_go_json,
};
use serde_json::Value;

fn job_type() -> impl Strategy<Value = JobType> {
    prop_oneof![
        4 => Just(JobType::Provision),
        4 => Just(JobType::Deprovision),
        1 => "[a-z]{0,8}".prop_map(JobType::from),
    ]
}

fn job_state() -> impl Strategy<Value = JobState> {
    prop_oneof![
        Just(JobState::Pending),
        Just(JobState::Waiting),
        Just(JobState::Running),
        Just(JobState::Succeeded),
        Just(JobState::Failed),
        Just(JobState::Canceled),
        Just(JobState::Unknown),
        any::<String>().prop_map(JobState::from),
    ]
}

/// Whole-second times between 1970 and 2100, or `None`.
fn timestamp() -> impl Strategy<Value = Option<DateTime<Utc>>> {
    prop_oneof![
        1 => Just(None),
        8 => (0_i64..4_102_444_800).prop_map(|s| DateTime::from_timestamp(s, 0)),
    ]
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ]
}

fn json_value(with_floats: bool) -> impl Strategy<Value = Value> {
    let leaf = if with_floats {
        prop_oneof![
            4 => json_leaf(),
            1 => any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        ]
        .boxed()
    } else {
        json_leaf().boxed()
    };
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::vec((any::<String>(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

prop_compose! {
    fn job_status()(
        job_id in prop_oneof![Just(String::new()), "[0-9]{1,6}", any::<String>()],
        job_type in job_type(),
        timestamp in timestamp(),
        state in job_state(),
        message in any::<String>(),
        block in any::<bool>(),
        config_version in prop_oneof![Just(String::new()), "[0-9a-f]{16}"],
        target in prop_oneof![Just(String::new()), "[a-z]{1,6}"],
        extra in prop::collection::btree_map("x[a-zA-Z]{0,6}", json_value(false), 0..3),
    ) -> JobStatus {
        JobStatus {
            job_id,
            job_type,
            timestamp,
            state,
            message,
            block_deletion_on_failure: block,
            config_version,
            target,
            extra: extra.into_iter().collect(),
        }
    }
}

/// Small histories with many timestamp ties and duplicate ids.
fn history_job() -> impl Strategy<Value = JobStatus> {
    (job_type(), 0_i64..20, "[a-c]", any::<bool>()).prop_map(|(t, secs, id, none)| JobStatus {
        job_id: id,
        job_type: t,
        timestamp: if none {
            None
        } else {
            DateTime::from_timestamp(secs, 0)
        },
        ..JobStatus::default()
    })
}

/// Replaces every number by its f64 value, so Go's `1` and serde_json's `1.0` compare equal.
fn numbers_as_f64(v: &Value) -> Value {
    match v {
        Value::Number(n) => n.as_f64().map_or(Value::Null, Value::from),
        Value::Array(a) => Value::Array(a.iter().map(numbers_as_f64).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), numbers_as_f64(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

proptest! {
    #[test]
    fn history_never_exceeds_cap_and_keeps_newest(
        initial in prop::collection::vec(history_job(), 0..15),
        appended in prop::collection::vec(history_job(), 1..30),
        cap in 1_usize..12,
    ) {
        let cap = NonZeroUsize::new(cap).unwrap();
        let mut jobs = initial;
        jobs.truncate(cap.get());
        for job in appended {
            let mut untrimmed = jobs.clone();
            untrimmed.push(job.clone());
            append_job(&mut jobs, job.clone(), cap);
            prop_assert!(jobs.len() <= cap.get());
            prop_assert_eq!(jobs.len(), untrimmed.len().min(cap.get()));
            prop_assert_eq!(jobs.last(), Some(&job));
            // Kept entries are a subsequence of the untrimmed history, in order.
            let mut rest = untrimmed.iter();
            for kept in &jobs {
                prop_assert!(rest.any(|j| j == kept));
            }
        }
    }

    #[test]
    fn latest_provision_job_survives_trimming(
        initial in prop::collection::vec(history_job(), 0..15),
        appended in prop::collection::vec(history_job(), 1..30),
        cap in 2_usize..12,
    ) {
        let cap = NonZeroUsize::new(cap).unwrap();
        let mut jobs = initial;
        jobs.truncate(cap.get());
        for job in appended {
            let mut untrimmed = jobs.clone();
            untrimmed.push(job.clone());
            append_job(&mut jobs, job, cap);
            prop_assert_eq!(
                find_latest_job_by_type(&jobs, &JobType::Provision),
                find_latest_job_by_type(&untrimmed, &JobType::Provision)
            );
        }
    }

    #[test]
    fn job_status_json_identity(job in job_status()) {
        let text = serde_json::to_string(&job).unwrap();
        let back: JobStatus = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(&back, &job);
        prop_assert_eq!(serde_json::to_string(&back).unwrap(), text);
    }

    #[test]
    fn job_status_value_identity(jobs in prop::collection::vec(job_status(), 0..4)) {
        let value = serde_json::to_value(&jobs).unwrap();
        let back: Vec<JobStatus> = serde_json::from_value(value.clone()).unwrap();
        prop_assert_eq!(&back, &jobs);
        prop_assert_eq!(serde_json::to_value(&back).unwrap(), value);
    }

    #[test]
    fn hash_is_deterministic_and_key_order_independent(
        entries in prop::collection::btree_map(any::<String>(), json_value(true), 0..8),
        seed in any::<u64>(),
    ) {
        let sorted: BTreeMap<String, Value> = entries.clone();
        let mut kv: Vec<(String, Value)> = entries.into_iter().collect();
        // Deterministic shuffle from the seed.
        let mut s = seed | 1;
        for i in (1..kv.len()).rev() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            kv.swap(i, usize::try_from(s % (i as u64 + 1)).unwrap());
        }
        let forward: serde_json::Map<String, Value> = kv.iter().cloned().collect();
        let backward: serde_json::Map<String, Value> = kv.iter().rev().cloned().collect();
        let h = compute_desired_config_version(&sorted).unwrap();
        prop_assert_eq!(compute_desired_config_version(&sorted).unwrap(), h.clone());
        prop_assert_eq!(compute_desired_config_version(&forward).unwrap(), h.clone());
        prop_assert_eq!(compute_desired_config_version(&Value::Object(backward)).unwrap(), h);
        prop_assert_eq!(
            ConfigHasher::Sha256.compute(&forward).unwrap(),
            ConfigHasher::Sha256.compute(&sorted).unwrap()
        );
    }

    #[test]
    fn go_bytes_are_valid_sorted_json(value in json_value(true)) {
        let bytes = to_go_json(&value).unwrap();
        let parsed: Value = serde_json::from_slice(&bytes).unwrap();
        prop_assert_eq!(numbers_as_f64(&parsed), numbers_as_f64(&value));
        // No raw characters Go escapes.
        let text = std::str::from_utf8(&bytes).unwrap();
        let escaped = ['<', '>', '&', '\u{2028}', '\u{2029}'];
        prop_assert!(!text.contains(escaped), "unescaped character in {}", text);
        prop_assert!(!text.chars().any(|c| c < ' '));
        prop_assert_eq!(
            compute_desired_config_version(&value).unwrap(),
            ConfigHasher::Fnv1aGoJson.hash_bytes(&bytes)
        );
    }
}
