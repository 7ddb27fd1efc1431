//! The kube-free view of the resource a provider works on.

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::Value;

/// Renders a view's JSON on first use (see [`ResourceView::lazy`]).
type Render = dyn Fn() -> Result<Value, serde_json::Error> + Send + Sync;

/// The identity of the object a [`ResourceView`] describes, given by name so that swapping two of
/// its strings cannot compile silently.
///
/// ```
/// use provkit_lifecycle::ResourceMeta;
///
/// let meta = ResourceMeta {
///     kind: "VirtualNetwork".into(),
///     name: "net-a".into(),
///     namespace: Some("tenant-1".into()),
///     uid: "8c7f0e4e-0000-4000-8000-000000000001".into(),
///     ..ResourceMeta::default()
/// };
/// assert_eq!(meta.api_version, "");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ResourceMeta {
    /// The object's kind, for example `"VirtualNetwork"` (may be empty when unknown).
    pub kind: String,
    /// The object's `apiVersion`, for example `"osac.openshift.io/v1alpha1"` (may be empty).
    pub api_version: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// `metadata.uid`. The engine derives idempotency keys from it, so it should be non-empty.
    pub uid: String,
}

/// The resource a [`ProvisioningProvider`](crate::ProvisioningProvider) receives: its identity and its
/// full JSON serialisation, independent of any Kubernetes client library.
///
/// The JSON is what a provider sends to its backend (the AAP provider's `extra_vars`). Most
/// reconciles never need it (they skip, poll or back off), so a view can carry a *recipe* instead of
/// the tree: [`ResourceView::lazy`] and [`ResourceView::from_shared`] serialise on the first call to
/// [`ResourceView::json`] and never again (clones share the result). [`ResourceView::new`] takes a
/// ready tree. Every constructor takes the identity as a [`ResourceMeta`].
///
/// provkit-kube builds one from any `kube::Resource + Serialize`; tests and non-kube callers use
/// [`ResourceView::new`], [`ResourceView::from_serialize`], [`ResourceView::from_shared`] or
/// [`ResourceView::lazy`].
///
/// ```
/// use provkit_lifecycle::{ResourceMeta, ResourceView};
/// use serde_json::json;
///
/// let r = ResourceView::new(
///     ResourceMeta {
///         kind: "VirtualNetwork".into(),
///         api_version: "osac.openshift.io/v1alpha1".into(),
///         name: "net-a".into(),
///         namespace: Some("tenant-1".into()),
///         uid: "8c7f0e4e-0000-4000-8000-000000000001".into(),
///     },
///     json!({"kind": "VirtualNetwork", "metadata": {"name": "net-a"}, "spec": {}}),
/// );
/// assert_eq!(r.kind, "VirtualNetwork");
/// assert_eq!(r.json()?["metadata"]["name"], "net-a");
/// # Ok::<(), provkit_lifecycle::ViewError>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ResourceView {
    /// The object's kind, for example `"VirtualNetwork"` (may be empty when unknown).
    pub kind: String,
    /// The object's `apiVersion`, for example `"osac.openshift.io/v1alpha1"` (may be empty).
    pub api_version: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// `metadata.uid`. The engine derives idempotency keys from it, so it should be non-empty.
    pub uid: String,
    /// The whole object as JSON, or the error of rendering it; shared by clones.
    json: Arc<OnceLock<Result<Value, String>>>,
    /// Renders `json` on first use (`None`: it was given ready).
    render: Option<Arc<Render>>,
}

/// The resource's JSON could not be rendered (the object does not serialise, for example a map
/// with non-string keys). A provider that needs the JSON reports it as a launch that was not made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot serialise {kind} {name} to JSON: {message}")]
#[non_exhaustive]
pub struct ViewError {
    /// The view's kind.
    pub kind: String,
    /// The view's name.
    pub name: String,
    /// The serialiser's message.
    pub message: String,
}

impl ResourceView {
    fn with_json(
        meta: ResourceMeta,
        json: OnceLock<Result<Value, String>>,
        render: Option<Arc<Render>>,
    ) -> Self {
        let ResourceMeta {
            kind,
            api_version,
            name,
            namespace,
            uid,
        } = meta;
        Self {
            kind,
            api_version,
            name,
            namespace,
            uid,
            json: Arc::new(json),
            render,
        }
    }

    /// Builds a view from its identity, with the JSON ready.
    pub fn new(meta: ResourceMeta, json: Value) -> Self {
        Self::with_json(meta, OnceLock::from(Ok(json)), None)
    }

