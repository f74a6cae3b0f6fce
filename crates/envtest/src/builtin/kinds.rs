//! The one table of built-in kinds. envtest serves every row (routing,
//! discovery, typed decoding through the row's k8s-openapi type) and opctl's
//! scaffolder offers every row a controller can watch to
//! `create api --resource=false` and `create webhook`.
//!
//! Adding a kind is one row here: group, version, kind, resource name and
//! scope come from its k8s-openapi type; the row adds what discovery lists
//! besides (singular name, short names, categories, verbs, subresources).
//! Kind-specific behaviour is optional and lives beside: defaults
//! (`defaults/`), validation (`validation/`), `kubectl get` columns
//! (`tables/`), list merge keys (`listtypes.rs`), and the sample object
//! opctl's generated controller and webhook e2e tests create
//! (`src/project/builtin_samples.rs` in opctl, which a test there requires
//! for every row).

use k8s_openapi::api::{
    admissionregistration::v1 as admissionregistration, apps::v1 as apps,
    authentication::v1 as authentication, authorization::v1 as authorization,
    autoscaling::v1 as autoscaling_v1, autoscaling::v2 as autoscaling, batch::v1 as batch,
    certificates::v1 as certificates, coordination::v1 as coordination, core::v1 as core,
    discovery::v1 as discovery, events::v1 as events, flowcontrol::v1 as flowcontrol,
    networking::v1 as networking, node::v1 as node, policy::v1 as policy, rbac::v1 as rbac,
    scheduling::v1 as scheduling, storage::v1 as storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope, Resource};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::decode::Codec;
use super::{KindInfo, StoredAs, Subresource};

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Namespaces cannot be deleted as a collection.
const NAMESPACE_VERBS: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

/// Reviews (`kubectl auth can-i`, `kubectl auth whoami`) are created and
/// answered, never stored.
const REVIEW_VERBS: &[&str] = &["create"];

/// Read-only answers made when asked (`componentstatuses`).
const READ_ONLY_VERBS: &[&str] = &["get", "list"];

const ALL: &[&str] = &["all"];
const API_EXTENSIONS: &[&str] = &["api-extensions"];

/// Whether a k8s-openapi scope type is namespaced.
trait Scope {
    const NAMESPACED: bool;
}

impl Scope for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl Scope for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// The row of k8s-openapi type `K`: all verbs, no short names, categories
/// or subresources until the builder methods below add them.
const fn of<K>(singular: &'static str) -> KindInfo
where
    K: Resource + Serialize + DeserializeOwned + JsonSchema,
    K::Scope: Scope,
{
    KindInfo {
        group: K::GROUP,
        version: K::VERSION,
        kind: K::KIND,
        plural: K::URL_PATH_SEGMENT,
        singular,
        namespaced: <K::Scope as Scope>::NAMESPACED,
        short_names: &[],
        categories: &[],
        verbs: ALL_VERBS,
        has_status: false,
        has_scale: false,
        other_subresources: &[],
        stored_as: None,
        deprecation: None,
        create_on_update: false,
        unconditional_update: true,
        returns_deleted_object: false,
        codec: Codec::of::<K>(),
    }
}

/// A review: created and answered, never stored.
const fn review<K>() -> KindInfo
where
    K: Resource + Serialize + DeserializeOwned + JsonSchema,
    K::Scope: Scope,
{
    of::<K>("").verbs(REVIEW_VERBS)
}

impl KindInfo {
    const fn short(self, short_names: &'static [&'static str]) -> KindInfo {
        KindInfo {
            short_names,
            ..self
        }
    }

    const fn categories(self, categories: &'static [&'static str]) -> KindInfo {
        KindInfo { categories, ..self }
    }

    const fn verbs(self, verbs: &'static [&'static str]) -> KindInfo {
        KindInfo { verbs, ..self }
    }

    /// Served with a `/status` subresource.
    const fn status(self) -> KindInfo {
        KindInfo {
            has_status: true,
            ..self
        }
    }

    /// Served with a `/scale` subresource.
    const fn scale(self) -> KindInfo {
        KindInfo {
            has_scale: true,
            ..self
        }
    }

    /// Stored as another kind's objects.
    const fn stored_as(self, storage: StoredAs) -> KindInfo {
        KindInfo {
            stored_as: Some(storage),
            ..self
        }
    }

    /// Deprecated: every request carries this Warning.
    const fn deprecated(self, warning: &'static str) -> KindInfo {
        KindInfo {
            deprecation: Some(warning),
            ..self
        }
    }

    /// A PUT of a missing object creates it (its strategy's
    /// `AllowCreateOnUpdate`).
    const fn creates_on_update(self) -> KindInfo {
        KindInfo {
            create_on_update: true,
            ..self
        }
    }

    /// A PUT must name the resourceVersion it replaces (its strategy's
    /// `AllowUnconditionalUpdate` is false).
    const fn conditional_updates_only(self) -> KindInfo {
        KindInfo {
            unconditional_update: false,
            ..self
        }
    }

    /// A DELETE answers with the deleted object (its registry's
    /// `ReturnDeletedObject`).
    const fn returns_deleted_object(self) -> KindInfo {
        KindInfo {
            returns_deleted_object: true,
            ..self
        }
    }

    /// Served with these subresources too.
    const fn subresources(self, other_subresources: &'static [Subresource]) -> KindInfo {
        KindInfo {
            other_subresources,
            ..self
        }
    }
}

