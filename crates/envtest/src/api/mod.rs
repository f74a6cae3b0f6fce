//! The API operations (create, update, patch, delete, get, list, watch) on top
//! of the store, in the order kube-apiserver runs its steps. The HTTP layer
//! and the in-process controllers both call these.

pub mod admit;
pub mod create;
pub mod delete;
pub mod disruption;
pub mod limit_ranger;
pub mod pods;
pub mod priority;
pub mod read;
pub mod scale;
pub mod update;
pub mod watch;

#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::admission::WebhookRegistry;
use crate::builtin;
use crate::error::{ApiError, ApiResult, Cause, Details};
use crate::http::query::{FieldValidation, WriteOptions};
use crate::meta;
use crate::registry::{Resource, SharedRegistry};
use crate::store::Store;
use crate::typeinfo::{TypeInfo, Untyped};

/// The server's state: storage, served resources, allocators and webhooks.
pub struct App {
    pub store: Arc<Store>,
    pub registry: SharedRegistry,
    /// The stored admission webhook configurations, ready to call.
    pub webhooks: WebhookRegistry,
    /// Serialises [`admit::refresh_configurations`], so that the last refresh
    /// always hands over the newest stored configurations.
    pub(crate) webhook_refresh: Mutex<()>,
    pub allocator: Mutex<builtin::Allocator>,
    /// `host:port` the server listens on (for `/api`'s serverAddressByClientCIDRs).
    pub server_address: std::sync::RwLock<String>,
    /// Set when the server stops: open watches end so connections can close.
    pub closing: tokio::sync::watch::Sender<bool>,
    /// Which of kube-controller-manager's optional controllers run.
    pub cluster_controllers: ClusterControllers,
    /// The request counters `/metrics` serves.
    pub metrics: crate::metrics::Metrics,
    /// Signs and checks the ServiceAccount tokens this server issues.
    pub tokens: crate::tokens::Signer,
    /// Faults to inject into requests and watches (none unless configured).
    pub faults: crate::faults::Faults,
    /// Whether the workload simulation schedules Pods (the scheduler's
    /// health in `componentstatuses`).
    pub simulated_scheduler: bool,
    /// The PEM bundle of the CA that verifies this server, published in
    /// every namespace's `kube-root-ca.crt`; empty while serving plain HTTP.
    pub root_ca: std::sync::RwLock<String>,
}

/// Controllers every cluster runs that kube-apiserver alone lacks, on by
/// default. The recorded transcripts come from a server without them, so
/// their replay turns them off ([`ClusterControllers::none`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterControllers {
    /// Keeps PodDisruptionBudgets' status (what evictions honour).
    pub disruption: bool,
    /// Publishes the `kube-root-ca.crt` ConfigMap in every namespace.
    pub root_ca_publisher: bool,
}

impl Default for ClusterControllers {
    fn default() -> Self {
        ClusterControllers {
            disruption: true,
            root_ca_publisher: true,
        }
    }
}

impl ClusterControllers {
    /// None of them, as in the recorded cluster.
    pub fn none() -> Self {
        ClusterControllers {
            disruption: false,
            root_ca_publisher: false,
        }
    }
}

impl App {
    /// See [`App::root_ca`].
    pub fn root_ca_pem(&self) -> String {
        self.root_ca
            .read()
            .map(|pem| pem.clone())
            .unwrap_or_default()
    }

    /// A server state whose watches and reads of the past reach back `history` changes.
    pub fn new(history: usize) -> App {
        App::with_history(history, history)
    }

