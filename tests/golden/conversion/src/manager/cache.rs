//! The caches reconciles read from instead of the API server: one reflector
//! (a list, then a watch, kept in a store) per kind and watched scope, set
//! up by a controller's `setup` through its [`Scope`]. Stored objects drop
//! `managedFields` and `kubectl apply`'s copy of the object, and children are best cached as metadata only
//! ([`Scope::cache_metadata`]): memory then grows with the number of
//! objects, not the size of their bodies.

use std::fmt::Debug;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use super::Context;

/// The annotation `kubectl apply` keeps the last applied object in: no
/// reconcile reads it, so caches drop it.
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// How an `Api` of a kind of this scope is made for a watched scope.
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
/// of them (and always all for a cluster-scoped kind).
#[derive(Clone)]
pub struct Scope {
    namespace: Option<String>,
    context: Context,
}

impl Scope {
    pub(super) fn new(namespace: Option<String>, context: Context) -> Self {
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
        self.cache_trimmed(config, |_: &mut K| {})
    }

    /// [`Scope::cache`], keeping of each object only what `trim` leaves:
    /// for kinds whose bodies a reconcile needs only a part of.
    pub fn cache_trimmed<K>(
        &self,
        config: watcher::Config,
        trim: impl FnMut(&mut K) + Send + 'static,
    ) -> Cached<K>
    where
        K: Cacheable,
        K::Scope: ApiScope,
    {
        Cached::new(self.api::<K>(), config, trim, &self.context)
    }

    /// A cache of the metadata (names, labels, annotations, owners,
    /// resourceVersion; no spec, no status) of the objects of `K` in this
    /// scope that `config` selects: what a reconcile needs to know of the
    /// children it owns. The API server sends only the metadata.
    pub fn cache_metadata<K>(&self, config: watcher::Config) -> Cached<PartialObjectMeta<K>>
    where
        K: Cacheable,
        K::Scope: ApiScope,
    {
        let api = self.api::<PartialObjectMeta<K>>();
        Cached::new(api, config, |_| {}, &self.context)
    }
}

/// A cache being filled by its watch: its store to read from, and the
/// stream of changes that keeps it current and triggers reconciles (hand it
/// to the `Controller`, which drives it).
pub struct Cached<K: Cacheable> {
    store: Store<K>,
    events: BoxStream<'static, Result<watcher::Event<K>, watcher::Error>>,
}

impl<K: Cacheable> Cached<K> {
    fn new(
        api: Api<K>,
        config: watcher::Config,
        mut trim: impl FnMut(&mut K) + Send + 'static,
        context: &Context,
    ) -> Self {
        let writer = Writer::default();
        let store = writer.as_reader();
        let mut filling = context.readiness.track();
        let child_writes = context.child_writes.clone();
        let events = watcher(api, config)
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
    pub fn applied(self) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static {
        self.events.applied_objects()
    }

    /// The objects created, changed or deleted: what triggers their owners
    /// (`Controller::owns_stream`) or the objects a mapping names
    /// (`Controller::watches_stream`).
    pub fn touched(self) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static {
        self.events.touched_objects()
    }

    /// A `Controller` of this cache's kind, reading from this cache.
    pub fn controller(self) -> Controller<K> {
        let store = self.store();
        Controller::for_stream(self.applied(), store)
    }
}

/// The cached object of `K` named `name` in `namespace` (`None` for a
/// cluster-scoped kind).
pub fn find<K>(store: &Store<K>, name: &str, namespace: Option<&str>) -> Option<std::sync::Arc<K>>
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
