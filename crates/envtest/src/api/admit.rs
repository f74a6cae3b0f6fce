//! The admission seam: where the API operations call the admission webhooks
//! of `crate::admission`. kube-apiserver runs mutating webhooks after an
//! object is decoded and defaulted (and its managed fields recorded), and
//! validating webhooks after the object passed validation, just before it is
//! stored; DELETE runs both with the stored object as `oldObject`.
//!
//! The calls are async and run with no lock held: the operations read the
//! store, call the webhooks, and write with an optimistic-concurrency check,
//! retrying from the start when the object changed in between, as
//! kube-apiserver's storage does.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::WriteCtx;
use crate::admission::{
    AdmissionAttributes, ClusterView, GroupVersionKind, GroupVersionResource, Operation,
    ParamScope, PolicyCluster, internal_error,
};
use crate::app::App;
use crate::app::StoreView;
use crate::error::ApiResult;
use crate::meta;
use crate::registry::Resource;
use crate::request::query::{DeleteOptions, Propagation, WriteOptions};
use crate::store::ResKey;
use crate::user::UserInfo;

const GROUP: &str = "admissionregistration.k8s.io";
const MUTATING: &str = "mutatingwebhookconfigurations";
const VALIDATING: &str = "validatingwebhookconfigurations";
const POLICIES: &str = "validatingadmissionpolicies";
const BINDINGS: &str = "validatingadmissionpolicybindings";

/// Whether `res` is a webhook configuration, an admission policy or a binding.
pub(crate) fn is_admission_configuration(res: &Resource) -> bool {
    res.group == GROUP
        && !res.is_custom()
        && [MUTATING, VALIDATING, POLICIES, BINDINGS].contains(&res.plural.as_str())
}

/// Whether a change to storage `key` changes the webhook configurations or
/// the admission policies.
pub(crate) fn is_configuration_key(key: &str) -> bool {
    key.strip_prefix(GROUP)
        .and_then(|k| k.strip_prefix('/'))
        .is_some_and(|plural| [MUTATING, VALIDATING, POLICIES, BINDINGS].contains(&plural))
}

/// Hands every stored webhook configuration to the webhook registry. Called
/// after each write of a configuration (so the next request sees it) and by
/// the controllers on every change of one (writes of the garbage collector).
pub(crate) fn refresh_configurations(app: &App) {
    let _serial = app
        .webhook_refresh
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let list = |plural: &str| -> Vec<Value> {
        let key: ResKey = Arc::from(format!("{GROUP}/{plural}"));
        let (items, _) = app.store.list(&key, None, None);
        items.into_iter().map(|(_, v)| (*v).clone()).collect()
    };
    app.webhooks
        .set_configurations(&list(MUTATING), &list(VALIDATING));
    app.policies.set(&list(POLICIES), &list(BINDINGS));
}

/// What admission policies see of the cluster: namespaces and params,
/// read from the store through the served resources.
struct PolicyView<'a> {
    app: &'a App,
    namespaces: StoreView,
}

impl<'a> PolicyView<'a> {
    fn new(app: &'a App) -> PolicyView<'a> {
        PolicyView {
            app,
            namespaces: StoreView::new(Arc::clone(&app.store)),
        }
    }

    fn param_resource(&self, api_version: &str, kind: &str) -> Option<Arc<Resource>> {
        let (group, version) = meta::split_api_version(api_version);
        self.app.registry.load().by_kind(group, version, kind)
    }
}

impl ClusterView for PolicyView<'_> {
    fn namespace_labels(&self, name: &str) -> Option<BTreeMap<String, String>> {
        self.namespaces.namespace_labels(name)
    }
}

impl PolicyCluster for PolicyView<'_> {
    fn namespace_object(&self, name: &str) -> Option<Value> {
        let ns = self.app.store.get(&self.namespaces.namespaces, "", name)?;
        Some((*ns).clone())
    }

    fn param_scope(&self, api_version: &str, kind: &str) -> Option<ParamScope> {
        self.param_resource(api_version, kind).map(|r| {
            if r.namespaced {
                ParamScope::Namespaced
            } else {
                ParamScope::Cluster
            }
        })
    }

    fn param_objects(&self, api_version: &str, kind: &str, namespace: &str) -> Vec<Value> {
        let Some(res) = self.param_resource(api_version, kind) else {
            return Vec::new();
        };
        let namespace = Some(namespace).filter(|n| res.namespaced && !n.is_empty());
        let (items, _) = self.app.store.list(&res.store_key, namespace, None);
        items
            .into_iter()
            .map(|(_, stored)| (*res.from_storage(&stored)).clone())
            .collect()
    }
}

/// Admission through the ValidatingAdmissionPolicies of `attrs`, whose
/// warnings go with the response whatever the outcome.
pub(crate) fn admit_policies(
    app: &App,
    attrs: &AdmissionAttributes,
    warnings: &super::Warnings,
) -> ApiResult<()> {
    if app.policies.is_empty() {
        return Ok(());
    }
    let outcome = app.policies.admit(attrs, &PolicyView::new(app));
    warnings.extend(outcome.warnings);
    outcome.result
}