    /// Watches resume through the last `watch_history` changes; lists at an
    /// older resourceVersion reach back `read_history` (see [`Store::with_windows`]).
    pub fn with_history(watch_history: usize, read_history: usize) -> App {
        let store = Arc::new(Store::with_windows(watch_history, read_history));
        let cluster = Arc::new(admit::StoreView::new(Arc::clone(&store)));
        App {
            store,
            registry: SharedRegistry::new(crate::registry::Registry::new(Vec::new())),
            webhooks: WebhookRegistry::new(cluster),
            webhook_refresh: Mutex::new(()),
            allocator: Mutex::new(builtin::Allocator::default()),
            server_address: std::sync::RwLock::new(String::new()),
            closing: tokio::sync::watch::Sender::new(false),
            cluster_controllers: ClusterControllers::default(),
            metrics: crate::metrics::Metrics::default(),
            tokens: crate::tokens::Signer::new(),
            faults: crate::faults::Faults::default(),
            simulated_scheduler: false,
            root_ca: std::sync::RwLock::new(String::new()),
        }
    }
}

/// A successful write.
#[derive(Debug, Clone)]
pub struct Written {
    pub code: u16,
    pub body: Arc<Value>,
    pub warnings: Vec<String>,
}

impl Written {
    /// `{"kind": "Status", "status": "Success", "code": 201}`: what a create
    /// that stores nothing of its own answers (pods/binding, pods/eviction).
    pub(crate) fn created_status() -> Written {
        Written {
            code: 201,
            body: Arc::new(serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201
            })),
            warnings: Vec::new(),
        }
    }
}

/// Who writes and how.
#[derive(Debug, Clone)]
pub struct WriteCtx {
    pub manager: String,
    pub opts: WriteOptions,
    /// Who writes: the administrator, or the user it impersonates (sent to
    /// admission webhooks as `userInfo`).
    pub user: crate::admission::UserInfo,
    /// Warnings raised on the way (admission webhooks' warnings), sent as
    /// `Warning` headers whether or not the request succeeds.
    pub warnings: Warnings,
}

impl WriteCtx {
    /// A write with `opts` by `manager`.
    pub fn new(manager: String, opts: WriteOptions) -> WriteCtx {
        WriteCtx {
            manager,
            opts,
            user: crate::admission::UserInfo::default(),
            warnings: Warnings::default(),
        }
    }

    /// A controller's own write (no dry run, unknown fields ignored).
    pub fn internal(manager: &str) -> WriteCtx {
        WriteCtx::new(
            manager.to_string(),
            WriteOptions {
                dry_run: false,
                field_manager: None,
                field_validation: FieldValidation::Ignore,
                force: false,
            },
        )
    }
}

/// The warnings of one request, collected as they arise (kube-apiserver's
/// warning recorder): cloning shares the collection.
#[derive(Debug, Clone, Default)]
pub struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    pub fn extend(&self, warnings: impl IntoIterator<Item = String>) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(warnings);
    }

    /// Everything collected so far, emptying the collection.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The default field manager: the product part of the User-Agent.
pub fn manager_from_user_agent(user_agent: Option<&str>) -> String {
    let ua = user_agent.unwrap_or("").trim();
    let product = ua.split('/').next().unwrap_or("").trim();
    let mut m: String = product.chars().filter(|c| !c.is_control()).collect();
    m.truncate(128);
    m
}

pub(crate) fn not_found(res: &Resource, name: &str) -> ApiError {
    ApiError::not_found(&res.group, &res.plural, name)
}

/// 422 for `causes`. Like apimachinery's aggregate error, the message lists
/// each distinct cause once while `details.causes` keeps them all.
pub(crate) fn invalid(res: &Resource, name: &str, causes: Vec<Cause>) -> ApiError {
    let mut distinct: Vec<Cause> = Vec::new();
    for c in &causes {
        if !distinct.iter().any(|d| d.summary() == c.summary()) {
            distinct.push(c.clone());
        }
    }
    // An events.k8s.io Event is validated as the core Event it is stored as.
    let group = if res.is_events_v1() {
        ""
    } else {
        res.group.as_str()
    };
    let mut err = ApiError::invalid(group, &res.kind, name, distinct);
    if let Some(d) = &mut err.details {
        d.causes = causes;
    }
    err
}

