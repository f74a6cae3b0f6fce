//! The recorded scenario, replayed once per test binary on a server of its
//! own: namespace `ref`, ResourceQuota `quota`, two seconds later the
//! Deployment, Job, StatefulSet, Service and PodDisruptionBudget as `kubectl
//! create` sends them, then everything read back once the controllers have
//! settled.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::normalize::Normalizer;
use super::server;
use super::support::http::{Http, HttpRequest};
use opctl_envtest::{Config, Controllers, Simulation};

const NS: &str = "ref";
const TIMEOUT: Duration = Duration::from_secs(10);

/// A recorded file of `tests/fixtures/kcm-objects-v1.32`.
pub fn fixture(file: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kcm-objects-v1.32")
        .join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const FILES: [&str; 13] = [
    "deployment.json",
    "replicaset.json",
    "deployment-pod.json",
    "job.json",
    "job-pod.json",
    "statefulset.json",
    "statefulset-pod-0.json",
    "statefulset-controllerrevision.json",
    "statefulset-pvc.json",
    "service-endpoints-endpointslice.json",
    "poddisruptionbudget.json",
    "resourcequota.json",
    "events.json",
];

/// What the scenario left on envtest, and how each side is normalised.
pub struct Scenario {
    objects: BTreeMap<&'static str, Value>,
    lists: BTreeMap<&'static str, Vec<Value>>,
    pub recorded: Normalizer,
    pub envtest: Normalizer,
    /// How long envtest's controllers took to settle after the batch.
    pub settled_after: Duration,
}

impl Scenario {
    pub fn get(&self, what: &str) -> Value {
        self.objects
            .get(what)
            .cloned()
            .unwrap_or_else(|| panic!("envtest has no {what}"))
    }

    pub fn list(&self, what: &str) -> Vec<Value> {
        self.lists.get(what).cloned().unwrap_or_default()
    }
}

pub fn scenario() -> &'static Scenario {
    static RUN: OnceLock<Scenario> = OnceLock::new();
    RUN.get_or_init(|| {
        let background = server::background(Config {
            simulation: Simulation::off(),
            controllers: Controllers::all(),
            ..Config::default()
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(run(&background.base_url))
    })
}

async fn send(http: &Http, request: HttpRequest) -> Value {
    let target = request.target.clone();
    let response = http
        .send(&request, TIMEOUT)
        .await
        .unwrap_or_else(|e| panic!("{} {target}: {e}", request.method));
    assert!(
        response.status < 300,
        "{} {target}: {} {}",
        request.method,
        response.status,
        response.text()
    );
    response.json().unwrap_or_else(|e| panic!("{target}: {e}"))
}

async fn create(http: &Http, path: &str, body: Value) -> Value {
    let target = format!("{path}?fieldManager=kubectl-create");
    send(http, HttpRequest::new("POST", target).json(&body)).await
}

async fn get(http: &Http, path: &str) -> Value {
    send(http, HttpRequest::new("GET", path)).await
}

/// A list's items with their `apiVersion` and `kind`, as `kubectl get -o
/// json` shows them.
async fn items(http: &Http, path: &str) -> Vec<Value> {
    let list = get(http, path).await;
    let kind = list["kind"].as_str().unwrap_or("").trim_end_matches("List");
    let mut items = list["items"].as_array().cloned().unwrap_or_default();
    for item in &mut items {
        item["apiVersion"] = list["apiVersion"].clone();
        item["kind"] = json!(kind);
    }
    items
}

/// The store's current resourceVersion (a list's).
async fn current_rv(http: &Http) -> String {
    let list = get(http, "/api/v1/namespaces?limit=1").await;
    list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// Waits until nothing has been written for a second.
async fn settle(http: &Http) -> Duration {
    let start = Instant::now();
    let mut last = current_rv(http).await;
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_secs(1) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "envtest's controllers keep writing"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        let rv = current_rv(http).await;
        if rv != last {
            last = rv;
            quiet_since = Instant::now();
        }
    }
    quiet_since.duration_since(start)
}

async fn run(base_url: &str) -> Scenario {
    let http = Http::new(base_url);
    let ns = format!("/api/v1/namespaces/{NS}");
    let apps = format!("/apis/apps/v1/namespaces/{NS}");
    create(
        &http,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
    )
    .await;
    // The recording's namespace had its ServiceAccount and root CA already.
    settle(&http).await;
    create(
        &http,
        &format!("{ns}/resourcequotas"),
        json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "quota"},
            "spec": {"hard": {"pods": "10", "services": "5", "configmaps": "10", "secrets": "10",
                "persistentvolumeclaims": "5", "count/deployments.apps": "5",
                "count/jobs.batch": "5"}}}),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let batch = Instant::now();
    create(
        &http,
        &format!("{apps}/deployments"),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
    )
    .await;
    create(
        &http,
        &format!("/apis/batch/v1/namespaces/{NS}/jobs"),
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
    create(
        &http,
        &format!("{apps}/statefulsets"),
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}}}}]}}),
    )
    .await;
    create(
        &http,
        &format!("{ns}/services"),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"},
                "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}),
    )
    .await;
    create(
        &http,
        &format!("/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets"),
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
    )
    .await;
    let settled_after = batch.elapsed() + settle(&http).await;

    let mut objects = BTreeMap::new();
    let mut lists = BTreeMap::new();
    objects.insert(
        "deployment",
        get(&http, &format!("{apps}/deployments/web")).await,
    );
    let replicasets = items(&http, &format!("{apps}/replicasets")).await;
    if let [rs] = replicasets.as_slice() {
        objects.insert("replicaset", rs.clone());
    }
    lists.insert(
        "deployment-pods",
        items(&http, &format!("{ns}/pods?labelSelector=app%3Dweb")).await,
    );
    objects.insert(
        "job",
        get(&http, &format!("/apis/batch/v1/namespaces/{NS}/jobs/job")).await,
    );
    lists.insert(
        "job-pods",
        items(&http, &format!("{ns}/pods?labelSelector=job-name%3Djob")).await,
    );
    objects.insert(
        "statefulset",
        get(&http, &format!("{apps}/statefulsets/db")).await,
    );
    lists.insert(
        "statefulset-pods",
        items(&http, &format!("{ns}/pods?labelSelector=app%3Ddb")).await,
    );
    lists.insert(
        "controllerrevisions",
        items(&http, &format!("{apps}/controllerrevisions")).await,
    );
    objects.insert(
        "claim",
        get(&http, &format!("{ns}/persistentvolumeclaims/data-db-0")).await,
    );
    objects.insert("service", get(&http, &format!("{ns}/services/web")).await);
    objects.insert(
        "endpoints",
        get(&http, &format!("{ns}/endpoints/web")).await,
    );
    lists.insert(
        "endpointslices",
        items(
            &http,
            &format!(
                "/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dweb"
            ),
        )
        .await,
    );
    objects.insert(
        "pdb",
        get(
            &http,
            &format!("/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/web"),
        )
        .await,
    );
    objects.insert(
        "quota",
        get(&http, &format!("{ns}/resourcequotas/quota")).await,
    );
    lists.insert("events", items(&http, &format!("{ns}/events")).await);

    let recorded_files: Vec<Value> = FILES.iter().map(|f| fixture(f)).collect();
    let recorded = normalizer(&recorded_files);
    let ours: Vec<Value> = objects
        .values()
        .cloned()
        .chain(lists.values().flatten().cloned())
        .collect();
    let envtest = normalizer(&ours);
    Scenario {
        objects,
        lists,
        recorded,
        envtest,
        settled_after,
    }
}

/// A normaliser for one side: every object of `values` (lists flattened).
fn normalizer(values: &[Value]) -> Normalizer {
    let mut all: Vec<&Value> = Vec::new();
    for v in values {
        match v["items"].as_array() {
            Some(items) => all.extend(items),
            None => all.push(v),
        }
    }
    Normalizer::new(&all)
}