    /// Builds a view by serialising `object` to JSON now.
    ///
    /// # Errors
    /// The serialisation error of `serde_json`.
    pub fn from_serialize<T: Serialize + ?Sized>(
        meta: ResourceMeta,
        object: &T,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self::new(meta, serde_json::to_value(object)?))
    }

    /// Builds a view whose JSON is `render()`, called on the first [`json`](Self::json) call only.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use provkit_lifecycle::{ResourceMeta, ResourceView};
    ///
    /// let calls = Arc::new(AtomicUsize::new(0));
    /// let counted = calls.clone();
    /// let meta = ResourceMeta { kind: "Subnet".into(), name: "s".into(), uid: "uid-1".into(), ..Default::default() };
    /// let view = ResourceView::lazy(meta, move || {
    ///     counted.fetch_add(1, Ordering::Relaxed);
    ///     Ok(serde_json::json!({"spec": {"cidr": "10.0.0.0/24"}}))
    /// });
    /// let copy = view.clone();
    /// assert_eq!(calls.load(Ordering::Relaxed), 0, "nothing rendered yet");
    /// assert_eq!(view.json()?["spec"]["cidr"], "10.0.0.0/24");
    /// assert_eq!(copy.json()?["spec"]["cidr"], "10.0.0.0/24");
    /// assert_eq!(calls.load(Ordering::Relaxed), 1, "rendered once, shared by clones");
    /// # Ok::<(), provkit_lifecycle::ViewError>(())
    /// ```
    pub fn lazy(
        meta: ResourceMeta,
        render: impl Fn() -> Result<Value, serde_json::Error> + Send + Sync + 'static,
    ) -> Self {
        Self::with_json(meta, OnceLock::new(), Some(Arc::new(render)))
    }

    /// Builds a view over a shared object (for example the `Arc<K>` a kube-runtime reconciler
    /// receives), serialised on first use only.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use provkit_lifecycle::{ResourceMeta, ResourceView};
    ///
    /// #[derive(serde::Serialize)]
    /// struct Subnet { spec: std::collections::BTreeMap<String, String> }
    ///
    /// let object = Arc::new(Subnet { spec: [("cidr".to_owned(), "10.0.0.0/24".to_owned())].into() });
    /// let meta = ResourceMeta { kind: "Subnet".into(), name: "s".into(), uid: "uid-1".into(), ..Default::default() };
    /// let view = ResourceView::from_shared(meta, object);
    /// assert_eq!(view.json()?["spec"]["cidr"], "10.0.0.0/24");
    /// # Ok::<(), provkit_lifecycle::ViewError>(())
    /// ```
    pub fn from_shared<T: Serialize + Send + Sync + 'static>(
        meta: ResourceMeta,
        object: Arc<T>,
    ) -> Self {
        Self::lazy(meta, move || serde_json::to_value(&*object))
    }

    /// The view's identity.
    pub fn meta(&self) -> ResourceMeta {
        ResourceMeta {
            kind: self.kind.clone(),
            api_version: self.api_version.clone(),
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            uid: self.uid.clone(),
        }
    }

    /// Sets the `apiVersion`.
    #[must_use]
    pub fn with_api_version(mut self, api_version: impl Into<String>) -> Self {
        self.api_version = api_version.into();
        self
    }

    /// The whole object as JSON (metadata, spec and in-memory status), rendered on the first call
    /// for a lazy view.
    ///
    /// # Errors
    /// [`ViewError`] when the object does not serialise (the same error on every call).
    pub fn json(&self) -> Result<&Value, ViewError> {
        let rendered = self.json.get_or_init(|| match &self.render {
            Some(render) => render().map_err(|e| e.to_string()),
            None => Ok(Value::Null),
        });
        rendered.as_ref().map_err(|message| ViewError {
            kind: self.kind.clone(),
            name: self.name.clone(),
            message: message.clone(),
        })
    }

    /// Whether the JSON has been rendered (always true for a view built with the JSON ready).
    pub fn is_rendered(&self) -> bool {
        self.json.get().is_some()
    }

    /// `namespace/name`, or `name` for cluster-scoped objects (for logs).
    pub fn display_name(&self) -> String {
        match &self.namespace {
            Some(ns) if !ns.is_empty() => format!("{ns}/{}", self.name),
            _ => self.name.clone(),
        }
    }
}

impl fmt::Debug for ResourceView {
    /// Shows the JSON only when it has been rendered (formatting never renders it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ResourceView");
        d.field("kind", &self.kind)
            .field("api_version", &self.api_version)
            .field("name", &self.name)
            .field("namespace", &self.namespace)
            .field("uid", &self.uid);
        match self.json.get() {
            Some(Ok(json)) => d.field("json", json),
            Some(Err(e)) => d.field("json_error", e),
            None => d.field("json", &format_args!("<not rendered>")),
        };
        d.finish()
    }
}

impl PartialEq for ResourceView {
    /// Identity fields and the JSON (rendering both sides if needed; two views whose rendering
    /// failed with the same message are equal).
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.api_version == other.api_version
            && self.name == other.name
            && self.namespace == other.namespace
            && self.uid == other.uid
            && self.json() == other.json()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::collections::HashMap;

    fn meta() -> ResourceMeta {
        ResourceMeta {
            kind: "Subnet".into(),
            name: "s".into(),
            uid: "u".into(),
            ..ResourceMeta::default()
        }
    }

    #[test]
    fn a_lazy_view_that_fails_to_render_reports_the_same_error_every_time() {
        // A map with non-string keys does not serialise to JSON.
        let bad = Arc::new(HashMap::from([((1u8, 2u8), "x")]));
        let view = ResourceView::from_shared(meta(), bad);
        let first = view.json().unwrap_err();
        assert_eq!(first, view.json().unwrap_err());
        assert!(
            first
                .to_string()
                .starts_with("cannot serialise Subnet s to JSON: ")
        );
        assert!(view.is_rendered());
        assert!(format!("{view:?}").contains("json_error"));
    }

    #[test]
    fn debug_never_renders_and_equality_compares_the_json() {
        let a = ResourceView::lazy(meta(), || Ok(serde_json::json!({"a": 1})));
        assert!(format!("{a:?}").contains("<not rendered>"));
        assert!(!a.is_rendered());
        let b = ResourceView::new(meta(), serde_json::json!({"a": 1}));
        assert_eq!(a, b);
        assert!(a.is_rendered());
        let c = ResourceView::new(meta(), serde_json::json!({"a": 2}));
        assert_ne!(b, c);
    }
}
