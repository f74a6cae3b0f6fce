//! The HTTP front: routing, content negotiation, request parsing and the
//! mapping of API operations to responses. Every failure is a `Status`.

pub mod body;
pub mod negotiate;
pub mod openapi;
pub mod path;
pub mod protobuf;
pub mod query;
pub mod respond;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::response::Response;
use serde_json::{Value, json};

use crate::admission::UserInfo;
use crate::api::{self, App, WriteCtx, Written};
use crate::authz;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::patch::PatchType;
use crate::registry::{Resource, discovery};
use crate::table::{IncludeObject, partial_metadata, table};
use negotiate::{Accepted, Endpoint, Format, Shape, negotiate};
use path::{ResourcePath, Route, route};
use query::Query;

/// The kube-apiserver release whose behaviour this server implements (its
/// recorded transcripts are the ground truth), as `/version` reports it.
pub const KUBE_VERSION: (&str, &str) = ("1", "32");
pub const KUBE_GIT_VERSION: &str = "v1.32.13";

pub fn router(app: Arc<App>) -> Router {
    Router::new().fallback(handle).with_state(app)
}

async fn handle(State(app): State<Arc<App>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    // envtest's own user is an administrator; one it impersonates is held
    // to the stored RBAC rules.
    let impersonated = authz::impersonated_user(&parts.headers);
    if let Some(user) = &impersonated {
        let q = Query::parse(parts.uri.query());
        let attrs = authz::Attributes::of_request(&parts.method, parts.uri.path(), &q);
        if !authz::authorize(&app.store, user, &attrs).allowed {
            return respond::error(&authz::forbidden(user, &attrs));
        }
    }
    let call = Call {
        method: &parts.method,
        headers: &parts.headers,
        user: &impersonated.unwrap_or_default(),
    };
    let pending = app.metrics.begin(
        &app.registry.load(),
        &parts.method,
        &parts.uri,
        &parts.headers,
    );
    let resp = match dispatch(&app, &call, &parts.uri, body).await {
        Ok(resp) => resp,
        Err(err) => respond::error(&err),
    };
    pending.finish(resp)
}