const READ_WRITE: &[&str] = &["get", "patch", "update"];
const STREAM: &[&str] = &["create", "get"];
const PROXY: &[&str] = &["create", "delete", "get", "patch", "update"];

/// A subresource that answers with the resource's own kind.
const fn own(name: &'static str, verbs: &'static [&'static str]) -> Subresource {
    Subresource {
        name,
        group: None,
        kind: None,
        verbs,
    }
}

/// A subresource that answers with another kind of the resource's group.
const fn other(
    name: &'static str,
    kind: &'static str,
    verbs: &'static [&'static str],
) -> Subresource {
    Subresource {
        name,
        group: None,
        kind: Some(kind),
        verbs,
    }
}

/// Pods' subresources besides `status`.
const POD_SUBRESOURCES: &[Subresource] = &[
    other("attach", "PodAttachOptions", STREAM),
    other("binding", "Binding", &["create"]),
    own("ephemeralcontainers", READ_WRITE),
    Subresource {
        name: "eviction",
        group: Some(("policy", "v1")),
        kind: Some("Eviction"),
        verbs: &["create"],
    },
    other("exec", "PodExecOptions", STREAM),
    own("log", &["get"]),
    other("portforward", "PodPortForwardOptions", STREAM),
    other("proxy", "PodProxyOptions", PROXY),
];

