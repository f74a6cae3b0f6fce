//! Writes this manager made that its caches may not show yet.
//!
//! A write's own watch event triggers the next reconcile of the object's
//! owner, but events of other children (or of the status) can trigger one
//! sooner, before the cache has seen the write: that reconcile would find
//! the child missing or stale and write it again. So each write is
//! remembered as an expectation until the cache shows it, as
//! controller-runtime's ReplicaSet controller does with its expectations:
//!
//! - **Children** ([`ChildWrites`]): the watch of the child's kind clears
//!   an expectation when it delivers the written version (or any version,
//!   for a create-if-absent), or the child's deletion; a reconcile meanwhile
//!   does not write the same desired state again.
//! - **Status** ([`StatusWrites`]): a reconcile that would read the status
//!   from before this manager's last write of it is skipped; the write's
//!   watch event runs it again.
//!
//! Expectations expire after [`PATIENCE`], so a watch event that never
//! comes (a watch that restarted) delays a write by at most that long.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kube::Resource;

use crate::backoff::Key;

/// How long a write is waited for in the cache before reconciles go on
/// without it.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

/// When a reconcile that waited for its object's status write runs again,
/// should the write's watch event (which triggers it at once) not come.
pub(crate) const STATUS_RETRY: Duration = Duration::from_secs(1);

/// The resourceVersion an object had when its status was written, and when.
type Written = (Option<String>, Instant);

/// Status writes the cache may not show yet.
#[derive(Clone, Debug, Default)]
pub(crate) struct StatusWrites {
    written: Arc<Mutex<HashMap<Key, Written>>>,
}

impl StatusWrites {
    /// Records a status write over the object `key` at `resource_version`.
    pub(crate) fn record(&self, key: Key, resource_version: Option<String>) {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        written.retain(|_, (_, at)| at.elapsed() < PATIENCE);
        written.insert(key, (resource_version, Instant::now()));
    }

    /// Whether the cached object `key` at `resource_version` predates this
    /// manager's last status write to it (for at most [`PATIENCE`]).
    pub(crate) fn awaited(&self, key: &Key, resource_version: Option<&str>) -> bool {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        match written.get(key) {
            Some((over, at)) if over.as_deref() == resource_version && at.elapsed() < PATIENCE => {
                true
            }
            Some(_) => {
                written.remove(key);
                false
            }
            None => false,
        }
    }
}

/// A child by kind, namespace and name: the same for the full object and
/// for its cached metadata.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ChildKey {
    kind: String,
    namespace: Option<String>,
    name: String,
}

