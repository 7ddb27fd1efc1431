//! Injected faults, per client and per verb, and the inspection API.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use provkit_testing::fake_apiserver::{Fault, FaultEffect, Verb};

use super::common::{api_err, server};

fn cm(name: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c
}

/// A fault scoped to one client partitions that replica alone: `replica-a` is refused,
/// `replica-b` is served, and the fault counts down with `times`.
#[tokio::test]
async fn a_fault_hits_only_its_client() {
    let s = server();
    s.inject(
        Fault::new(FaultEffect::Forbidden)
            .client("replica-a")
            .verb(Verb::Create)
            .times(2),
    );
    let a: Api<ConfigMap> = Api::default_namespaced(s.client_named("replica-a"));
    let b: Api<ConfigMap> = Api::default_namespaced(s.client_named("replica-b"));
    assert_eq!(
        api_err(a.create(&PostParams::default(), &cm("x")).await).code,
        403
    );
    b.create(&PostParams::default(), &cm("y")).await.unwrap();
    assert_eq!(
        api_err(a.create(&PostParams::default(), &cm("x")).await).code,
        403
    );
    a.create(&PostParams::default(), &cm("x"))
        .await
        .expect("the fault was for two requests");
    let log: Vec<(String, u16)> = s
        .requests()
        .into_iter()
        .map(|r| (r.client, r.status))
        .collect();
    assert_eq!(
        log,
        [
            ("replica-a".to_owned(), 403),
            ("replica-b".to_owned(), 201),
            ("replica-a".to_owned(), 403),
            ("replica-a".to_owned(), 201)
        ]
    );
    assert_eq!(s.verb_counts().get(&Verb::Create), Some(&4));
}

/// `skip(n)` lets the first `n` matching requests through: the fault strikes the next ones.
#[tokio::test]
async fn skip_lets_the_first_matching_requests_through() {
    let s = server();
    s.inject(
        Fault::new(FaultEffect::Forbidden)
            .verb(Verb::Create)
            .skip(2)
            .times(1),
    );
    let api: Api<ConfigMap> = Api::default_namespaced(s.client());
    for name in ["a", "b"] {
        api.create(&PostParams::default(), &cm(name)).await.unwrap();
    }
    assert_eq!(
        api_err(api.create(&PostParams::default(), &cm("c")).await).code,
        403
    );
    api.create(&PostParams::default(), &cm("c"))
        .await
        .expect("the fault was for one request after the skipped two");
}

/// The status codes an injected fault answers with, as `metav1.Status` bodies kube decodes.
#[tokio::test]
async fn injected_statuses_decode_as_kube_api_errors() {
    for (effect, code, reason) in [
        (FaultEffect::Conflict, 409, "Conflict"),
        (
            FaultEffect::TooManyRequests {
                retry_after_secs: 3,
            },
            429,
            "TooManyRequests",
        ),
        (FaultEffect::InternalError, 500, "InternalError"),
        (
            FaultEffect::ServiceUnavailable {
                retry_after_secs: None,
            },
            503,
            "ServiceUnavailable",
        ),
        (FaultEffect::Forbidden, 403, "Forbidden"),
        (FaultEffect::Gone, 410, "Expired"),
    ] {
        let s = server();
        s.inject(Fault::new(effect).resource("configmaps").name("x").times(1));
        let api: Api<ConfigMap> = Api::default_namespaced(s.client());
        api.create(&PostParams::default(), &cm("x")).await.ok();
        let err = api_err(api.get("x").await);
        assert_eq!((err.code, err.reason.as_str()), (code, reason));
        api.get("x").await.expect("the fault was for one request");
    }
}

/// Latency delays the answer (virtual time); seeded probability is reproducible.
#[tokio::test(start_paused = true)]
async fn latency_and_seeded_probability() {
    let s = server();
    s.inject(Fault::new(FaultEffect::Latency(Duration::from_secs(30))).verb(Verb::List));
    let api: Api<ConfigMap> = Api::default_namespaced(s.client());
    let start = tokio::time::Instant::now();
    api.list(&Default::default()).await.unwrap();
    assert!(start.elapsed() >= Duration::from_secs(30));

    let outcomes = |seed| async move {
        let s = super::common::builder().seed(seed).build();
        s.inject(Fault::new(FaultEffect::InternalError).probability(0.5));
        let api: Api<ConfigMap> = Api::default_namespaced(s.client());
        let mut out = Vec::new();
        for _ in 0..16 {
            out.push(api.list(&Default::default()).await.is_ok());
        }
        out
    };
    let first = outcomes(7).await;
    assert_eq!(first, outcomes(7).await, "same seed, same faults");
    assert!(first.contains(&true) && first.contains(&false), "{first:?}");
}

/// Inspection: Lease holders and recorded Events.
#[tokio::test]
async fn lease_holders_and_events_are_inspectable() {
    let s = server();
    let leases: Api<Lease> = Api::default_namespaced(s.client());
    let mut lease = Lease::default();
    lease.metadata.name = Some("op-leader".into());
    lease.spec = Some(k8s_openapi::api::coordination::v1::LeaseSpec {
        holder_identity: Some("replica-a".into()),
        ..Default::default()
    });
    leases.create(&PostParams::default(), &lease).await.unwrap();
    assert_eq!(
        s.lease_holders().get("default/op-leader"),
        Some(&Some("replica-a".to_owned()))
    );

    let recorder = kube::runtime::events::Recorder::new(
        s.client(),
        kube::runtime::events::Reporter {
            controller: "test-controller".into(),
            instance: None,
        },
    );
    let cm_api: Api<ConfigMap> = Api::default_namespaced(s.client());
    let obj = cm_api
        .create(&PostParams::default(), &cm("target"))
        .await
        .unwrap();
    let reference = kube::Resource::object_ref(&obj, &());
    recorder
        .publish(
            &kube::runtime::events::Event {
                type_: kube::runtime::events::EventType::Normal,
                reason: "Provisioned".into(),
                note: Some("done".into()),
                action: "Provision".into(),
                secondary: None,
            },
            &reference,
        )
        .await
        .unwrap();
    let events = s.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["reason"], "Provisioned");
}
