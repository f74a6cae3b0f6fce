//! The caches reconciles read from instead of the API server: one reflector
//! (a list, then a watch, kept in a store) per kind and watched scope, set
//! up by a controller's `setup` through its [`Scope`]. Stored objects drop
//! `managedFields` and `kubectl apply`'s copy of the object, and children
//! are best cached as metadata only ([`Scope::cache_metadata`]), or as
//! the few fields a reconcile reads ([`Scope::cache_projected`]): memory then
//! grows with the number of objects, not the size of their bodies.

use std::fmt::Debug;
use std::sync::Arc;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use crate::Context;
use crate::projection::{Projected, Projection};

/// The annotation `kubectl apply` keeps the last applied object in: no
/// reconcile reads it, so caches drop it.
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The objects per page of the first list of a trimmed cache, when the
/// watcher's configuration keeps kube's default page size: a page is
/// decoded whole before it is trimmed, so a smaller page lowers the peak
/// (see docs/controllers.md for the measurements).
pub(crate) const TRIMMED_PAGE_SIZE: u32 = 50;

/// How an `Api` of a kind of this scope is made for a watched scope
/// (implemented for k8s-openapi's two scopes).
pub trait ApiScope {
    /// Whether objects of the kind live in namespaces.
    const NAMESPACED: bool;

    /// An `Api` for `namespace` (all namespaces when `None`; cluster-scoped
    /// kinds ignore it).
    fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>;
}

impl ApiScope for NamespaceResourceScope {
    const NAMESPACED: bool = true;

    fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>,
    {
        match namespace {
            Some(namespace) => Api::namespaced(client, namespace),
            None => Api::all(client),
        }
    }
}

impl ApiScope for ClusterResourceScope {
    const NAMESPACED: bool = false;

    fn api<K>(client: Client, _namespace: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>,
    {
        Api::all(client)
    }
}

/// What the caches may hold: a kind with its types known at compile time.
pub trait Cacheable:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
}

impl<K> Cacheable for K where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
}

/// Where one instance of a controller works: one watched namespace, or all
/// of them (and always all for a cluster-scoped kind). A controller's
/// `setup` makes its caches through it.
#[derive(Clone, Debug)]
pub struct Scope {
    namespace: Option<String>,
    context: Context,
}

impl Scope {
    pub(crate) fn new(namespace: Option<String>, context: Context) -> Self {
        Self { namespace, context }
    }

    /// The watched namespace, or `None` for all.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The manager's context: client, events, shutdown.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// An `Api` for `K` in this scope.
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<DynamicType = ()>,
        K::Scope: ApiScope,
    {
        K::Scope::api(self.context.client.clone(), self.namespace())
    }

    /// A cache of the objects of `K` in this scope that `config` selects,
    /// without their `managedFields`.
    pub fn cache<K>(&self, config: watcher::Config) -> Cached<K>
    where
        K: Cacheable,
        K::Scope: ApiScope,
    {
        let events = watcher(self.api::<K>(), config);
        Cached::new(events, |_: &mut K| {}, &self.context)
    }

    /// [`Scope::cache`], keeping of each object only what `trim` leaves:
    /// for kinds whose bodies a reconcile needs only a part of
    /// ([`Scope::cache_projected`] keeps less: the trimmed object is still
    /// k8s-openapi's whole struct, and is decoded whole first). The first
    /// list comes in pages of 50 objects unless `config`
    /// sets another page size than kube's default, since each page is
    /// decoded whole before its objects are trimmed.
    pub fn cache_trimmed<K>(
        &self,
        config: watcher::Config,
        trim: impl FnMut(&mut K) + Send + 'static,
    ) -> Cached<K>
    where
        K: Cacheable,
        K::Scope: ApiScope,
    {
        let config = trimmed_page_size(config);
        let events = watcher(self.api::<K>(), config);
        Cached::new(events, trim, &self.context)
    }

    /// A cache of the objects of `K` in this scope that `config` selects,
    /// each decoded straight into the projection `P`: the few fields of
    /// `K` a reconcile reads (see [`crate::Projection`]). The first list
    /// comes in pages of 50 objects unless `config` sets another page size
    /// than kube's default: kube holds a page's whole response body while
    /// it decodes it.
    pub fn cache_projected<K, P>(&self, config: watcher::Config) -> Cached<Projected<K, P>>
    where
        K: Resource<DynamicType = ()> + Send + Sync + 'static,
        K::Scope: ApiScope,
        P: Projection,
    {
        let config = trimmed_page_size(config);
        let events = watcher(self.api::<Projected<K, P>>(), config);
        Cached::new(events, |_| {}, &self.context)
    }

