//! The HTTP front: routing, content negotiation, request parsing and the
//! mapping of API operations to responses. Every failure is a `Status`.

mod component_statuses;
pub(crate) mod deadline;
mod host;
mod list_body;
pub(crate) mod openapi;
mod resource;
pub(crate) mod respond;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::response::Response;
use serde_json::{Value, json};

use crate::api::{self, WriteCtx, Written};
use crate::app::App;
use crate::authz;
use crate::error::{ApiError, ApiResult};
use crate::faults;
use crate::meta;
use crate::registry::{Resource, discovery};
use crate::request::body;
use crate::request::negotiate::{self, Accepted, Endpoint, Format, Shape};
use crate::request::path::{ResourcePath, Route, route};
use crate::request::query::{self, Query};
use crate::table::{IncludeObject, table};
use crate::user::UserInfo;

pub(crate) fn router(app: Arc<App>) -> Router {
    Router::new().fallback(handle).with_state(app)
}

async fn handle(State(app): State<Arc<App>>, req: Request) -> Response {
    let prefs = respond::Preferences::of(
        header_str(req.headers(), header::ACCEPT),
        req.uri().query(),
        header_str(req.headers(), header::USER_AGENT),
    );
    // Before anything else: a page a browser loaded from elsewhere must not
    // reach the API by rebinding its name to 127.0.0.1.
    if let Some(err) = host::refused(req.uri(), req.headers()) {
        return respond::error(&err, &prefs);
    }
    let q = Query::parse(req.uri().query());
    if deadline::long_running(req.method(), &route(req.uri().path()), &q) {
        return serve(&app, req, &prefs).await;
    }
    let timeout = match deadline::request_timeout(&q, app.request_timeout) {
        Ok(timeout) => timeout,
        Err(err) => return respond::error(&err, &prefs),
    };
    // Running out drops the request where it waits (a webhook call, a
    // retry), as the cancelled context of kube-apiserver's handler would.
    match tokio::time::timeout(timeout, serve(&app, req, &prefs)).await {
        Ok(resp) => resp,
        Err(_) => respond::request_timeout(),
    }
}

async fn serve(app: &Arc<App>, req: Request, prefs: &respond::Preferences) -> Response {
    let (parts, body) = req.into_parts();
    // As kube-apiserver: who asks is known before anything it asks for is
    // looked at, impersonation included.
    let requester = match authenticate(app, &parts.headers) {
        Ok(user) => user,
        Err(err) => return respond::error(&err, prefs),
    };
    if let Some(message) = authz::impersonation_without_user(&parts.headers) {
        let uri = parts.uri.path_and_query().map_or("", |p| p.as_str());
        return respond::internal_error_text(uri, &message);
    }
    // envtest's own user is an administrator; a ServiceAccount token's
    // user and one it impersonates are held to the stored RBAC rules.
    let impersonated = match acting_user(app, &parts.headers, requester) {
        Ok(user) => user,
        Err(err) => return respond::error(&err, prefs),
    };
    if let Some(user) = &impersonated {
        let q = Query::parse(parts.uri.query());
        let attrs = authz::Attributes::of_request(&parts.method, parts.uri.path(), &q);
        if !authz::authorize(&app.store, user, &attrs).allowed {
            return respond::error(&authz::forbidden(user, &attrs), prefs);
        }
    }
    let call = Call {
        method: &parts.method,
        headers: &parts.headers,
        user: &impersonated.unwrap_or_default(),
        prefs,
    };
    let pending = app.metrics.begin(
        &app.registry.load(),
        &parts.method,
        &parts.uri,
        &parts.headers,
    );
    let target = pending.labels().map(|labels| faults::Target {
        labels,
        user: &call.user.username,
        method: parts.method.as_str(),
        path: parts.uri.path(),
    });
    // An injected fault answers instead of the server: nothing is applied.
    if let Some(injected) = target.as_ref().and_then(|t| app.faults.answer(t)) {
        return pending.finish(respond::injected(&injected, prefs));
    }
    let resp = match dispatch(app, &call, &parts.uri, body).await {
        Ok(resp) => resp,
        Err(err) => respond::error(&err, prefs),
    };
    let resp = match &target {
        Some(t) if t.labels.is_watch() && resp.status() == 200 => app.faults.cut_watch(t, resp),
        _ => resp,
    };
    pending.finish(resp)
}

