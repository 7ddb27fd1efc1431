//! The HTTP face of the server: routing a request to discovery or to a resource verb, query
//! parameters, faults, the request log, and the JSON answer.
//!
//! Routing is done by hand over the path segments because the resource paths are data (the
//! registered types), not a fixed route table.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use http::header::WARNING;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::apply::{self, ApplyRequest};
use super::discovery;
use super::faults::{Hit, RequestTarget, Verb};
use super::field_validation::{self, Directive, FieldChecks};
use super::inner::Inner;
use super::inspect::RequestRecord;
use super::openapi;
use super::patch::PatchKind;
use super::resource::ResourceType;
use super::selector::{FieldSelector, LabelSelector, labels_of};
use super::ssa::Recording;
use super::status::ApiStatus;
use super::store::{Deleted, Doc, ObjectKey, Writer};
use super::watch::{self, WatchSpec};
use crate::observe::{ObservedRequest, Phase, Verdict, verdict};

/// The header a [`FakeApiServer::client_named`](super::FakeApiServer::client_named) client
/// sends to name itself.
pub(crate) const CLIENT_HEADER: &str = "x-provkit-fake-client";

/// Largest request body accepted.
const BODY_LIMIT: usize = 16 * 1024 * 1024;

/// What a path addresses.
enum Route {
    Doc(Value),
    Resource {
        rt: Box<ResourceType>,
        namespace: Option<String>,
        name: Option<String>,
        sub: Option<String>,
    },
}

fn json_response(code: u16, body: &Value) -> Response<Body> {
    bytes_response(code, body.to_string().into())
}

/// An answer whose JSON body is already serialized.
fn bytes_response(code: u16, body: bytes::Bytes) -> Response<Body> {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn status_response(s: &ApiStatus) -> Response<Body> {
    let mut r = json_response(s.code, &s.body());
    if let Some(secs) = s.retry_after
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

fn parse_query(q: Option<&str>) -> HashMap<String, String> {
    q.map(|q| {
        url::form_urlencoded::parse(q.as_bytes())
            .into_owned()
            .collect()
    })
    .unwrap_or_default()
}

fn route(types: &[ResourceType], path: &str) -> Result<Route, ApiStatus> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let not_found = || ApiStatus::path_not_found(path);
    let (group, version, rest): (&str, &str, &[&str]) = match segs.as_slice() {
        ["version"] => return Ok(Route::Doc(discovery::version())),
        ["openapi", "v3"] => return Ok(Route::Doc(openapi::root(types))),
        ["openapi", "v3", "api", v] => {
            return openapi::document(types, "", v)
                .map(Route::Doc)
                .ok_or_else(not_found);
        }
        ["openapi", "v3", "apis", g, v] => {
            return openapi::document(types, g, v)
                .map(Route::Doc)
                .ok_or_else(not_found);
        }
        ["api"] => return Ok(Route::Doc(discovery::core_versions())),
        ["apis"] => return Ok(Route::Doc(discovery::group_list(types))),
        ["api", "v1"] => {
            return discovery::resource_list(types, "", "v1")
                .map(Route::Doc)
                .ok_or_else(not_found);
        }
        ["apis", g] => {
            return discovery::group(types, g)
                .map(Route::Doc)
                .ok_or_else(not_found);
        }
        ["apis", g, v] => {
            return discovery::resource_list(types, g, v)
                .map(Route::Doc)
                .ok_or_else(not_found);
        }
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (g, v, rest),
        _ => return Err(not_found()),
    };
    let find = |plural: &str| {
        types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, plural, tail @ ..] if find(plural).is_some_and(|t| t.namespaced) => {
            (Some((*ns).to_owned()), {
                let mut v = vec![*plural];
                v.extend_from_slice(tail);
                v
            })
        }
        other => (None, other.to_vec()),
    };
    let (plural, name, sub) = match rest.as_slice() {
        [p] => (*p, None, None),
        [p, n] => (*p, Some((*n).to_owned()), None),
        [p, n, s] => (*p, Some((*n).to_owned()), Some((*s).to_owned())),
        _ => return Err(not_found()),
    };
    let rt = find(plural).ok_or_else(not_found)?;
    if rt.namespaced && namespace.is_none() && name.is_some() {
        return Err(not_found());
    }
    if let Some(s) = &sub
        && !(s == "status" && rt.status_subresource)
    {
        return Err(not_found());
    }
    Ok(Route::Resource {
        rt: Box::new(rt.clone()),
        namespace,
        name,
        sub,
    })
}

