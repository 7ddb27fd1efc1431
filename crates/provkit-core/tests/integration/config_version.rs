//! Config-version hashing: the spec's vectors and one test per Go encoding rule.

use std::collections::BTreeMap;

use provkit_core::{ConfigHasher, ConfigVersionError, compute_desired_config_version, to_go_json};
use serde::{Serialize, Serializer};
use serde_json::json;

/// A plain FNV-1a 64, written independently of the crate's.
fn fnv(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Asserts: Go bytes of `value` are `go_bytes` literally, their FNV-1a is `hash`, and
/// `compute_desired_config_version(value)` is `hash`.
fn check<T: Serialize + ?Sized>(value: &T, go_bytes: &[u8], hash: &str) {
    assert_eq!(
        String::from_utf8_lossy(&to_go_json(value).unwrap()),
        String::from_utf8_lossy(go_bytes),
    );
    assert_eq!(fnv(go_bytes), hash, "fnv of the expected bytes");
    assert_eq!(compute_desired_config_version(value).unwrap(), hash);
}

#[test]
fn spec_vectors_raw_bytes() {
    // osac-provisioning.md §3.1, rust-conventions.md convention 7.
    let vectors: &[(&[u8], &str)] = &[
        (br#"{"key":"value"}"#, "90f31220e6080755"),
        (br#"{"key":"a"}"#, "c855a4bcffcb8447"),
        (br#"{"key":"b"}"#, "bfac7fbcfae417be"),
        (br"{}", "08f44b07b5901a25"),
        (b"", "cbf29ce484222325"),
    ];
    for (bytes, hash) in vectors {
        assert_eq!(ConfigHasher::Fnv1aGoJson.hash_bytes(bytes), *hash);
        assert_eq!(fnv(bytes), *hash);
    }
}

#[derive(Serialize)]
struct KeySpec {
    key: String,
}

#[derive(Serialize)]
struct EmptyBraces {}

#[derive(Serialize)]
struct EmptyUnit;

#[test]
fn spec_vectors_from_values() {
    for (v, bytes, hash) in [
        (
            "value",
            br#"{"key":"value"}"#.as_slice(),
            "90f31220e6080755",
        ),
        ("a", br#"{"key":"a"}"#, "c855a4bcffcb8447"),
        ("b", br#"{"key":"b"}"#, "bfac7fbcfae417be"),
    ] {
        check(&KeySpec { key: v.into() }, bytes, hash);
        check(&json!({ "key": v }), bytes, hash);
        check(&BTreeMap::from([("key", v)]), bytes, hash);
    }
    check(&json!({}), b"{}", "08f44b07b5901a25");
    check(&EmptyBraces {}, b"{}", "08f44b07b5901a25");
    check(&EmptyUnit, b"{}", "08f44b07b5901a25");
    check(&BTreeMap::<String, i32>::new(), b"{}", "08f44b07b5901a25");
}

#[test]
fn same_input_same_hash_and_different_values_differ() {
    // osac-provisioning.md §7.1 ComputeDesiredConfigVersion.
    let a = json!({"key": "a", "nested": {"x": [1, 2, 3]}});
    assert_eq!(
        compute_desired_config_version(&a).unwrap(),
        compute_desired_config_version(&a.clone()).unwrap()
    );
    assert_ne!(
        compute_desired_config_version(&json!({"key": "a"})).unwrap(),
        compute_desired_config_version(&json!({"key": "b"})).unwrap()
    );
}

#[test]
fn escapes_html_characters() {
    check(
        &json!({"k": "a<b>c&d"}),
        br#"{"k":"a\u003cb\u003ec\u0026d"}"#,
        "fe0cb7a569125b21",
    );
}

#[test]
fn escapes_line_and_paragraph_separators() {
    check(
        &json!({"k": "\u{2028}x\u{2029}"}),
        br#"{"k":"\u2028x\u2029"}"#,
        "716b37e4fff2ec8f",
    );
}

#[test]
fn short_escapes_for_backspace_and_form_feed() {
    check(
        &json!({"k": "\u{8}\u{c}"}),
        br#"{"k":"\b\f"}"#,
        "0095aa4a19540388",
    );
}

#[test]
fn short_escapes_for_newline_return_tab() {
    check(
        &json!({"k": "\n\r\t"}),
        br#"{"k":"\n\r\t"}"#,
        "5bbdaaf6808d4198",
    );
}

#[test]
fn other_control_characters_as_u00xx() {
    check(
        &json!({"k": "\u{0}\u{1}\u{1f}"}),
        br#"{"k":"\u0000\u0001\u001f"}"#,
        "d5a7cbadd1d46b3f",
    );
}

#[test]
fn quote_and_backslash() {
    check(
        &json!({"k": "q\"b\\s"}),
        br#"{"k":"q\"b\\s"}"#,
        "f7e52c1274c8f8d4",
    );
}

#[test]
fn non_ascii_is_raw_utf8() {
    check(
        &json!({"k": "héllo 世界"}),
        "{\"k\":\"héllo 世界\"}".as_bytes(),
        "879c84cb67ae985b",
    );
}

#[test]
fn float_integral_has_no_fraction() {
    check(&json!({"k": 1.0}), br#"{"k":1}"#, "521543ff002cda97");
    check(
        &BTreeMap::from([("k", 1.0_f64)]),
        br#"{"k":1}"#,
        "521543ff002cda97",
    );
}

#[test]
fn float_large_uses_signed_exponent() {
    check(&json!({"k": 1e21}), br#"{"k":1e+21}"#, "763f85ee6a27c804");
    check(
        &json!({"k": 1e20}),
        br#"{"k":100000000000000000000}"#,
        "a0bb19c40d84d8d7",
    );
}

#[test]
fn float_small_uses_unpadded_exponent() {
    check(&json!({"k": 1e-7}), br#"{"k":1e-7}"#, "513e74a70dc2b73a");
    check(
        &json!({"k": 0.000_001}),
        br#"{"k":0.000001}"#,
        "ac5e8fa0d6ec8f63",
    );
}

#[test]
fn float_negative_zero_and_fractions() {
    check(
        &BTreeMap::from([("k", -0.0_f64)]),
        br#"{"k":-0}"#,
        "8570cc4d39864933",
    );
    check(&json!({"k": 1.5}), br#"{"k":1.5}"#, "b49b775a0f1b7f00");
    check(
        &BTreeMap::from([("k", 0.1_f32)]),
        br#"{"k":0.1}"#,
        "32b62d62525a2a9d",
    );
}

#[test]
fn non_finite_floats_are_typed_errors() {
    for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let err = compute_desired_config_version(&BTreeMap::from([("k", v)])).unwrap_err();
        assert!(
            matches!(err, ConfigVersionError::NonFiniteFloat { .. }),
            "{err}"
        );
        assert!(ConfigHasher::Sha256.compute(&[v]).is_err());
    }
}

#[test]
fn preserve_order_value_is_sorted() {
    let v = json!({"b": 1, "a": 2});
    // The dev-dependency enables serde_json's preserve_order: serde_json keeps insertion order...
    assert_eq!(serde_json::to_string(&v).unwrap(), r#"{"b":1,"a":2}"#);
    // ...and the Go bytes are sorted anyway.
    check(&v, br#"{"a":2,"b":1}"#, "f85f5878cbf2dc03");
}

#[test]
fn integer_keys_sort_by_string_form() {
    let m = BTreeMap::from([(9, "y"), (10, "x")]);
    check(&m, br#"{"10":"x","9":"y"}"#, "bafb62f0b46ccde8");
}

#[test]
fn struct_fields_keep_declaration_order() {
    #[derive(Serialize)]
    struct Rev {
        b: i32,
        a: i32,
    }
    check(&Rev { b: 1, a: 2 }, br#"{"b":1,"a":2}"#, "eb867b9cecbe3cf3");
}

#[test]
fn go_wrapper_struct_with_untagged_field_names() {
    #[derive(Serialize)]
    struct Inner {
        size: String,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "PascalCase")]
    struct Wrapper {
        spec: Inner,
        implementation_strategy: String,
    }
    check(
        &Wrapper {
            spec: Inner {
                size: "large".into(),
            },
            implementation_strategy: "aap".into(),
        },
        br#"{"Spec":{"size":"large"},"ImplementationStrategy":"aap"}"#,
        "3d4f237cd0fdfabf",
    );
}

#[test]
fn bytes_are_base64_like_go() {
    struct Bytes(&'static [u8]);
    impl Serialize for Bytes {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }
    check(
        &BTreeMap::from([("k", Bytes(b"foobar"))]),
        br#"{"k":"Zm9vYmFy"}"#,
        "73ea46d7cbae8aad",
    );
}

#[test]
fn nil_vs_empty_and_omitempty() {
    #[derive(Serialize)]
    struct S {
        nil: Option<Vec<String>>,
        empty: Vec<String>,
        #[serde(skip_serializing_if = "String::is_empty")]
        omitted: String,
        none: Option<i32>,
        unit_variant: Mode,
    }
    #[derive(Serialize)]
    enum Mode {
        Fast,
    }
    let v = S {
        nil: None,
        empty: vec![],
        omitted: String::new(),
        none: None,
        unit_variant: Mode::Fast,
    };
    let bytes = br#"{"nil":null,"empty":[],"none":null,"unit_variant":"Fast"}"#;
    check(&v, bytes, &fnv(bytes));
}

#[test]
fn nested_maps_in_arrays_are_sorted() {
    let v = json!([{"z": {"y": 1, "x": [true, null]}, "a": "<"}]);
    let bytes = br#"[{"a":"\u003c","z":{"x":[true,null],"y":1}}]"#;
    check(&v, bytes, &fnv(bytes));
}

#[test]
fn unsupported_map_keys_are_typed_errors() {
    #[derive(Serialize, PartialEq, Eq, PartialOrd, Ord)]
    struct K {
        a: i32,
    }
    let err = compute_desired_config_version(&BTreeMap::from([(K { a: 1 }, 1)])).unwrap_err();
    assert_eq!(
        err,
        ConfigVersionError::UnsupportedMapKey { kind: "struct" }
    );
    let err = compute_desired_config_version(&BTreeMap::from([(vec![1], 1)])).unwrap_err();
    assert_eq!(
        err,
        ConfigVersionError::UnsupportedMapKey { kind: "sequence" }
    );
}

#[test]
fn serialize_errors_are_custom() {
    struct Fails;
    impl Serialize for Fails {
        fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("boom"))
        }
    }
    assert_eq!(
        compute_desired_config_version(&vec![Fails]).unwrap_err(),
        ConfigVersionError::Custom {
            message: "boom".into()
        }
    );
}

#[test]
fn sha256_alternative_over_the_same_bytes() {
    assert_eq!(
        ConfigHasher::Sha256
            .compute(&json!({"key": "value"}))
            .unwrap(),
        "e43abcf3375244839c012f9633f95862d232a95b00d5bc7348b3098b9fed7f32"
    );
    assert_eq!(
        ConfigHasher::Sha256.hash_bytes(br#"{"key":"value"}"#),
        "e43abcf3375244839c012f9633f95862d232a95b00d5bc7348b3098b9fed7f32"
    );
    assert_eq!(ConfigHasher::default(), ConfigHasher::Fnv1aGoJson);
}

#[test]
fn job_status_hashes_as_sorted_map() {
    // JobStatus serializes through a flattened map, so its keys are sorted in the Go bytes.
    let job: provkit_core::JobStatus = serde_json::from_str(
        r#"{"jobID":"1","type":"provision","timestamp":null,"state":"Running"}"#,
    )
    .unwrap();
    let bytes = br#"{"jobID":"1","state":"Running","timestamp":null,"type":"provision"}"#;
    check(&job, bytes, &fnv(bytes));
}
