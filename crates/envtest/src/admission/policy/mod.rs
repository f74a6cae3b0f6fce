//! ValidatingAdmissionPolicies: kube-apiserver's `ValidatingAdmissionPolicy`
//! admission plugin (`admission/plugin/policy/validating` and `generic`),
//! which runs after the mutating webhooks and before the validating ones.
//!
//! A policy applies through each binding that names it: the policy's
//! `matchConstraints` and the binding's `matchResources` select requests;
//! its params (`paramKind`, the binding's `paramRef`) are looked up, and
//! its CEL expressions (`matchConditions`, `variables`, `validations`,
//! `auditAnnotations`) evaluated once per param. Failed validations act as
//! the binding's `validationActions` say: `Deny` refuses the request with
//! kube-apiserver's Status, `Warn` adds a `Warning` header, `Audit` does
//! nothing (envtest has no audit log). Evaluation errors and configuration
//! errors (a param kind that is not served, missing params under
//! `parameterNotFoundAction: Deny`) deny under `failurePolicy: Fail` and are
//! ignored under `Ignore`.
//!
//! # Where envtest differs from kube-apiserver
//! - Policies and bindings take effect for the very next request
//!   (kube-apiserver picks them up within about a second).
//! - The `cel` crate does not type-check: compile errors are syntax errors,
//!   undeclared variables, unknown functions and unknown composited
//!   variables; `status.typeChecking`, which `controllers::policy_status`
//!   keeps, never has `expressionWarnings`.
//! - The `authorizer` variable is declared but not supported: an expression
//!   that uses it fails with an evaluation error.
//! - Objects are CEL values without their OpenAPI types (timestamps are
//!   strings, as in `matchConditions`); error texts come from the `cel` crate
//!   in cel-go's words where `exec_error_text` knows them.
//! - Audit annotations are evaluated (their errors count) but not recorded.
//! - No runtime cost budget.

pub(crate) mod evaluate;
mod matching;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde_json::{Map, Value, json};

use super::attributes::AdmissionAttributes;
use super::cluster::ClusterView;
use crate::error::{ApiError, ApiResult, Cause, Details};
use crate::schema::celvalues::untyped;
use crate::selectors::LabelSelector;
use evaluate::{Denial, Input, PolicyCel};
use matching::MatchResources;

/// What policies need to know about the cluster besides namespace labels.
pub(crate) trait PolicyCluster: ClusterView {
    /// The stored Namespace `name` (for `namespaceObject`).
    fn namespace_object(&self, name: &str) -> Option<Value>;

    /// Whether the `apiVersion`/`kind` of a `paramKind` is served, and if
    /// so whether it is namespaced.
    fn param_scope(&self, api_version: &str, kind: &str) -> Option<ParamScope>;

    /// The objects of a served `paramKind` in `namespace` (empty for a
    /// cluster-scoped kind), as the param kind's version shows them.
    fn param_objects(&self, api_version: &str, kind: &str, namespace: &str) -> Vec<Value>;
}

/// The scope of a param kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParamScope {
    Namespaced,
    Cluster,
}

/// A binding's `paramRef`.
#[derive(Debug)]
struct ParamRef {
    name: String,
    namespace: String,
    selector: Option<Result<LabelSelector, String>>,
    deny_missing: bool,
}

#[derive(Debug)]
struct Binding {
    name: String,
    resources: Option<MatchResources>,
    param_ref: Option<ParamRef>,
    actions: Vec<String>,
}

#[derive(Debug)]
struct Policy {
    name: String,
    fail: bool,
    /// `paramKind`: apiVersion and kind.
    param_kind: Option<(String, String)>,
    constraints: MatchResources,
    cel: PolicyCel,
    /// Sorted by name.
    bindings: Vec<Binding>,
}