fn is_crd(res: &Resource) -> bool {
    res.group == "apiextensions.k8s.io" && res.plural == "customresourcedefinitions"
}

/// Shape information for patches and managed fields.
pub(crate) fn type_info(res: &Resource) -> &dyn TypeInfo {
    match res.builtin() {
        Some(kind) => builtin::type_info(kind),
        None => match res.schema() {
            Some(s) => s,
            None => &Untyped,
        },
    }
}

/// The internal API group name used in conversion errors (`core`, `apps`, `rbac`).
fn internal_group(group: &str) -> &str {
    if group.is_empty() {
        "core"
    } else {
        group.split('.').next().unwrap_or(group)
    }
}

/// Checks the body's apiVersion/kind against the URL's and fills what is
/// missing, as kube-apiserver's decoder does.
pub(crate) fn check_type_meta(res: &Resource, obj: &mut Value) -> ApiResult<()> {
    let Value::Object(map) = obj else {
        return Err(ApiError::bad_request("the body must be an object"));
    };
    let want_av = res.api_version();
    let av = match map.get("apiVersion") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(ApiError::bad_request(
                "json: cannot unmarshal number into Go struct field .apiVersion of type string",
            ));
        }
    };
    let kind = match map.get("kind") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(ApiError::bad_request(
                "json: cannot unmarshal number into Go struct field .kind of type string",
            ));
        }
    };
    if res.is_custom() {
        custom_type_meta(res, &av, &kind, map)?;
    }
    let av = if av.is_empty() { want_av.clone() } else { av };
    let kind = if kind.is_empty() {
        res.kind.clone()
    } else {
        kind
    };
    let (body_group, body_version) = meta::split_api_version(&av);
    if kind != res.kind || av != want_av {
        let registry_has = crate::registry::is_builtin_kind;
        let detail = if registry_has(body_group, body_version, &kind) && !res.is_custom() {
            format!(
                "converting ({body_version}.{kind}) to ({}.{}): unknown conversion",
                internal_group(&res.group),
                res.kind
            )
        } else {
            format!(
                "no kind {kind:?} is registered for version {av:?} in scheme \"pkg/runtime/scheme.go:100\""
            )
        };
        return Err(ApiError::bad_request(format!(
            "{kind} in version {body_version:?} cannot be handled as a {}: {detail}",
            res.kind
        )));
    }
    map.insert("apiVersion".into(), Value::String(want_av));
    map.insert("kind".into(), Value::String(res.kind.clone()));
    Ok(())
}

/// A custom resource's apiVersion and kind, as its decoder and validator
/// judge them: any kind decodes (a missing one is refused while decoding,
/// see `http::body::require_kind`), the body's group/version must be the
/// URL's (400), and then the kind must be the resource's (422, before any
/// other validation, named by the body's kind).
fn custom_type_meta(
    res: &Resource,
    api_version: &str,
    kind: &str,
    map: &serde_json::Map<String, Value>,
) -> ApiResult<()> {
    let want = res.api_version();
    if api_version != want {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({want})"
        )));
    }
    if kind != res.kind {
        let name = map
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        return Err(ApiError::invalid(
            &res.group,
            kind,
            name,
            vec![Cause::invalid(
                "kind",
                &Value::String(kind.to_string()),
                &format!("must be {}", res.kind),
            )],
        ));
    }
    Ok(())
}

/// Decodes into the kind's shape: built-ins through `builtin::decode`, custom
/// resources by pruning against their schema. Returns the unknown fields.
pub(crate) fn decode(res: &Resource, obj: Value) -> ApiResult<(Value, Vec<String>)> {
    if let Some(kind) = res.builtin() {
        return builtin::decode(kind, obj);
    }
    let mut obj = obj;
    let mut unknown = Vec::new();
    if let Some(Value::Object(m)) = obj.get_mut("metadata") {
        let extra: Vec<String> = m
            .keys()
            .filter(|k| !meta::OBJECT_META_FIELDS.contains(&k.as_str()))
            .cloned()
            .collect();
        for k in extra {
            m.remove(&k);
            unknown.push(format!("metadata.{k}"));
        }
    }
    if let Some(schema) = res.schema() {
        unknown.extend(schema.prune(&mut obj));
    }
    unknown.sort();
    Ok((obj, unknown))
}