/// Ordered by group, then resource name, as discovery lists them.
pub(super) static KINDS: &[KindInfo] = &[
    // core/v1 (`bindings`: pods/binding by the Binding's name)
    of::<core::Binding>("binding").verbs(REVIEW_VERBS),
    of::<core::ComponentStatus>("componentstatus")
        .short(&["cs"])
        .verbs(READ_ONLY_VERBS)
        .deprecated("v1 ComponentStatus is deprecated in v1.19+"),
    of::<core::ConfigMap>("configmap").short(&["cm"]),
    of::<core::Endpoints>("endpoints")
        .short(&["ep"])
        .creates_on_update(),
    of::<core::Event>("event")
        .short(&["ev"])
        .creates_on_update(),
    of::<core::LimitRange>("limitrange")
        .short(&["limits"])
        .creates_on_update(),
    of::<core::Namespace>("namespace")
        .short(&["ns"])
        .verbs(NAMESPACE_VERBS)
        .status()
        .subresources(&[own("finalize", &["update"])]),
    of::<core::Node>("node")
        .short(&["no"])
        .status()
        .subresources(&[other("proxy", "NodeProxyOptions", PROXY)]),
    of::<core::PersistentVolumeClaim>("persistentvolumeclaim")
        .short(&["pvc"])
        .status(),
    of::<core::PersistentVolume>("persistentvolume")
        .short(&["pv"])
        .status(),
    of::<core::Pod>("pod")
        .short(&["po"])
        .categories(ALL)
        .status()
        .subresources(POD_SUBRESOURCES)
        .returns_deleted_object(),
    of::<core::PodTemplate>("podtemplate"),
    of::<core::ReplicationController>("replicationcontroller")
        .short(&["rc"])
        .categories(ALL)
        .status()
        .scale(),
    of::<core::ResourceQuota>("resourcequota")
        .short(&["quota"])
        .status(),
    of::<core::Secret>("secret"),
    of::<core::ServiceAccount>("serviceaccount")
        .short(&["sa"])
        .subresources(&[Subresource {
            name: "token",
            group: Some(("authentication.k8s.io", "v1")),
            kind: Some("TokenRequest"),
            verbs: &["create"],
        }])
        .returns_deleted_object(),
    of::<core::Service>("service")
        .short(&["svc"])
        .categories(ALL)
        .status()
        .subresources(&[other("proxy", "ServiceProxyOptions", PROXY)])
        .creates_on_update()
        .returns_deleted_object(),
    // admissionregistration.k8s.io/v1
    of::<admissionregistration::MutatingWebhookConfiguration>("mutatingwebhookconfiguration")
        .categories(API_EXTENSIONS),
    of::<admissionregistration::ValidatingAdmissionPolicy>("validatingadmissionpolicy")
        .categories(API_EXTENSIONS)
        .status(),
    of::<admissionregistration::ValidatingAdmissionPolicyBinding>(
        "validatingadmissionpolicybinding",
    )
    .categories(API_EXTENSIONS),
    of::<admissionregistration::ValidatingWebhookConfiguration>("validatingwebhookconfiguration")
        .categories(API_EXTENSIONS),
    // apiextensions.k8s.io/v1
    of::<apiextensions::CustomResourceDefinition>("customresourcedefinition")
        .short(&["crd", "crds"])
        .categories(API_EXTENSIONS)
        .status()
        .conditional_updates_only(),
    // apiregistration.k8s.io/v1
    of::<apiregistration::APIService>("apiservice")
        .categories(API_EXTENSIONS)
        .status()
        .conditional_updates_only(),
    // apps/v1
    of::<apps::ControllerRevision>("controllerrevision"),
    of::<apps::DaemonSet>("daemonset")
        .short(&["ds"])
        .categories(ALL)
        .status(),
    of::<apps::Deployment>("deployment")
        .short(&["deploy"])
        .categories(ALL)
        .status()
        .scale(),
    of::<apps::ReplicaSet>("replicaset")
        .short(&["rs"])
        .categories(ALL)
        .status()
        .scale(),
    of::<apps::StatefulSet>("statefulset")
        .short(&["sts"])
        .categories(ALL)
        .status()
        .scale(),
    // authentication.k8s.io/v1, authorization.k8s.io/v1
    review::<authentication::SelfSubjectReview>(),
    review::<authentication::TokenReview>(),
    review::<authorization::LocalSubjectAccessReview>(),
    review::<authorization::SelfSubjectAccessReview>(),
    review::<authorization::SelfSubjectRulesReview>(),
    review::<authorization::SubjectAccessReview>(),
    // autoscaling/v2
    of::<autoscaling::HorizontalPodAutoscaler>("horizontalpodautoscaler")
        .short(&["hpa"])
        .categories(ALL)
        .status(),
    // batch/v1
    of::<batch::CronJob>("cronjob")
        .short(&["cj"])
        .categories(ALL)
        .status(),
    of::<batch::Job>("job").categories(ALL).status(),
    // certificates.k8s.io/v1
    of::<certificates::CertificateSigningRequest>("certificatesigningrequest")
        .short(&["csr"])
        .status()
        .subresources(&[own("approval", READ_WRITE)]),
    // coordination.k8s.io/v1
    of::<coordination::Lease>("lease").creates_on_update(),
    // discovery.k8s.io/v1
    of::<discovery::EndpointSlice>("endpointslice"),
    // events.k8s.io/v1, a second view of core/v1 Events
    of::<events::Event>("event")
        .short(&["ev"])
        .stored_as(StoredAs::CoreEvents)
        .creates_on_update(),
    // flowcontrol.apiserver.k8s.io/v1
    of::<flowcontrol::FlowSchema>("flowschema").status(),
    of::<flowcontrol::PriorityLevelConfiguration>("prioritylevelconfiguration").status(),
    // networking.k8s.io/v1
    of::<networking::IngressClass>("ingressclass"),
    of::<networking::Ingress>("ingress")
        .short(&["ing"])
        .status(),
    of::<networking::NetworkPolicy>("networkpolicy").short(&["netpol"]),
    // node.k8s.io/v1
    of::<node::RuntimeClass>("runtimeclass").creates_on_update(),
    // policy/v1
    of::<policy::PodDisruptionBudget>("poddisruptionbudget")
        .short(&["pdb"])
        .status(),
    // rbac.authorization.k8s.io/v1
    of::<rbac::ClusterRoleBinding>("clusterrolebinding").creates_on_update(),
    of::<rbac::ClusterRole>("clusterrole").creates_on_update(),
    of::<rbac::RoleBinding>("rolebinding").creates_on_update(),
    of::<rbac::Role>("role").creates_on_update(),
    // scheduling.k8s.io/v1
    of::<scheduling::PriorityClass>("priorityclass").short(&["pc"]),
    // storage.k8s.io/v1
    of::<storage::CSIDriver>("csidriver").conditional_updates_only(),
    of::<storage::CSINode>("csinode").conditional_updates_only(),
    of::<storage::CSIStorageCapacity>("csistoragecapacity").conditional_updates_only(),
    of::<storage::StorageClass>("storageclass")
        .short(&["sc"])
        .returns_deleted_object(),
    of::<storage::VolumeAttachment>("volumeattachment")
        .status()
        .conditional_updates_only(),
];