/// What the handlers need to know of a request besides its path and body.
struct Call<'a> {
    method: &'a Method,
    headers: &'a HeaderMap,
    /// Who asks: the administrator, or the user it impersonates.
    user: &'a UserInfo,
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn version_doc() -> Value {
    json!({
        "major": KUBE_VERSION.0, "minor": KUBE_VERSION.1,
        "gitVersion": KUBE_GIT_VERSION,
        // No Kubernetes commit is built here; the build fields only keep
        // the shape clients parse (`compiler` as every release reports it).
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.12",
        "compiler": "gc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

async fn dispatch(
    app: &Arc<App>,
    call: &Call<'_>,
    uri: &axum::http::Uri,
    body: Body,
) -> ApiResult<Response> {
    let Call {
        method, headers, ..
    } = *call;
    let accept = header_str(headers, header::ACCEPT);
    let q = Query::parse(uri.query());
    if uri.path().trim_end_matches('/') == "/openapi/v2" {
        return Ok(if accept.is_some_and(|a| a.contains("protobuf")) {
            respond::bytes(200, openapi::v2_protobuf(), openapi::V2_PROTOBUF)
        } else {
            respond::object(200, &openapi::v2(), Format::Json, &[])
        });
    }
    if let Some(rest) = uri.path().strip_prefix("/openapi/v3") {
        let reg = app.registry.load();
        let doc = match rest.trim_matches('/') {
            "" => Some(openapi::root(&reg)),
            gv => openapi::group_version(&reg, gv),
        };
        return Ok(match doc {
            Some(doc) => respond::object(200, &doc, Format::Json, &[]),
            None => respond::page_not_found(),
        });
    }
    let r = route(uri.path());
    if !matches!(r, Route::Resource(_)) && *method != Method::GET && *method != Method::HEAD {
        return Ok(match r {
            Route::Unknown => respond::page_not_found(),
            _ => respond::error(&ApiError::method_not_allowed()),
        });
    }
    let reg = app.registry.load();
    let plain = |v: &Value| -> ApiResult<Response> {
        let acc = negotiate(accept, Endpoint::Plain)?;
        Ok(respond::object(200, v, acc.format, &[]))
    };
    match r {
        Route::Version => plain(&version_doc()),
        Route::Health => Ok(respond::text(200, "ok")),
        Route::Metrics => Ok(respond::bytes(
            200,
            app.metrics.render().into_bytes(),
            crate::metrics::CONTENT_TYPE,
        )),
        Route::CoreRoot | Route::Groups => {
            let core = r == Route::CoreRoot;
            let acc = negotiate(accept, Endpoint::Discovery)?;
            if let Shape::Discovery(v) = &acc.shape {
                let doc = discovery::aggregated(&reg, core, &format!("apidiscovery.k8s.io/{v}"));
                let ct = format!(
                    "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"
                );
                return Ok(respond::json_with_type(200, &doc, &ct));
            }
            let doc = if core {
                let addr = app
                    .server_address
                    .read()
                    .map(|a| a.clone())
                    .unwrap_or_default();
                discovery::api_versions(&addr)
            } else {
                discovery::api_group_list(&reg)
            };
            Ok(respond::object(200, &doc, acc.format, &[]))
        }
        Route::Group(g) => match discovery::api_group(&reg, &g) {
            Some(doc) => plain(&doc),
            None => Ok(respond::page_not_found()),
        },
        Route::GroupVersion(g, v) => match discovery::api_resource_list(&reg, &g, &v) {
            Some(doc) => plain(&doc),
            None => Ok(respond::page_not_found()),
        },
        Route::Resource(p) => {
            if !reg.serves_group_version(&p.group, &p.version) {
                return Ok(respond::page_not_found());
            }
            let Some(res) = reg.get(&p.group, &p.version, &p.resource) else {
                return Err(ApiError::not_found_path());
            };
            resource(app, call, body, &p, res, &q).await
        }
        Route::Unknown => Ok(respond::page_not_found()),
    }
}

/// Reads a request body, refusing more than kube-apiserver's 3 MiB.
async fn read_body(body: Body) -> ApiResult<bytes::Bytes> {
    axum::body::to_bytes(body, body::MAX_BODY)
        .await
        .map_err(|_| body::too_large())
}

fn write_ctx(opts: query::WriteOptions, call: &Call<'_>) -> WriteCtx {
    let user_agent = header_str(call.headers, header::USER_AGENT);
    let manager = opts
        .field_manager
        .clone()
        .unwrap_or_else(|| api::manager_from_user_agent(user_agent));
    let mut ctx = WriteCtx::new(manager, opts);
    ctx.user = call.user.clone();
    ctx
}

/// The response to a write: the object or the error, with every warning
/// raised on the way (admission webhooks' warnings are sent with errors too,
/// as kube-apiserver does). A write of a webhook configuration takes effect
/// for the very next request.
fn written(
    app: &App,
    res: &Resource,
    result: ApiResult<Written>,
    warnings: &api::Warnings,
    acc: &Accepted,
) -> Response {
    if api::admit::configuration_kind(res).is_some() {
        api::admit::refresh_configurations(app);
    }
    match result {
        Ok(mut w) => {
            w.warnings.extend(warnings.take());
            respond::object(w.code, &w.body, acc.format, &w.warnings)
        }
        Err(e) => respond::error_with_warnings(&e, &warnings.take()),
    }
}

fn check_verb(res: &Resource, verb: &str) -> ApiResult<()> {
    if res.supports(verb) {
        Ok(())
    } else {
        Err(ApiError::method_not_allowed())
    }
}

async fn resource(
    app: &Arc<App>,
    call: &Call<'_>,
    body: Body,
    p: &ResourcePath,
    res: Arc<Resource>,
    q: &Query,
) -> ApiResult<Response> {
    let Call {
        method,
        headers,
        user,
    } = *call;
    // Scope: namespaced resources need a namespace to name an object;
    // cluster-scoped ones never have one.
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
    let sub = p.subresource.as_deref();
    if sub.is_some_and(|s| res.subresource_verbs(s).is_none()) {
        return Err(ApiError::not_found_path());
    }
    let ns = p.namespace.clone().unwrap_or_default();
    let accept = header_str(headers, header::ACCEPT);
    let content_type = header_str(headers, header::CONTENT_TYPE);
    if authz::review::is_review(&res) {
        return review(app, call, body, p, &res, &ns).await;
    }
    let name = p.name.clone();
    match (method.clone(), name) {
        (Method::GET, None) => {
            let opts = query::list_options(q, p.watch_prefix)?;
            let ns_opt = p.namespace.as_deref();
            if opts.watch {
                check_verb(&res, "watch")?;
                let acc = negotiate(accept, Endpoint::Object)?;
                return watch(app, res, ns_opt.map(str::to_string), None, opts, acc, q).await;
            }
            check_verb(&res, "list")?;
            let acc = negotiate(accept, Endpoint::List)?;
            let page = api::read::list(app, &res, ns_opt, &opts).await?;
            Ok(list_response(&res, &page, &acc, q))
        }
        (Method::GET, Some(name)) => {
            if p.watch_prefix || q.flag("watch").unwrap_or(false) {
                check_verb(&res, "watch")?;
                let opts = query::list_options(q, true)?;
                let acc = negotiate(accept, Endpoint::Object)?;
                return watch(app, res, p.namespace.clone(), Some(name), opts, acc, q).await;
            }
            check_verb(&res, "get")?;
            if sub == Some("scale") {
                let acc = negotiate(accept, Endpoint::Plain)?;
                let scale = api::scale::get(app, &res, &ns, &name)?;
                return Ok(respond::object(200, &scale, acc.format, &[]));
            }
            let acc = negotiate(accept, Endpoint::Object)?;
            let obj = api::read::get(app, &res, &ns, &name)?;
            Ok(object_response(&res, &obj, &acc, q))
        }
        (Method::POST, Some(name)) if matches!(sub, Some("binding" | "eviction")) => {
            let acc = negotiate(accept, Endpoint::Plain)?;
            let bytes = read_body(body).await?;
            let opts = query::write_options(q, "CreateOptions", false)?;
            let format = body::body_format(content_type)?;
            let binding = sub == Some("binding");
            let kind = if binding { "Binding" } else { "Eviction" };
            let decoded = body::decode_object(&bytes, format, kind)?;
            let ctx = write_ctx(opts, call);
            let result = if binding {
                api::pods::bind(app, &res, &ns, &name, decoded.value, &ctx).await
            } else {
                api::pods::evict(app, &res, &ns, &name, decoded.value, &ctx).await
            };
            Ok(written(app, &res, result, &ctx.warnings, &acc))
        }
        (Method::POST, None) => {
            check_verb(&res, "create")?;
            let acc = negotiate(accept, Endpoint::Plain)?;
            let bytes = read_body(body).await?;
            let opts = query::write_options(q, "CreateOptions", false)?;
            let format = object_body_format(&res, content_type)?;
            let decoded = body::decode_object(&bytes, format, &res.kind)?;
            let ctx = write_ctx(opts, call);
            let input = api::create::Input::Body {
                obj: decoded.value,
                duplicates: decoded.duplicates,
            };
            let result = api::create::create(app, &res, &ns, input, &ctx).await;
            Ok(written(app, &res, result, &ctx.warnings, &acc))
        }
        (Method::PUT, Some(name)) => {
            check_verb(&res, "update")?;
            let acc = negotiate(accept, Endpoint::Plain)?;
            let bytes = read_body(body).await?;
            let opts = query::write_options(q, "UpdateOptions", false)?;
            let format = object_body_format(&res, content_type)?;
            let kind = if sub == Some("scale") {
                "Scale"
            } else {
                res.kind.as_str()
            };
            let decoded = body::decode_object(&bytes, format, kind)?;
            let ctx = write_ctx(opts, call);
            let result = match sub {
                Some("scale") => {
                    api::scale::replace(app, &res, &ns, &name, decoded.value, &ctx).await
                }
                Some("finalize") => finalize_namespace(app, &res, &name, decoded.value, &ctx).await,
                _ => {
                    api::update::replace(
                        app,
                        &res,
                        &ns,
                        &name,
                        sub,
                        decoded.value,
                        decoded.duplicates,
                        &ctx,
                    )
                    .await
                }
            };
            Ok(written(app, &res, result, &ctx.warnings, &acc))
        }
        (Method::PATCH, Some(name)) => {
            check_verb(&res, "patch")?;
            let acc = negotiate(accept, Endpoint::Plain)?;
            let bytes = read_body(body).await?;
            let patch_type = PatchType::from_content_type(content_type.unwrap_or(""))?;
            let opts = query::write_options(q, "PatchOptions", patch_type == PatchType::Apply)?;
            let ctx = write_ctx(opts, call);
            let result = match sub {
                Some("scale") => {
                    api::scale::patch(app, &res, &ns, &name, patch_type, &bytes, &ctx).await
                }
                Some("finalize") => return Err(ApiError::method_not_allowed()),
                _ => api::update::patch(app, &res, &ns, &name, sub, patch_type, &bytes, &ctx).await,
            };
            Ok(written(app, &res, result, &ctx.warnings, &acc))
        }
        (Method::DELETE, name) => {
            if sub.is_some() {
                return Err(ApiError::method_not_allowed());
            }
            let acc = negotiate(accept, Endpoint::Plain)?;
            let bytes = read_body(body).await?;
            let body_opts = if bytes.iter().all(u8::is_ascii_whitespace) {
                None
            } else {
                let format = body::body_format(content_type)?;
                Some(body::decode_object(&bytes, format, "DeleteOptions")?.value)
            };
            let opts = query::delete_options(q, body_opts.as_ref())?;
            let warnings = api::Warnings::default();
            match name {
                Some(name) => {
                    check_verb(&res, "delete")?;
                    let result =
                        api::delete::delete(app, &res, &ns, &name, &opts, user, &warnings).await;
                    Ok(written(app, &res, result, &warnings, &acc))
                }
                None => {
                    check_verb(&res, "deletecollection")?;
                    let lopts = query::list_options(q, false)?;
                    let page = api::read::list(app, &res, p.namespace.as_deref(), &lopts).await?;
                    let result = api::delete::delete_collection(
                        app,
                        &res,
                        p.namespace.as_deref(),
                        page.items,
                        &opts,
                        user,
                        &warnings,
                    )
                    .await
                    .map(|doc| Written {
                        code: 200,
                        body: Arc::new(doc),
                        warnings: Vec::new(),
                    });
                    Ok(written(app, &res, result, &warnings, &acc))
                }
            }
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// POST of a review (`kubectl auth can-i`, `whoami`): answered, not stored.
async fn review(
    app: &App,
    call: &Call<'_>,
    body: Body,
    p: &ResourcePath,
    res: &Resource,
    ns: &str,
) -> ApiResult<Response> {
    let Call {
        method,
        headers,
        user,
    } = *call;
    if *method != Method::POST || p.name.is_some() || p.subresource.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    let acc = negotiate(header_str(headers, header::ACCEPT), Endpoint::Plain)?;
    let bytes = read_body(body).await?;
    let format = body::body_format(header_str(headers, header::CONTENT_TYPE))?;
    let decoded = body::decode_object(&bytes, format, &res.kind)?;
    let answer = authz::review::answer(&app.store, res, ns, user, decoded.value)?;
    Ok(respond::object(201, &answer, acc.format, &[]))
}

/// The body format of an object write: custom resources have no protobuf form.
fn object_body_format(res: &Resource, content_type: Option<&str>) -> ApiResult<body::BodyFormat> {
    let format = body::body_format(content_type)?;
    if format == body::BodyFormat::Protobuf && res.is_custom() {
        return Err(ApiError::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
        ));
    }
    Ok(format)
}

/// PUT `/api/v1/namespaces/<name>/finalize`: only spec.finalizers changes.
async fn finalize_namespace(
    app: &App,
    res: &Resource,
    name: &str,
    body: Value,
    ctx: &WriteCtx,
) -> ApiResult<Written> {
    let old = api::read::get(app, res, "", name)?;
    let mut new = (*old).clone();
    let finalizers = body
        .pointer("/spec/finalizers")
        .cloned()
        .unwrap_or(json!([]));
    meta::set_path(&mut new, &["spec", "finalizers"], finalizers);
    let rv = meta::resource_version(&body);
    if !rv.is_empty() {
        meta::set_meta(&mut new, "resourceVersion", json!(rv));
    }
    api::update::replace(app, res, "", name, None, new, Vec::new(), ctx).await
}

fn object_response(res: &Resource, obj: &Arc<Value>, acc: &Accepted, q: &Query) -> Response {
    if acc.shape == Shape::Plain {
        return respond::object(200, obj, acc.format, &[]);
    }
    let body = match &acc.shape {
        Shape::Table(v) => table(
            res,
            std::slice::from_ref(obj),
            json!({"resourceVersion": meta::resource_version(obj)}),
            v,
            IncludeObject::parse(q.get("includeObject")),
            true,
        ),
        Shape::PartialObjectMetadata(v) => partial_metadata(obj, v),
        _ => (**obj).clone(),
    };
    respond::object(200, &body, acc.format, &[])
}

fn list_response(res: &Resource, page: &api::read::Page, acc: &Accepted, q: &Query) -> Response {
    let body = match &acc.shape {
        Shape::Table(v) => table(
            res,
            &page.items,
            api::read::list_meta(page, false),
            v,
            IncludeObject::parse(q.get("includeObject")),
            true,
        ),
        Shape::PartialObjectMetadataList(v) => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": format!("meta.k8s.io/{v}"),
            "metadata": api::read::list_meta(page, false),
            "items": page.items.iter().map(|o| partial_metadata(o, v)).collect::<Vec<_>>(),
        }),
        _ => api::read::list_document(res, page),
    };
    respond::object(200, &body, acc.format, &[])
}

async fn watch(
    app: &Arc<App>,
    res: Arc<Resource>,
    ns: Option<String>,
    name: Option<String>,
    opts: query::ListOptions,
    acc: Accepted,
    q: &Query,
) -> ApiResult<Response> {
    if acc.format != Format::Json {
        return Err(ApiError::not_acceptable());
    }
    let req = api::watch::WatchRequest {
        res,
        ns,
        name,
        opts,
        shape: acc.shape,
        include: IncludeObject::parse(q.get("includeObject")),
    };
    let stream = api::watch::start(app.clone(), req).await?;
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}
