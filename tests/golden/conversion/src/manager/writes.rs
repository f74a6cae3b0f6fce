//! Writes that keep a reconcile whose cache already matches from writing
//! at all:
//!
//! - **Children** carry the hash of the state they were written with in an
//!   annotation; [`Context::apply_owned`] writes one only when its cached
//!   metadata shows another hash (or no child), so the metadata-only cache
//!   is enough to tell. The hash covers what this operator sets, not what
//!   others change in a child's spec afterwards; a deleted child, or a
//!   changed label, owner or hash, is seen and put back.
//! - **Status** is written when it differs from the cached one
//!   ([`Context::apply_status`]).
//! - **Create if absent** ([`Context::create_if_absent`]) for children that
//!   hold state of their own (a generated password): never overwritten, and
//!   a 409 AlreadyExists only means the cache has not seen the child yet.
//!
//! Every write is remembered until the cache shows it (see
//! [`super::expectations`]), so a reconcile that runs before then does not
//! write the same again.

use std::collections::BTreeMap;
use std::fmt::Debug;

use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::expectations::ChildKey;
use super::{Context, NAME};

/// The annotation holding the hash of the state a child was written with.
pub const DESIRED_HASH_ANNOTATION: &str = // the project's name and domain
    "database.zalando.org/desired-hash";

/// The hash of `object` as serialized (FNV-1a, 64 bits, in hex): stable
/// across builds and Rust versions.
pub fn desired_hash(object: &impl Serialize) -> String {
    let bytes = serde_json::to_vec(object).unwrap_or_default();
    format!("{:016x}", fnv1a(&bytes))
}

/// The 64-bit FNV-1a hash of `bytes`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `child` with the hash of its desired state in [`DESIRED_HASH_ANNOTATION`].
pub fn stamped<K: Resource + Serialize>(mut child: K) -> K {
    child.annotations_mut().remove(DESIRED_HASH_ANNOTATION);
    let hash = desired_hash(&child);
    child
        .annotations_mut()
        .insert(DESIRED_HASH_ANNOTATION.to_owned(), hash);
    child
}

/// Whether the cached child `cached` (its metadata, as a metadata-only
/// cache holds it, or the whole object) shows the child as `desired` (as
/// [`stamped`]) asks: same hash, labels and owners, and not being deleted.
pub fn is_current<K: Resource>(cached: &impl Resource, desired: &K) -> bool {
    let hash = desired.annotations().get(DESIRED_HASH_ANNOTATION);
    let labels: &BTreeMap<String, String> = cached.labels();
    let owners = |meta: &kube::core::ObjectMeta| -> Vec<String> {
        let owners = meta.owner_references.iter().flatten();
        owners.map(|owner| owner.uid.clone()).collect()
    };
    cached.meta().deletion_timestamp.is_none()
        && hash.is_some()
        && cached.annotations().get(DESIRED_HASH_ANNOTATION) == hash
        && desired
            .labels()
            .iter()
            .all(|(key, value)| labels.get(key) == Some(value))
        && owners(desired.meta())
            .iter()
            .all(|uid| owners(cached.meta()).contains(uid))
}

impl Context {
    /// Writes `status` into the status of `object` with server-side apply,
    /// and remembers the write until the cache shows it (see the module
    /// documentation); returns false when the object is gone meanwhile.
    /// Call it only when `status` differs from the cached one.
    pub async fn apply_status<K>(
        &self,
        api: &Api<K>,
        object: &K,
        status: &impl Serialize,
    ) -> Result<bool, kube::Error>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
    {
        let patch = serde_json::json!({
            "apiVersion": K::api_version(&()),
            "kind": K::kind(&()),
            "status": status,
        });
        let params = PatchParams::apply(NAME).force();
        let name = object.name_any();
        match api.patch_status(&name, &params, &Patch::Apply(patch)).await {
            Ok(_) => {}
            // Deleted since it was cached: no status to report.
            Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(false),
            Err(err) => return Err(err),
        }
        let key = ObjectRef::from_obj(object).erase();
        self.status_writes.record(key, object.resource_version());
        Ok(true)
    }

