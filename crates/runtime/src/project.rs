//! Who the manager is: the project's name, the domain of its API groups and
//! its version. Everything project-specific the runtime does follows from
//! these three values: the `User-Agent` of its requests and its field
//! manager, the event reporter, the default Lease and webhook Service names,
//! and the annotation its children carry the hash of their desired state in.

use std::collections::BTreeMap;

use kube::{Resource, ResourceExt};
use serde::Serialize;

/// The identity of an operator, usually one constant in the project's glue:
///
/// ```
/// use opctl_runtime::Project;
///
/// const PROJECT: Project = Project::new("guestbook", "example.com", "0.1.0");
/// assert_eq!(PROJECT.user_agent(), "guestbook/0.1.0");
/// assert_eq!(PROJECT.desired_hash_annotation(), "guestbook.example.com/desired-hash");
/// ```
///
/// A project passes `env!("CARGO_PKG_VERSION")` as the version, so that
/// every release identifies itself in the API server's audit log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Project {
    name: &'static str,
    domain: &'static str,
    version: &'static str,
}

impl Project {
    /// The project `name` (a DNS-1123 label, as `opctl init` makes it), whose
    /// API groups live under `domain`, at `version`. [`Manager::new`] refuses a
    /// name that cannot be a label value or a header value.
    ///
    /// [`Manager::new`]: crate::Manager::new
    pub const fn new(name: &'static str, domain: &'static str, version: &'static str) -> Self {
        Self {
            name,
            domain,
            version,
        }
    }

    /// The project's name: the field manager of every write, the reporting
    /// controller of its events, the value of `app.kubernetes.io/managed-by`
    /// on what it creates.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The domain of the project's API groups.
    pub const fn domain(&self) -> &'static str {
        self.domain
    }

    /// The project's version.
    pub const fn version(&self) -> &'static str {
        self.version
    }

    /// `<name>/<version>`: the `User-Agent` of every request the manager
    /// makes, as controller-runtime's managers send theirs, so that the
    /// operator can be told apart in an audit log. When a request names no
    /// field manager, the API server takes the part before the `/`: the same
    /// name as [`Project::field_manager`].
    pub fn user_agent(&self) -> String {
        format!("{}/{}", self.name, self.version)
    }

    /// The field manager of the manager's server-side applies and creates:
    /// the project's name.
    pub const fn field_manager(&self) -> &'static str {
        self.name
    }

    /// `<name>.<domain>/desired-hash`: the annotation holding the hash of the
    /// state a child was written with (see [`Project::stamp`]).
    pub fn desired_hash_annotation(&self) -> String {
        format!("{}.{}/desired-hash", self.name, self.domain)
    }

    /// `child` with the hash of its desired state in
    /// [`Project::desired_hash_annotation`]: the hash of the child as
    /// serialized without that annotation (FNV-1a, 64 bits, hex), stable
    /// across builds and Rust versions.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::ResourceExt;
    /// # use opctl_runtime::Project;
    /// # const PROJECT: Project = Project::new("guestbook", "example.com", "0.1.0");
    ///
    /// let stamped = PROJECT.stamp(ConfigMap::default());
    /// let hash = &stamped.annotations()["guestbook.example.com/desired-hash"];
    /// assert_eq!(hash.len(), 16);
    /// assert_eq!(PROJECT.stamp(stamped.clone()), stamped);
    /// ```
    pub fn stamp<K: Resource + Serialize>(&self, mut child: K) -> K {
        let annotation = self.desired_hash_annotation();
        child.annotations_mut().remove(&annotation);
        let hash = desired_hash(&child);
        child.annotations_mut().insert(annotation, hash);
        child
    }

    /// Whether the cached child `cached` (its metadata, as a metadata-only
    /// cache holds it, or the whole object) shows the child as `desired` (as
    /// [`Project::stamp`] made it) asks: the same hash, `desired`'s labels
    /// and owners, and not being deleted. Labels and annotations others add
    /// are fine.
    pub fn is_current<K: Resource>(&self, cached: &impl Resource, desired: &K) -> bool {
        let annotation = self.desired_hash_annotation();
        let hash = desired.annotations().get(&annotation);
        let labels: &BTreeMap<String, String> = cached.labels();
        let owners = |meta: &kube::core::ObjectMeta| -> Vec<String> {
            let owners = meta.owner_references.iter().flatten();
            owners.map(|owner| owner.uid.clone()).collect()
        };
        let cached_owners = owners(cached.meta());
        cached.meta().deletion_timestamp.is_none()
            && hash.is_some()
            && cached.annotations().get(&annotation) == hash
            && desired
                .labels()
                .iter()
                .all(|(key, value)| labels.get(key) == Some(value))
            && owners(desired.meta())
                .iter()
                .all(|uid| cached_owners.contains(uid))
    }

    /// The default name of the leader-election Lease: `<name>-leader`.
    pub fn leader_election_id(&self) -> String {
        format!("{}-leader", self.name)
    }

    /// The namespace `config/default` deploys the project to: `<name>-system`.
    pub fn system_namespace(&self) -> String {
        format!("{}-system", self.name)
    }

    /// The default name of the webhook Service: `<name>-webhook-service`.
    pub fn webhook_service_name(&self) -> String {
        format!("{}-webhook-service", self.name)
    }

    /// Checks that the name and version can be what the manager makes of
    /// them (label values, a header value).
    pub(crate) fn check(&self) -> anyhow::Result<()> {
        let label = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
        let name = self.name;
        if name.is_empty()
            || name.len() > 63
            || !name.chars().all(label)
            || name.starts_with('-')
            || name.ends_with('-')
        {
            anyhow::bail!(
                "the project name {name:?} is not a DNS-1123 label (lowercase letters, digits and '-', at most 63)"
            );
        }
        if self.domain.is_empty() || self.domain.contains(char::is_whitespace) {
            anyhow::bail!("the project domain {:?} is not a domain name", self.domain);
        }
        let visible = |c: char| c.is_ascii_graphic();
        if self.version.is_empty() || !self.version.chars().all(visible) {
            anyhow::bail!(
                "the project version {:?} cannot go into a User-Agent header (printable ASCII without spaces)",
                self.version
            );
        }
        Ok(())
    }
}

