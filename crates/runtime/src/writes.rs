//! Writes that keep a reconcile whose cache already matches from writing
//! at all:
//!
//! - **Children** carry the hash of the state they were written with in an
//!   annotation ([`Project::stamp`](crate::Project::stamp));
//!   [`Context::apply_owned`] writes one only when its cached metadata shows
//!   another hash (or no child), so the metadata-only cache is enough to
//!   tell. The hash covers what this operator sets, not what others change
//!   in a child's spec afterwards; a deleted child, or a changed label,
//!   owner or hash, is seen and put back.
//! - **Status** is written when it differs from the cached one
//!   ([`Context::apply_status_if_changed`]).
//! - **Create if absent** ([`Context::create_if_absent`]) for children that
//!   hold state of their own (a generated password): never overwritten, and
//!   a 409 AlreadyExists only means the cache has not seen the child yet.
//!
//! Every write is remembered until the cache shows it, so a reconcile that
//! runs before then does not write the same again. Independent writes of
//! one reconcile go out together through a [`Batch`].

use std::fmt::Debug;

use futures::future::BoxFuture;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Context;
use crate::expectations::ChildKey;

impl Context {
    /// Writes `status` into the status of `object` with server-side apply
    /// (the project as field manager), and remembers the write until the
    /// cache shows it; returns false when the object is gone meanwhile.
    /// Call it only when `status` differs from the cached one, or call
    /// [`Context::apply_status_if_changed`].
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
        let params = PatchParams::apply(self.project.field_manager()).force();
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

    /// Writes `status` as [`Context::apply_status`] does unless `current`
    /// (the cached object's status) equals it: no request then. Returns
    /// whether it wrote, which is when events that go with a change of
    /// status are due.
    ///
    /// ```no_run
    /// # use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
    /// # async fn example(ctx: opctl_runtime::Context, api: kube::Api<Deployment>, object: Deployment, status: DeploymentStatus) -> Result<(), kube::Error> {
    /// if ctx.apply_status_if_changed(&api, &object, object.status.as_ref(), &status).await? {
    ///     // publish the event that goes with the new status
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn apply_status_if_changed<K, S>(
        &self,
        api: &Api<K>,
        object: &K,
        current: Option<&S>,
        status: &S,
    ) -> Result<bool, kube::Error>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
        S: Serialize + PartialEq,
    {
        if current == Some(status) {
            return Ok(false);
        }
        self.apply_status(api, object, status).await
    }

    /// Applies `desired` (server-side apply, the project as field manager),
    /// stamped with the hash of its desired state, unless `cached` shows it
    /// current or the same write is still on its way to the cache; returns
    /// whether it wrote.
    pub async fn apply_owned<K>(
        &self,
        api: &Api<K>,
        cached: Option<&impl Resource>,
        desired: K,
    ) -> Result<bool, kube::Error>
    where
        K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Debug,
    {
        let desired = self.project.stamp(desired);
        if cached.is_some_and(|cached| self.project.is_current(cached, &desired)) {
            return Ok(false);
        }
        let key = ChildKey::of(&desired);
        let annotation = self.project.desired_hash_annotation();
        let hash = desired.annotations().get(&annotation).cloned();
        if self.child_writes.pending(&key, hash.as_deref()) {
            return Ok(false);
        }
        let params = PatchParams::apply(self.project.field_manager()).force();
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
            field_manager: Some(self.project.field_manager().to_owned()),
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

    /// A batch of independent writes to issue together: see [`Batch`].
    pub fn batch(&self) -> Batch<'_> {
        Batch {
            writes: Vec::new(),
            together: self.settings.batch_writes,
        }
    }
}

