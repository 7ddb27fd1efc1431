//! Shared helpers: a reqwest client on the ring provider, request helpers, JSON subset checks.

use std::sync::Arc;

use provkit_testing::fake_aap::{
    FakeAap, FakeAapServer, Fixtures, InventorySpec, JobScript, JobTemplateSpec, Mode,
    OrganizationSpec, Scope, TokenSpec, UserSpec, WorkflowJobTemplateSpec, WorkflowNodeSpec,
};
use serde_json::Value;

pub const ADMIN: &str = "admin-token";
pub const READ: &str = "read-token";

/// A reqwest client using rustls with the ring provider, trusting `ca_pem` if given; never follows redirects.
pub fn client_with(ca_pem: Option<&str>, insecure: bool) -> reqwest::Client {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    if let Some(pem) = ca_pem {
        use rustls::pki_types::pem::PemObject as _;
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
            .with_no_client_auth()
    } else {
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    reqwest::Client::builder()
        .use_preconfigured_tls(config)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

pub fn client() -> reqwest::Client {
    client_with(None, false)
}

/// The explicit skip-verification switch a client would offer.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Credentials for a request.
#[derive(Clone, Copy, Debug)]
pub enum Auth<'a> {
    None,
    Bearer(&'a str),
    Basic(&'a str, &'a str),
}

/// A response: status, headers, body text, body JSON (Null when not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    pub json: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Sends a request; `body` is sent with `Content-Type: application/json`.
pub async fn send(
    c: &reqwest::Client,
    method: &str,
    url: &str,
    auth: Auth<'_>,
    body: Option<&str>,
) -> Reply {
    let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut rb = c.request(m, url);
    match auth {
        Auth::None => {}
        Auth::Bearer(t) => rb = rb.bearer_auth(t),
        Auth::Basic(u, p) => rb = rb.basic_auth(u, Some(p)),
    }
    if let Some(b) = body {
        rb = rb
            .header("content-type", "application/json")
            .body(b.to_owned());
    }
    let resp = rb.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap();
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        text,
        json,
    }
}

/// Asserts that `expected` is contained in `actual` (objects: listed keys; arrays and scalars: equal).
pub fn assert_subset(expected: &Value, actual: &Value, at: &str) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, v) in e {
                let Some(av) = a.get(k) else {
                    panic!("{at}: missing key {k:?} in {actual}")
                };
                assert_subset(v, av, &format!("{at}.{k}"));
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            assert_eq!(e.len(), a.len(), "{at}: array length differs: {actual}");
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                assert_subset(ev, av, &format!("{at}[{i}]"));
            }
        }
        _ => assert_eq!(expected, actual, "{at}"),
    }
}

/// Fixtures shaped like the environment of `aap-observed.md` (ids 2, 9, 10, 11).
pub fn observed_fixtures(mode: Mode) -> Fixtures {
    let mut fx = Fixtures::default();
    fx.settings.mode = mode;
    fx.organizations.push(OrganizationSpec {
        id: Some(2),
        name: "osac".into(),
        description: "OSAC org".into(),
    });
    fx.users.push(UserSpec {
        id: Some(1),
        username: "admin".into(),
        password: "secret".into(),
        is_superuser: true,
    });
    fx.users.push(UserSpec {
        id: Some(2),
        username: "viewer".into(),
        password: "viewer".into(),
        is_superuser: false,
    });
    fx.tokens.push(TokenSpec {
        token: ADMIN.into(),
        user: "admin".into(),
        scope: Scope::Write,
        ..TokenSpec::default()
    });
    fx.tokens.push(TokenSpec {
        token: READ.into(),
        user: "admin".into(),
        scope: Scope::Read,
        ..TokenSpec::default()
    });
    fx.inventories.push(InventorySpec {
        id: Some(2),
        name: "osac-inventory".into(),
        organization: "osac".into(),
        hosts: 1,
    });
    fx.job_templates.push(JobTemplateSpec {
        id: Some(9),
        inventory: Some("osac-inventory".into()),
        project: 8,
        playbook: "create-virtual-network.yml".into(),
        script: Some(JobScript::stuck_pending()),
        ..JobTemplateSpec::new("osac-create-virtual-network", "osac")
    });
    let mut no_ask = JobTemplateSpec::new("osac-no-ask-vars", "osac");
    no_ask.id = Some(10);
    no_ask.ask.variables = false;
    no_ask.inventory = Some("osac-inventory".into());
    no_ask.script = Some(JobScript::stuck_pending());
    fx.job_templates.push(no_ask);
    fx.workflow_job_templates.push(WorkflowJobTemplateSpec {
        id: Some(11),
        stuck_pending: true,
        nodes: vec![WorkflowNodeSpec {
            job_template: "osac-create-virtual-network".into(),
            identifier: Some("caa5e7b6-0efc-4d25-bec6-b4051ccc9a7d".into()),
            ..WorkflowNodeSpec::default()
        }],
        ..WorkflowJobTemplateSpec::new("osac-workflow", "osac", &[])
    });
    fx
}

/// Starts a server with `fixtures` and a manual clock.
pub async fn start(fixtures: Fixtures) -> (FakeAapServer, provkit_core::ManualClock) {
    let clock =
        provkit_core::ManualClock::new(chrono::DateTime::from_timestamp(1_795_000_000, 0).unwrap());
    let server = FakeAap::builder()
        .fixtures(fixtures)
        .clock(Arc::new(clock.clone()))
        .start()
        .await
        .unwrap();
    (server, clock)
}