/// Who sends a request: the ServiceAccount of its bearer token, or `None`
/// for envtest's administrator; 401 for anyone else.
fn authenticate(app: &App, headers: &HeaderMap) -> ApiResult<Option<UserInfo>> {
    let token_user = crate::authn::service_account_user(app, headers)?;
    if token_user.is_none() && !crate::authn::is_administrator(app, headers) {
        return Err(crate::authn::unauthorized());
    }
    Ok(token_user)
}

/// Who a request from `token_user` (see [`authenticate`]) acts as when it
/// is not envtest's administrator: that ServiceAccount, or the user it
/// impersonates (which a ServiceAccount may do only when RBAC lets it
/// `impersonate`).
fn acting_user(
    app: &App,
    headers: &HeaderMap,
    token_user: Option<UserInfo>,
) -> ApiResult<Option<UserInfo>> {
    let impersonated = authz::impersonated_user(headers);
    match (token_user, impersonated) {
        (Some(requester), Some(target)) => {
            let attrs = authz::Attributes {
                verb: "impersonate".into(),
                resource_request: true,
                resource: "users".into(),
                name: target.username.clone(),
                ..Default::default()
            };
            if !authz::authorize(&app.store, &requester, &attrs).allowed {
                return Err(authz::forbidden(&requester, &attrs));
            }
            Ok(Some(target))
        }
        (Some(requester), None) => Ok(Some(requester)),
        (None, impersonated) => Ok(impersonated),
    }
}

/// POST `bindings` (the legacy form of `pods/<name>/binding`): binds the
/// Pod the Binding names.
async fn legacy_binding(
    app: &Arc<App>,
    call: &Call<'_>,
    body: Body,
    (p, q): (&ResourcePath, &Query),
    ns: &str,
) -> ApiResult<Response> {
    if *call.method != Method::POST || p.name.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    let reg = app.registry.load();
    let pods = reg
        .get("", "v1", "pods")
        .ok_or_else(|| ApiError::internal("pods are not served"))?;
    let acc = call.negotiate(Endpoint::Plain)?;
    let bytes = read_body(body).await?;
    let opts = query::write_options(q, "CreateOptions", false)?;
    let format = body::body_format(header_str(call.headers, header::CONTENT_TYPE))?;
    let decoded = body::decode_object(&bytes, format, "Binding")?;
    let name = crate::meta::name(&decoded.value).to_string();
    let ctx = write_ctx(opts, call);
    let result = api::pod_subresources::bind(app, &pods, ns, &name, decoded.value, &ctx).await;
    Ok(written(app, call, &pods, result, &ctx.warnings, (&acc, q)))
}

/// What the handlers need to know of a request besides its path and body.
struct Call<'a> {
    method: &'a Method,
    headers: &'a HeaderMap,
    /// Who asks: the administrator, or the user it impersonates.
    user: &'a UserInfo,
    /// How the client wants its answers written.
    prefs: &'a respond::Preferences,
}

impl Call<'_> {
    /// Content negotiation for `endpoint`, with the request's pretty-printing wish.
    fn negotiate(&self, endpoint: Endpoint) -> ApiResult<Accepted> {
        let mut acc = negotiate::negotiate(self.prefs.accept.as_deref(), endpoint)?;
        acc.pretty |= self.prefs.pretty;
        Ok(acc)
    }
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

