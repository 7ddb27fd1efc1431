//! A small custom resource with a status subresource, shared by the tests.

use kube::CustomResource;
use provkit_testing::fake_apiserver::{FakeApiServer, FakeApiServerBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `Widget`: namespaced, status subresource, a required field.
#[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[kube(
    group = "test.provkit.dev",
    version = "v1",
    kind = "Widget",
    namespaced
)]
#[kube(status = "WidgetStatus")]
pub(crate) struct WidgetSpec {
    pub(crate) size: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) color: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
pub(crate) struct WidgetStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) phase: Option<String>,
}

pub(crate) fn builder() -> FakeApiServerBuilder {
    FakeApiServer::builder().crd::<Widget>()
}

pub(crate) fn server() -> FakeApiServer {
    builder().build()
}

pub(crate) fn widget(name: &str, size: i64) -> Widget {
    Widget::new(name, WidgetSpec { size, color: None })
}

/// The API error of a kube call, or a panic naming what came instead.
pub(crate) fn api_err<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> Box<kube::core::Status> {
    match r {
        Err(kube::Error::Api(s)) => s,
        other => panic!("expected kube::Error::Api, got {other:?}"),
    }
}