    /// A cache of the metadata (names, labels, annotations, owners,
    /// resourceVersion; no spec, no status) of the objects of `K` in this
    /// scope that `config` selects: what a reconcile needs to know of the
    /// children it owns. Lists and watches ask the API server for
    /// `PartialObjectMetadata` (an `Api<PartialObjectMeta<K>>` does, since
    /// kube 5: what kube's now deprecated `metadata_watcher` did), so only
    /// the metadata crosses the wire.
    pub fn cache_metadata<K>(&self, config: watcher::Config) -> Cached<PartialObjectMeta<K>>
    where
        K: Cacheable,
        K::Scope: ApiScope,
    {
        let events = watcher(self.api::<PartialObjectMeta<K>>(), config);
        Cached::new(events, |_| {}, &self.context)
    }
}

/// `config` with [`TRIMMED_PAGE_SIZE`] if it keeps kube's default page size.
fn trimmed_page_size(config: watcher::Config) -> watcher::Config {
    if config.page_size == watcher::Config::default().page_size {
        config.page_size(TRIMMED_PAGE_SIZE)
    } else {
        config
    }
}

/// A cache being filled by its watch: its store to read from, and the
/// changes that keep it current. Hand it to the controller (as its own
/// kind's cache with [`Cached::controller`], or with [`Controller::owns`],
/// [`Controller::watches`] or [`Controller::reads`]), which drives it.
///
/// [`Controller::owns`]: crate::Controller::owns
/// [`Controller::watches`]: crate::Controller::watches
/// [`Controller::reads`]: crate::Controller::reads
pub struct Cached<K: Cacheable> {
    store: Store<K>,
    events: BoxStream<'static, Result<watcher::Event<K>, watcher::Error>>,
}

impl<K: Cacheable> Debug for Cached<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cached")
            .field("kind", &K::kind(&()))
            .field("objects", &self.store.len())
            .finish_non_exhaustive()
    }
}

impl<K: Cacheable> Cached<K> {
    fn new(
        events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
        mut trim: impl FnMut(&mut K) + Send + 'static,
        context: &Context,
    ) -> Self {
        let writer = Writer::default();
        let store = writer.as_reader();
        let mut filling = context.readiness.track();
        let child_writes = context.child_writes.clone();
        let events = events
            .modify(move |object| {
                let meta = object.meta_mut();
                meta.managed_fields = None;
                if let Some(annotations) = meta.annotations.as_mut() {
                    // A copy of the whole object when `kubectl apply` made it.
                    annotations.remove(LAST_APPLIED_ANNOTATION);
                }
                trim(object);
            })
            .reflect(writer)
            // After the store has it: a reconcile that no longer waits for a
            // write finds the write in the cache.
            .inspect_ok(move |event| match event {
                watcher::Event::Apply(object) | watcher::Event::InitApply(object) => {
                    child_writes.observed(object, false);
                }
                watcher::Event::Delete(object) => child_writes.observed(object, true),
                watcher::Event::InitDone => filling.filled(),
                watcher::Event::Init => {}
            })
            .boxed();
        Self { store, events }
    }

    /// The store: reads never leave the process.
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// The objects created or changed: what triggers reconciles of the
    /// controller's own kind.
    pub(crate) fn applied(self) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static {
        self.events.applied_objects()
    }

    /// The objects created, changed or deleted: what triggers their owners
    /// or the objects a mapping names.
    pub(crate) fn touched(self) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static {
        self.events.touched_objects()
    }

    /// A controller of this cache's kind, reconciling the objects of this
    /// cache when they change.
    pub fn controller(self) -> crate::Controller<K> {
        crate::Controller::for_cache(self)
    }
}

/// The cached object of `K` named `name` in `namespace` (`None` for a
/// cluster-scoped kind).
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::runtime::reflector::store::Writer;
///
/// let store = Writer::<ConfigMap>::default().as_reader();
/// assert!(opctl_runtime::find(&store, "settings", Some("default")).is_none());
/// ```
pub fn find<K>(store: &Store<K>, name: &str, namespace: Option<&str>) -> Option<Arc<K>>
where
    K: Cacheable,
{
    let key = ObjectRef::new(name);
    let key = match namespace {
        Some(namespace) => key.within(namespace),
        None => key,
    };
    store.get(&key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimmed_caches_list_in_small_pages_unless_told_otherwise() {
        let default = trimmed_page_size(watcher::Config::default());
        assert_eq!(default.page_size, Some(TRIMMED_PAGE_SIZE));
        let chosen = trimmed_page_size(watcher::Config::default().page_size(200));
        assert_eq!(chosen.page_size, Some(200));
    }
}
