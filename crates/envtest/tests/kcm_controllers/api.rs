//! Plain JSON requests and waits, for the tests of this binary.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::server;
use crate::support::http::{Http, HttpRequest, HttpResponse};
use opctl_envtest::{Config, Controllers, Simulation};

/// How long a controller may take before a test gives up on it (a loaded
/// machine is slow; kube-controller-manager acts within a second).
pub const WAIT: Duration = Duration::from_secs(20);

/// A client of one server.
#[derive(Clone)]
pub struct Api {
    http: std::sync::Arc<Http>,
}

/// A server with every controller and no Node, scheduler, kubelet or
/// provisioner (`--simulate none`), shared by the tests that want that.
pub fn no_nodes() -> Api {
    static SERVER: OnceLock<String> = OnceLock::new();
    let url = SERVER.get_or_init(|| {
        server::background(Config {
            simulation: Simulation::off(),
            controllers: Controllers::all(),
            ..Config::default()
        })
        .base_url
    });
    Api::new(url)
}

/// A server with the default simulation (one Node, scheduler, kubelet) and
/// every controller, shared by the tests that need Pods to run.
pub fn with_nodes() -> Api {
    static SERVER: OnceLock<String> = OnceLock::new();
    let url = SERVER.get_or_init(|| server::background(Config::default()).base_url);
    Api::new(url)
}

/// A server of its own.
pub fn own(config: Config) -> Api {
    Api::new(&server::background(config).base_url)
}

impl Api {
    pub fn new(base_url: &str) -> Api {
        Api {
            http: std::sync::Arc::new(Http::new(base_url)),
        }
    }

    pub async fn send(&self, request: HttpRequest) -> HttpResponse {
        let target = request.target.clone();
        self.http
            .send(&request, Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("{} {target}: {e}", request.method))
    }

    async fn ok(&self, request: HttpRequest) -> Value {
        let (method, target) = (request.method.clone(), request.target.clone());
        let response = self.send(request).await;
        assert!(
            response.status < 300,
            "{method} {target}: {} {}",
            response.status,
            response.text()
        );
        response.json().unwrap_or_else(|e| panic!("{target}: {e}"))
    }

    pub async fn create(&self, path: &str, body: Value) -> Value {
        self.ok(HttpRequest::new("POST", path).json(&body)).await
    }

    pub async fn get(&self, path: &str) -> Option<Value> {
        let response = self.send(HttpRequest::new("GET", path)).await;
        match response.status {
            404 => None,
            s if s < 300 => Some(response.json().expect("JSON")),
            s => panic!("GET {path}: {s} {}", response.text()),
        }
    }

    pub async fn items(&self, path: &str) -> Vec<Value> {
        let list = self
            .get(path)
            .await
            .unwrap_or_else(|| panic!("{path}: 404"));
        list["items"].as_array().cloned().unwrap_or_default()
    }

    pub async fn patch(&self, path: &str, patch: Value) -> Value {
        let request = HttpRequest::new("PATCH", path)
            .header("Content-Type", "application/merge-patch+json")
            .with_body(patch.to_string());
        self.ok(request).await
    }

    pub async fn delete(&self, path: &str) -> Value {
        self.ok(HttpRequest::new("DELETE", path)).await
    }

    /// A fresh namespace.
    pub async fn namespace(&self, prefix: &str) -> String {
        let name = server::unique_name(prefix);
        self.create(
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        )
        .await;
        name
    }

    /// Polls `path` until `check` holds of it (`None` when it is gone).
    pub async fn until(
        &self,
        path: &str,
        what: &str,
        check: impl Fn(Option<&Value>) -> bool,
    ) -> Option<Value> {
        let start = Instant::now();
        loop {
            let now = self.get(path).await;
            if check(now.as_ref()) {
                return now;
            }
            assert!(
                start.elapsed() < WAIT,
                "{what}: not within {WAIT:?}; last {}",
                serde_json::to_string_pretty(&now).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Polls a list until `check` holds of its items.
    pub async fn until_items(
        &self,
        path: &str,
        what: &str,
        check: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let items = self.items(path).await;
            if check(&items) {
                return items;
            }
            assert!(
                start.elapsed() < WAIT,
                "{what}: not within {WAIT:?}; last {}",
                serde_json::to_string_pretty(&items).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A Pod of one container, with `labels`.
pub fn pod(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

/// The names of objects.
pub fn names(items: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = items
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect();
    out.sort();
    out
}

/// The uid of the object's controller.
pub fn controller_uid(obj: &Value) -> Option<&str> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)
        .and_then(|r| r["uid"].as_str())
}
