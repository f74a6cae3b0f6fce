//! A request on a resource path (`/api/v1/namespaces/default/pods/web`):
//! the scope and subresource checks, the requests answered beside storage
//! (component statuses, reviews, bindings, proxies and the Pod streams),
//! then one handler per verb, each reading its options and body and calling
//! the operation of `api/` that does the work.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Method;
use axum::response::Response;
use serde_json::{Value, json};

use super::{
    Call, check_verb, component_statuses, finalize_namespace, legacy_binding, list_response,
    object_body_format, read_body, respond, review, subresource_verb, transform_object, watch,
    write_ctx, written,
};
use crate::api;
use crate::app::App;
use crate::error::{ApiError, ApiResult};
use crate::patch::PatchType;
use crate::registry::Resource;
use crate::request::body;
use crate::request::negotiate::Endpoint;
use crate::request::path::ResourcePath;
use crate::request::query::{self, Query};

/// What every verb handler reads of the request besides its body.
struct Target<'a> {
    call: &'a Call<'a>,
    path: &'a ResourcePath,
    query: &'a Query,
    res: Arc<Resource>,
    /// The namespace, empty for cluster-scoped resources and all-namespace
    /// collections.
    ns: String,
    /// How the answer's shape is negotiated.
    endpoint: Endpoint,
    content_type: Option<String>,
}

impl Target<'_> {
    fn sub(&self) -> Option<&str> {
        self.path.subresource.as_deref()
    }
}

