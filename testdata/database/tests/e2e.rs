//! End-to-end tests of the Database operator: they use the cluster the
//! kubeconfig names and start the manager binary as its own process, one per
//! test, watching a namespace of that test's own.
//!
//! `make test-e2e` runs them under `opctl envtest run` (no cluster needed);
//! `E2E_USE_EXISTING_CLUSTER=true make test-e2e` runs them against the
//! current kubeconfig: deploy the operator there first (`make deploy`, with
//! cert-manager), whose manager serves the conversion webhook the API server
//! calls for every Database in v2, and let it watch only its own namespace
//! while the tests run (README.md, "On a real cluster"); the tests' managers
//! run without their webhook server. Plain `cargo test` lists them as
//! ignored.
//!
//! Each manager's log goes into its test's captured output: cargo shows it
//! for a test that fails.
//!
//! This file is yours; `opctl create api` adds a test per kind at the
//! `+opctl:scaffold:e2e` marker.

mod support;
// +opctl:scaffold:e2e-modules

#[allow(unused_imports)] // what tests added at the scaffold marker use
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::{Resource, ResourceExt};
use serde_json::json;

use database::api::zalando::v1::{Database, DatabasePhase, DatabaseSpec, DatabaseType};
#[allow(unused_imports)]
use support::{Fixture, Manager, eventually, http_get, kubectl, wait_for};

/// The labels the operator puts on a Database's children.
fn labels(type_: &str, name: &str) -> std::collections::BTreeMap<String, String> {
    [
        ("app.kubernetes.io/name", type_),
        ("app.kubernetes.io/instance", name),
        ("app.kubernetes.io/managed-by", "database"),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value.to_owned()))
    .collect()
}

/// Creates a Database of `type_` called `name` in the fixture's namespace.
async fn create(fixture: &Fixture, name: &str, type_: DatabaseType) -> Database {
    let object = Database::new(name, DatabaseSpec { type_ });
    fixture
        .api::<Database>()
        .create(&PostParams::default(), &object)
        .await
        .expect("create the Database")
}

/// Waits until the Database's status is Ready at its current generation.
async fn ready(fixture: &Fixture, name: &str) -> Database {
    let api = fixture.api::<Database>();
    wait_for(&format!("Database {name} to be Ready"), async || {
        let current = api.get(name).await.map_err(|e| e.to_string())?;
        let status = current.status.clone().unwrap_or_default();
        let ready = status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        let current_generation = status.observed_generation == current.metadata.generation;
        if ready && current_generation && status.phase == Some(DatabasePhase::Ready) {
            Ok(current)
        } else {
            Err(format!("{status:?}"))
        }
    })
    .await
}

/// Waits until `api` has an object `name` that `accept` takes.
async fn child<K>(api: &Api<K>, name: &str, accept: impl Fn(&K) -> bool) -> K
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let what = format!("{} {name}", K::kind(&()));
    wait_for(&what, async || match api.get_opt(name).await {
        Ok(Some(object)) if accept(&object) => Ok(object),
        Ok(Some(object)) => Err(format!("{object:?}")),
        Ok(None) => Err("absent".to_owned()),
        Err(err) => Err(err.to_string()),
    })
    .await
}

/// Waits until `api` has no object `name` any more.
async fn gone<K>(api: &Api<K>, name: &str)
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let what = format!("{} {name} to be gone", K::kind(&()));
    wait_for(&what, async || match api.get_opt(name).await {
        Ok(None) => Ok(()),
        Ok(Some(object)) => Err(format!("still there: {:?}", object.meta())),
        Err(err) => Err(err.to_string()),
    })
    .await
}

/// Asserts that `owners` is exactly one controller reference to `database`.
fn assert_controlled_by(owners: &[OwnerReference], database: &Database) {
    assert_eq!(owners.len(), 1, "{owners:?}");
    let owner = &owners[0];
    assert_eq!(owner.api_version, "zalando.org/v1");
    assert_eq!(owner.kind, "Database");
    assert_eq!(Some(&owner.name), database.metadata.name.as_ref());
    assert_eq!(Some(&owner.uid), database.metadata.uid.as_ref());
    assert_eq!(owner.controller, Some(true));
    assert_eq!(owner.block_owner_deletion, Some(true));
}

