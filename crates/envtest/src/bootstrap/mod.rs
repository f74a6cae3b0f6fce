//! The objects a kube-apiserver v1.32 cluster has before anyone writes: the
//! system namespaces and the RBAC bootstrap policy. The server creates them
//! as its own (`kube-apiserver`) writes before it serves.

mod rbac;

pub use rbac::{PolicyObject, policy_objects};

use anyhow::bail;
use serde_json::{Value, json};

use crate::api::create::{Input, create_internal};
use crate::api::{App, WriteCtx};
use crate::controllers::APISERVER;

const NAMESPACES_AT_START: &[&str] = &["default", "kube-system", "kube-public"];

/// Creates everything a cluster starts with.
pub fn create_all(app: &App) -> anyhow::Result<()> {
    for name in NAMESPACES_AT_START {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        create(app, "", "v1", "namespaces", "", obj)?;
    }
    for object in rbac::policy_objects() {
        create(
            app,
            "rbac.authorization.k8s.io",
            "v1",
            object.plural,
            &object.namespace,
            object.body,
        )?;
    }
    Ok(())
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
    let name = crate::meta::name(&obj).to_string();
    let input = Input::Body {
        obj,
        duplicates: Vec::new(),
    };
    create_internal(app, &res, namespace, input, &WriteCtx::internal(APISERVER))
        .map_err(|e| anyhow::anyhow!("creating {plural} {name}: {}", e.message))?;
    Ok(())
}