/// Applies the `fieldValidation` directive: Strict refuses unknown and
/// duplicate fields, Warn turns them into warnings, Ignore drops them silently.
pub(crate) fn field_validation(
    res: &Resource,
    mode: FieldValidation,
    unknown: &[String],
    duplicates: &[String],
) -> ApiResult<Vec<String>> {
    let mut problems: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field {f:?}"))
        .collect();
    problems.extend(duplicates.iter().map(|f| format!("duplicate field {f:?}")));
    match mode {
        FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(problems),
        FieldValidation::Strict if problems.is_empty() => Ok(Vec::new()),
        FieldValidation::Strict => Err(ApiError::bad_request(format!(
            "{} in version {:?} cannot be handled as a {}: strict decoding error: {}",
            res.kind,
            res.version,
            res.kind,
            problems.join(", ")
        ))),
    }
}

pub(crate) fn apply_defaults(res: &Resource, obj: &mut Value) {
    match res.builtin() {
        Some(kind) => builtin::apply_defaults(kind, obj),
        None => {
            if let Some(schema) = res.schema() {
                schema.apply_defaults(obj);
            }
        }
    }
}

/// 404 when the namespace is missing, 403 when it is terminating.
pub(crate) fn check_namespace_accepts_create(
    app: &App,
    res: &Resource,
    ns: &str,
    name: &str,
) -> ApiResult<()> {
    if !res.namespaced {
        return Ok(());
    }
    let ns_key: crate::store::ResKey = Arc::from("namespaces");
    let Some(ns_obj) = app.store.get(&ns_key, "", ns) else {
        return Err(ApiError::not_found("", "namespaces", ns));
    };
    if meta::is_deleting(&ns_obj) {
        let mut err = ApiError::forbidden(
            &res.group,
            &res.plural,
            name,
            &format!(
                "unable to create new content in namespace {ns} because it is being terminated"
            ),
        );
        if let Some(d) = &mut err.details {
            d.causes.push(Cause::new(
                "NamespaceTerminating",
                "metadata.namespace",
                format!("namespace {ns} is being terminated"),
            ));
        }
        return Err(err);
    }
    Ok(())
}

/// Validation of a new object: the kind's own rules first and, only when
/// they pass, the generic metadata rules (as rest.BeforeCreate does).
pub(crate) fn validate_create(res: &Resource, obj: &Value) -> Vec<Cause> {
    match res.builtin() {
        Some(kind) => {
            // builtin::validate covers CRDs too (schema::validate_crd).
            let causes = builtin::validate(kind, obj, None);
            if !causes.is_empty() {
                return causes;
            }
            builtin::validate_metadata(obj, res.namespaced, true)
        }
        None => {
            // The custom resource validator: names are DNS subdomains.
            let mut causes = builtin::validate_metadata(obj, res.namespaced, false);
            if let Some(schema) = res.schema() {
                causes.extend(schema.validate(obj, None));
            }
            causes
        }
    }
}

fn immutable(field: &str, new: Option<&Value>, old: Option<&Value>) -> Option<Cause> {
    let norm = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
    let (n, o) = (norm(new), norm(old));
    (n != o).then(|| {
        Cause::invalid(
            format!("metadata.{field}"),
            n.as_ref().unwrap_or(&Value::String(String::new())),
            "field is immutable",
        )
    })
}