fn verb_of(method: &Method, name: bool, query: &HashMap<String, String>) -> Option<Verb> {
    let watch = query.get("watch").is_some_and(|w| w == "true" || w == "1");
    match (method.as_str(), name) {
        ("GET", true) => Some(Verb::Get),
        ("GET", false) if watch => Some(Verb::Watch),
        ("GET", false) => Some(Verb::List),
        ("POST", false) => Some(Verb::Create),
        ("PUT", true) => Some(Verb::Update),
        ("PATCH", true) => Some(Verb::Patch),
        ("DELETE", true) => Some(Verb::Delete),
        _ => None,
    }
}

fn ua_prefix(parts: &http::request::Parts) -> Option<String> {
    parts
        .headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|ua| ua.split('/').next().unwrap_or_default().trim().to_owned())
        .filter(|p| !p.is_empty())
}

/// Answers one request.
pub(crate) async fn handle(inner: Arc<Inner>, req: Request<Body>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), |p| p.as_str().to_owned());
    let query = parse_query(parts.uri.query());
    let ua = ua_prefix(&parts);
    let client = parts
        .headers
        .get(CLIENT_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| ua.clone())
        .unwrap_or_else(|| "unknown".into());
    let manager = query
        .get("fieldManager")
        .cloned()
        .filter(|m| !m.is_empty())
        .or(ua)
        .unwrap_or_else(|| "unknown".into());
    let mut record = RequestRecord {
        client: client.clone(),
        verb: None,
        method: parts.method.to_string(),
        path: path_and_query,
        status: 200,
        field_manager: None,
    };
    let bytes = match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(b) => b,
        Err(e) => {
            return status_response(&ApiStatus::bad_request(format!(
                "reading the request body: {e}"
            )));
        }
    };
    let observer = inner.observer.get();
    let method = parts.method.to_string();
    let mut observed = ObservedRequest {
        method: &method,
        path: parts.uri.path(),
        query: parts.uri.query().unwrap_or(""),
        client: &client,
        body: &bytes,
        status: None,
    };
    if verdict(observer.as_ref(), &observed, Phase::Received) == Verdict::Abandon {
        return std::future::pending().await;
    }
    let routed = {
        let store = inner.lock_store();
        route(&store.types, parts.uri.path())
    };
    let response = match routed {
        Err(s) => status_response(&s),
        Ok(Route::Doc(doc)) => {
            if parts.method == Method::GET {
                json_response(200, &doc)
            } else {
                status_response(&ApiStatus::method_not_allowed())
            }
        }
        Ok(Route::Resource {
            rt,
            namespace,
            name,
            sub,
        }) => match verb_of(&parts.method, name.is_some(), &query) {
            None => status_response(&ApiStatus::method_not_allowed()),
            Some(verb) => {
                record.verb = Some(verb);
                if matches!(verb, Verb::Create | Verb::Update | Verb::Patch) {
                    record.field_manager = Some(manager.clone());
                }
                let target = RequestTarget {
                    verb,
                    resource: &rt.plural,
                    name: name.as_deref(),
                    subresource: sub.as_deref(),
                    client: &client,
                };
                let hit = inner.faults_for(&target);
                if !hit.latency.is_zero() {
                    tokio::time::sleep(hit.latency).await;
                }
                if let Some(refuse) = &hit.refuse {
                    status_response(refuse)
                } else {
                    let content_type = parts
                        .headers
                        .get(header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("application/json")
                        .to_owned();
                    let accept = parts
                        .headers
                        .get(header::ACCEPT)
                        .and_then(|v| v.to_str().ok());
                    let call = Call {
                        table: super::table::wants_table(accept),
                        rt: &rt,
                        namespace: namespace.as_deref(),
                        name: name.as_deref(),
                        sub: sub.as_deref(),
                        query: &query,
                        manager: &manager,
                        content_type: &content_type,
                        body: &bytes,
                        hit: &hit,
                    };
                    dispatch(&inner, verb, &call)
                }
            }
        },
    };
    record.status = response.status().as_u16();
    inner.log(record);
    observed.status = Some(response.status().as_u16());
    if verdict(observer.as_ref(), &observed, Phase::Handled) == Verdict::Abandon {
        return std::future::pending().await;
    }
    verdict(observer.as_ref(), &observed, Phase::Answered);
    response
}