async fn dispatch(
    app: &Arc<App>,
    call: &Call<'_>,
    uri: &axum::http::Uri,
    body: Body,
) -> ApiResult<Response> {
    let method = call.method;
    let accept = call.prefs.accept.as_deref();
    let q = Query::parse(uri.query());
    if uri.path().trim_end_matches('/') == "/openapi/v2" {
        return Ok(if accept.is_some_and(|a| a.contains("protobuf")) {
            respond::bytes(200, openapi::v2_protobuf(), openapi::V2_PROTOBUF)
        } else {
            respond::object(200, &openapi::v2(), &respond::JSON, &[])
        });
    }
    if let Some(rest) = uri.path().strip_prefix("/openapi/v3") {
        let reg = app.registry.load();
        let doc = match rest.trim_matches('/') {
            "" => Some(openapi::root(&reg)),
            gv => openapi::group_version(&reg, gv, |name| {
                let crds = reg.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")?;
                app.store.get(&crds.store_key, "", name)
            }),
        };
        return Ok(match doc {
            Some(doc) => respond::object(200, &doc, &respond::JSON, &[]),
            None => respond::page_not_found(),
        });
    }
    let r = route(uri.path());
    if !matches!(r, Route::Resource(_)) && *method != Method::GET && *method != Method::HEAD {
        return Ok(match r {
            Route::Unknown => respond::page_not_found(),
            _ => respond::error(&ApiError::method_not_allowed(), call.prefs),
        });
    }
    let reg = app.registry.load();
    let plain = |v: &Value| -> ApiResult<Response> {
        let acc = call.negotiate(Endpoint::Plain)?;
        Ok(respond::object(200, v, &acc, &[]))
    };
    match r {
        // kube-apiserver writes /version with WriteRawJSON, whatever is accepted.
        Route::Version => Ok(respond::raw_json(200, &crate::version::document())),
        Route::Health => Ok(respond::text(200, "ok")),
        Route::Metrics => Ok(respond::bytes(
            200,
            app.metrics.render().into_bytes(),
            crate::metrics::CONTENT_TYPE,
        )),
        Route::CoreRoot | Route::Groups => {
            let core = r == Route::CoreRoot;
            let acc = call.negotiate(Endpoint::Discovery)?;
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
            Ok(respond::object(200, &doc, &acc, &[]))
        }
        Route::Group(g) => match discovery::api_group(&reg, &g) {
            Some(doc) => plain(&doc),
            None => Ok(respond::page_not_found()),
        },
        Route::GroupVersion(g, v) => match discovery::api_resource_list(&reg, &g, &v) {
            Some(doc) => plain(&doc),
            // A served group's handler answers for its removed versions.
            None if discovery::api_group(&reg, &g).is_some() => Err(ApiError::not_found_path()),
            None => Ok(respond::page_not_found()),
        },
        Route::Resource(p) => {
            if !reg.serves_group_version(&p.group, &p.version) {
                return Ok(respond::page_not_found());
            }
            let Some(res) = reg.get(&p.group, &p.version, &p.resource) else {
                return Err(ApiError::not_found_path());
            };
            // Every request through a deprecated custom resource version or
            // built-in resource, answered or refused, carries the deprecation
            // Warning.
            let deprecation = match res.custom() {
                Some(c) => c.deprecation_warning(&p.version),
                None => res
                    .builtin()
                    .and_then(|k| k.deprecation)
                    .map(str::to_string),
            };
            let result = resource::resource(app, call, body, &p, res, &q).await;
            let Some(text) = deprecation else {
                return result;
            };
            let mut response = result.unwrap_or_else(|e| respond::error(&e, call.prefs));
            // It is raised first, before anything the handling adds.
            let headers = response.headers_mut();
            let later: Vec<_> = headers.get_all(header::WARNING).iter().cloned().collect();
            headers.remove(header::WARNING);
            if let Ok(value) = header::HeaderValue::from_str(&respond::warning_header(&text)) {
                headers.append(header::WARNING, value);
            }
            for value in later {
                headers.append(header::WARNING, value);
            }
            Ok(response)
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
    call: &Call<'_>,
    res: &Resource,
    result: ApiResult<Written>,
    warnings: &api::Warnings,
    (acc, q): (&Accepted, &Query),
) -> Response {
    if api::admit::is_admission_configuration(res) {
        api::admit::refresh_configurations(app);
    }
    let shown = result.and_then(|mut w| {
        let body = transform_object(res, &w.body, acc, q)?;
        w.warnings.extend(warnings.take());
        Ok((w.code, body, w.warnings))
    });
    match shown {
        Ok((code, body, warnings)) => respond::object(code, &body, acc, &warnings),
        Err(e) => respond::error_with_warnings(&e, call.prefs, &warnings.take()),
    }
}

/// The verb of a request on an object's subresource.
fn subresource_verb(method: &Method) -> &'static str {
    match *method {
        Method::GET | Method::HEAD => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "",
    }
}

fn check_verb(res: &Resource, verb: &str) -> ApiResult<()> {
    if res.supports(verb) {
        Ok(())
    } else {
        Err(ApiError::method_not_allowed())
    }
}

/// POST of a review (`kubectl auth can-i`, `whoami`, TokenReview) or of a
/// TokenRequest (`serviceaccounts/<name>/token`): answered, not stored.
async fn review(
    app: &App,
    call: &Call<'_>,
    body: Body,
    (p, q): (&ResourcePath, &Query),
    res: &Resource,
    ns: &str,
) -> ApiResult<Response> {
    let Call {
        method,
        headers,
        user,
        ..
    } = *call;
    let token_request = p.subresource.as_deref() == Some("token");
    let addressed = if token_request {
        p.name.is_some()
    } else {
        p.name.is_none() && p.subresource.is_none()
    };
    if *method != Method::POST || !addressed {
        return Err(ApiError::method_not_allowed());
    }
    let acc = call.negotiate(Endpoint::Plain)?;
    let bytes = read_body(body).await?;
    let content_type = crate::request::media_type::header(headers);
    let format = object_body_format(res, content_type.as_deref())?;
    let kind = if token_request {
        "TokenRequest"
    } else {
        &res.kind
    };
    let decoded = body::decode_object(&bytes, format, kind)?;
    let manager = answer_manager(call, q);
    let answer = match (token_request, res.kind.as_str()) {
        (true, _) => {
            let name = p.name.as_deref().unwrap_or_default();
            crate::authn::token_request(app, ns, name, decoded.value, &manager)?
        }
        (false, "TokenReview") => crate::authn::token_review(app, decoded.value, &manager)?,
        _ => api::access_reviews::answer(&app.store, res, ns, user, decoded.value, &manager)?,
    };
    Ok(respond::object(201, &answer, &acc, &[]))
}

/// Who a create that stores nothing is recorded as written by.
fn answer_manager(call: &Call<'_>, q: &Query) -> String {
    q.get("fieldManager")
        .filter(|m| !m.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| {
            api::manager_from_user_agent(header_str(call.headers, header::USER_AGENT))
        })
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

/// One object in the shape the client asked for (kube-apiserver's
/// `transformResponseObject`): the object, its Table row or its
/// PartialObjectMetadata, on every verb; a Status passes unchanged.
fn transform_object(
    res: &Resource,
    obj: &Arc<Value>,
    acc: &Accepted,
    q: &Query,
) -> ApiResult<Arc<Value>> {
    if let Some(metadata) = crate::table::object_metadata(res, obj, &acc.shape) {
        return metadata.map(Arc::new);
    }
    match &acc.shape {
        Shape::Table(v) if obj.get("kind").and_then(Value::as_str) != Some("Status") => {
            Ok(Arc::new(table(
                res,
                std::slice::from_ref(obj),
                json!({"resourceVersion": meta::resource_version(obj)}),
                v,
                IncludeObject::parse(q.get("includeObject")),
                true,
            )))
        }
        _ => Ok(obj.clone()),
    }
}

/// A LIST answer, written item by item (see `list_body`).
fn list_response(
    res: &Resource,
    page: &api::read::Page,
    acc: &Accepted,
    q: &Query,
) -> ApiResult<Response> {
    let list_meta = || api::read::list_meta(page, false);
    let doc = match &acc.shape {
        Shape::Table(v) => {
            let parts = crate::table::table_parts(res, &page.items, list_meta(), v, true);
            list_body::ListDocument::new(
                parts.head,
                list_body::Items::Rows {
                    objects: parts.objects,
                    cells: parts.cells,
                    include: IncludeObject::parse(q.get("includeObject")),
                    version: v.clone(),
                },
            )
        }
        shape => match crate::table::list_metadata(res, list_meta(), &[], shape) {
            Some(head) => {
                let Shape::PartialObjectMetadataList(v) = shape else {
                    return head.map(|h| respond::object(200, &h, acc, &[]));
                };
                list_body::ListDocument::new(
                    head?,
                    list_body::Items::Metadata {
                        objects: page.items.clone(),
                        version: v.clone(),
                    },
                )
            }
            None => list_body::ListDocument::new(
                api::read::list_head(res, page),
                list_body::Items::Objects {
                    objects: page.items.clone(),
                    strip_type_meta: !res.is_custom(),
                },
            ),
        },
    };
    Ok(list_body::response(doc, acc))
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
        return Err(ApiError::not_acceptable_of(negotiate::SERVED_MEDIA_TYPES));
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
