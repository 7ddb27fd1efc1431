//! Kebab-case template naming (go-strcase `KebabCase` port) and full template-name resolution.
//!
//! Run: `cargo bench -p provkit-examples --bench naming` (figures in docs/performance.md).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use provkit_aap::provider::{TemplateAction, TemplateNames, kebab_case};

const KINDS: [&str; 10] = [
    "VirtualNetwork",
    "Subnet",
    "SecurityGroup",
    "NATGateway",
    "ExternalIP",
    "ExternalIPPool",
    "ExternalIPAttachment",
    "ComputeInstance",
    "ClusterOrder",
    "Tenant",
];

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("template_naming");
    g.bench_function("kebab_case_ExternalIPAttachment", |b| {
        b.iter(|| kebab_case(black_box("ExternalIPAttachment")));
    });
    g.bench_function("kebab_case_10_kinds", |b| {
        b.iter(|| {
            KINDS
                .iter()
                .map(|k| kebab_case(black_box(k)).len())
                .sum::<usize>()
        });
    });
    let names = TemplateNames::with_prefix("osac");
    g.bench_function("resolve_prefixed_name", |b| {
        b.iter(|| {
            names
                .resolve(TemplateAction::Create, black_box("ExternalIPAttachment"))
                .unwrap()
        });
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