    /// Applies `desired` (server-side apply, this manager's field manager)
    /// unless `cached` shows it current; returns whether it wrote.
    pub async fn apply_owned<K>(
        &self,
        api: &Api<K>,
        cached: Option<&impl Resource>,
        desired: K,
    ) -> Result<bool, kube::Error>
    where
        K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug,
    {
        let desired = stamped(desired);
        if cached.is_some_and(|cached| is_current(cached, &desired)) {
            return Ok(false);
        }
        let key = ChildKey::of(&desired);
        let hash = desired.annotations().get(DESIRED_HASH_ANNOTATION).cloned();
        if self.child_writes.pending(&key, hash.as_deref()) {
            return Ok(false);
        }
        let params = PatchParams::apply(NAME).force();
        let written = api
            .patch(&desired.name_any(), &params, &Patch::Apply(&desired))
            .await?;
        self.child_writes
            .record(key, hash, written.resource_version());
        Ok(true)
    }

    /// Creates `desired` unless `cached` shows an object of its name;
    /// returns whether it created it (false also when the API server
    /// already has one the cache has not seen yet).
    pub async fn create_if_absent<K>(
        &self,
        api: &Api<K>,
        cached: Option<&PartialObjectMeta<K>>,
        desired: &K,
    ) -> Result<bool, kube::Error>
    where
        K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug,
    {
        let key = ChildKey::of(desired);
        if cached.is_some() || self.child_writes.pending(&key, None) {
            return Ok(false);
        }
        let params = PostParams {
            field_manager: Some(NAME.to_owned()),
            ..PostParams::default()
        };
        match api.create(&params, desired).await {
            Ok(created) => {
                self.child_writes
                    .record(key, None, created.resource_version());
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.is_already_exists() => {
                self.child_writes.record(key, None, None);
                Ok(false)
            }
            Err(err) => Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
    use kube::core::PartialObjectMetaExt;

    fn child(data: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("child".to_owned()),
                namespace: Some("default".to_owned()),
                labels: Some(BTreeMap::from([("app".to_owned(), "demo".to_owned())])),
                owner_references: Some(vec![OwnerReference {
                    uid: "owner-uid".to_owned(),
                    ..OwnerReference::default()
                }]),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([("key".to_owned(), data.to_owned())])),
            ..ConfigMap::default()
        }
    }

    /// What a metadata-only cache holds of `object` once the API server has it.
    fn cached(object: &ConfigMap) -> PartialObjectMeta<ConfigMap> {
        let mut meta = object.metadata.clone();
        meta.resource_version = Some("7".to_owned());
        meta.annotations.get_or_insert_with(BTreeMap::new).insert(
            "kubectl.kubernetes.io/note".to_owned(),
            "added by someone".to_owned(),
        );
        meta.labels
            .get_or_insert_with(BTreeMap::new)
            .insert("extra".to_owned(), "label".to_owned());
        meta.into_response_partial()
    }

    #[test]
    fn the_hash_is_stable_and_follows_the_desired_state() {
        let first = stamped(child("a"));
        assert_eq!(stamped(first.clone()).annotations(), first.annotations());
        let hash = &first.annotations()[DESIRED_HASH_ANNOTATION];
        assert_eq!(hash.len(), 16);
        assert_ne!(
            stamped(child("b")).annotations()[DESIRED_HASH_ANNOTATION],
            *hash
        );
        // The published test vectors of FNV-1a.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn a_cached_child_written_with_the_same_hash_is_current() {
        let desired = stamped(child("a"));
        let mut seen = cached(&desired);
        assert!(
            is_current(&seen, &desired),
            "extra labels and annotations are fine"
        );
        assert!(
            !is_current(&seen, &stamped(child("b"))),
            "another desired state"
        );
        assert!(
            !is_current(&cached(&child("a")), &desired),
            "written without a hash"
        );
        seen.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
        assert!(!is_current(&seen, &desired), "being deleted");
        let mut relabelled = cached(&desired);
        relabelled.metadata.labels = None;
        assert!(
            !is_current(&relabelled, &desired),
            "its labels were removed"
        );
        let mut orphaned = cached(&desired);
        orphaned.metadata.owner_references = None;
        assert!(!is_current(&orphaned, &desired), "it lost its owner");
    }
}
