//! The objects a kube-apiserver v1.32 cluster has before anyone writes: the
//! system namespaces, the RBAC bootstrap policy, the built-in
//! PriorityClasses, the `default/kubernetes` Service with its Endpoints
//! and EndpointSlice, an APIService per built-in group version and the API
//! Priority and Fairness configuration. The server creates them as its own (`kube-apiserver`)
//! writes before it serves.
//!
//! The policy's ~125 objects (with `admin`, `edit` and `view` already
//! aggregated when the clusterrole-aggregation controller runs, as on a
//! cluster that has been up for a moment), the APIServices and the flow-control configuration are made
//! once per process through the ordinary create path (and their
//! controllers' status writes) into a scratch server; each server then
//! stores copies with their own uids and times, so that starting stays a
//! matter of milliseconds.

mod post_start;

use std::sync::{Arc, LazyLock};

use anyhow::bail;
use serde_json::{Value, json};

use crate::api::WriteCtx;
use crate::api::create::{Input, create_internal};
use crate::app::App;
use crate::controllers::APISERVER;
use crate::meta;
use crate::store::ResKey;

use crate::bootstrap_policy::{flowcontrol, policy_objects};

const NAMESPACES_AT_START: &[&str] = &["default", "kube-system", "kube-public"];
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Creates everything a cluster starts with; `addr` is where the server
/// listens, which the `kubernetes` Service's endpoints name.
pub(crate) fn create_all(app: &App, addr: std::net::SocketAddr) -> anyhow::Result<()> {
    create_namespaces(app)?;
    store_templates(app)?;
    post_start::create_priority_classes(app)?;
    post_start::create_kubernetes_service(app, addr)
}

/// Stores this server's copies of the objects made once per process.
fn store_templates(app: &App) -> anyhow::Result<()> {
    let templates = match &*TEMPLATES {
        Ok(templates) => templates,
        Err(e) => bail!("the objects a cluster starts with: {e}"),
    };
    let now = meta::now_rfc3339();
    let aggregated = app
        .controllers
        .is_on(crate::controller_selection::Controller::ClusterRoleAggregation);
    for (key, ns, name, template) in &templates.objects {
        // Without the clusterrole-aggregation controller, `admin`, `edit`
        // and `view` keep the empty rules kube-apiserver creates them with.
        let template = match templates.unaggregated.get(name) {
            Some(bare) if !aggregated && &**key == AGGREGATED_KEY => bare,
            _ => template,
        };
        let mut obj = template.clone();
        meta::set_meta(&mut obj, "uid", json!(uuid::Uuid::new_v4().to_string()));
        meta::set_meta(&mut obj, "creationTimestamp", json!(now));
        if let Some(Value::Array(entries)) = meta::metadata_mut(&mut obj).get_mut("managedFields") {
            for entry in entries {
                entry["time"] = json!(now);
            }
        }
        let conditions = obj
            .pointer_mut("/status/conditions")
            .and_then(Value::as_array_mut);
        for condition in conditions.into_iter().flatten() {
            condition["lastTransitionTime"] = json!(now);
        }
        app.store
            .create(key, ns, name, obj)
            .map_err(|e| anyhow::anyhow!("storing {key} {name}: {e:?}"))?;
    }
    Ok(())
}

fn create_namespaces(app: &App) -> anyhow::Result<()> {
    for name in NAMESPACES_AT_START {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        create(app, "", "v1", "namespaces", "", obj)?;
    }
    Ok(())
}

/// The stored form of every policy object, APIService and flow-control
/// object, in creation order, as the create path and the controllers that
/// complete them (clusterrole aggregation, the flow-control consumer) made them.
struct Templates {
    objects: Vec<(ResKey, String, String, Value)>,
    /// The ClusterRoles with an `aggregationRule` as kube-apiserver stores
    /// them, before the clusterrole-aggregation controller fills them in.
    unaggregated: std::collections::HashMap<String, Value>,
}

const AGGREGATED_KEY: &str = "rbac.authorization.k8s.io/clusterroles";

static TEMPLATES: LazyLock<Result<Templates, String>> =
    LazyLock::new(|| templates().map_err(|e| format!("{e:#}")));

fn templates() -> anyhow::Result<Templates> {
    let scratch = App::new(1000);
    create_namespaces(&scratch)?;
    let objects = policy_objects();
    for object in &objects {
        create(
            &scratch,
            RBAC_GROUP,
            "v1",
            object.plural,
            &object.namespace,
            object.body.clone(),
        )?;
    }
    let roles_key: ResKey = Arc::from(AGGREGATED_KEY);
    let unaggregated = scratch
        .store
        .list(&roles_key, None, None)
        .0
        .into_iter()
        .filter(|(_, role)| role.get("aggregationRule").is_some())
        .map(|(_, role)| (meta::name(&role).to_string(), (*role).clone()))
        .collect();
    crate::controllers::aggregation::aggregate_all(&scratch);
    let mut out = Vec::new();
    for object in objects {
        let key: ResKey = Arc::from(format!("{RBAC_GROUP}/{}", object.plural));
        let name = meta::name(&object.body).to_string();
        let Some(stored) = scratch.store.get(&key, &object.namespace, &name) else {
            bail!("{} {name} was not stored", object.plural);
        };
        out.push((key, object.namespace, name, (*stored).clone()));
    }
    // The aggregator's local APIServices and the API Priority and Fairness
    // configuration, as their post-start hooks write them.
    crate::controllers::aggregator::register_builtin(&scratch);
    crate::controllers::priority_and_fairness::sync(&scratch);
    for key in [
        crate::controllers::aggregator::KEY.to_string(),
        format!("{}/{}", flowcontrol::GROUP, flowcontrol::PRIORITY_LEVELS),
        format!("{}/{}", flowcontrol::GROUP, flowcontrol::FLOW_SCHEMAS),
    ] {
        let key: ResKey = Arc::from(key);
        let (items, _) = scratch.store.list(&key, None, None);
        if items.is_empty() {
            bail!("no {key} were stored");
        }
        for (_, stored) in items {
            let name = meta::name(&stored).to_string();
            out.push((key.clone(), String::new(), name, (*stored).clone()));
        }
    }
    Ok(Templates {
        objects: out,
        unaggregated,
    })
}

fn create(
    app: &App,
    group: &str,
    version: &str,
    plural: &str,
    namespace: &str,
    obj: Value,
) -> anyhow::Result<()> {
    let reg = app.registry.load();
    let Some(res) = reg.get(group, version, plural) else {
        bail!("this server does not serve {group}/{version} {plural}");
    };
    let name = meta::name(&obj).to_string();
    let input = Input::Body {
        obj,
        duplicates: Vec::new(),
    };
    create_internal(app, &res, namespace, input, &WriteCtx::internal(APISERVER))
        .map_err(|e| anyhow::anyhow!("creating {plural} {name}: {}", e.message))?;
    Ok(())
}