/// Independent writes of one reconcile, issued together rather than one
/// after another: a reconcile that writes a Pod, a Service and a Secret
/// waits for the slowest answer instead of the sum of the three, so a
/// backlog of new objects converges at the API server's pace. Every write
/// runs to its end (a failure does not cancel the others, whose writes are
/// then remembered as usual); the first failure is returned.
///
/// ```no_run
/// # use k8s_openapi::api::core::v1::{Pod, Service};
/// # use kube::core::PartialObjectMeta;
/// # async fn example(
/// #     ctx: opctl_runtime::Context,
/// #     pods: kube::Api<Pod>, services: kube::Api<Service>,
/// #     cached_pod: Option<PartialObjectMeta<Pod>>, cached_service: Option<PartialObjectMeta<Service>>,
/// #     pod: Pod, service: Service,
/// # ) -> Result<(), kube::Error> {
/// let mut batch = ctx.batch();
/// batch.push(ctx.apply_owned(&pods, cached_pod.as_ref(), pod));
/// batch.push(ctx.apply_owned(&services, cached_service.as_ref(), service));
/// let written = batch.run().await?; // [pod written, service written]
/// if written.contains(&true) {
///     // publish an event
/// }
/// # Ok(())
/// # }
/// ```
#[must_use = "a batch writes nothing until it is run"]
pub struct Batch<'a> {
    writes: Vec<BoxFuture<'a, Result<bool, kube::Error>>>,
    /// False under `--batch-writes=false`: one after another.
    together: bool,
}

impl std::fmt::Debug for Batch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("writes", &self.writes.len())
            .finish()
    }
}

impl<'a> Batch<'a> {
    /// Adds a write (one of the [`Context`]'s writes, or any request that
    /// says whether it wrote).
    pub fn push(&mut self, write: impl Future<Output = Result<bool, kube::Error>> + Send + 'a) {
        self.writes.push(Box::pin(write));
    }

    /// How many writes the batch holds.
    pub fn len(&self) -> usize {
        self.writes.len()
    }

    /// Whether the batch holds no write.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Issues every write at once (one after another under
    /// `--batch-writes=false`) and waits for all of them; whether each
    /// wrote, in the order they were pushed, or the first failure.
    pub async fn run(self) -> Result<Vec<bool>, kube::Error> {
        if !self.together {
            let mut written = Vec::with_capacity(self.writes.len());
            let mut failure = None;
            for write in self.writes {
                match write.await {
                    Ok(wrote) => written.push(wrote),
                    Err(err) => {
                        failure.get_or_insert(err);
                    }
                }
            }
            return failure.map_or(Ok(written), Err);
        }
        futures::future::join_all(self.writes)
            .await
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Project, WatchScope};
    use k8s_openapi::api::core::v1::ConfigMap;

    /// A context whose client reaches nothing: any request fails.
    fn offline() -> Context {
        let config = kube::Config::new("http://127.0.0.1:1".parse().expect("a URL"));
        let project = Project::new("demo", "example.com", "0.1.0");
        let client = project.client(config).expect("a client");
        Context::new(project, client, WatchScope::AllNamespaces)
    }

    #[tokio::test]
    async fn an_unchanged_status_is_not_written() {
        let ctx = offline();
        let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), "default");
        let object = ConfigMap::default();
        let status = serde_json::json!({"ready": true});
        let written = ctx
            .apply_status_if_changed(&api, &object, Some(&status), &status)
            .await;
        assert!(matches!(written, Ok(false)), "no request: {written:?}");
        let changed = serde_json::json!({"ready": false});
        let written = ctx
            .apply_status_if_changed(&api, &object, Some(&status), &changed)
            .await;
        assert!(written.is_err(), "a request, to a server that is not there");
    }

    #[tokio::test]
    async fn a_batch_runs_every_write_and_returns_the_first_failure() {
        let ctx = offline();
        let mut batch = ctx.batch();
        assert!(batch.is_empty());
        batch.push(async { Ok(true) });
        batch.push(async { Ok(false) });
        assert_eq!(batch.len(), 2);
        assert_eq!(batch.run().await.expect("no failure"), [true, false]);

        let finished = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut batch = ctx.batch();
        batch.push(async { Err(kube::Error::LinesCodecMaxLineLengthExceeded) });
        let slow = finished.clone();
        batch.push(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            slow.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(true)
        });
        assert!(batch.run().await.is_err());
        assert!(
            finished.load(std::sync::atomic::Ordering::SeqCst),
            "the slower write ran to its end"
        );
    }
}
