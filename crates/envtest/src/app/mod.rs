//! The server's state ([`App`]): storage, served resources, allocators,
//! webhooks, metrics, faults, and which cluster controllers run.

use std::sync::{Arc, Mutex};

mod store_view;

use crate::admission::WebhookRegistry;
use crate::builtin;
use crate::registry::SharedRegistry;
use crate::store::Store;

pub(crate) use store_view::StoreView;

/// The server's state: storage, served resources, allocators and webhooks.
pub(crate) struct App {
    pub store: Arc<Store>,
    pub registry: SharedRegistry,
    /// The stored admission webhook configurations, ready to call.
    pub webhooks: WebhookRegistry,
    /// The stored ValidatingAdmissionPolicies with their bindings, compiled.
    pub policies: crate::admission::PolicyRegistry,
    /// Serialises `api::admit::refresh_configurations`, so that the last refresh
    /// always hands over the newest stored configurations.
    pub(crate) webhook_refresh: Mutex<()>,
    pub allocator: Mutex<builtin::Allocator>,
    /// `host:port` the server listens on (for `/api`'s serverAddressByClientCIDRs).
    pub server_address: std::sync::RwLock<String>,
    /// Set when the server stops: open watches end so connections can close.
    pub closing: tokio::sync::watch::Sender<bool>,
    /// Which of kube-controller-manager's controllers run.
    pub controllers: crate::controller_selection::Controllers,
    /// The request counters `/metrics` serves.
    pub metrics: crate::metrics::Metrics,
    /// Signs and checks the ServiceAccount tokens this server issues.
    pub tokens: crate::tokens::Signer,
    /// Faults to inject into requests and watches (none unless configured).
    pub faults: crate::faults::Faults,
    /// Whether the workload simulation schedules Pods (the scheduler's
    /// health in `componentstatuses`).
    pub simulated_scheduler: bool,
    /// The PEM bundle of the CA that verifies this server, published in
    /// every namespace's `kube-root-ca.crt`; empty while serving plain HTTP.
    pub root_ca: std::sync::RwLock<String>,
    /// Set when serving HTTPS: the CA, serving certificate and the
    /// administrator's bearer token; requests without a credential then
    /// get 401.
    pub identity: Option<Arc<crate::pki::Identity>>,
    /// How long a request that is not long-running may take (504 after).
    pub request_timeout: std::time::Duration,
}

impl App {
    /// See [`App::root_ca`].
    pub(crate) fn root_ca_pem(&self) -> String {
        self.root_ca
            .read()
            .map(|pem| pem.clone())
            .unwrap_or_default()
    }

    /// A server state whose watches and reads of the past reach back `history` changes.
    pub(crate) fn new(history: usize) -> App {
        App::with_history(history, history)
    }

    /// Watches resume through the last `watch_history` changes; lists at an
    /// older resourceVersion reach back `read_history` (see [`Store::with_windows`]).
    pub(crate) fn with_history(watch_history: usize, read_history: usize) -> App {
        let store = Arc::new(Store::with_windows(watch_history, read_history));
        let cluster = Arc::new(StoreView::new(Arc::clone(&store)));
        App {
            store,
            registry: SharedRegistry::new(crate::registry::Registry::new(Vec::new())),
            webhooks: WebhookRegistry::new(cluster),
            policies: crate::admission::PolicyRegistry::default(),
            webhook_refresh: Mutex::new(()),
            allocator: Mutex::new(builtin::Allocator::default()),
            server_address: std::sync::RwLock::new(String::new()),
            closing: tokio::sync::watch::Sender::new(false),
            controllers: crate::controller_selection::Controllers::default(),
            metrics: crate::metrics::Metrics::default(),
            tokens: crate::tokens::Signer::new(),
            faults: crate::faults::Faults::default(),
            simulated_scheduler: false,
            root_ca: std::sync::RwLock::new(String::new()),
            identity: None,
            request_timeout: crate::request::DEFAULT_REQUEST_TIMEOUT,
        }
    }
}
