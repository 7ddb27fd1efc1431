//! `compute_desired_config_version` on a ~64 KiB spec (200 entries of 5 strings, 3 integers and a
//! 4-key map) next to plain FNV-1a 64 over the same, pre-serialized Go JSON bytes; the ratio of
//! the two is the cost of serializing the Go way while hashing (target: ≤ 2.0×).
//!
//! Run: `cargo bench -p provkit-examples --bench config_version` (figures in docs/performance.md).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use provkit_core::{ConfigHasher, compute_desired_config_version, to_go_json};
use serde::Serialize;

#[derive(Serialize)]
struct Entry {
    name: String,
    image: String,
    flavor: String,
    network: String,
    description: String,
    cpus: u32,
    memory_mib: u64,
    disk_gib: i64,
    labels: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct Spec {
    entries: Vec<Entry>,
}

fn spec() -> Spec {
    let entries = (0..200)
        .map(|i| Entry {
            name: format!("vm-{i:04}-tenant-a"),
            image: format!("rhel-9.{}:build-{i:05}", i % 7),
            flavor: format!("bm.std.{}xl", i % 4 + 1),
            network: format!("vnet-{:03}/subnet-{i:04}", i % 13),
            description: format!("Worker {i} of <tenant-a> & <tenant-b>"),
            cpus: 16 + i % 48,
            memory_mib: 65_536 + u64::from(i) * 1024,
            disk_gib: 500 + i64::from(i),
            labels: [
                ("app".to_owned(), format!("worker-{i}")),
                ("tenant".to_owned(), "tenant-a".to_owned()),
                ("zone".to_owned(), format!("zone-{}", i % 3)),
                ("cost-center".to_owned(), format!("cc-{:06}", i * 37)),
            ]
            .into(),
        })
        .collect();
    Spec { entries }
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn bench(c: &mut Criterion) {
    let spec = spec();
    let bytes = to_go_json(&spec).unwrap();
    // The spec must be ~64 KiB once serialized; the FNV of its bytes must be the config version.
    assert!(
        (60 * 1024..=68 * 1024).contains(&bytes.len()),
        "spec is {} bytes",
        bytes.len()
    );
    assert_eq!(
        format!("{:016x}", fnv1a64(&bytes)),
        compute_desired_config_version(&spec).unwrap()
    );
    eprintln!(
        "config_version bench: spec serializes to {} bytes",
        bytes.len()
    );

    let mut g = c.benchmark_group("config_version_64KiB");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("compute_desired_config_version", |b| {
        b.iter(|| compute_desired_config_version(black_box(&spec)).unwrap());
    });
    g.bench_function("fnv1a_raw_bytes", |b| b.iter(|| fnv1a64(black_box(&bytes))));
    g.bench_function("sha256_config_version", |b| {
        b.iter(|| ConfigHasher::Sha256.compute(black_box(&spec)).unwrap());
    });
    g.bench_function("to_go_json", |b| {
        b.iter(|| to_go_json(black_box(&spec)).unwrap());
    });
    g.bench_function("serde_json_to_vec", |b| {
        b.iter(|| serde_json::to_vec(black_box(&spec)).unwrap());
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