/// One resource request, parsed.
struct Call<'a> {
    /// The client asked for a `meta.k8s.io/v1` Table (GET and list answer one).
    table: bool,
    rt: &'a ResourceType,
    namespace: Option<&'a str>,
    name: Option<&'a str>,
    sub: Option<&'a str>,
    query: &'a HashMap<String, String>,
    manager: &'a str,
    content_type: &'a str,
    body: &'a [u8],
    hit: &'a Hit,
}

fn parse_body(content_type: &str, body: &[u8]) -> Result<Value, ApiStatus> {
    let media = content_type.split(';').next().unwrap_or_default().trim();
    if !media.is_empty() && media != "application/json" && media != "*/*" {
        // Protobuf and CBOR bodies are not understood: 415, as a server without them answers.
        return Err(ApiStatus::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json (got {media})"
            ),
        ));
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiStatus::bad_request(format!("the request body is not JSON: {e}")))
}

fn dispatch(inner: &Arc<Inner>, verb: Verb, c: &Call<'_>) -> Response<Body> {
    if c.query.get("dryRun").is_some_and(|d| !d.is_empty()) {
        return status_response(&ApiStatus::bad_request(
            "dryRun is not supported by the provkit fake API server",
        ));
    }
    if c.hit.gone && verb != Verb::Watch {
        return status_response(&ApiStatus::gone("injected: resource version too old"));
    }
    let ns = c.namespace.unwrap_or("");
    let name = c.name.unwrap_or("");
    let result = match verb {
        Verb::Get => inner.lock_store().get(c.rt, ns, name).map(|o| (200, o)),
        Verb::List => {
            return list(inner, c).unwrap_or_else(|s| status_response(&s));
        }
        Verb::Watch => return watch(inner, c),
        Verb::Create | Verb::Update | Verb::Patch => {
            let (result, warnings) = write(inner, verb, c, ns, name);
            let mut response = match result {
                Ok((code, doc)) => bytes_response(code, doc.json().clone()),
                Err(s) => status_response(&s),
            };
            for w in warnings
                .iter()
                .filter_map(|w| field_validation::warning_header(w))
            {
                response.headers_mut().append(WARNING, w);
            }
            return response;
        }
        Verb::Delete => delete(inner, c, ns, name),
    };
    match result {
        Ok((200, doc)) if c.table && verb == Verb::Get => {
            let rv = doc.value()["metadata"]["resourceVersion"].clone();
            as_table(inner, c, &[doc], &json!({ "resourceVersion": rv }))
        }
        Ok((code, doc)) => bytes_response(code, doc.json().clone()),
        Err(s) => status_response(&s),
    }
}

/// A create, update or patch under the store's lock: the answer and the write's warnings.
fn write(
    inner: &Arc<Inner>,
    verb: Verb,
    c: &Call<'_>,
    ns: &str,
    name: &str,
) -> (Result<(u16, Doc), ApiStatus>, Vec<String>) {
    let options = match verb {
        Verb::Create => "CreateOptions",
        Verb::Update => "UpdateOptions",
        _ => "PatchOptions",
    };
    let directive = match Directive::from_query(c.query, options) {
        Ok(d) => d,
        Err(s) => return (Err(s), Vec::new()),
    };
    let apply = verb == Verb::Patch && apply::is_apply(c.content_type);
    let json_patch = verb == Verb::Patch
        && PatchKind::from_content_type(c.content_type) == Some(PatchKind::Json);
    let found: Vec<String> = if apply {
        Vec::new()
    } else if json_patch {
        field_validation::json_patch_problems(c.body)
    } else {
        field_validation::duplicates(c.body)
            .iter()
            .map(field_validation::Duplicate::json_text)
            .collect()
    };
    let writer = Writer {
        manager: c.manager,
        subresource: c.sub,
        recording: Recording::Update,
        checks: FieldChecks {
            directive,
            found: &found,
        },
    };
    let mut store = inner.lock_store();
    store.take_warnings();
    let result = match verb {
        Verb::Create => parse_body(c.content_type, c.body)
            .and_then(|b| store.create(c.rt, ns, b, writer))
            .map(|o| (201, o)),
        Verb::Update => parse_body(c.content_type, c.body)
            .and_then(|b| store.update(c.rt, ns, name, b, writer))
            .map(|o| (200, o)),
        _ if apply => apply::check_patch_options(c.query, true)
            .and_then(|()| apply::apply(&mut store, &apply_request(c, ns, name), directive)),
        _ => match PatchKind::from_content_type(c.content_type) {
            _ if let Err(s) = apply::check_patch_options(c.query, false) => Err(s),
            None => Err(ApiStatus::unsupported_media(c.content_type)),
            Some(kind) => store
                .patch(c.rt, ns, name, kind, c.body, writer)
                .map(|o| (200, o)),
        },
    };
    let warnings = store.take_warnings();
    (result, warnings)
}

