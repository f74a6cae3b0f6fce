//! What every controller and webhook gets from the manager.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;

use crate::backoff::Backoff;
use crate::expectations::{ChildWrites, StatusWrites};
use crate::metrics::Metrics;
use crate::readiness::Readiness;
use crate::{Project, Shutdown};

/// Shared by all controllers and webhooks of one manager: clone it freely.
///
/// A reconcile reads from the caches its controller's `setup` made and
/// writes through the methods here ([`Context::apply_owned`],
/// [`Context::apply_status`], [`Context::create_if_absent`],
/// [`Context::batch`] for writes issued together, [`Context::publish`] for
/// events), which remember what they wrote until the caches show it.
#[derive(Clone)]
pub struct Context {
    /// The Kubernetes client: it sends the project's `User-Agent`.
    pub client: Client,
    /// Who reports the events this manager creates: the Pod name
    /// (POD_NAME) when set, the project's name otherwise.
    pub reporting_instance: String,
    /// The namespaces the controllers watch.
    pub scope: WatchScope,
    /// Completes when the manager shuts down.
    pub shutdown: Shutdown,
    /// Who the manager is.
    pub(crate) project: Project,
    /// How controllers run (from the manager's flags).
    pub(crate) settings: Settings,
    /// Reconcile counts and times, served on /metrics.
    pub(crate) metrics: Arc<Metrics>,
    /// Retry delays of failed reconciles.
    pub(crate) backoff: Backoff,
    /// Whether the caches are filled and this replica leads.
    pub(crate) readiness: Readiness,
    /// Status writes the caches may not show yet.
    pub(crate) status_writes: StatusWrites,
    /// Child writes the caches may not show yet.
    pub(crate) child_writes: ChildWrites,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("project", &self.project)
            .field("scope", &self.scope)
            .field("reporting_instance", &self.reporting_instance)
            .finish_non_exhaustive()
    }
}

/// How controllers run (the manager sets them from its flags).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    /// Reconciles at once per controller and watched namespace.
    pub(crate) max_concurrent_reconciles: u16,
    /// How often every object is reconciled when nothing changes.
    pub(crate) sync_period: Duration,
    /// Whether a [`crate::Batch`] issues its writes together.
    pub(crate) batch_writes: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            max_concurrent_reconciles: crate::options::DEFAULT_MAX_CONCURRENT_RECONCILES,
            sync_period: Duration::from_secs(10 * 60 * 60),
            batch_writes: true,
        }
    }
}

impl Context {
    /// A context of `project` for `client`, as the manager makes it: for
    /// tests of reconcile functions and webhook handlers. The event
    /// reporter's instance is the Pod name (POD_NAME) when set.
    ///
    /// ```
    /// use opctl_runtime::{Context, Project, WatchScope};
    ///
    /// # let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// # runtime.block_on(async {
    /// const PROJECT: Project = Project::new("guestbook", "example.com", "0.1.0");
    /// // A client of an API server that never answers (nothing listens on port 1).
    /// let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
    /// let client = PROJECT.client(config).unwrap();
    /// let context = Context::new(PROJECT, client, WatchScope::AllNamespaces);
    /// assert_eq!(context.project().name(), "guestbook");
    /// # });
    /// ```
    pub fn new(project: Project, client: Client, scope: WatchScope) -> Self {
        Self {
            reporting_instance: std::env::var("POD_NAME")
                .unwrap_or_else(|_| project.name().to_owned()),
            client,
            scope,
            shutdown: Shutdown::default(),
            project,
            settings: Settings::default(),
            metrics: Arc::new(Metrics::default()),
            backoff: Backoff::default(),
            readiness: Readiness::default(),
            status_writes: StatusWrites::default(),
            child_writes: ChildWrites::default(),
        }
    }

    /// Who the manager is.
    pub fn project(&self) -> Project {
        self.project
    }
}

/// Which namespaces the controllers watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchScope {
    /// Every namespace (needs cluster-wide RBAC).
    AllNamespaces,
    /// Only these namespaces, sorted and without duplicates.
    Namespaces(Vec<String>),
}

impl WatchScope {
    /// The namespace of each instance of a controller of a namespaced kind:
    /// one per watched namespace, or a single `None` for all namespaces.
    pub fn namespaces(&self) -> Vec<Option<String>> {
        match self {
            Self::AllNamespaces => vec![None],
            Self::Namespaces(names) => names.iter().cloned().map(Some).collect(),
        }
    }

    /// All namespaces when `namespaces` holds no name, otherwise exactly
    /// those (what a `--namespace` flag gives):
    ///
    /// ```
    /// use opctl_runtime::WatchScope;
    ///
    /// assert_eq!(WatchScope::from_namespaces(Vec::new()), WatchScope::AllNamespaces);
    /// let some = WatchScope::from_namespaces(["b".to_owned(), "a".to_owned()]);
    /// assert_eq!(some.to_string(), "namespaces a,b");
    /// ```
    pub fn from_namespaces(namespaces: impl IntoIterator<Item = String>) -> Self {
        let mut names: Vec<String> = namespaces
            .into_iter()
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
            .collect();
        names.sort();
        names.dedup();
        if names.is_empty() {
            Self::AllNamespaces
        } else {
            Self::Namespaces(names)
        }
    }
}

impl fmt::Display for WatchScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AllNamespaces => f.write_str("all namespaces"),
            Self::Namespaces(names) => write!(f, "namespaces {}", names.join(",")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_namespace_means_all() {
        assert_eq!(
            WatchScope::from_namespaces(Vec::new()),
            WatchScope::AllNamespaces
        );
        assert_eq!(
            WatchScope::from_namespaces([String::new(), " ".to_owned()]),
            WatchScope::AllNamespaces
        );
    }

    #[test]
    fn namespaces_are_sorted_and_deduplicated() {
        let scope = WatchScope::from_namespaces(["b", "a", "b"].map(String::from));
        assert_eq!(
            scope,
            WatchScope::Namespaces(vec!["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(scope.to_string(), "namespaces a,b");
        assert_eq!(
            scope.namespaces(),
            [Some("a".to_owned()), Some("b".to_owned())]
        );
        assert_eq!(WatchScope::AllNamespaces.namespaces(), [None]);
    }
}
