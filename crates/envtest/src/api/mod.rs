//! The API operations (create, update, patch, delete, get, list, watch) on top
//! of the store, in the order kube-apiserver runs its steps. The HTTP layer
//! and the in-process controllers both call these.

pub mod create;
pub mod delete;
pub mod read;
pub mod scale;
pub mod update;
pub mod watch;

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::builtin;
use crate::error::{ApiError, ApiResult, Cause, Details};
use crate::http::query::{FieldValidation, WriteOptions};
use crate::meta;
use crate::registry::{Resource, SharedRegistry};
use crate::store::Store;
use crate::typeinfo::{TypeInfo, Untyped};

/// The server's state: storage, served resources and allocators.
pub struct App {
    pub store: Store,
    pub registry: SharedRegistry,
    pub allocator: Mutex<builtin::Allocator>,
    /// `host:port` the server listens on (for `/api`'s serverAddressByClientCIDRs).
    pub server_address: std::sync::RwLock<String>,
}

impl App {
    pub fn new(watch_history: usize) -> App {
        App {
            store: Store::new(watch_history),
            registry: SharedRegistry::new(crate::registry::Registry::new(Vec::new())),
            allocator: Mutex::new(builtin::Allocator::default()),
            server_address: std::sync::RwLock::new(String::new()),
        }
    }
}

/// A successful write.
#[derive(Debug, Clone)]
pub struct Written {
    pub code: u16,
    pub body: Value,
    pub warnings: Vec<String>,
}

/// Who writes and how.
#[derive(Debug, Clone)]
pub struct WriteCtx {
    pub manager: String,
    pub opts: WriteOptions,
}

impl WriteCtx {
    /// A controller's own write (no dry run, unknown fields ignored).
    pub fn internal(manager: &str) -> WriteCtx {
        WriteCtx {
            manager: manager.to_string(),
            opts: WriteOptions {
                dry_run: false,
                field_manager: None,
                field_validation: FieldValidation::Ignore,
                force: false,
            },
        }
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

pub(crate) fn invalid(res: &Resource, name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid(&res.group, &res.kind, name, causes)
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
    let av = if av.is_empty() { want_av.clone() } else { av };
    let kind = if kind.is_empty() {
        res.kind.clone()
    } else {
        kind
    };
    let (body_group, body_version) = meta::split_api_version(&av);
    let same_kind = kind == res.kind;
    let ok = if res.is_custom() {
        same_kind
            && body_group == res.group
            && res
                .custom()
                .is_some_and(|c| c.version(body_version).is_some_and(|v| v.served))
    } else {
        same_kind && av == want_av
    };
    if !ok {
        let registry_has = |g: &str, v: &str, k: &str| {
            builtin::kinds()
                .iter()
                .any(|b| b.group == g && b.version == v && b.kind == k)
        };
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

const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

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
            .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
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
            let causes = builtin::validate(kind, obj, None);
            if !causes.is_empty() {
                return causes;
            }
            builtin::validate_metadata(obj, res.namespaced, true)
        }
        None => {
            let mut causes = builtin::validate_metadata(obj, res.namespaced, true);
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

/// Validation of an update (generic rules, then the kind's).
pub(crate) fn validate_update(res: &Resource, new: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = common_update_causes(new, old);
    match res.builtin() {
        Some(kind) => causes.extend(builtin::validate(kind, new, Some(old))),
        None => {
            // The custom resource strategy checks the metadata update rules itself too.
            causes.extend(common_update_causes(new, old));
            causes.extend(
                builtin::validate_metadata(new, res.namespaced, true)
                    .into_iter()
                    .filter(|c| c.field != "metadata.name"),
            );
            if let Some(schema) = res.schema() {
                causes.extend(schema.validate(new, Some(old)));
            }
        }
    }
    causes
}

/// Random suffix of generated names (kube's alphabet without vowels).
pub(crate) fn random_suffix() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// Whether PUT without resourceVersion is allowed (custom resources and CRDs refuse it).
pub(crate) fn allows_unconditional_update(res: &Resource) -> bool {
    !(res.is_custom()
        || (res.group == "apiextensions.k8s.io" && res.plural == "customresourcedefinitions"))
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
/// equal means the write changes nothing and is skipped.
pub(crate) fn same_content(a: &Value, b: &Value) -> bool {
    fn strip(v: &Value) -> Value {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
            if let Some(Value::Array(mf)) = m.get_mut("managedFields") {
                for e in mf {
                    if let Some(e) = e.as_object_mut() {
                        e.remove("time");
                    }
                }
            }
        }
        v
    }
    strip(a) == strip(b)
}