/// The hash of `object` as serialized (FNV-1a, 64 bits, in hex).
fn desired_hash(object: &impl Serialize) -> String {
    let bytes = serde_json::to_vec(object).unwrap_or_default();
    format!("{:016x}", fnv1a(&bytes))
}

/// The 64-bit FNV-1a hash of `bytes`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
    use kube::core::{PartialObjectMeta, PartialObjectMetaExt};

    const PROJECT: Project = Project::new("demo", "example.com", "1.2.3");

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
    fn the_names_follow_from_the_project() {
        assert_eq!(PROJECT.user_agent(), "demo/1.2.3");
        assert_eq!(PROJECT.field_manager(), "demo");
        assert_eq!(PROJECT.leader_election_id(), "demo-leader");
        assert_eq!(PROJECT.system_namespace(), "demo-system");
        assert_eq!(PROJECT.webhook_service_name(), "demo-webhook-service");
        assert_eq!(
            PROJECT.desired_hash_annotation(),
            "demo.example.com/desired-hash"
        );
    }

    #[test]
    fn names_that_cannot_be_labels_or_headers_are_refused() {
        assert!(PROJECT.check().is_ok());
        for bad in [
            Project::new("", "example.com", "1"),
            Project::new("Demo", "example.com", "1"),
            Project::new("-demo", "example.com", "1"),
            Project::new("demo", "", "1"),
            Project::new("demo", "example.com", "1 2"),
            Project::new("demo", "example.com", ""),
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_hash_is_stable_and_follows_the_desired_state() {
        let first = PROJECT.stamp(child("a"));
        assert_eq!(
            PROJECT.stamp(first.clone()).annotations(),
            first.annotations()
        );
        let hash = &first.annotations()["demo.example.com/desired-hash"];
        assert_eq!(hash.len(), 16);
        assert_ne!(
            PROJECT.stamp(child("b")).annotations()["demo.example.com/desired-hash"],
            *hash
        );
        // The published test vectors of FNV-1a.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn another_project_does_not_take_the_hash_for_its_own() {
        let other = Project::new("other", "example.com", "1.2.3");
        let desired = PROJECT.stamp(child("a"));
        assert!(PROJECT.is_current(&cached(&desired), &desired));
        assert!(!other.is_current(&cached(&desired), &other.stamp(child("a"))));
    }

    #[test]
    fn a_cached_child_written_with_the_same_hash_is_current() {
        let desired = PROJECT.stamp(child("a"));
        let mut seen = cached(&desired);
        assert!(
            PROJECT.is_current(&seen, &desired),
            "extra labels and annotations are fine"
        );
        assert!(
            !PROJECT.is_current(&seen, &PROJECT.stamp(child("b"))),
            "another desired state"
        );
        assert!(
            !PROJECT.is_current(&cached(&child("a")), &desired),
            "written without a hash"
        );
        seen.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
        assert!(!PROJECT.is_current(&seen, &desired), "being deleted");
        let mut relabelled = cached(&desired);
        relabelled.metadata.labels = None;
        assert!(
            !PROJECT.is_current(&relabelled, &desired),
            "its labels were removed"
        );
        let mut orphaned = cached(&desired);
        orphaned.metadata.owner_references = None;
        assert!(
            !PROJECT.is_current(&orphaned, &desired),
            "it lost its owner"
        );
    }
}
