//! The Pod subresources that act rather than store: `pods/binding` (assign a
//! Pod to a node, as a scheduler does) and `pods/eviction` (delete a Pod if
//! its PodDisruptionBudget allows it), as kube-apiserver v1.32's
//! `BindingREST` and `EvictionREST` do. Both answer a `Status`.

use serde_json::{Map, Value, json};

use super::pod_object::{check_preconditions, set_pod_condition};
use super::{WriteCtx, Written, not_found};
use crate::admission::{AdmissionAttributes, GroupVersionKind, GroupVersionResource, Operation};
use crate::app::App;
use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::registry::Resource;
use crate::store::{WriteError, parse_rv};

fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    meta::get_path(value, path)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The body's kind must be `kind` of one of `api_versions` (or left out).
fn check_kind(body: &Value, api_versions: &[&str], kind: &str) -> ApiResult<()> {
    let given_kind = str_at(body, &["kind"]);
    let given_version = str_at(body, &["apiVersion"]);
    let version_ok = given_version.is_empty() || api_versions.contains(&given_version);
    if (given_kind.is_empty() || given_kind == kind) && version_ok {
        return Ok(());
    }
    let (_, version) = meta::split_api_version(given_version);
    Err(ApiError::bad_request(format!(
        "{given_kind} in version {version:?} cannot be handled as a {kind}: no kind {given_kind:?} is registered for version {given_version:?} in scheme \"pkg/runtime/scheme.go:100\""
    )))
}

/// The Pod subresource a create acts on.
struct Target<'a> {
    ns: &'a str,
    name: &'a str,
    /// `binding` or `eviction`.
    sub: &'a str,
    /// The subresource's own kind (a v1 Binding, a policy/v1 Eviction).
    kind: GroupVersionKind,
}

/// Mutating webhooks, ValidatingAdmissionPolicies, then validating webhooks
/// of a create on a Pod subresource whose object is its own kind.
async fn admit(
    app: &App,
    pods: &Resource,
    target: Target<'_>,
    object: Value,
    ctx: &WriteCtx,
) -> ApiResult<Value> {
    let Target {
        ns,
        name,
        sub,
        kind,
    } = target;
    if !app.webhooks.has_mutating() && !app.webhooks.has_validating() && app.policies.is_empty() {
        return Ok(object);
    }
    let mut options = Map::new();
    options.insert("kind".into(), json!("CreateOptions"));
    options.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
    if ctx.opts.dry_run {
        options.insert("dryRun".into(), json!(["All"]));
    }
    let mut attrs = AdmissionAttributes::new(
        Operation::Create,
        kind,
        GroupVersionResource::new(&pods.group, &pods.version, &pods.plural),
        ns,
        name,
    )
    .with_subresource(sub)
    .with_dry_run(ctx.opts.dry_run)
    .with_options(Value::Object(options));
    attrs.user_info = ctx.user.clone();
    attrs.object = Some(object.clone());
    let mutated = app.webhooks.admit_mutating(&attrs).await;
    ctx.warnings.extend(mutated.warnings);
    let object = mutated.result?.unwrap_or(object);
    attrs.object = Some(object.clone());
    super::admit::admit_policies(app, &attrs, &ctx.warnings)?;
    let validated = app.webhooks.admit_validating(&attrs).await;
    ctx.warnings.extend(validated.warnings);
    validated.result?;
    Ok(object)
}