impl ChildKey {
    /// The key of `object` (of any representation of its kind).
    pub(crate) fn of<K: Resource<DynamicType = ()>>(object: &K) -> Self {
        let meta = object.meta();
        Self {
            kind: K::kind(&()).into_owned(),
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

/// What was written to a child, until its watch shows it.
#[derive(Debug)]
struct Expected {
    /// The hash of the desired state written (`None`: created if absent,
    /// whatever it holds).
    hash: Option<String>,
    /// The resourceVersion the write returned (`None`: not known, as when
    /// the create found the child existing: any version shows it).
    resource_version: Option<String>,
    at: Instant,
}

/// Child writes the caches may not show yet.
#[derive(Clone, Debug, Default)]
pub(crate) struct ChildWrites {
    expected: Arc<Mutex<HashMap<ChildKey, Expected>>>,
}

impl ChildWrites {
    /// Records a write of `hash` (see [`Expected::hash`]) to the child
    /// `key`, answered with `resource_version`.
    pub(crate) fn record(
        &self,
        key: ChildKey,
        hash: Option<String>,
        resource_version: Option<String>,
    ) {
        let mut expected = self.expected.lock().unwrap_or_else(PoisonError::into_inner);
        expected.retain(|_, e| e.at.elapsed() < PATIENCE);
        let at = Instant::now();
        expected.insert(
            key,
            Expected {
                hash,
                resource_version,
                at,
            },
        );
    }

    /// Whether a write of `hash` to the child `key` is still on its way to
    /// the cache: writing it again would change nothing.
    pub(crate) fn pending(&self, key: &ChildKey, hash: Option<&str>) -> bool {
        let expected = self.expected.lock().unwrap_or_else(PoisonError::into_inner);
        expected
            .get(key)
            .is_some_and(|e| e.hash.as_deref() == hash && e.at.elapsed() < PATIENCE)
    }

    /// What a watch delivered: `object` as it is now, or (`deleted`) its
    /// deletion. Called for every event of every cache, so it costs nothing
    /// while no write is expected.
    pub(crate) fn observed<K: Resource<DynamicType = ()>>(&self, object: &K, deleted: bool) {
        let mut expected = self.expected.lock().unwrap_or_else(PoisonError::into_inner);
        if expected.is_empty() {
            return;
        }
        let key = ChildKey::of(object);
        let version = object.meta().resource_version.as_deref();
        let seen = expected.get(&key).is_some_and(|e| {
            deleted || e.resource_version.is_none() || e.resource_version.as_deref() == version
        });
        if seen {
            expected.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::core::PartialObjectMeta;
    use kube::core::PartialObjectMetaExt;
    use kube::runtime::reflector::ObjectRef;

    fn config_map(name: &str) -> ConfigMap {
        let mut object = ConfigMap::default();
        object.metadata.name = Some(name.to_owned());
        object.metadata.namespace = Some("default".to_owned());
        object
    }

    /// `config_map(name)` as a watch delivers it, at `resource_version`.
    fn at_version(name: &str, resource_version: &str) -> ConfigMap {
        let mut object = config_map(name);
        object.metadata.resource_version = Some(resource_version.to_owned());
        object
    }

    #[test]
    fn a_status_write_is_awaited_until_the_cache_moves_on() {
        let writes = StatusWrites::default();
        let key = ObjectRef::<ConfigMap>::new("demo")
            .within("default")
            .erase();
        assert!(!writes.awaited(&key, Some("1")));
        writes.record(key.clone(), Some("1".to_owned()));
        assert!(
            writes.awaited(&key, Some("1")),
            "the cache still shows the old version"
        );
        assert!(!writes.awaited(&key, Some("2")), "the cache moved on");
        assert!(!writes.awaited(&key, Some("1")), "forgotten once seen");
    }

    #[test]
    fn the_key_of_a_child_is_the_key_of_its_cached_metadata() {
        let child = config_map("demo");
        let cached: PartialObjectMeta<ConfigMap> = child.metadata.clone().into_response_partial();
        assert_eq!(ChildKey::of(&child), ChildKey::of(&cached));
        assert_ne!(ChildKey::of(&child), ChildKey::of(&config_map("other")));
    }

    #[test]
    fn a_child_write_is_pending_until_its_version_or_its_deletion_is_seen() {
        let writes = ChildWrites::default();
        let key = ChildKey::of(&config_map("demo"));
        assert!(!writes.pending(&key, Some("h1")));
        writes.record(key.clone(), Some("h1".to_owned()), Some("7".to_owned()));
        assert!(writes.pending(&key, Some("h1")));
        assert!(
            !writes.pending(&key, Some("h2")),
            "another desired state is written"
        );
        writes.observed(&at_version("demo", "6"), false);
        assert!(
            writes.pending(&key, Some("h1")),
            "an older version is not the write"
        );
        writes.observed(&at_version("demo", "7"), false);
        assert!(
            !writes.pending(&key, Some("h1")),
            "the cache shows the write"
        );

        writes.record(key.clone(), Some("h1".to_owned()), Some("8".to_owned()));
        writes.observed(&config_map("demo"), true);
        assert!(!writes.pending(&key, Some("h1")), "deleted: write it again");
    }

    #[test]
    fn a_create_if_absent_is_pending_until_any_version_is_seen() {
        let writes = ChildWrites::default();
        let key = ChildKey::of(&config_map("secret"));
        writes.record(key.clone(), None, None);
        assert!(writes.pending(&key, None));
        writes.observed(&at_version("secret", "3"), false);
        assert!(!writes.pending(&key, None));
    }
}