/// The image and container ports of a Pod's single container.
fn image_and_ports(pod: &Pod) -> (Option<String>, Vec<i32>) {
    let spec = pod.spec.as_ref().expect("a Pod spec");
    assert_eq!(spec.containers.len(), 1, "{:?}", spec.containers);
    let container = &spec.containers[0];
    let ports = container.ports.iter().flatten();
    let ports = ports.map(|p| p.container_port).collect();
    (container.image.clone(), ports)
}

/// The (port, targetPort) pairs of a Service, and whether each has a node port.
fn service_ports(service: &Service) -> Vec<(i32, Option<IntOrString>, bool)> {
    let spec = service.spec.as_ref().expect("a Service spec");
    spec.ports
        .iter()
        .flatten()
        .map(|p| (p.port, p.target_port.clone(), p.node_port.is_some()))
        .collect()
}

/// Waits for an event with `reason` about the Database `name`.
async fn event(fixture: &Fixture, name: &str, reason: &str) -> Event {
    let api = fixture.api::<Event>();
    wait_for(&format!("a {reason} event about {name}"), async || {
        let events = api
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let about = |e: &&Event| {
            let regarding = e.regarding.as_ref();
            regarding.is_some_and(|r| {
                r.name.as_deref() == Some(name) && r.kind.as_deref() == Some("Database")
            })
        };
        let seen: Vec<String> = events
            .items
            .iter()
            .filter(about)
            .filter_map(|e| e.reason.clone())
            .collect();
        events
            .items
            .iter()
            .filter(about)
            .find(|e| e.reason.as_deref() == Some(reason))
            .cloned()
            .ok_or(format!("reasons {seen:?}"))
    })
    .await
}