/// POST `pods/<name>/binding`: sets `spec.nodeName` and the PodScheduled
/// condition of an unassigned Pod (the node need not exist); 409 when the
/// Pod is assigned already or being deleted.
pub(crate) async fn bind(
    app: &App,
    pods: &Resource,
    ns: &str,
    name: &str,
    body: Value,
    ctx: &WriteCtx,
) -> ApiResult<Written> {
    check_kind(&body, &["v1"], "Binding")?;
    if meta::name(&body) != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    let mut problems = Vec::new();
    let target_kind = str_at(&body, &["target", "kind"]);
    if !target_kind.is_empty() && target_kind != "Node" {
        problems.push(format!(
            "target.kind: Unsupported value: {target_kind:?}: supported values: \"Node\", \"<empty>\""
        ));
    }
    if str_at(&body, &["target", "name"]).is_empty() {
        problems.push("target.name: Required value".to_string());
    }
    if !problems.is_empty() {
        // An aggregate of field errors, which the server reports as is.
        let message = if problems.len() == 1 {
            problems.remove(0)
        } else {
            format!("[{}]", problems.join(", "))
        };
        return Err(ApiError::internal_no_reason(&message));
    }
    let target = Target {
        ns,
        name,
        sub: "binding",
        kind: GroupVersionKind::new("", "v1", "Binding"),
    };
    let body = admit(app, pods, target, body, ctx).await?;
    let node = str_at(&body, &["target", "name"]).to_string();
    let pre_uid = meta::uid(&body).to_string();
    let pre_rv = meta::resource_version(&body).to_string();
    let annotations = meta::metadata(&body)
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    // Retried on a fresh read whenever another write got in first, without
    // limit (kube-apiserver's GuaranteedUpdate); preconditions are checked
    // on each read.
    loop {
        let stored = app
            .store
            .get(&pods.store_key, ns, name)
            .ok_or_else(|| not_found(pods, name))?;
        let pod = pods.from_storage(&stored);
        check_preconditions(pods, name, &pod, &pre_uid, &pre_rv)?;
        let refuse = |detail: String| ApiError::conflict("", "pods/binding", name, &detail);
        if meta::is_deleting(&pod) {
            return Err(refuse(format!(
                "pod {name} is being deleted, cannot be assigned to a host"
            )));
        }
        let assigned = str_at(&pod, &["spec", "nodeName"]);
        if !assigned.is_empty() {
            return Err(refuse(format!(
                "pod {name} is already assigned to node {assigned:?}"
            )));
        }
        if meta::get_path(&pod, &["spec", "schedulingGates"])
            .and_then(Value::as_array)
            .is_some_and(|gates| !gates.is_empty())
        {
            return Err(refuse(format!(
                "pod {name} has non-empty .spec.schedulingGates"
            )));
        }
        let mut pod = (*pod).clone();
        meta::set_path(&mut pod, &["spec", "nodeName"], json!(node));
        for (key, value) in &annotations {
            meta::set_path(&mut pod, &["metadata", "annotations", key], value.clone());
        }
        set_pod_condition(&mut pod, json!({"type": "PodScheduled", "status": "True"}));
        if ctx.opts.dry_run {
            return Ok(Written::created_status());
        }
        let rv = parse_rv(meta::resource_version(&pod));
        match app
            .store
            .update(&pods.store_key, ns, name, rv, pods.to_storage(pod))
        {
            Ok(_) => return Ok(Written::created_status()),
            Err(WriteError::NotFound) => return Err(not_found(pods, name)),
            Err(_) => continue,
        }
    }
}

/// POST `pods/<name>/eviction`: deletes the Pod when that disrupts nothing
/// its PodDisruptionBudget protects (see [`super::eviction`]).
pub(crate) async fn evict(
    app: &App,
    pods: &Resource,
    ns: &str,
    name: &str,
    body: Value,
    ctx: &WriteCtx,
) -> ApiResult<Written> {
    check_kind(&body, &["policy/v1", "policy/v1beta1"], "Eviction")?;
    if meta::name(&body) != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let body_options = body.get("deleteOptions").filter(|o| !o.is_null());
    if body_options
        .and_then(|o| o.get("ignoreStoreReadErrorWithClusterBreakingPotential"))
        .and_then(Value::as_bool)
        == Some(true)
    {
        return Err(ApiError::invalid(
            "policy",
            "Eviction",
            name,
            vec![Cause::invalid(
                "deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential",
                &json!(true),
                "can not be set for pod eviction, try after removing the option",
            )],
        ));
    }
    let mut options = crate::request::query::delete_options(
        &crate::request::query::Query::parse(None),
        body_options,
    )?;
    // The request's dryRun and the body's must agree (propagateDryRun).
    let body_dry_run = body_options
        .and_then(|o| o.get("dryRun"))
        .and_then(Value::as_array)
        .is_some_and(|d| !d.is_empty());
    if ctx.opts.dry_run && !body_dry_run && body_options.is_some_and(|o| o.get("dryRun").is_some())
    {
        return Err(ApiError::internal_no_reason(
            "Non-matching dry-run options in request and content: [All] and []",
        ));
    }
    options.dry_run = options.dry_run || ctx.opts.dry_run;
    let target = Target {
        ns,
        name,
        sub: "eviction",
        kind: GroupVersionKind::new("policy", "v1", "Eviction"),
    };
    admit(app, pods, target, body, ctx).await?;
    super::eviction::evict(app, pods, ns, name, options).await
}