fn apply_request<'a>(c: &'a Call<'_>, ns: &'a str, name: &'a str) -> ApplyRequest<'a> {
    ApplyRequest {
        rt: c.rt,
        namespace: ns,
        name,
        subresource: c.sub,
        manager: c.query.get("fieldManager").map_or("", String::as_str),
        force: c
            .query
            .get("force")
            .is_some_and(|f| f == "true" || f == "1"),
        body: c.body,
    }
}

fn delete(inner: &Arc<Inner>, c: &Call<'_>, ns: &str, name: &str) -> Result<(u16, Doc), ApiStatus> {
    let opts = if c.body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        parse_body(c.content_type, c.body)?
    };
    let policy = opts
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .or(c.query.get("propagationPolicy").map(String::as_str));
    if let Some(p) = policy
        && !matches!(p, "Orphan" | "Background" | "Foreground")
    {
        return Err(ApiStatus::bad_request(format!(
            "unsupported propagationPolicy {p:?}: Orphan, Background or Foreground"
        )));
    }
    let pre_uid = opts.pointer("/preconditions/uid").and_then(Value::as_str);
    let pre_rv = opts
        .pointer("/preconditions/resourceVersion")
        .and_then(Value::as_str);
    match inner.lock_store().delete(c.rt, ns, name, pre_uid, pre_rv)? {
        Deleted::Gone(status) => Ok((200, Doc::new(&status))),
        Deleted::Pending(object) => Ok((200, object)),
    }
}

fn selectors(c: &Call<'_>) -> Result<(LabelSelector, FieldSelector), ApiStatus> {
    let labels = LabelSelector::parse(c.query.get("labelSelector").map_or("", String::as_str))
        .map_err(|e| ApiStatus::bad_request(format!("unable to parse requirement: {e}")))?;
    let fields = FieldSelector::parse(c.query.get("fieldSelector").map_or("", String::as_str))
        .map_err(ApiStatus::bad_request)?;
    Ok((labels, fields))
}

