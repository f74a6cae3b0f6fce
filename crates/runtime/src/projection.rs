//! Projections: a cache of a kind that keeps only the fields a controller
//! reads, decoded straight from the API server's JSON into a small struct
//! of the project's. serde skips every other field while decoding, so
//! neither a page of the first list nor the cache ever holds the whole
//! objects: a cached Pod that is a `Projected<Pod, PodHealth>` costs its
//! metadata and a few strings, where a trimmed `Pod` still carries the
//! 2 KiB of k8s-openapi's struct with every field empty (see
//! docs/controllers.md for the measurements).

use std::borrow::Cow;
use std::fmt::{self, Debug};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

/// The fields of an object that a controller reads: a struct of the
/// project's deriving `Deserialize`, with the object's `metadata` and the
/// parts of its body it needs, named as in the object's JSON (serde
/// ignores the others). Cache it with [`crate::Scope::cache_projected`],
/// as [`Projected`]`<K, Self>`.
///
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
/// use serde::Deserialize;
///
/// /// Of a Pod, its metadata and its phase.
/// #[derive(Clone, Debug, Deserialize)]
/// struct PodPhase {
///     metadata: ObjectMeta,
///     #[serde(default)]
///     status: Option<Status>,
/// }
///
/// #[derive(Clone, Debug, Deserialize)]
/// struct Status {
///     phase: Option<String>,
/// }
///
/// impl opctl_runtime::Projection for PodPhase {
///     fn metadata(&self) -> &ObjectMeta {
///         &self.metadata
///     }
///     fn metadata_mut(&mut self) -> &mut ObjectMeta {
///         &mut self.metadata
///     }
/// }
/// ```
pub trait Projection: Clone + Debug + DeserializeOwned + Send + Sync + 'static {
    /// The object's metadata.
    fn metadata(&self) -> &ObjectMeta;

    /// The object's metadata, to change (caches drop `managedFields`).
    fn metadata_mut(&mut self) -> &mut ObjectMeta;
}

/// An object of kind `K` seen through the projection `P`: a kube
/// `Resource` of `K`'s kind, group, version and plural (so an
/// `Api<Projected<K, P>>` lists and watches `K`'s objects) whose body is
/// `P`. Read its fields through `Deref` (and change them, in tests,
/// through `DerefMut`).
///
/// ```
/// # use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
/// # #[derive(Clone, Debug, serde::Deserialize)]
/// # struct PodPhase { metadata: ObjectMeta }
/// # impl opctl_runtime::Projection for PodPhase {
/// #     fn metadata(&self) -> &ObjectMeta { &self.metadata }
/// #     fn metadata_mut(&mut self) -> &mut ObjectMeta { &mut self.metadata }
/// # }
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::Resource;
/// use opctl_runtime::Projected;
///
/// let json = r#"{"apiVersion": "v1", "kind": "Pod",
///     "metadata": {"name": "web", "namespace": "shop"},
///     "spec": {"containers": [{"name": "web", "image": "nginx"}]}}"#;
/// let pod: Projected<Pod, PodPhase> = serde_json::from_str(json).unwrap();
/// assert_eq!(pod.metadata.name.as_deref(), Some("web"));
/// assert_eq!(Projected::<Pod, PodPhase>::plural(&()), "pods");
/// ```
pub struct Projected<K, P> {
    fields: P,
    kind: PhantomData<fn() -> K>,
}

impl<K, P> Projected<K, P> {
    /// `fields` as an object of kind `K` (tests build cached objects so).
    pub fn new(fields: P) -> Self {
        Self {
            fields,
            kind: PhantomData,
        }
    }

    /// The projected fields.
    pub fn into_inner(self) -> P {
        self.fields
    }
}

impl<K, P> Deref for Projected<K, P> {
    type Target = P;

    fn deref(&self) -> &P {
        &self.fields
    }
}

impl<K, P> DerefMut for Projected<K, P> {
    fn deref_mut(&mut self) -> &mut P {
        &mut self.fields
    }
}

impl<K, P: Clone> Clone for Projected<K, P> {
    fn clone(&self) -> Self {
        Self::new(self.fields.clone())
    }
}

impl<K, P: Debug> Debug for Projected<K, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fields.fmt(f)
    }
}

// Decoded as `P` itself: the wrapper adds nothing to the JSON.
impl<'de, K, P: Deserialize<'de>> Deserialize<'de> for Projected<K, P> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        P::deserialize(deserializer).map(Self::new)
    }
}

impl<K, P> Resource for Projected<K, P>
where
    K: Resource<DynamicType = ()>,
    P: Projection,
{
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(_: &()) -> Cow<'_, str> {
        K::kind(&())
    }

    fn group(_: &()) -> Cow<'_, str> {
        K::group(&())
    }

    fn version(_: &()) -> Cow<'_, str> {
        K::version(&())
    }

    fn api_version(_: &()) -> Cow<'_, str> {
        K::api_version(&())
    }

    fn plural(_: &()) -> Cow<'_, str> {
        K::plural(&())
    }

    fn meta(&self) -> &ObjectMeta {
        self.fields.metadata()
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.fields.metadata_mut()
    }
}

