//! What every controller gets from the manager.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, PostParams};
use kube::runtime::events::EventType;

use super::expectations::{ChildWrites, StatusWrites};
use super::{Backoff, Metrics, NAME, Readiness, Shutdown};

// Events are created through the events.k8s.io API in the namespace of the object.
// +opctl:rbac:groups=events.k8s.io,resources=events,verbs=create

/// Shared by all controllers: clone it freely.
#[derive(Clone)]
pub struct Context {
    /// The Kubernetes client.
    pub client: Client,
    /// Who reports the events this manager creates: the Pod name
    /// (POD_NAME) when set, the manager's name otherwise.
    pub reporting_instance: String,
    /// The namespaces the controllers watch.
    pub scope: WatchScope,
    /// Completes when the manager shuts down.
    pub shutdown: Shutdown,
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

/// How controllers run (the manager sets them from its flags).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    /// Reconciles at once per controller and watched namespace.
    pub max_concurrent_reconciles: u16,
    /// How often every object is reconciled when nothing changes.
    pub sync_period: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            max_concurrent_reconciles: 1,
            sync_period: Duration::from_secs(10 * 60 * 60),
        }
    }
}

impl Context {
    /// A context for `client` (for tests of handlers; the manager makes
    /// its own); the event reporter's instance is the Pod name (POD_NAME)
    /// when set.
    pub fn new(client: Client, scope: WatchScope) -> Self {
        Self {
            reporting_instance: std::env::var("POD_NAME").unwrap_or_else(|_| NAME.to_owned()),
            client,
            scope,
            shutdown: Shutdown::default(),
            settings: Settings::default(),
            metrics: Arc::new(Metrics::default()),
            backoff: Backoff::default(),
            readiness: Readiness::default(),
            status_writes: StatusWrites::default(),
            child_writes: ChildWrites::default(),
        }
    }

    /// Records an event about `regarding`; a failure is logged, not returned,
    /// because events are informational. Each event is one create (no
    /// series, no cache of past events to keep in memory). A refusal the
    /// API server may not repeat (500, 503, 504, 429, a dropped connection)
    /// is retried a few times with a short backoff, as client-go's event
    /// broadcaster retries: events go with status changes, so a lost one is
    /// not sent again. A retry keeps the event's name, so one that was
    /// stored after all is not stored twice.
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        action: &str,
        note: Option<String>,
    ) {
        let now = Timestamp::now();
        // Where the object is; a cluster-scoped object's events go to `default`.
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let event = Event {
            metadata: ObjectMeta {
                // As client-go names events: the object's name and the time.
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_deref().unwrap_or_default(),
                    now.as_nanosecond()
                )),
                namespace: Some(namespace.to_owned()),
                ..ObjectMeta::default()
            },
            action: Some(action.to_owned()),
            reason: Some(reason.to_owned()),
            note,
            type_: Some(
                match type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .to_owned(),
            ),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            reporting_controller: Some(NAME.to_owned()),
            reporting_instance: Some(self.reporting_instance.clone()),
            ..Event::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        let mut delay = Duration::from_millis(100);
        for attempt in 1..=EVENT_ATTEMPTS {
            let err = match api.create(&PostParams::default(), &event).await {
                Ok(_) => return,
                // Stored by an attempt whose answer was lost.
                Err(kube::Error::Api(status)) if attempt > 1 && status.is_already_exists() => {
                    return;
                }
                Err(err) => err,
            };
            if attempt == EVENT_ATTEMPTS || !is_transient(&err) {
                tracing::warn!(error = %err, reason, "cannot record event");
                return;
            }
            tokio::time::sleep(delay).await;
            delay *= 2;
        }
    }
}

/// How often an event is tried before it is given up (waits of 0.1, 0.2,
/// 0.4 and 0.8 s between).
const EVENT_ATTEMPTS: u32 = 5;

/// Whether a failed request may succeed when sent again.
pub(super) fn is_transient(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => matches!(status.code, 429 | 500 | 503 | 504),
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
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

    /// All namespaces when `namespaces` holds no name, otherwise exactly those.
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