/// Older versions served over the storage of a row above, converted on the
/// way in and out; served, but not offered to the scaffolder (which offers
/// a kind's preferred version).
pub(super) static OLDER_VERSIONS: &[KindInfo] = &[
    // autoscaling/v1 over autoscaling/v2 storage
    of::<autoscaling_v1::HorizontalPodAutoscaler>("horizontalpodautoscaler")
        .short(&["hpa"])
        .categories(ALL)
        .status()
        .stored_as(StoredAs::AutoscalingV2),
];

#[cfg(test)]
/// Finds a kind by group and resource name (`apps`, `deployments`).
pub(crate) fn find(group: &str, plural: &str) -> Option<&'static KindInfo> {
    KINDS
        .iter()
        .find(|k| k.group == group && k.plural == plural)
}

#[cfg(test)]
/// Finds a kind by group and kind name (`apps`, `Deployment`).
pub(crate) fn find_kind(group: &str, kind: &str) -> Option<&'static KindInfo> {
    KINDS.iter().find(|k| k.group == group && k.kind == kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_by_group_and_resource_and_unique() {
        let keys: Vec<_> = KINDS.iter().map(|k| (k.group, k.plural)).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(keys, sorted);
    }

    /// What opctl writes into generated code (`use <module>::<Kind>`) names
    /// the type the row decodes through. k8s-openapi defines each type in a
    /// module of its own below the version's (`...::apps::v1::deployment::
    /// Deployment`) and re-exports it from the crate root without the
    /// `v1_NN` module of the selected Kubernetes version.
    #[test]
    fn every_rust_module_holds_the_rows_type() {
        for kind in KINDS {
            let type_name = kind.codec.type_name();
            let mut segments: Vec<&str> = type_name
                .split("::")
                .filter(|s| !(s.starts_with("v1_") && s[3..].chars().all(|c| c.is_ascii_digit())))
                .collect();
            assert_eq!(segments.pop(), Some(kind.kind), "{type_name}");
            segments.pop();
            assert_eq!(segments.join("::"), kind.rust_module(), "{type_name}");
        }
    }

    /// The namespace lifecycle, the ServiceAccount admission plugin, event
    /// lookups and the CRD registry depend on these kinds.
    #[test]
    fn the_kinds_the_server_itself_needs_are_served() {
        for (group, plural) in [
            ("", "namespaces"),
            ("", "serviceaccounts"),
            ("", "events"),
            ("apiextensions.k8s.io", "customresourcedefinitions"),
        ] {
            assert!(find(group, plural).is_some(), "{group}/{plural}");
        }
    }

    #[test]
    fn short_groups_are_the_first_part_of_the_api_group() {
        let group = |g: &str, p: &str| find(g, p).map(KindInfo::short_group);
        assert_eq!(group("", "pods"), Some("core"));
        assert_eq!(group("apps", "deployments"), Some("apps"));
        assert_eq!(group("rbac.authorization.k8s.io", "roles"), Some("rbac"));
        assert_eq!(group("networking.k8s.io", "ingresses"), Some("networking"));
    }
}