pub(super) async fn resource(
    app: &Arc<App>,
    call: &Call<'_>,
    body: Body,
    p: &ResourcePath,
    res: Arc<Resource>,
    q: &Query,
) -> ApiResult<Response> {
    check_path(&res, p, call.method)?;
    let sub = p.subresource.as_deref();
    let ns = p.namespace.clone().unwrap_or_default();
    // Answered beside storage.
    if crate::component_statuses::is_component_statuses(&res.group, &res.plural) {
        return component_statuses::serve(app, call, (p, q), &res);
    }
    if api::access_reviews::is_review(&res) || sub == Some("token") {
        return review(app, call, body, (p, q), &res, &ns).await;
    }
    if res.group.is_empty() && res.plural == "bindings" {
        return legacy_binding(app, call, body, (p, q), &ns).await;
    }
    if let (Some("proxy"), Some(name)) = (sub, &p.name) {
        return Err(crate::pod_streams::proxy(app, &res, &ns, name));
    }
    if let (Some(stream @ ("log" | "exec" | "attach" | "portforward")), Some(name)) = (sub, &p.name)
    {
        return pod_stream(app, call, &res, (&ns, name), stream, q);
    }
    let target = Target {
        call,
        path: p,
        query: q,
        endpoint: if res.is_custom() {
            Endpoint::CustomResource
        } else {
            Endpoint::Resource
        },
        content_type: crate::request::media_type::header(call.headers).map(|c| c.into_owned()),
        res,
        ns,
    };
    match (call.method.clone(), p.name.clone()) {
        (Method::GET, None) => list_or_watch(app, &target).await,
        (Method::GET, Some(name)) => get(app, &target, &name).await,
        (Method::POST, Some(name)) if matches!(sub, Some("binding" | "eviction")) => {
            bind_or_evict(app, &target, body, &name).await
        }
        (Method::POST, None) => create(app, &target, body).await,
        (Method::PUT, Some(name)) => replace(app, &target, body, &name).await,
        (Method::PATCH, Some(name)) => patch(app, &target, body, &name).await,
        (Method::DELETE, name) => delete(app, &target, body, name).await,
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// The scope and subresource checks kube-apiserver's routes make: a
/// namespaced resource needs a namespace to name an object, a
/// cluster-scoped one never has one, and a subresource answers only its
/// own verbs.
fn check_path(res: &Resource, p: &ResourcePath, method: &Method) -> ApiResult<()> {
    if res.namespaced {
        if p.namespace.is_none() && p.name.is_some() {
            return Err(ApiError::not_found_path());
        }
        // The all-namespaces collection only lists and watches.
        if p.namespace.is_none() && method != Method::GET {
            return Err(ApiError::method_not_allowed());
        }
    } else if p.namespace.is_some() {
        return Err(ApiError::not_found_path());
    }
    if let Some(s) = p.subresource.as_deref() {
        let Some(verbs) = res.subresource_verbs(s) else {
            return Err(ApiError::not_found_path());
        };
        // A GET of pods/x/eviction finds no route: 405.
        if p.name.is_some() && !verbs.contains(&subresource_verb(method)) {
            return Err(ApiError::method_not_allowed());
        }
    }
    Ok(())
}

/// `pods/<name>/log`, `exec`, `attach` and `portforward`: what the Pod's
/// kubelet would answer (`crate::pod_streams`).
fn pod_stream(
    app: &App,
    call: &Call<'_>,
    res: &Resource,
    (ns, name): (&str, &str),
    stream: &str,
    q: &Query,
) -> ApiResult<Response> {
    let pod = api::read::get(app, res, ns, name)?;
    let container = q.get("container");
    let node = crate::pod_streams::node_of(&pod, |node| {
        app.store
            .get(&Arc::from("nodes"), "", node)
            .is_some_and(|n| crate::workloads::simulated_nodes::is_simulated(&n))
    });
    match stream {
        "exec" | "attach" => {
            return Err(crate::pod_streams::stream(
                &pod, name, container, node, stream,
            ));
        }
        "portforward" => return Err(crate::pod_streams::port_forward(name, node)),
        _ => {}
    }
    if *call.method != Method::GET {
        return Err(ApiError::method_not_allowed());
    }
    let opts = crate::pod_streams::LogOptions::parse(|k| q.get(k))?;
    let text = crate::pod_streams::log(&pod, name, &opts, node)?;
    Ok(respond::bytes(200, text.into_bytes(), "text/plain"))
}

/// GET of a collection: a list, or a watch (`?watch=true`, `/watch/`).
async fn list_or_watch(app: &Arc<App>, t: &Target<'_>) -> ApiResult<Response> {
    let opts = query::list_options(t.query, t.path.watch_prefix)?;
    let ns = t.path.namespace.as_deref();
    if opts.watch {
        check_verb(&t.res, "watch")?;
        let acc = t.call.negotiate(t.endpoint)?;
        let ns = ns.map(str::to_string);
        return watch(app, t.res.clone(), ns, None, opts, acc, t.query).await;
    }
    check_verb(&t.res, "list")?;
    let acc = t.call.negotiate(t.endpoint)?;
    let page = api::read::list(app, &t.res, ns, &opts).await?;
    list_response(&t.res, &page, &acc, t.query)
}

/// GET of one object (or its Scale), or a watch of it.
async fn get(app: &Arc<App>, t: &Target<'_>, name: &str) -> ApiResult<Response> {
    let (res, q) = (&t.res, t.query);
    if t.path.watch_prefix || q.flag("watch").unwrap_or(false) {
        check_verb(res, "watch")?;
        let opts = query::list_options(q, true)?;
        let acc = t.call.negotiate(t.endpoint)?;
        let ns = t.path.namespace.clone();
        return watch(app, res.clone(), ns, Some(name.to_string()), opts, acc, q).await;
    }
    check_verb(res, "get")?;
    let acc = t.call.negotiate(t.endpoint)?;
    if t.sub() == Some("scale") {
        let scale = api::scale::get(app, res, &t.ns, name)?;
        let body = crate::table::object_metadata(res, &scale, &acc.shape)
            .transpose()?
            .unwrap_or(scale);
        return Ok(respond::object(200, &body, &acc, &[]));
    }
    let obj = api::read::get_at(app, res, &t.ns, name, q.get("resourceVersion")).await?;
    let obj = crate::conversion::for_read(app, res, obj).await?;
    let body = transform_object(res, &obj, &acc, q)?;
    Ok(respond::object(200, &body, &acc, &[]))
}

/// POST of `pods/<name>/binding` or `pods/<name>/eviction`.
async fn bind_or_evict(
    app: &Arc<App>,
    t: &Target<'_>,
    body: Body,
    name: &str,
) -> ApiResult<Response> {
    let acc = t.call.negotiate(Endpoint::Plain)?;
    let bytes = read_body(body).await?;
    let opts = query::write_options(t.query, "CreateOptions", false)?;
    let format = body::body_format(t.content_type.as_deref())?;
    let binding = t.sub() == Some("binding");
    let kind = if binding { "Binding" } else { "Eviction" };
    let decoded = body::decode_object(&bytes, format, kind)?;
    let ctx = write_ctx(opts, t.call);
    let result = if binding {
        api::pod_subresources::bind(app, &t.res, &t.ns, name, decoded.value, &ctx).await
    } else {
        api::pod_subresources::evict(app, &t.res, &t.ns, name, decoded.value, &ctx).await
    };
    let answer = (&acc, t.query);
    Ok(written(app, t.call, &t.res, result, &ctx.warnings, answer))
}

/// POST of a new object to a collection.
async fn create(app: &Arc<App>, t: &Target<'_>, body: Body) -> ApiResult<Response> {
    let res = &t.res;
    check_verb(res, "create")?;
    if res.custom().is_some_and(|c| c.terminating) {
        return Err(ApiError::method_not_supported(
            &res.group,
            &res.plural,
            "create not allowed while custom resource definition is terminating",
        ));
    }
    let acc = t.call.negotiate(t.endpoint)?;
    let bytes = read_body(body).await?;
    let opts = query::write_options(t.query, "CreateOptions", false)?;
    let format = object_body_format(res, t.content_type.as_deref())?;
    let decoded = body::decode_object(&bytes, format, &res.kind)?;
    if res.is_custom() {
        body::require_kind(&decoded, &res.kind, &bytes)?;
    }
    let ctx = write_ctx(opts, t.call);
    let input = api::create::Input::Body {
        obj: decoded.value,
        duplicates: decoded.duplicates,
    };
    let result = api::create::create(app, res, &t.ns, input, &ctx).await;
    Ok(written(
        app,
        t.call,
        res,
        result,
        &ctx.warnings,
        (&acc, t.query),
    ))
}

/// PUT of an object, its Scale, a subresource or a Namespace's finalizers.
async fn replace(app: &Arc<App>, t: &Target<'_>, body: Body, name: &str) -> ApiResult<Response> {
    let (res, ns, sub) = (&t.res, t.ns.as_str(), t.sub());
    check_verb(res, "update")?;
    let acc = t.call.negotiate(t.endpoint)?;
    let bytes = read_body(body).await?;
    let opts = query::write_options(t.query, "UpdateOptions", false)?;
    let format = object_body_format(res, t.content_type.as_deref())?;
    let kind = if sub == Some("scale") {
        "Scale"
    } else {
        res.kind.as_str()
    };
    let decoded = body::decode_object(&bytes, format, kind)?;
    if res.is_custom() && sub != Some("scale") {
        body::require_kind(&decoded, kind, &bytes)?;
    }
    let ctx = write_ctx(opts, t.call);
    let result = match sub {
        Some("scale") => api::scale::replace(app, res, ns, name, decoded.value, &ctx).await,
        Some("finalize") => finalize_namespace(app, res, name, decoded.value, &ctx).await,
        _ => {
            let (obj, duplicates) = (decoded.value, decoded.duplicates);
            api::update::replace(app, res, ns, name, sub, obj, duplicates, &ctx).await
        }
    };
    Ok(written(
        app,
        t.call,
        res,
        result,
        &ctx.warnings,
        (&acc, t.query),
    ))
}

/// PATCH of an object, its Scale or a subresource.
async fn patch(app: &Arc<App>, t: &Target<'_>, body: Body, name: &str) -> ApiResult<Response> {
    let (res, ns, sub) = (&t.res, t.ns.as_str(), t.sub());
    check_verb(res, "patch")?;
    let acc = t.call.negotiate(t.endpoint)?;
    let bytes = read_body(body).await?;
    let content_type = t.content_type.as_deref().unwrap_or("");
    let patch_type = PatchType::from_content_type(content_type, res.is_custom())?;
    let opts = query::write_options(t.query, "PatchOptions", patch_type == PatchType::Apply)?;
    let ctx = write_ctx(opts, t.call);
    let result = match sub {
        Some("scale") => api::scale::patch(app, res, ns, name, patch_type, &bytes, &ctx).await,
        Some("finalize") => return Err(ApiError::method_not_allowed()),
        _ => api::update::patch(app, res, ns, name, sub, patch_type, &bytes, &ctx).await,
    };
    Ok(written(
        app,
        t.call,
        res,
        result,
        &ctx.warnings,
        (&acc, t.query),
    ))
}

/// DELETE of one object, or of the collection (`deletecollection`), with
/// the DeleteOptions of the query and the body.
async fn delete(
    app: &Arc<App>,
    t: &Target<'_>,
    body: Body,
    name: Option<String>,
) -> ApiResult<Response> {
    let (res, call) = (&t.res, t.call);
    if t.sub().is_some() {
        return Err(ApiError::method_not_allowed());
    }
    let acc = call.negotiate(t.endpoint)?;
    let bytes = read_body(body).await?;
    let body_opts = if bytes.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        let format = body::body_format(t.content_type.as_deref())?;
        Some(body::decode_object(&bytes, format, "DeleteOptions")?.value)
    };
    let opts = query::delete_options(t.query, body_opts.as_ref())?;
    let warnings = api::Warnings::default();
    let ns = t.path.namespace.as_deref();
    if let Some(name) = name {
        check_verb(res, "delete")?;
        let result = api::delete::delete(app, res, &t.ns, &name, &opts, call.user, &warnings).await;
        return Ok(written(app, call, res, result, &warnings, (&acc, t.query)));
    }
    check_verb(res, "deletecollection")?;
    let lopts = query::list_options(t.query, false)?;
    let page = api::read::list(app, res, ns, &lopts).await?;
    let result =
        api::delete::delete_collection(app, res, ns, page, &opts, call.user, &warnings).await;
    // The deleted objects, as PartialObjectMetadata when that was asked.
    let shown = result.and_then(|doc| {
        let items = doc
            .get("items")
            .and_then(Value::as_array)
            .map(|items| items.iter().cloned().map(Arc::new).collect::<Vec<_>>());
        let list_meta = doc.get("metadata").cloned().unwrap_or(json!({}));
        let metadata =
            items.and_then(|items| crate::table::list_metadata(res, list_meta, &items, &acc.shape));
        match metadata.transpose()? {
            Some(body) => Ok(body),
            None => Ok(doc),
        }
    });
    Ok(match shown {
        Ok(body) => respond::object(200, &body, &acc, &warnings.take()),
        Err(e) => respond::error_with_warnings(&e, call.prefs, &warnings.take()),
    })
}