/// One request as the webhooks are told about it.
pub(crate) struct Request<'a> {
    pub res: &'a Resource,
    pub namespace: &'a str,
    pub name: &'a str,
    /// `None`, `Some("status")`, `Some("scale")`.
    pub subresource: Option<&'a str>,
    pub operation: Operation,
    pub dry_run: bool,
    /// The request's options, turned into the `CreateOptions` /
    /// `UpdateOptions` / `DeleteOptions` object only when a webhook is called.
    pub options: Options<'a>,
    /// Who asks (the administrator, or the user it impersonates).
    pub user: &'a UserInfo,
}

/// The options of a request, as the webhooks are sent them.
pub(crate) enum Options<'a> {
    Create(&'a WriteOptions),
    Update(&'a WriteOptions),
    Delete(&'a DeleteOptions),
}

impl Options<'_> {
    fn to_json(&self) -> Value {
        match self {
            Options::Create(opts) => write_options("CreateOptions", opts),
            Options::Update(opts) => write_options("UpdateOptions", opts),
            Options::Delete(opts) => delete_options(opts),
        }
    }
}

impl Request<'_> {
    fn is_scale(&self) -> bool {
        self.subresource == Some("scale")
    }

    /// The attributes for `object` (as the request sees it) and `old`.
    fn attributes(
        &self,
        name: &str,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> ApiResult<AdmissionAttributes> {
        let res = self.res;
        // A /scale request is admitted as the autoscaling/v1 Scale it writes.
        let (kind, view) = if self.is_scale() {
            let scale = |o: &Value| super::scale_view::to_scale(res, o);
            (
                GroupVersionKind::new("autoscaling", "v1", "Scale"),
                (object.map(scale).transpose()?, old.map(scale).transpose()?),
            )
        } else {
            (
                GroupVersionKind::new(&res.group, &res.version, &res.kind),
                (object.cloned(), old.cloned()),
            )
        };
        let mut attrs = AdmissionAttributes::new(
            self.operation,
            kind,
            GroupVersionResource::new(&res.group, &res.version, &res.plural),
            self.namespace,
            name,
        )
        .with_subresource(self.subresource.unwrap_or(""))
        .with_dry_run(self.dry_run)
        .with_options(self.options.to_json());
        attrs.user_info = self.user.clone();
        attrs.object = view.0;
        attrs.old_object = view.1;
        attrs.equivalents = self.equivalents(&attrs.kind);
        Ok(attrs)
    }

    /// The other served versions of a custom resource (that serve the same
    /// subresource), for webhooks with `matchPolicy: Equivalent`.
    fn equivalents(
        &self,
        kind: &GroupVersionKind,
    ) -> Vec<(GroupVersionKind, GroupVersionResource)> {
        let Some(custom) = self.res.custom() else {
            return Vec::new();
        };
        custom
            .versions
            .iter()
            .filter(|v| v.served && v.name != self.res.version)
            .filter(|v| match self.subresource {
                Some("status") => v.status,
                Some("scale") => v.scale.is_some(),
                _ => true,
            })
            .map(|v| {
                // A Scale is the same autoscaling/v1 Scale in every version.
                let kind = if self.is_scale() {
                    kind.clone()
                } else {
                    GroupVersionKind::new(&custom.group, &v.name, &custom.kind)
                };
                (
                    kind,
                    GroupVersionResource::new(&custom.group, &v.name, &custom.plural),
                )
            })
            .collect()
    }
}

/// `CreateOptions` or `UpdateOptions` as kube-apiserver hands them to webhooks.
fn write_options(kind: &str, opts: &WriteOptions) -> Value {
    let mut map = Map::new();
    map.insert("kind".into(), json!(kind));
    map.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
    if opts.dry_run {
        map.insert("dryRun".into(), json!(["All"]));
    }
    if let Some(manager) = &opts.field_manager {
        map.insert("fieldManager".into(), json!(manager));
    }
    Value::Object(map)
}

/// `DeleteOptions` as kube-apiserver hands them to webhooks.
fn delete_options(opts: &DeleteOptions) -> Value {
    let mut map = Map::new();
    map.insert("kind".into(), json!("DeleteOptions"));
    map.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
    if let Some(grace) = opts.grace_period {
        map.insert("gracePeriodSeconds".into(), json!(grace));
    }
    let mut pre = Map::new();
    if let Some(uid) = &opts.precondition_uid {
        pre.insert("uid".into(), json!(uid));
    }
    if let Some(rv) = &opts.precondition_rv {
        pre.insert("resourceVersion".into(), json!(rv));
    }
    if !pre.is_empty() {
        map.insert("preconditions".into(), Value::Object(pre));
    }
    if let Some(policy) = opts.propagation {
        let policy = match policy {
            Propagation::Foreground => "Foreground",
            Propagation::Background => "Background",
            Propagation::Orphan => "Orphan",
        };
        map.insert("propagationPolicy".into(), json!(policy));
    }
    if opts.dry_run {
        map.insert("dryRun".into(), json!(["All"]));
    }
    Value::Object(map)
}

/// Mutating admission of `object` (CREATE, UPDATE). Returns the object to go
/// on with; when a webhook changed it, it is decoded and defaulted again, as
/// kube-apiserver decodes a patched object into its type and defaults it.
pub(crate) async fn mutate(
    app: &App,
    req: &Request<'_>,
    object: Value,
    old: Option<&Value>,
    ctx: &WriteCtx,
) -> ApiResult<Value> {
    if !app.webhooks.has_mutating() {
        return Ok(object);
    }
    let attrs = req.attributes(req.name, Some(&object), old)?;
    // kube-apiserver runs its own admission plugins again when a webhook
    // changed the object (they ran once before the webhooks, in `create`).
    let builtin_kind = req
        .res
        .builtin()
        .filter(|_| req.operation == Operation::Create);
    let in_tree = |object: &mut Value| {
        if let Some(kind) = builtin_kind {
            // The account was found before the webhooks ran; one a webhook
            // named instead is taken as found (kube-apiserver would look
            // it up again).
            let account =
                super::service_account::pod_service_account(app, kind, req.namespace, object);
            crate::builtin::admit_create(kind, object, account.ok().flatten().as_deref());
        }
    };
    let outcome = app.webhooks.admit_mutating_with(&attrs, &in_tree).await;
    ctx.warnings.extend(outcome.warnings);
    let Some(mutated) = outcome.result? else {
        return Ok(object);
    };
    if attrs.object.as_ref() == Some(&mutated) {
        return Ok(object);
    }
    if req.is_scale() {
        return scale_back(req.res, object, &mutated);
    }
    redecode(req.res, mutated)
}

/// The replicas of a mutated Scale written back into the scaled object.
fn scale_back(res: &Resource, mut object: Value, scale: &Value) -> ApiResult<Value> {
    let replicas = scale
        .pointer("/spec/replicas")
        .cloned()
        .unwrap_or(Value::Null);
    if !(replicas.is_i64() || replicas.is_null()) {
        return Err(internal_error(&format!(
            "json: cannot unmarshal {} into Go struct field ScaleSpec.spec.replicas of type int32",
            crate::gofmt::json_kind(&replicas)
        )));
    }
    super::scale_view::set_replicas(res, &mut object, replicas.as_i64().unwrap_or(0))?;
    Ok(object)
}

/// A webhook's object back into the kind's shape: unknown fields of built-in
/// kinds dropped (pruned for custom resources), defaults applied. A webhook
/// that breaks the kind's types fails the request with 500.
fn redecode(res: &Resource, object: Value) -> ApiResult<Value> {
    let mut object = object;
    super::check_type_meta(res, &mut object).map_err(|e| internal_error(&e.message))?;
    let (mut object, _unknown) =
        super::decode(res, object).map_err(|e| internal_error(&e.message))?;
    super::apply_defaults(res, &mut object);
    Ok(object)
}

/// Validating admission of the final `object` (CREATE, UPDATE): the
/// ValidatingAdmissionPolicies, then the validating webhooks.
pub(crate) async fn validate(
    app: &App,
    req: &Request<'_>,
    object: &Value,
    old: Option<&Value>,
    ctx: &WriteCtx,
) -> ApiResult<()> {
    if !app.webhooks.has_validating() && app.policies.is_empty() {
        return Ok(());
    }
    let attrs = req.attributes(meta::name(object), Some(object), old)?;
    admit_policies(app, &attrs, &ctx.warnings)?;
    if !app.webhooks.has_validating() {
        return Ok(());
    }
    let outcome = app.webhooks.admit_validating(&attrs).await;
    ctx.warnings.extend(outcome.warnings);
    outcome.result
}

/// Admission of a DELETE of `stored`: mutating then validating webhooks, both
/// with the stored object as `oldObject` and no object (kube-apiserver's
/// delete validation).
pub(crate) async fn delete(
    app: &App,
    req: &Request<'_>,
    stored: &Value,
    warnings: &super::Warnings,
) -> ApiResult<()> {
    if !app.webhooks.has_mutating() && !app.webhooks.has_validating() && app.policies.is_empty() {
        return Ok(());
    }
    let attrs = req.attributes(req.name, None, Some(stored))?;
    let mutated = app.webhooks.admit_mutating(&attrs).await;
    warnings.extend(mutated.warnings);
    mutated.result?;
    admit_policies(app, &attrs, warnings)?;
    let validated = app.webhooks.admit_validating(&attrs).await;
    warnings.extend(validated.warnings);
    validated.result
}