fn text(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

impl Binding {
    fn compile(binding: &Value) -> Binding {
        let param_ref = binding
            .pointer("/spec/paramRef")
            .filter(|p| p.is_object())
            .map(|p| ParamRef {
                name: text(p, "/name"),
                namespace: text(p, "/namespace"),
                selector: p
                    .get("selector")
                    .filter(|s| !s.is_null())
                    .map(|s| LabelSelector::from_object(Some(s))),
                deny_missing: text(p, "/parameterNotFoundAction") == "Deny",
            });
        Binding {
            name: text(binding, "/metadata/name"),
            resources: binding
                .pointer("/spec/matchResources")
                .filter(|r| r.is_object())
                .map(|r| MatchResources::compile(Some(r))),
            param_ref,
            actions: crate::admission::compiled_webhooks::strings(
                binding.pointer("/spec/validationActions"),
            ),
        }
    }
}

/// The stored policies with their bindings, compiled.
#[derive(Debug, Default)]
pub(crate) struct PolicySet {
    /// Policies that at least one binding names, sorted by name.
    policies: Vec<Policy>,
}

impl PolicySet {
    fn compile(policies: &[Value], bindings: &[Value]) -> PolicySet {
        let mut by_policy: BTreeMap<String, Vec<Binding>> = BTreeMap::new();
        for binding in bindings {
            let compiled = Binding::compile(binding);
            by_policy
                .entry(text(binding, "/spec/policyName"))
                .or_default()
                .push(compiled);
        }
        let mut compiled = Vec::new();
        for policy in policies {
            let name = text(policy, "/metadata/name");
            let Some(mut bindings) = by_policy.remove(&name) else {
                continue;
            };
            bindings.sort_by(|a, b| a.name.cmp(&b.name));
            let empty = json!({});
            let spec = policy.get("spec").unwrap_or(&empty);
            compiled.push(Policy {
                fail: text(spec, "/failurePolicy") != "Ignore",
                param_kind: spec
                    .get("paramKind")
                    .filter(|p| p.is_object())
                    .map(|p| (text(p, "/apiVersion"), text(p, "/kind"))),
                constraints: MatchResources::compile(spec.get("matchConstraints")),
                cel: PolicyCel::compile(spec),
                bindings,
                name,
            });
        }
        compiled.sort_by(|a, b| a.name.cmp(&b.name));
        PolicySet { policies: compiled }
    }
}

/// What admission through the policies came to: the warnings of `Warn`
/// bindings (sent even when the request is refused) and the verdict.
#[derive(Debug)]
pub(crate) struct PolicyOutcome {
    pub warnings: Vec<String>,
    pub result: ApiResult<()>,
}

/// The compiled policies the server admits requests through; replaced
/// whenever a policy or binding changes.
#[derive(Debug, Default)]
pub(crate) struct PolicyRegistry {
    set: RwLock<Arc<PolicySet>>,
}

/// A configuration error (`generic.PolicyError`).
struct ConfigError {
    policy: String,
    binding: Option<String>,
    message: String,
}

impl ConfigError {
    fn text(&self) -> String {
        match &self.binding {
            Some(binding) => format!(
                "policy '{}' with binding '{binding}' denied request: failed to configure binding: {}",
                self.policy, self.message
            ),
            None => format!(
                "policy {:?} denied request: failed to configure policy: {}",
                self.policy, self.message
            ),
        }
    }
}

/// Policies never apply to policies and bindings themselves.
fn is_policy_resource(attrs: &AdmissionAttributes) -> bool {
    attrs.resource.group == "admissionregistration.k8s.io"
        && matches!(
            attrs.resource.resource.as_str(),
            "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
        )
}

impl PolicyRegistry {
    /// Replaces the policies and bindings: every stored one, as stored.
    pub(crate) fn set(&self, policies: &[Value], bindings: &[Value]) {
        let set = PolicySet::compile(policies, bindings);
        let mut guard = self.set.write().unwrap_or_else(|e| e.into_inner());
        *guard = Arc::new(set);
    }

    /// Whether any policy has a binding.
    pub(crate) fn is_empty(&self) -> bool {
        self.snapshot().policies.is_empty()
    }

    fn snapshot(&self) -> Arc<PolicySet> {
        Arc::clone(&self.set.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Admits `attrs` (the final object, after the mutating webhooks)
    /// through every bound policy.
    pub(crate) fn admit(
        &self,
        attrs: &AdmissionAttributes,
        cluster: &dyn PolicyCluster,
    ) -> PolicyOutcome {
        let mut outcome = PolicyOutcome {
            warnings: Vec::new(),
            result: Ok(()),
        };
        if is_policy_resource(attrs) {
            return outcome;
        }
        let set = self.snapshot();
        let mut denials: Vec<(&Policy, &Binding, Denial)> = Vec::new();
        let mut errors: Vec<ConfigError> = Vec::new();
        for policy in &set.policies {
            policy.admit(
                attrs,
                cluster,
                &mut denials,
                &mut errors,
                &mut outcome.warnings,
            );
        }
        if let Some((policy, binding, denial)) = denials.first() {
            outcome.result = Err(denied(attrs, policy, binding, denial));
        } else if let Some(first) = errors.first() {
            let causes = errors
                .iter()
                .map(|e| Cause::new("", "", e.text()))
                .collect();
            outcome.result = Err(ApiError::new(403, "Forbidden", first.text())
                .with_details(forbidden_details(attrs, causes)));
        }
        outcome
    }
}

impl Policy {
    fn admit<'a>(
        &'a self,
        attrs: &AdmissionAttributes,
        cluster: &dyn PolicyCluster,
        denials: &mut Vec<(&'a Policy, &'a Binding, Denial)>,
        errors: &mut Vec<ConfigError>,
        warnings: &mut Vec<String>,
    ) {
        let mut config_error = |binding: Option<&Binding>, message: String| {
            // Configuration errors obey the failure policy too.
            if self.fail {
                errors.push(ConfigError {
                    policy: self.name.clone(),
                    binding: binding.map(|b| b.name.clone()),
                    message,
                });
            }
        };
        let invocation = match self.constraints.matches(attrs, cluster) {
            Ok(Some(invocation)) => invocation,
            Ok(None) => return,
            Err(e) => return config_error(None, e.message),
        };
        let scope = match &self.param_kind {
            None => None,
            Some((api_version, kind)) => match cluster.param_scope(api_version, kind) {
                Some(scope) => Some(scope),
                None => {
                    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
                    return config_error(
                        None,
                        format!(
                            "failed to find resource referenced by paramKind: '{group}/{version}, Kind={kind}'"
                        ),
                    );
                }
            },
        };
        let (view, object) = invocation.view(attrs, attrs.object.as_ref());
        // Made once, when the first binding selects the request.
        let mut base: Option<Input> = None;
        for binding in &self.bindings {
            match binding
                .resources
                .as_ref()
                .map(|r| r.matches(attrs, cluster))
            {
                Some(Err(e)) => {
                    config_error(Some(binding), e.message);
                    continue;
                }
                Some(Ok(None)) => continue,
                Some(Ok(Some(_))) | None => {}
            }
            let params = match self.params(binding, scope, &attrs.namespace, cluster) {
                Ok(params) => params,
                Err(message) => {
                    config_error(Some(binding), message);
                    continue;
                }
            };
            let base =
                base.get_or_insert_with(|| base_input(&view, object.as_deref(), attrs, cluster));
            for param in params {
                let input = Input {
                    params: param.as_ref().map_or(cel::Value::Null, untyped),
                    ..base.clone()
                };
                for denial in self.cel.validate(&input, self.fail) {
                    for action in &binding.actions {
                        match action.as_str() {
                            "Deny" => denials.push((self, binding, denial.clone())),
                            "Warn" => {
                                let warning = format!(
                                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                                    self.name, binding.name, denial.message
                                );
                                // kube-apiserver's warning recorder drops repeats.
                                if !warnings.contains(&warning) {
                                    warnings.push(warning);
                                }
                            }
                            // Audit: recorded in kube-apiserver's audit log, which envtest lacks.
                            _ => {}
                        }
                    }
                }
            }
        }
    }

    /// `CollectParams`: one `None` when the policy or binding uses no
    /// params, else the params found; `Err` is a configuration error.
    fn params(
        &self,
        binding: &Binding,
        scope: Option<ParamScope>,
        namespace: &str,
        cluster: &dyn PolicyCluster,
    ) -> Result<Vec<Option<Value>>, String> {
        let (Some((api_version, kind)), Some(scope), Some(param_ref)) =
            (&self.param_kind, scope, &binding.param_ref)
        else {
            return Ok(vec![None]);
        };
        let in_namespace = match scope {
            ParamScope::Cluster if !param_ref.namespace.is_empty() => {
                return Err(
                    "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
                        .to_string(),
                );
            }
            ParamScope::Cluster => "",
            ParamScope::Namespaced if !param_ref.namespace.is_empty() => &param_ref.namespace,
            ParamScope::Namespaced if namespace.is_empty() => {
                return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".to_string());
            }
            ParamScope::Namespaced => namespace,
        };
        let objects = cluster.param_objects(api_version, kind, in_namespace);
        let found: Vec<Option<Value>> = if !param_ref.name.is_empty() {
            objects
                .into_iter()
                .filter(|o| crate::meta::name(o) == param_ref.name)
                .map(Some)
                .collect()
        } else if let Some(selector) = &param_ref.selector {
            let selector = selector.as_ref().map_err(Clone::clone)?;
            objects
                .into_iter()
                .filter(|o| {
                    selector.matches_labels(
                        &AdmissionAttributes::labels_of(Some(o)).unwrap_or_default(),
                    )
                })
                .map(Some)
                .collect()
        } else {
            return Err("one of name or selector must be provided".to_string());
        };
        if found.is_empty() && param_ref.deny_missing {
            return Err(
                "no params found for policy binding with `Deny` parameterNotFoundAction"
                    .to_string(),
            );
        }
        Ok(found)
    }
}

/// The variables of an evaluation but `params`.
fn base_input(
    view: &AdmissionAttributes,
    object: Option<&Value>,
    attrs: &AdmissionAttributes,
    cluster: &dyn PolicyCluster,
) -> Input {
    let mut request = view.review_request("", object);
    if let Some(map) = request.as_object_mut() {
        // The request variable leaves the objects out; they have their own variables.
        map.remove("object");
        map.remove("oldObject");
    }
    // A Namespace's own request carries its name as namespace; it has no namespaceObject.
    let namespace = if attrs.resource.is_core_namespaces() {
        None
    } else {
        Some(attrs.namespace.as_str()).filter(|n| !n.is_empty())
    };
    let namespace_object = namespace
        .and_then(|n| cluster.namespace_object(n))
        .map(|ns| namespace_view(&ns));
    Input {
        object: untyped(object.unwrap_or(&Value::Null)),
        old_object: untyped(view.old_object.as_ref().unwrap_or(&Value::Null)),
        request: untyped(&request),
        params: cel::Value::Null,
        namespace_object: untyped(namespace_object.as_ref().unwrap_or(&Value::Null)),
    }
}

/// `CreateNamespaceObject`: the Namespace with the metadata policies may see.
fn namespace_view(namespace: &Value) -> Value {
    const META: [&str; 12] = [
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "finalizers",
    ];
    let mut out = Map::new();
    if let Some(meta) = namespace.get("metadata").and_then(Value::as_object) {
        let kept: Map<String, Value> = META
            .iter()
            .filter_map(|k| meta.get(*k).map(|v| (k.to_string(), v.clone())))
            .collect();
        out.insert("metadata".into(), Value::Object(kept));
    }
    for field in ["spec", "status"] {
        if let Some(v) = namespace.get(field) {
            out.insert(field.into(), v.clone());
        }
    }
    Value::Object(out)
}

/// `admission.NewForbidden`'s details: the request's name (or the object's,
/// or `Unknown`), group and resource.
fn forbidden_details(attrs: &AdmissionAttributes, causes: Vec<Cause>) -> Details {
    Details {
        name: request_name(attrs),
        group: attrs.resource.group.clone(),
        kind: attrs.resource.resource.clone(),
        causes,
        ..Details::default()
    }
}

fn request_name(attrs: &AdmissionAttributes) -> String {
    if !attrs.name.is_empty() {
        return attrs.name.clone();
    }
    let meta = attrs.object.as_ref().and_then(|o| o.get("metadata"));
    let field = |k: &str| {
        meta.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    field("name")
        .or_else(|| field("generateName"))
        .unwrap_or("Unknown")
        .to_string()
}

/// The Status of a denial: `admission.NewForbidden` with the validation's
/// reason (default `Invalid`) and its code, the message repeated as a cause.
fn denied(
    attrs: &AdmissionAttributes,
    policy: &Policy,
    binding: &Binding,
    denial: &Denial,
) -> ApiError {
    let message = format!(
        "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
        policy.name, binding.name, denial.message
    );
    let name = request_name(attrs);
    let full = format!(
        "{} {name:?} is forbidden: {message}",
        attrs.resource.group_resource()
    );
    let reason = denial
        .reason
        .clone()
        .unwrap_or_else(|| "Invalid".to_string());
    let code = match reason.as_str() {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    ApiError::new(code, &reason, full)
        .with_details(forbidden_details(attrs, vec![Cause::new("", "", message)]))
}