/// A list (page). Under the store's lock it only selects the page (reference counts); the
/// answer is serialized after the lock is released.
fn list(inner: &Arc<Inner>, c: &Call<'_>) -> Result<Response<Body>, ApiStatus> {
    let (labels, fields) = selectors(c)?;
    let limit = c
        .query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let (page, rv) = {
        let store = inner.lock_store();
        // `continue` is `<rv>/<namespace>/<name>`: the list's snapshot and the last item served
        // (opaque to clients). Every page is served from the first page's snapshot.
        let (after, snapshot): (Option<ObjectKey>, u64) = match c
            .query
            .get("continue")
            .filter(|t| !t.is_empty())
        {
            None => (None, store.resource_version()),
            Some(token) => {
                let mut it = token.splitn(3, '/');
                let rv = it.next().and_then(|r| r.parse::<u64>().ok());
                let (Some(rv), Some(ns), Some(name)) = (rv, it.next(), it.next()) else {
                    return Err(ApiStatus::bad_request("invalid continue token"));
                };
                if rv < store.compacted(&c.rt.key()) {
                    return Err(ApiStatus::gone(
                        "The provided continue parameter is too old to display a consistent list result. \
                         You can start a new list without the continue parameter.",
                    ));
                }
                (Some((ns.to_owned(), name.to_owned())), rv)
            }
        };
        let selective = !(labels.is_empty() && fields.is_empty());
        let page = store.page(c.rt, c.namespace, after.as_ref(), limit, snapshot, |d| {
            !selective || {
                let o = d.value();
                fields.matches(&o) && labels.matches(&labels_of(&o))
            }
        });
        (page, snapshot)
    };
    let mut list_meta = json!({"resourceVersion": rv.to_string()});
    if page.remaining > 0
        && let Some((ns, name)) = page.last
    {
        list_meta["continue"] = json!(format!("{rv}/{ns}/{name}"));
        list_meta["remainingItemCount"] = json!(page.remaining);
    }
    if c.table {
        return Ok(as_table(inner, c, &page.items, &list_meta));
    }
    let body = json!({
        "apiVersion": c.rt.api_version(),
        "kind": format!("{}List", c.rt.kind),
        "metadata": list_meta,
    });
    let mut out = body.to_string().into_bytes();
    // `{…}` → `{…,"items":[…]}`: the items are the stored texts, copied as they are.
    out.pop();
    out.extend_from_slice(b",\"items\":[");
    for (i, item) in page.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item.json());
    }
    out.extend_from_slice(b"]}");
    Ok(bytes_response(200, out.into()))
}

fn watch(inner: &Arc<Inner>, c: &Call<'_>) -> Response<Body> {
    let (labels, fields) = match selectors(c) {
        Ok(s) => s,
        Err(s) => return status_response(&s),
    };
    let (key, api_version, kind) = watch::spec_base(c.rt);
    let spec = WatchSpec {
        key,
        api_version,
        kind,
        namespace: c.namespace.map(str::to_owned),
        labels,
        fields,
        bookmarks: c
            .query
            .get("allowWatchBookmarks")
            .is_some_and(|b| b == "true" || b == "1"),
        bookmark_interval: inner.bookmark_interval,
        timeout: c
            .query
            .get("timeoutSeconds")
            .and_then(|t| t.parse::<u64>().ok())
            .map(Duration::from_secs),
        lag: c.hit.lag,
        drop_after: c.hit.drop_after,
    };
    let requested = c
        .query
        .get("resourceVersion")
        .filter(|r| !r.is_empty() && r.as_str() != "0")
        .map(|r| r.parse::<u64>());
    let (tx, rx_body) = mpsc::channel(64);
    let response_body = Body::from_stream(futures::stream::unfold(rx_body, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }));
    let mut response = Response::new(response_body);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let store = inner.lock_store();
    let gone = |msg: &str| {
        let line = watch::gone_line(msg);
        let tx = tx.clone();
        tokio::spawn(async move {
            let _ = tx.send(Ok(line)).await;
        });
    };
    if c.hit.gone {
        gone("injected: too old resource version");
        return response;
    }
    match requested {
        Some(Err(_)) => {
            drop(store);
            return status_response(&ApiStatus::bad_request("invalid resourceVersion"));
        }
        Some(Ok(rv)) => match store.watch_from(&spec.key, rv) {
            None => gone(&format!(
                "too old resource version: {rv} ({})",
                store.compacted(&spec.key) + 1
            )),
            Some((replay, rx)) => {
                let start = rv;
                tokio::spawn(watch::pump(spec, Vec::new(), replay, rx, start, tx));
            }
        },
        None => {
            let initial = watch::initial_events(&spec, store.list(c.rt, c.namespace));
            let rx = store.subscribe();
            let start = store.resource_version();
            tokio::spawn(watch::pump(spec, initial, Vec::new(), rx, start, tx));
        }
    }
    response
}

/// The Table answer for `docs` ([`super::table`]).
fn as_table(inner: &Arc<Inner>, c: &Call<'_>, docs: &[Doc], list_meta: &Value) -> Response<Body> {
    let now = inner.lock_store().clock.now();
    let objects: Vec<Value> = docs.iter().map(Doc::value).collect();
    let include = c.query.get("includeObject").map(String::as_str);
    json_response(
        200,
        &super::table::table(c.rt, &objects, list_meta, include, now),
    )
}
