//! The generic checks of writes: the namespace accepts the object, the
//! kind's and metadata's validation of creates and updates, RBAC escalation,
//! and whether an update may omit its resourceVersion.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::builtin;
use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::registry::Resource;

use super::write::WriteCtx;
use crate::app::App;

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
fn common_update_causes(new: &Value, old: &Value) -> Vec<Cause> {
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

/// Whether PUT without resourceVersion is allowed: custom resources refuse
/// it, and so do the built-in kinds whose v1.32 strategies say
/// `AllowUnconditionalUpdate() false` (their rows of the kinds table:
/// CRDs, APIServices, CSIDriver, CSINode, CSIStorageCapacity,
/// VolumeAttachment).
pub(crate) fn allows_unconditional_update(res: &Resource) -> bool {
    res.builtin().is_some_and(|k| k.unconditional_update)
}