/// Reads an object's `conditions` (a list of `type`/`status` pairs, as
/// Pods, Nodes and most kinds report them) as whether the `Ready` one is
/// `True`: for a projection that keeps that answer, not the list.
///
/// ```
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// struct Status {
///     #[serde(default, rename = "conditions", deserialize_with = "opctl_runtime::ready_from_conditions")]
///     ready: bool,
/// }
///
/// let status: Status = serde_json::from_str(r#"{"conditions": [
///     {"type": "PodScheduled", "status": "True"},
///     {"type": "Ready", "status": "False"}]}"#).unwrap();
/// assert!(!status.ready);
/// ```
pub fn ready_from_conditions<'de, D: Deserializer<'de>>(conditions: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    struct Condition {
        #[serde(rename = "type")]
        type_: String,
        status: String,
    }
    let conditions = Option::<Vec<Condition>>::deserialize(conditions)?;
    let mut conditions = conditions.iter().flatten();
    Ok(conditions.any(|c| c.type_ == "Ready" && c.status == "True"))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Pod;
    use kube::core::ObjectList;

    use super::*;

    #[derive(Clone, Debug, Deserialize)]
    struct Replicas {
        metadata: ObjectMeta,
        #[serde(default)]
        spec: Option<ReplicasSpec>,
    }

    #[derive(Clone, Debug, Deserialize)]
    struct ReplicasSpec {
        replicas: Option<i32>,
    }

    impl Projection for Replicas {
        fn metadata(&self) -> &ObjectMeta {
            &self.metadata
        }
        fn metadata_mut(&mut self) -> &mut ObjectMeta {
            &mut self.metadata
        }
    }

    type ProjectedDeployment = Projected<Deployment, Replicas>;

    #[test]
    fn a_projection_is_addressed_as_its_kind() {
        assert_eq!(ProjectedDeployment::kind(&()), "Deployment");
        assert_eq!(ProjectedDeployment::group(&()), "apps");
        assert_eq!(ProjectedDeployment::version(&()), "v1");
        assert_eq!(ProjectedDeployment::api_version(&()), "apps/v1");
        assert_eq!(ProjectedDeployment::plural(&()), "deployments");
        assert_eq!(
            ProjectedDeployment::url_path(&(), Some("shop")),
            Deployment::url_path(&(), Some("shop"))
        );
        assert!(!ProjectedDeployment::metadata_api());
    }

    #[test]
    fn a_list_page_decodes_into_projections_keeping_only_their_fields() {
        let page = r#"{"apiVersion": "apps/v1", "kind": "DeploymentList",
            "metadata": {"resourceVersion": "7", "continue": "next"},
            "items": [
                {"metadata": {"name": "web", "namespace": "shop",
                              "labels": {"app": "web"}, "resourceVersion": "5"},
                 "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                          "template": {"spec": {"containers": [{"name": "web"}]}}},
                 "status": {"replicas": 3, "conditions": [{"type": "Available", "status": "True"}]}},
                {"metadata": {"name": "idle", "namespace": "shop"}}
            ]}"#;
        let list: ObjectList<ProjectedDeployment> = serde_json::from_str(page).unwrap();
        assert_eq!(list.metadata.continue_.as_deref(), Some("next"));
        let [web, idle] = &list.items[..] else {
            panic!("two items: {list:?}")
        };
        assert_eq!(web.meta().name.as_deref(), Some("web"));
        assert_eq!(web.meta().labels.as_ref().unwrap()["app"], "web");
        assert_eq!(web.spec.as_ref().unwrap().replicas, Some(3));
        assert!(idle.spec.is_none());
    }

    #[test]
    fn the_ready_condition_is_read_as_a_bool() {
        #[derive(Deserialize)]
        struct Status {
            #[serde(
                default,
                rename = "conditions",
                deserialize_with = "ready_from_conditions"
            )]
            ready: bool,
        }
        let read = |json: &str| serde_json::from_str::<Status>(json).unwrap().ready;
        assert!(read(
            r#"{"conditions": [{"type": "Ready", "status": "True"}]}"#
        ));
        assert!(!read(
            r#"{"conditions": [{"type": "Ready", "status": "Unknown"}]}"#
        ));
        assert!(!read(
            r#"{"conditions": [{"type": "Initialized", "status": "True"}]}"#
        ));
        assert!(!read(r#"{"conditions": null}"#));
        assert!(!read("{}"));
    }

    #[test]
    fn metadata_changes_reach_the_projection() {
        let json = r#"{"metadata": {"name": "web", "managedFields": [{"manager": "kubectl"}]}}"#;
        let mut pod: Projected<Pod, Replicas> = serde_json::from_str(json).unwrap();
        assert!(pod.meta().managed_fields.is_some());
        pod.meta_mut().managed_fields = None;
        assert!(pod.clone().into_inner().metadata.managed_fields.is_none());
    }
}