/// The metadata rules every update obeys (ValidateObjectMetaAccessorUpdate).
pub(crate) fn common_update_causes(new: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if meta::is_deleting(old) {
        let old_f = meta::finalizers(old);
        let added: Vec<String> = meta::finalizers(new)
            .into_iter()
            .filter(|f| !old_f.contains(f))
            .collect();
        if !added.is_empty() {
            let list = added
                .iter()
                .map(|f| format!("{f:?}"))
                .collect::<Vec<_>>()
                .join(", ");
            causes.push(Cause::forbidden(
                "metadata.finalizers",
                &format!("no new finalizers can be added if the object is being deleted, found new finalizers []string{{{list}}}"),
            ));
        }
    }
    if meta::generation(new) < meta::generation(old) {
        causes.push(Cause::invalid(
            "metadata.generation",
            &Value::from(meta::generation(new)),
            "must not be decremented",
        ));
    }
    let empty = Map::new();
    let nm = meta::metadata(new).unwrap_or(&empty);
    let om = meta::metadata(old).unwrap_or(&empty);
    for field in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        causes.extend(immutable(field, nm.get(field), om.get(field)));
    }
    causes
}

/// Validation of an update (generic rules, then the kind's); the warnings
/// of ratcheted rules go to `warnings`.
pub(crate) fn validate_update(
    res: &Resource,
    (new, old): (&Value, &Value),
    subresource: Option<&str>,
    warnings: &mut Vec<String>,
) -> Vec<Cause> {
    let mut causes = common_update_causes(new, old);
    match res.builtin() {
        Some(kind) => causes.extend(match subresource {
            Some(sub) => builtin::validate_subresource(kind, new, old, sub),
            None => builtin::validate(kind, new, Some(old)),
        }),
        None => {
            // The custom resource strategy checks the metadata update rules itself too.
            causes.extend(common_update_causes(new, old));
            causes.extend(
                builtin::validate_metadata(new, res.namespaced, true)
                    .into_iter()
                    .filter(|c| c.field != "metadata.name"),
            );
            if let Some(schema) = res.schema() {
                let (schema_causes, ratcheted) = schema.validate_with_warnings(new, Some(old));
                causes.extend(schema_causes);
                warnings.extend(ratcheted);
            }
        }
    }
    causes
}

/// The RBAC storage's escalation check of a Role, ClusterRole or binding
/// written by `ctx.user` (after mutating admission, before validation).
pub(crate) fn check_escalation(
    app: &App,
    res: &Resource,
    ns: &str,
    ctx: &WriteCtx,
    obj: &Value,
    old: Option<&Value>,
) -> ApiResult<()> {
    if res.builtin().is_none() || !crate::authz::escalation::applies_to(&res.group, &res.plural) {
        return Ok(());
    }
    let write = crate::authz::escalation::Write {
        plural: &res.plural,
        namespace: ns,
        obj,
        old,
    };
    crate::authz::escalation::check(&app.store, &ctx.user, &write)
}

pub(crate) fn is_service(res: &Resource) -> bool {
    res.builtin()
        .is_some_and(|k| k.group.is_empty() && k.kind == "Service")
}

/// Cluster IPs and node ports of a Service (create and update), after the
/// kind's preparation and before validation; their causes are reported alone.
pub(crate) fn allocate(app: &App, res: &Resource, obj: &mut Value, dry_run: bool) -> ApiResult<()> {
    if !is_service(res) {
        return Ok(());
    }
    let mut alloc = app.allocator.lock().unwrap_or_else(|e| e.into_inner());
    alloc
        .allocate_service(obj, dry_run)
        .map_err(|causes| invalid(res, meta::name(obj), causes))
}

