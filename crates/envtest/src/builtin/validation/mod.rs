//! Validation of built-in kinds with kube-apiserver's messages, field paths
//! and order (metadata first, then the kind's own rules).

pub(crate) mod admission_policies;
mod apiservices;
mod cluster_kinds;
mod container;
mod control_plane;
mod core;
mod cron;
mod fields;
pub(crate) mod go_syntax;
mod ingress;
pub(crate) mod meta;
mod pod;
mod pod_scheduling;
mod quota_budget;
mod rbac_admission;
mod replication_controller;
pub(crate) mod selector;
mod service;
mod storage;
mod volumes;
pub(crate) mod webhook_configurations;
#[cfg(test)]
mod webhook_configurations_tests;
mod workloads;

use serde_json::Value;

use super::KindInfo;
use super::certificates;
use crate::bootstrap_policy::flowcontrol;
use crate::error::Cause;
use crate::name_rules::{self as names, NameRule};
use webhook_configurations::ConfigurationKind;

fn name_rule(kind: &KindInfo) -> NameRule {
    match (kind.group, kind.kind) {
        ("", "Namespace") => names::name_is_dns_label,
        ("", "Service") => names::name_is_dns1035_label,
        // "We don't care what you call your certificate requests."
        ("rbac.authorization.k8s.io" | "certificates.k8s.io" | "apiregistration.k8s.io", _) => {
            names::name_is_path_segment
        }
        _ => names::name_is_dns_subdomain,
    }
}

/// Kinds validated with the core wrapper of `ValidateObjectMeta`, which also
/// insists on standard or qualified finalizer names.
fn core_meta(kind: &KindInfo) -> bool {
    matches!(
        kind.group,
        "" | "apps" | "batch" | "rbac.authorization.k8s.io"
    )
}

/// See [`super::validate`].
pub(crate) fn validate(kind: &KindInfo, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    validate_through(kind, obj, old, None)
}

/// See [`super::validate_subresource`]: `subresource` is `None` for the
/// object itself.
pub(crate) fn validate_through(
    kind: &KindInfo,
    obj: &Value,
    old: Option<&Value>,
    subresource: Option<&str>,
) -> Vec<Cause> {
    match (kind.group, kind.kind) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            // The CRD validator covers its metadata too (`metadata.name` must
            // be `<plural>.<group>`).
            return crate::schema::validate_crd(obj, old);
        }
        ("", "Event") => {
            return match old {
                None => core::event(obj, false),
                Some(old) => core::event_update(obj, old, false),
            };
        }
        ("events.k8s.io", "Event") => {
            let obj = core_shape(obj);
            return match old {
                None => core::event(&obj, true),
                Some(old) => core::event_update(&obj, &core_shape(old), true),
            };
        }
        _ => {}
    }
    let mut causes = match old {
        None => meta::object_meta(obj, kind.namespaced, name_rule(kind)),
        Some(old) => meta::object_meta_update(obj, old),
    };
    if core_meta(kind) {
        causes.extend(meta::kube_finalizer_names(obj));
    }
    if (kind.group, kind.kind) == ("certificates.k8s.io", "CertificateSigningRequest") {
        let path = match (old, subresource) {
            (None, _) => certificates::Path::Create,
            (Some(_), Some("status")) => certificates::Path::Status,
            (Some(_), Some("approval")) => certificates::Path::Approval,
            (Some(_), _) => certificates::Path::Update,
        };
        causes.extend(certificates::validate(obj, old, path));
    }
    match (kind.group, kind.kind, old, subresource) {
        ("", "Pod", Some(old), Some("ephemeralcontainers")) => {
            causes.extend(pod::ephemeral_containers_update(obj, old));
        }
        // ValidatePersistentVolume[Claim]StatusUpdate: the spec is the
        // stored one, not checked again.
        ("", "PersistentVolumeClaim" | "PersistentVolume", Some(_), Some("status")) => {}
        ("", "Namespace", Some(_), Some("status")) => {
            causes.extend(core::namespace_status(obj));
        }
        _ => causes.extend(kind_rules(kind, obj, old)),
    }
    causes
}

/// An Event in the core/v1 shape, whichever shape it came in.
fn core_shape(event: &Value) -> Value {
    if super::events::is_events_v1_shape(event) {
        super::events::events_v1_to_core(event)
    } else {
        event.clone()
    }
}

