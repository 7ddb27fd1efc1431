//! A stateful, in-memory fake Kubernetes API server (feature `kube`), so an operator's real
//! reconcile — kube-runtime's `Controller`, its watcher and reflector, the finalizer helper,
//! Event recorders, provkit-kube's `Provisioner` — runs in a test without a cluster.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), kube::Error> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//! use provkit_testing::fake_apiserver::FakeApiServer;
//!
//! let server = FakeApiServer::builder().build();
//! let cms: Api<ConfigMap> = Api::default_namespaced(server.client());
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! let created = cms.create(&PostParams::default(), &cm).await?;
//! assert_eq!(created.metadata.resource_version.as_deref(), Some(&*server.resource_version().to_string()));
//! assert!(created.metadata.uid.is_some());
//! # Ok(()) }
//! ```
//!
//! Use it in-process ([`FakeApiServer::client`], a `kube::Client` over a tower service, no
//! socket), over loopback HTTP ([`FakeApiServer::serve`], with a `kube::Config` and a
//! kubeconfig for `kubectl`), or as the `fake-apiserver` binary.
//!
//! # What it emulates
//! Each rule is taken from the Kubernetes documentation (API concepts, API conventions,
//! custom resources, server-side apply) and covered by a test in `tests/fake_apiserver*.rs` or
//! `tests/kubectl.rs` that names the rule.
//! - **Types**: Namespace, ConfigMap, Secret, core and `events.k8s.io` Event,
//!   `coordination.k8s.io` Lease; custom resources from a CRD (scope, served versions,
//!   `subresources.status`, `openAPIV3Schema`). Discovery documents for kube's `Discovery`
//!   and kubectl.
//! - **Metadata**: `uid`, one store-wide `resourceVersion`, `generation` (custom resources: 1
//!   on create, bumped by changes outside `metadata` and, with the status subresource, outside
//!   `status`; bumped when deletion starts), `creationTimestamp`, `deletionTimestamp`,
//!   `generateName`. Client values for these are ignored.
//! - **Field management** (`managedFields`) as the server-side apply reference describes it:
//!   entries per manager (the `fieldManager` parameter, else the User-Agent before `/`, else
//!   `unknown`), operation (`Update` for create, replace and merge or JSON patch; `Apply`) and
//!   subresource, with real `fieldsV1` sets; a write takes the fields it changes from every
//!   other manager; a request's own `managedFields` replace the stored ones (`[{}]` clears
//!   them); at most 10 `Update` entries (older ones merge into `ancient-changes`).
//! - **Server-side apply** (`application/apply-patch+yaml`, JSON or YAML) on every type, main
//!   resource and `/status`: `fieldManager` required, creation by apply (201), merge by the
//!   CRD schema's `x-kubernetes-list-type` (`atomic` by default, `set`, `map` with
//!   `x-kubernetes-list-map-keys`) and `x-kubernetes-map-type`, fields no longer applied
//!   removed unless another manager owns them, 409 `Conflict` with `FieldManagerConflict`
//!   causes unless `force=true`, 500 `failed to create typed patch object` for fields the
//!   schema does not declare. Built-in kinds have no schema here: their top-level fields are
//!   structs (`data`, `binaryData`, `stringData` maps), deeper objects granular maps and lists
//!   atomic, and any field is accepted.
//! - **Verbs**: get; list with `labelSelector`, `fieldSelector` (`metadata.name`,
//!   `metadata.namespace`), `limit`/`continue` (every page served from the first page's
//!   snapshot and carrying its `resourceVersion`, as etcd serves them, while the retained
//!   history reaches back that far; 410 after); watch with `resourceVersion`,
//!   `allowWatchBookmarks`, `timeoutSeconds`, 410 `Expired` past the retained window; create
//!   (409 `AlreadyExists`); replace (409 `Conflict` on a stale `resourceVersion`); JSON merge
//!   patch; JSON patch (with the API server's `test`-against-missing-as-null rule); apply
//!   patch; strategic merge patch answers 415; delete with `uid`/`resourceVersion`
//!   preconditions.
//! - **Status subresource**, **finalizers** and **pruning** (unknown fields of the CRD schema
//!   and of `ObjectMeta`) as on a real server, errors as `metav1.Status` bodies.
//! - **Validation** of custom resources against the CRD schema, every failure one
//!   `details.causes` entry of a 422 `Invalid` in the server's words: `type`,
//!   `x-kubernetes-int-or-string`, `nullable`, `required`, `enum`, `pattern`, the formats the
//!   `JSONSchemaProps` reference lists (`ipv4`, `cidr`, `hostname`, `uuid`, `date-time`, …),
//!   `minimum`/`maximum` (exclusive too), `multipleOf`, string, list and map lengths,
//!   `uniqueItems`, `x-kubernetes-list-type` `set`/`map` uniqueness, `allOf`/`anyOf`/`oneOf`/
//!   `not`, and CEL `x-kubernetes-validations` (`message`, `messageExpression`, `reason`,
//!   `fieldPath`, `oldSelf` transition rules; skipped, with the server's cause, when the
//!   object fails a shape check); unchanged values are not checked again on update
//!   (validation ratcheting).
//! - **Defaulting** from the schema's `default`s on create, update, patch and apply, and for
//!   stored objects when a CRD with new defaults is registered.
//! - **`fieldValidation`** (`Ignore`, `Warn` — the default — with `Warning` headers, `Strict`
//!   with the server's 400) for unknown and duplicate fields, JSON patch operations and apply
//!   bodies; the warning for finalizer names without a domain.
//! - **OpenAPI v3** documents (`/openapi/v3`, per group-version) generated from the served
//!   types, so `kubectl apply` validates on the server and `kubectl explain` works.
//! - **Table output** for `kubectl get` (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`):
//!   a GET or list of a custom resource answers a `meta.k8s.io/v1` Table with `Name` and the CRD
//!   version's `additionalPrinterColumns` (JSONPath cells typed as the column says; `Age` when the
//!   CRD declares none).
//! - **Faults** ([`Fault`]) per verb, resource, name and client; **inspection** of objects,
//!   requests, counters, Events, Lease holders and the store's memory footprint
//!   ([`FakeApiServer::footprint`]); a **request observer**
//!   ([`FakeApiServer::observe`], [`crate::observe`]) that sees each request when received,
//!   handled and answered and may abandon it (crash-point tests).
//!
//! # Cost
//! Each object version is kept once, as the JSON text it is served as, and shared by the store,
//! the retained change history and every watch: a GET, a list page or a watch event copies
//! bytes, a write parses the stored version and compares it with the new one for
//! `managedFields`, and the store's lock is held for the lookup only.
//! A 10,000-object fleet (with 60,000 Events) holds about its JSON size.
//!
//! # What it does not emulate
//! Strategic merge patch (415, which a real server answers for custom resources only),
//! `deletecollection`, `dryRun` (refused with 400), admission webhooks, RBAC and
//! authentication, CRD conversion between versions (every served version shares one stored
//! form), the schemas of the built-in kinds (their fields outside `metadata` are neither
//! pruned nor validated, and server-side apply treats what lies below their top-level fields
//! as untyped), validation
//! of `metadata` values (name and label syntax), Kubernetes' own CEL libraries (`quantity`,
//! `url`, `ip`, `cidr`, `isSorted`, regex `find`, …; a rule calling them fails as a runtime
//! error), CEL cost limits and `optionalOldSelf`, garbage collection of owner references and
//! namespace content, Table output of built-in types beyond `Name` and `Age` and of watches, exact-
//! `resourceVersion` reads of the past (a list without `continue` answers the current state),
//! OpenAPI v2, aggregated discovery, protobuf and CBOR bodies, and the legacy `/watch/`
//! paths.
//!
//! Where the documentation does not say, the fake follows a reading of the server's code and
//! says so here: a server-side apply to `/status` owns only what its strategy keeps (the
//! fake ignores `spec`, as the server's reset fields do, and drops `metadata` changes, as the
//! status strategy does); the causes of one 422 come in field-name order, an object's own
//! checks (`required`, …) before its fields' (the server's order can vary between the fields
//! of one object); a failed typed conversion of an apply
//! configuration answers 500 with an empty reason, as an untyped server error does.

mod apply;
mod discovery;
mod doc;
mod faults;
mod field_validation;
mod http;
mod inner;
mod inspect;
mod meta;
mod openapi;
mod patch;
mod prune;
mod resource;
mod selector;
mod serve;
mod server;
mod ssa;
mod status;
mod store;
mod table;
mod validation;
mod watch;

pub use faults::{Fault, FaultEffect, FaultId, Verb};
pub use inspect::{RequestRecord, StoreFootprint, TypeFootprint};
pub use resource::CrdError;
pub use serve::ServeHandle;
pub use server::{FakeApiServer, FakeApiServerBuilder, FakeApiService};