/// After a write that allocated for Service `obj` failed (validation,
/// admission, a name already taken): the Service's allocations go back to
/// what its stored object holds, or are released when none is stored.
pub(crate) fn restore_allocation(app: &App, res: &Resource, obj: &Value, dry_run: bool) {
    if dry_run || !is_service(res) {
        return;
    }
    let stored = app
        .store
        .get(&res.store_key, meta::namespace(obj), meta::name(obj));
    let mut alloc = app.allocator.lock().unwrap_or_else(|e| e.into_inner());
    match stored {
        Some(stored) => {
            let mut stored = (*stored).clone();
            // The stored values are this Service's own, so they are free for it.
            let _ = alloc.allocate_service(&mut stored, false);
        }
        None => alloc.release_service(obj),
    }
}

/// A name generated from `generateName`: the prefix cut to 58 bytes, so
/// that with the 5 random characters it fits 63 (kube's name generator).
pub(crate) fn generate_name(generate_name: &str) -> String {
    format!(
        "{}{}",
        generated_name_base(generate_name),
        meta::random_suffix()
    )
}

/// The part of `generateName` a generated name starts with.
pub(crate) fn generated_name_base(generate_name: &str) -> &str {
    const MAX_BASE: usize = 63 - 5;
    let mut cut = generate_name.len().min(MAX_BASE);
    while !generate_name.is_char_boundary(cut) {
        cut -= 1;
    }
    &generate_name[..cut]
}

/// Whether PUT without resourceVersion is allowed (custom resources, CRDs
/// and APIServices refuse it).
pub(crate) fn allows_unconditional_update(res: &Resource) -> bool {
    let apiservice = res.group == "apiregistration.k8s.io" && !res.is_custom();
    !(res.is_custom() || is_crd(res) || apiservice)
}

/// `Operation cannot be fulfilled ...` for stale writes.
pub(crate) fn conflict(res: &Resource, name: &str) -> ApiError {
    ApiError::stale(&res.group, &res.plural, name)
}

/// A 500 with no reason, as the storage layer reports some misuse.
pub(crate) fn internal_no_reason(message: &str) -> ApiError {
    ApiError {
        code: 500,
        reason: String::new(),
        message: message.to_string(),
        details: None,
    }
}

/// `details` naming an object.
pub(crate) fn object_details(res: &Resource, name: &str, uid: &str) -> Details {
    Details {
        name: name.to_string(),
        group: res.group.clone(),
        kind: res.plural.clone(),
        uid: uid.to_string(),
        ..Details::default()
    }
}

/// Compares two objects ignoring managedFields timestamps and resourceVersion:
/// equal means the write changes nothing and is skipped. Compares in place
/// (no copies): this runs on every update.
pub(crate) fn same_content(a: &Value, b: &Value) -> bool {
    fn maps_equal(
        a: &Map<String, Value>,
        b: &Map<String, Value>,
        skip: &dyn Fn(&str) -> bool,
    ) -> bool {
        let keys = |m: &Map<String, Value>| m.keys().filter(|k| !skip(k)).count();
        keys(a) == keys(b)
            && a.iter()
                .filter(|(k, _)| !skip(k))
                .all(|(k, v)| b.get(k).is_some_and(|w| v == w))
    }
    fn managed_equal(a: Option<&Value>, b: Option<&Value>) -> bool {
        match (a, b) {
            (Some(Value::Array(x)), Some(Value::Array(y))) => {
                x.len() == y.len()
                    && x.iter().zip(y).all(|(e, f)| match (e, f) {
                        (Value::Object(e), Value::Object(f)) => maps_equal(e, f, &|k| k == "time"),
                        _ => e == f,
                    })
            }
            (x, y) => x == y,
        }
    }
    let (Value::Object(a), Value::Object(b)) = (a, b) else {
        return a == b;
    };
    if !maps_equal(a, b, &|k| k == "metadata") {
        return false;
    }
    match (a.get("metadata"), b.get("metadata")) {
        (Some(Value::Object(ma)), Some(Value::Object(mb))) => {
            maps_equal(ma, mb, &|k| k == "resourceVersion" || k == "managedFields")
                && managed_equal(ma.get("managedFields"), mb.get("managedFields"))
        }
        (x, y) => x == y,
    }
}