/// Asserts that the manager stops cleanly on SIGTERM.
fn assert_stops_cleanly(fixture: Fixture) {
    let exit = fixture.terminate();
    assert!(exit.success(), "the manager exited with {exit}");
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn the_crd_is_installed_and_established() {
    let client = kube::Client::try_default()
        .await
        .expect("a cluster from the kubeconfig");
    let api: Api<CustomResourceDefinition> = Api::all(client);
    let crd = api
        .get("databases.zalando.org")
        .await
        .expect("the CRD is installed (make install)");
    assert_eq!(crd.spec.group, "zalando.org");
    assert_eq!(crd.spec.scope, "Namespaced");
    assert_eq!(crd.spec.names.kind, "Database");
    assert_eq!(
        crd.spec.names.short_names,
        Some(vec!["db".to_owned(), "dbs".to_owned()])
    );
    // Both versions are served; v1 is stored (and converted to v2 by the
    // manager's webhook).
    let versions: Vec<(&str, bool, bool)> = crd
        .spec
        .versions
        .iter()
        .map(|v| (v.name.as_str(), v.served, v.storage))
        .collect();
    assert_eq!(versions, [("v1", true, true), ("v2", true, false)]);
    let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
    let established = conditions.iter().find(|c| c.type_ == "Established");
    assert_eq!(
        established.map(|c| c.status.as_str()),
        Some("True"),
        "{conditions:?}"
    );
}

#[test]
#[ignore = "needs a cluster: run `make test-e2e`"]
fn the_manager_serves_probes_and_metrics_and_stops_on_sigterm() {
    let manager = Manager::start(&[]);
    let (status, _) = http_get(manager.health, "/healthz").expect("/healthz answers");
    assert_eq!(status, 200);
    let (status, body) = http_get(manager.metrics, "/metrics").expect("/metrics answers");
    assert_eq!(status, 200);
    assert!(
        body.contains(
            r#"controller_runtime_reconcile_total{controller="database",result="success"}"#
        ),
        "{body}"
    );
    let exit = manager.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the manager exited with {exit}");
}

/// The holder of the Lease `name` in the namespace `default`, if any.
async fn lease_holder(client: &kube::Client, name: &str) -> Result<String, String> {
    use k8s_openapi::api::coordination::v1::Lease;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let lease = leases.get_opt(name).await.map_err(|e| e.to_string())?;
    let holder = lease.and_then(|lease| lease.spec?.holder_identity);
    holder.ok_or_else(|| "no holder".to_owned())
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn a_second_replica_is_ready_at_once_and_takes_over_when_the_first_stops() {
    let client = kube::Client::try_default()
        .await
        .expect("a cluster from the kubeconfig");
    let namespace = support::create_namespace(&client, "e2e-rollout").await;
    let account = support::operator_account(&client).await;
    let lease = "database-e2e-rollout";
    let flags = [
        format!("--namespace={namespace}"),
        "--leader-elect".to_owned(),
        format!("--leader-election-id={lease}"),
        "--leader-election-namespace=default".to_owned(),
        "--leader-election-lease-duration-seconds=6".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let first = Manager::start_replica("e2e-first", Some(&account), &flags);
    let holder = wait_for("the first replica to lead", async || {
        lease_holder(&client, lease).await
    })
    .await;
    assert_eq!(holder, "e2e-first");

    // Ready while the first one leads (a rolling update can go on), but
    // not reconciling: the first one does.
    let second = Manager::start_replica("e2e-second", Some(&account), &flags);
    assert_eq!(
        lease_holder(&client, lease).await.as_deref(),
        Ok("e2e-first")
    );
    let databases: Api<Database> = Api::namespaced(client.clone(), &namespace);
    let create = |name: &str| {
        Database::new(
            name,
            DatabaseSpec {
                type_: DatabaseType::Mongo,
            },
        )
    };
    databases
        .create(&PostParams::default(), &create("before"))
        .await
        .expect("create a Database");
    let is_ready = |database: &Database| {
        database.status.as_ref().is_some_and(|s| {
            s.phase == Some(DatabasePhase::Ready)
                && s.observed_generation == database.metadata.generation
        })
    };
    wait_for("the first replica to make it Ready", async || {
        let current = databases.get("before").await.map_err(|e| e.to_string())?;
        is_ready(&current)
            .then_some(())
            .ok_or(format!("{:?}", current.status))
    })
    .await;

    let exit = first.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the first replica exited with {exit}");
    wait_for("the second replica to lead", async || {
        match lease_holder(&client, lease).await?.as_str() {
            "e2e-second" => Ok(()),
            other => Err(other.to_owned()),
        }
    })
    .await;
    databases
        .create(&PostParams::default(), &create("after"))
        .await
        .expect("create a Database");
    wait_for("the second replica to make it Ready", async || {
        let current = databases.get("after").await.map_err(|e| e.to_string())?;
        is_ready(&current)
            .then_some(())
            .ok_or(format!("{:?}", current.status))
    })
    .await;
    let exit = second.terminate(Duration::from_secs(10));
    assert!(exit.success(), "the second replica exited with {exit}");
    // Given up on the way out, so that a next replica need not wait it out.
    assert_eq!(
        lease_holder(&client, lease).await,
        Err("no holder".to_owned())
    );
    let _ = kubectl(&["delete", "namespace", &namespace, "--wait=false"]);
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn a_mongo_database_gets_its_pod_service_and_status() {
    let fixture = Fixture::start("mongo").await;
    create(&fixture, "orders", DatabaseType::Mongo).await;
    let database = ready(&fixture, "orders").await;
    let status = database.status.clone().unwrap_or_default();
    assert_eq!(
        status.message.as_deref(),
        Some("Pod and Service created by Database orders")
    );

    let pod = child(&fixture.api::<Pod>(), "orders", |_| true).await;
    assert_eq!(
        image_and_ports(&pod),
        (Some("mongo:4.0".to_owned()), vec![27017])
    );
    // Ready because its Pod is.
    let pod_conditions = pod.status.as_ref().and_then(|s| s.conditions.clone());
    let pod_ready = pod_conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Ready");
    assert_eq!(pod_ready.map(|c| c.status), Some("True".to_owned()));
    assert_eq!(pod.metadata.labels, Some(labels("mongo", "orders")));
    assert_controlled_by(pod.owner_references(), &database);
    let env = pod.spec.as_ref().and_then(|s| s.containers[0].env.clone());
    assert_eq!(env, None, "mongo needs no password");

    let service = child(&fixture.api::<Service>(), "orders", |_| true).await;
    let spec = service.spec.clone().unwrap_or_default();
    assert_eq!(spec.type_.as_deref(), Some("NodePort"));
    assert_eq!(
        service_ports(&service),
        [(27017, Some(IntOrString::Int(27017)), true)]
    );
    assert_eq!(spec.selector, Some(labels("mongo", "orders")));
    assert_controlled_by(service.owner_references(), &database);

    let secrets = fixture.api::<Secret>();
    let secret = secrets.get_opt("orders-credentials").await;
    assert!(secret.expect("read the Secret").is_none());

    let created = event(&fixture, "orders", "Created").await;
    assert_eq!(
        created.note.as_deref(),
        Some("Pod and Service created by Database orders")
    );

    // Later reconciles (queued by the children's creation) change nothing:
    // the Ready condition keeps its transition time, Created is not repeated.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let later = fixture.api::<Database>().get("orders").await;
    let later = later.expect("read the Database").status.unwrap_or_default();
    assert_eq!(later, status);
    let created = event(&fixture, "orders", "Created").await;
    assert_eq!(created.series, None, "one Created event: {created:?}");
    assert_stops_cleanly(fixture);
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn a_mysql_database_reads_its_password_from_its_secret() {
    let fixture = Fixture::start("mysql").await;
    create(&fixture, "billing", DatabaseType::Mysql).await;
    let database = ready(&fixture, "billing").await;

    let secrets = fixture.api::<Secret>();
    let secret = child(&secrets, "billing-credentials", |_| true).await;
    assert_controlled_by(secret.owner_references(), &database);
    assert_eq!(secret.metadata.labels, Some(labels("mysql", "billing")));
    let password = secret.data.as_ref().and_then(|d| d.get("password"));
    let password = password.expect("a password in the Secret").0.clone();
    assert!(password.len() >= 16, "a long random password");

    let pods = fixture.api::<Pod>();
    let pod = child(&pods, "billing", |_| true).await;
    assert_eq!(
        image_and_ports(&pod),
        (Some("mysql:8.0".to_owned()), vec![3306])
    );
    let env = pod.spec.as_ref().and_then(|s| s.containers[0].env.clone());
    let env = env.unwrap_or_default();
    assert_eq!(env.len(), 1, "{env:?}");
    assert_eq!(env[0].name, "MYSQL_ROOT_PASSWORD");
    assert_eq!(env[0].value, None, "never a literal password");
    let source = env[0]
        .value_from
        .as_ref()
        .and_then(|v| v.secret_key_ref.as_ref());
    let source = source.expect("the password comes from a Secret");
    assert_eq!(source.name, "billing-credentials");
    assert_eq!(source.key, "password");

    let services = fixture.api::<Service>();
    let service = child(&services, "billing", |_| true).await;
    assert_eq!(
        service_ports(&service),
        [(3306, Some(IntOrString::Int(3306)), true)]
    );

    // The password survives reconciles: delete the Pod, wait for the new one.
    let old_uid = pod.uid();
    pods.delete("billing", &DeleteParams::default())
        .await
        .expect("delete the Pod");
    child(&pods, "billing", |p| {
        p.uid() != old_uid && p.metadata.deletion_timestamp.is_none()
    })
    .await;
    let secret = secrets
        .get("billing-credentials")
        .await
        .expect("the Secret");
    let kept = secret.data.as_ref().and_then(|d| d.get("password"));
    assert_eq!(kept.map(|p| &p.0), Some(&password), "the password is kept");
    assert_stops_cleanly(fixture);
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn two_databases_have_disjoint_selectors() {
    let fixture = Fixture::start("two").await;
    create(&fixture, "alpha", DatabaseType::Mongo).await;
    create(&fixture, "beta", DatabaseType::Mongo).await;
    ready(&fixture, "alpha").await;
    ready(&fixture, "beta").await;
    let services = fixture.api::<Service>();
    let pods = fixture.api::<Pod>();
    for name in ["alpha", "beta"] {
        let service = child(&services, name, |_| true).await;
        let selector = service.spec.and_then(|s| s.selector).unwrap_or_default();
        assert!(!selector.is_empty());
        let selector: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let params = ListParams::default().labels(&selector.join(","));
        let selected = pods.list(&params).await.expect("list Pods");
        let names: Vec<String> = selected.items.iter().map(|p| p.name_any()).collect();
        assert_eq!(names, [name], "the Service {name} selects only its own Pod");
    }
    assert_stops_cleanly(fixture);
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn an_invalid_database_is_rejected_by_the_api_server() {
    let fixture = Fixture::start("invalid").await;
    let resource = ApiResource::erase::<Database>(&());
    let api: Api<DynamicObject> =
        Api::namespaced_with(fixture.client.clone(), &fixture.namespace, &resource);
    let cases = [
        ("postgres", json!({"type": "postgres"})),
        ("no-type", json!({})),
        ("number", json!({"type": 3})),
        ("1-starts-with-a-digit", json!({"type": "mongo"})),
    ];
    for (name, spec) in cases {
        let object = DynamicObject::new(name, &resource).data(json!({ "spec": spec }));
        let result = api.create(&PostParams::default(), &object).await;
        match result {
            Err(kube::Error::Api(status)) => {
                let answer = (status.code, status.reason.as_str());
                assert_eq!(answer, (422, "Invalid"), "{name}: {status:?}");
            }
            other => panic!("{name}: expected 422 Invalid, got {other:?}"),
        }
    }
    let missing_spec = DynamicObject::new("no-spec", &resource);
    let result = api.create(&PostParams::default(), &missing_spec).await;
    assert!(
        matches!(&result, Err(kube::Error::Api(e)) if e.code == 422),
        "{result:?}"
    );
    let left = fixture.api::<Database>().list(&ListParams::default()).await;
    assert!(left.expect("list Databases").items.is_empty());
    assert_stops_cleanly(fixture);
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn switching_the_type_replaces_the_pod_and_updates_the_service() {
    let fixture = Fixture::start("switch").await;
    create(&fixture, "catalog", DatabaseType::Mongo).await;
    let before = ready(&fixture, "catalog").await;
    let pods = fixture.api::<Pod>();
    let services = fixture.api::<Service>();
    let secrets = fixture.api::<Secret>();
    let mongo_pod = child(&pods, "catalog", |_| true).await;
    let service = child(&services, "catalog", |_| true).await;

    let databases = fixture.api::<Database>();
    let to_mysql = Patch::Merge(json!({"spec": {"type": "mysql"}}));
    databases
        .patch("catalog", &PatchParams::default(), &to_mysql)
        .await
        .expect("change spec.type");
    let after = ready(&fixture, "catalog").await;
    assert!(after.metadata.generation > before.metadata.generation);

    let mysql_pod = child(&pods, "catalog", |p| {
        p.uid() != mongo_pod.uid() && p.metadata.deletion_timestamp.is_none()
    })
    .await;
    assert_eq!(
        image_and_ports(&mysql_pod),
        (Some("mysql:8.0".to_owned()), vec![3306])
    );
    assert_eq!(mysql_pod.metadata.labels, Some(labels("mysql", "catalog")));
    let updated = child(&services, "catalog", |_| true).await;
    assert_eq!(
        updated.uid(),
        service.uid(),
        "the Service is updated in place"
    );
    assert_eq!(
        service_ports(&updated),
        [(3306, Some(IntOrString::Int(3306)), true)]
    );
    let selector = updated.spec.and_then(|s| s.selector);
    assert_eq!(selector, Some(labels("mysql", "catalog")));
    child(&secrets, "catalog-credentials", |_| true).await;
    let changed = event(&fixture, "catalog", "TypeChanged").await;
    let note = changed.note.unwrap_or_default();
    assert!(note.contains("from mongo to mysql"), "{note}");

    // And back: a mongo Database keeps no Secret.
    let to_mongo = Patch::Merge(json!({"spec": {"type": "mongo"}}));
    databases
        .patch("catalog", &PatchParams::default(), &to_mongo)
        .await
        .expect("change spec.type back");
    ready(&fixture, "catalog").await;
    let mongo_again = child(&pods, "catalog", |p| {
        p.uid() != mysql_pod.uid() && p.metadata.deletion_timestamp.is_none()
    })
    .await;
    assert_eq!(
        image_and_ports(&mongo_again),
        (Some("mongo:4.0".to_owned()), vec![27017])
    );
    let service = child(&services, "catalog", |_| true).await;
    assert_eq!(
        service_ports(&service),
        [(27017, Some(IntOrString::Int(27017)), true)]
    );
    gone(&secrets, "catalog-credentials").await;
    assert_stops_cleanly(fixture);
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn a_type_change_waits_for_the_old_pod_to_go() {
    let fixture = Fixture::start("wait").await;
    create(&fixture, "archive", DatabaseType::Mongo).await;
    ready(&fixture, "archive").await;
    // A finalizer of the test's own keeps the old Pod terminating, as a
    // kubelet does during the grace period of a running Pod.
    let pods = fixture.api::<Pod>();
    let hold = Patch::Merge(json!({"metadata": {"finalizers": ["e2e.zalando.org/hold"]}}));
    let mongo_pod = pods
        .patch("archive", &PatchParams::default(), &hold)
        .await
        .expect("hold the Pod");

    let databases = fixture.api::<Database>();
    let to_mysql = Patch::Merge(json!({"spec": {"type": "mysql"}}));
    databases
        .patch("archive", &PatchParams::default(), &to_mysql)
        .await
        .expect("change spec.type");
    let pending = wait_for("the Database to wait for its old Pod", async || {
        let current = databases.get("archive").await.map_err(|e| e.to_string())?;
        let status = current.status.clone().unwrap_or_default();
        let waiting = status.phase == Some(DatabasePhase::Pending)
            && status.observed_generation == current.metadata.generation;
        if waiting {
            Ok(status)
        } else {
            Err(format!("{status:?}"))
        }
    })
    .await;
    assert_eq!(
        pending.message.as_deref(),
        Some("waiting for the old Pod archive to terminate")
    );
    let ready_condition = pending.conditions.iter().find(|c| c.type_ == "Ready");
    assert_eq!(ready_condition.map(|c| c.status.as_str()), Some("False"));
    let terminating = pods
        .get("archive")
        .await
        .expect("the old Pod is still there");
    assert_eq!(terminating.uid(), mongo_pod.uid());
    assert!(terminating.metadata.deletion_timestamp.is_some());

    let release = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    pods.patch("archive", &PatchParams::default(), &release)
        .await
        .expect("release the Pod");
    ready(&fixture, "archive").await;
    let mysql_pod = child(&pods, "archive", |p| p.uid() != mongo_pod.uid()).await;
    assert_eq!(
        image_and_ports(&mysql_pod),
        (Some("mysql:8.0".to_owned()), vec![3306])
    );
    assert_stops_cleanly(fixture);
}

/// Changes the image of the Database's Pod in place (the one field of a
/// container that may change), as an outside hand or a bad rollout would.
async fn set_pod_image(fixture: &Fixture, name: &str, container: &str, image: &str) {
    let patch = json!({"spec": {"containers": [{"name": container, "image": image}]}});
    fixture
        .api::<Pod>()
        .patch(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("change the Pod's image");
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn a_failing_pod_makes_the_database_not_ready_until_it_recovers() {
    let fixture = Fixture::start("crash").await;
    create(&fixture, "ledger", DatabaseType::Mongo).await;
    let first = ready(&fixture, "ledger").await;

    // opctl envtest's kubelet crash-loops an image tagged
    // `envtest-crashloop`; a real one cannot pull it. Either way the Pod
    // stays, not Ready, and the Database says why.
    set_pod_image(&fixture, "ledger", "mongo", "mongo:envtest-crashloop").await;
    let databases = fixture.api::<Database>();
    let failed = wait_for("the Database to report its failing Pod", async || {
        let current = databases.get("ledger").await.map_err(|e| e.to_string())?;
        let status = current.status.clone().unwrap_or_default();
        if status.phase == Some(DatabasePhase::Failed) {
            Ok(status)
        } else {
            Err(format!("{status:?}"))
        }
    })
    .await;
    let condition = failed.conditions.iter().find(|c| c.type_ == "Ready");
    let condition = condition.expect("a Ready condition");
    assert_eq!(condition.status, "False");
    let expected = match condition.reason.as_str() {
        "CrashLoopBackOff" => "Pod ledger: container mongo keeps exiting with an error",
        "ImagePullBackOff" => {
            "Pod ledger: the image mongo:envtest-crashloop of container mongo cannot be pulled"
        }
        other => panic!("the Database fails for another reason: {other} ({failed:?})"),
    };
    assert_eq!(failed.message.as_deref(), Some(expected));
    let warning = event(&fixture, "ledger", &condition.reason).await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    assert_eq!(warning.note.as_deref(), Some(expected));
    // The operator leaves the broken Pod alone (it is the same Pod).
    let pod = fixture.api::<Pod>().get("ledger").await.expect("the Pod");
    assert_controlled_by(pod.owner_references(), &first);

    set_pod_image(&fixture, "ledger", "mongo", "mongo:4.0").await;
    let recovered = ready(&fixture, "ledger").await;
    assert_eq!(
        recovered.status.and_then(|s| s.message).as_deref(),
        Some("Pod and Service created by Database ledger")
    );
    let note = event(&fixture, "ledger", "Recovered").await.note;
    assert_eq!(note.as_deref(), Some("Pod ledger is ready again"));
    assert_stops_cleanly(fixture);
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn a_deleted_child_comes_back() {
    let fixture = Fixture::start("restore").await;
    create(&fixture, "inventory", DatabaseType::Mongo).await;
    let database = ready(&fixture, "inventory").await;
    let services = fixture.api::<Service>();
    let service = child(&services, "inventory", |_| true).await;
    services
        .delete("inventory", &DeleteParams::default())
        .await
        .expect("delete the Service");
    let recreated = child(&services, "inventory", |s| s.uid() != service.uid()).await;
    assert_eq!(
        service_ports(&recreated),
        [(27017, Some(IntOrString::Int(27017)), true)]
    );
    assert_eq!(
        recreated.spec.and_then(|s| s.selector),
        Some(labels("mongo", "inventory"))
    );
    assert_controlled_by(
        recreated
            .metadata
            .owner_references
            .as_deref()
            .unwrap_or_default(),
        &database,
    );

    let pods = fixture.api::<Pod>();
    let pod = child(&pods, "inventory", |_| true).await;
    pods.delete("inventory", &DeleteParams::default())
        .await
        .expect("delete the Pod");
    let recreated = child(&pods, "inventory", |p| {
        p.uid() != pod.uid() && p.metadata.deletion_timestamp.is_none()
    })
    .await;
    assert_controlled_by(recreated.owner_references(), &database);
    assert_stops_cleanly(fixture);
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn deleting_the_database_removes_everything_without_the_operator() {
    let mut fixture = Fixture::start("delete").await;
    create(&fixture, "ledger", DatabaseType::Mysql).await;
    let database = ready(&fixture, "ledger").await;
    assert!(
        database.finalizers().is_empty(),
        "no finalizer: {database:?}"
    );
    let pods = fixture.api::<Pod>();
    let services = fixture.api::<Service>();
    let secrets = fixture.api::<Secret>();
    child(&pods, "ledger", |_| true).await;
    child(&services, "ledger", |_| true).await;
    child(&secrets, "ledger-credentials", |_| true).await;

    // The garbage collector alone removes the children.
    let exit = fixture.stop_manager();
    assert!(exit.success(), "the manager exited with {exit}");
    let databases = fixture.api::<Database>();
    databases
        .delete("ledger", &DeleteParams::default())
        .await
        .expect("delete the Database");
    gone(&databases, "ledger").await;
    gone(&pods, "ledger").await;
    gone(&services, "ledger").await;
    gone(&secrets, "ledger-credentials").await;
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn the_finalizer_of_earlier_versions_is_removed() {
    let fixture = Fixture::start("legacy").await;
    // A Database as the earlier versions of the operator left it.
    let mut object = Database::new(
        "journal",
        DatabaseSpec {
            type_: DatabaseType::Mongo,
        },
    );
    object.metadata.finalizers = Some(vec![
        "zalando.org/finalizer".to_owned(),
        "e2e.zalando.org/other".to_owned(),
    ]);
    let databases = fixture.api::<Database>();
    databases
        .create(&PostParams::default(), &object)
        .await
        .expect("create the Database");
    ready(&fixture, "journal").await;
    let database = wait_for("the old finalizer to go", async || {
        let current = databases.get("journal").await.map_err(|e| e.to_string())?;
        match current.finalizers() {
            [only] if only == "e2e.zalando.org/other" => Ok(current),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(database.status.is_some());
    let release = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    databases
        .patch("journal", &PatchParams::default(), &release)
        .await
        .expect("drop the test's finalizer");
    databases
        .delete("journal", &DeleteParams::default())
        .await
        .expect("delete the Database");
    gone(&databases, "journal").await;
    gone(&fixture.api::<Pod>(), "journal").await;
    assert_stops_cleanly(fixture);
}

#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn kubectl_get_dbs_shows_the_preferred_versions_columns() {
    let fixture = Fixture::start("kubectl").await;
    create(&fixture, "reports", DatabaseType::Mysql).await;
    ready(&fixture, "reports").await;
    let output = kubectl(&["get", "dbs", "-n", &fixture.namespace]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "kubectl get dbs: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    // kubectl shows the preferred version, v2 (the highest), with its
    // columns; the Database has no engine version, so that cell is empty.
    assert_eq!(rows.len(), 2, "{stdout}");
    assert_eq!(
        rows[0],
        ["NAME", "ENGINE", "VERSION", "PHASE", "AGE"],
        "{stdout}"
    );
    assert_eq!(rows[1][..3], ["reports", "mysql", "Ready"], "{stdout}");
    assert_eq!(rows[1].len(), 4, "{stdout}");

    // v1 by name shows its own columns.
    let output = kubectl(&["get", "databases.v1.zalando.org", "-n", &fixture.namespace]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let header: Vec<&str> = stdout
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "TYPE", "PHASE", "AGE"], "{stdout}");

    // The singular short name works too.
    let output = kubectl(&[
        "get",
        "db",
        "reports",
        "-n",
        &fixture.namespace,
        "-o",
        "name",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.trim(), "database.zalando.org/reports");
    assert_stops_cleanly(fixture);
}

/// Objects written in v2 are stored in v1 through the manager's conversion
/// webhook (the API server calls its `/convert`), run by the controller as
/// any v1 Database, and read back in v2 as written, with the status the
/// controller wrote in v1; a v1 object reads in v2 without a version.
#[tokio::test]
#[ignore = "needs a cluster: run `make test-e2e`"]
async fn a_database_created_in_v2_reads_as_v1_and_back() {
    use database::api::zalando::v2;

    let fixture = Fixture::start("convert").await;
    let v2s = fixture.api::<v2::Database>();
    let engine = v2::Engine {
        name: DatabaseType::Mysql,
        version: Some("8.0".to_owned()),
    };
    let object = v2::Database::new("inventory", v2::DatabaseSpec { engine });
    let created = v2s
        .create(&PostParams::default(), &object)
        .await
        .expect("create the Database in v2");
    assert_eq!(created.spec, object.spec, "the create answers in v2");

    // The controller reconciles it in v1, where the version is an annotation.
    let v1 = ready(&fixture, "inventory").await;
    assert_eq!(v1.metadata.uid, created.metadata.uid);
    assert_eq!(v1.spec.type_, DatabaseType::Mysql);
    let annotations = v1.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations
            .get("zalando.org/engine-version")
            .map(String::as_str),
        Some("8.0")
    );
    let pod = child(&fixture.api::<Pod>(), "inventory", |_| true).await;
    assert_eq!(image_and_ports(&pod).0.as_deref(), Some("mysql:8.0"));

    // Read in v2 again: the spec as written, the status as v1 has it, and
    // the annotation back in its field.
    let back = v2s.get("inventory").await.expect("read the Database in v2");
    assert_eq!(back.spec, object.spec, "nothing lost");
    assert_eq!(back.metadata.annotations, None);
    let status = back.status.clone().unwrap_or_default();
    assert_eq!(status.phase, Some(DatabasePhase::Ready));
    assert_eq!(status.observed_generation, back.metadata.generation);

    // A Database written in v1 has no version in v2.
    create(&fixture, "ledger", DatabaseType::Mongo).await;
    let ledger = v2s.get("ledger").await.expect("read the v1 Database in v2");
    assert_eq!(ledger.spec.engine.name, DatabaseType::Mongo);
    assert_eq!(ledger.spec.engine.version, None);
    let listed = v2s.list(&ListParams::default()).await.expect("list in v2");
    let mut names: Vec<String> = listed.items.iter().map(|d| d.name_any()).collect();
    names.sort();
    assert_eq!(names, ["inventory", "ledger"]);
    assert_stops_cleanly(fixture);
}
// +opctl:scaffold:e2e