fn kind_rules(kind: &KindInfo, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    match (kind.group, kind.kind, old) {
        ("", "ConfigMap", None) => core::config_map(obj),
        ("", "ConfigMap", Some(old)) => {
            let mut causes = core::config_map(obj);
            causes.extend(core::immutable_payload(obj, old, &["data", "binaryData"]));
            causes
        }
        ("", "Secret", None) => core::secret(obj),
        ("", "Secret", Some(old)) => core::secret_update(obj, old),
        ("", "Namespace", _) => core::namespace(obj),
        ("", "Pod", None) => pod::pod_create(obj),
        ("", "Pod", Some(old)) => pod::pod_update(obj, old),
        ("", "PersistentVolumeClaim", None) => storage::claim(obj),
        ("", "PersistentVolumeClaim", Some(old)) => storage::claim_update(obj, old),
        ("", "PersistentVolume", None) => storage::volume(obj),
        ("", "PersistentVolume", Some(old)) => storage::volume_update(obj, old),
        ("", "ResourceQuota", _) => quota_budget::resource_quota(obj),
        ("policy", "PodDisruptionBudget", _) => quota_budget::pod_disruption_budget(obj),
        ("node.k8s.io", "RuntimeClass", None) => cluster_kinds::runtime_class(obj),
        ("node.k8s.io", "RuntimeClass", Some(old)) => cluster_kinds::runtime_class_update(obj, old),
        ("networking.k8s.io", "IngressClass", old) => cluster_kinds::ingress_class(obj, old),
        ("", "PodTemplate", _) => pod::template(obj.get("template"), "template"),
        ("", "ReplicationController", _) => replication_controller::validate(obj),
        ("apiregistration.k8s.io", "APIService", _) => apiservices::apiservice(obj),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema", _) => {
            let fixed = flowcontrol::fixed_spec(flowcontrol::FLOW_SCHEMAS, crate::meta::name(obj));
            control_plane::flow_schema(obj, fixed.as_ref())
        }
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration", _) => {
            let plural = flowcontrol::PRIORITY_LEVELS;
            let fixed = flowcontrol::fixed_spec(plural, crate::meta::name(obj));
            control_plane::priority_level(obj, fixed.as_ref())
        }
        ("", "Service", None) => service::service(obj),
        ("", "Service", Some(old)) => service::service_update(obj, old),
        ("apps", "Deployment", old) => {
            let mut causes = workloads::deployment(obj);
            if let Some(old) = old
                && obj.pointer("/spec/selector") != old.pointer("/spec/selector")
            {
                causes.push(go_syntax::immutable(
                    "spec.selector",
                    &selector::go_selector(obj.pointer("/spec/selector")),
                ));
            }
            causes
        }
        ("apps", "ReplicaSet", old) => {
            let mut causes = workloads::replica_set(obj);
            if let Some(old) = old
                && obj.pointer("/spec/selector") != old.pointer("/spec/selector")
            {
                causes.push(go_syntax::immutable(
                    "spec.selector",
                    &selector::go_selector(obj.pointer("/spec/selector")),
                ));
            }
            causes
        }
        ("apps", "StatefulSet", None) => workloads::stateful_set(obj),
        ("apps", "StatefulSet", Some(old)) => workloads::stateful_set_update(obj, old),
        ("apps", "DaemonSet", old) => {
            let mut causes = workloads::daemon_set(obj);
            if let Some(old) = old
                && obj.pointer("/spec/selector") != old.pointer("/spec/selector")
            {
                causes.push(go_syntax::immutable(
                    "spec.selector",
                    &selector::go_selector(obj.pointer("/spec/selector")),
                ));
            }
            causes
        }
        ("apps", "ControllerRevision", _) => {
            let mut causes = Vec::new();
            if obj.get("data").is_none_or(Value::is_null) {
                causes.push(Cause::required("data", "data is mandatory"));
            }
            if let Some(revision) = obj.get("revision").and_then(Value::as_i64)
                && revision < 0
            {
                causes.push(Cause::invalid(
                    "revision",
                    &Value::from(revision),
                    "must be greater than or equal to 0",
                ));
            }
            causes
        }
        ("batch", "Job", None) => workloads::job(obj, true),
        ("batch", "Job", Some(old)) => workloads::job_update(obj, old),
        ("batch", "CronJob", old) => workloads::cron_job(obj, old),
        ("coordination.k8s.io", "Lease", _) => core::lease(obj),
        ("networking.k8s.io", "Ingress", old) => ingress::ingress(obj, old),
        ("autoscaling", "HorizontalPodAutoscaler", _) => {
            cluster_kinds::horizontal_pod_autoscaler(obj)
        }
        ("scheduling.k8s.io", "PriorityClass", old) => cluster_kinds::priority_class(obj, old),
        ("storage.k8s.io", "StorageClass", _) => cluster_kinds::storage_class(obj),
        ("", "LimitRange", _) => cluster_kinds::limit_range(obj),
        ("rbac.authorization.k8s.io", "Role", _) => rbac_admission::role(obj, true),
        ("rbac.authorization.k8s.io", "ClusterRole", _) => rbac_admission::role(obj, false),
        ("rbac.authorization.k8s.io", "RoleBinding", None) => rbac_admission::binding(obj, true),
        ("rbac.authorization.k8s.io", "RoleBinding", Some(old)) => {
            rbac_admission::binding_update(obj, old, true)
        }
        ("rbac.authorization.k8s.io", "ClusterRoleBinding", None) => {
            rbac_admission::binding(obj, false)
        }
        ("rbac.authorization.k8s.io", "ClusterRoleBinding", Some(old)) => {
            rbac_admission::binding_update(obj, old, false)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy", old) => {
            admission_policies::validate_policy(obj, old)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding", _) => {
            admission_policies::validate_binding(obj)
        }
        ("admissionregistration.k8s.io", kind_name, old) => {
            let kind = if kind_name == "MutatingWebhookConfiguration" {
                ConfigurationKind::Mutating
            } else {
                ConfigurationKind::Validating
            };
            webhook_configurations::validate_configuration(kind, obj, old)
        }
        _ => Vec::new(),
    }
}

/// See [`super::validate_metadata`].
pub(crate) fn validate_metadata(obj: &Value, namespaced: bool, path_segment: bool) -> Vec<Cause> {
    let rule: NameRule = if path_segment {
        names::name_is_path_segment
    } else {
        names::name_is_dns_subdomain
    };
    meta::object_meta(obj, namespaced, rule)
}
