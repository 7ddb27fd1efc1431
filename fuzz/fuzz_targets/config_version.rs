//! Config-version hashing of arbitrary JSON: never panics, and the hash is FNV-1a 64 over the
//! Go bytes, which are themselves valid JSON that hashes to the same value when read back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use provkit_core::{ConfigHasher, compute_desired_config_version, to_go_json};
use serde_json::Value;

fn fnv1a64(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

fuzz_target!(|data: &[u8]| {
    // Arbitrary text as a JSON string value (exercises the Go string escaping).
    let text = Value::String(String::from_utf8_lossy(data).into_owned());
    let bytes = to_go_json(&text).expect("a string always serializes");
    assert_eq!(
        compute_desired_config_version(&text).expect("string hashes"),
        fnv1a64(&bytes)
    );
    let back: Value = serde_json::from_slice(&bytes).expect("Go bytes of a string are JSON");
    assert_eq!(back, text);

    // Arbitrary bytes parsed as a JSON document.
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Ok(version) = compute_desired_config_version(&value) else {
        // serde_json never yields NaN/inf, so every parsed document must hash.
        panic!("parsed JSON failed to hash");
    };
    let bytes = to_go_json(&value).expect("hashes, so serializes");
    assert_eq!(version, fnv1a64(&bytes));
    assert_eq!(version.len(), 16);
    let sha = ConfigHasher::Sha256
        .compute(&value)
        .expect("sha256 over the same bytes");
    assert_eq!(sha.len(), 64);
    // Round trip: the Go bytes are JSON, and re-reading them gives the same version.
    let reparsed: Value = serde_json::from_slice(&bytes).expect("Go bytes are JSON");
    assert_eq!(
        compute_desired_config_version(&reparsed).expect("reparsed hashes"),
        version
    );
});
