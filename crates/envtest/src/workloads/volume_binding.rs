//! PersistentVolume binding and a simulated provisioner, as
//! kube-controller-manager's persistentvolume controller and a dynamic
//! provisioner do it: a claim binds to an Available volume that fits it
//! (class, capacity, access modes, selector), or, when its StorageClass's
//! provisioner is [`PROVISIONER`], to a volume provisioned for it
//! (`pvc-<claim uid>`, a hostPath-like spec naming the claim in
//! `claimRef`). Both then report `Bound` with the annotations the real
//! controller writes. A class whose `volumeBindingMode` is
//! `WaitForFirstConsumer` provisions only once a scheduled Pod uses the
//! claim, on that Pod's Node. A volume whose claim is gone is deleted
//! (reclaim policy `Delete`, provisioned here) or `Released`.
//!
//! Nothing is stored anywhere: the volumes exist as API objects only.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Value, json};

use super::client::{
    self, CONTROLLER_MANAGER, PERSISTENTVOLUMECLAIMS, PERSISTENTVOLUMES, PODS, STORAGECLASSES,
};
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;
use crate::quantity::from_json;
use crate::selectors::LabelSelector;

/// The provisioner of the simulated volumes.
pub(crate) const PROVISIONER: &str = "envtest.opctl.dev/simulated";
/// The StorageClass created at start, marked default.
pub(crate) const DEFAULT_CLASS: &str = "standard";
const DEFAULT_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";
const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
const BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
const STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
const BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// Where a simulated volume would live on its Node.
const HOST_ROOT: &str = "/var/lib/opctl-envtest/volumes";

/// Creates the default StorageClass `standard` unless a class of that name exists.
pub(crate) async fn ensure_default_class(app: &App) -> ApiResult<()> {
    if client::get(app, STORAGECLASSES, "", DEFAULT_CLASS).is_some() {
        return Ok(());
    }
    let class = json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": DEFAULT_CLASS,
            "annotations": {DEFAULT_ANNOTATION: "true"},
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    });
    match client::create_object(app, STORAGECLASSES, "", class, CONTROLLER_MANAGER).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// The claims a Pod mounts.
pub(crate) fn claims_of(pod: &Value) -> Vec<String> {
    meta::get_path(pod, &["spec", "volumes"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            v.pointer("/persistentVolumeClaim/claimName")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect()
}

pub(crate) fn is_bound(claim: &Value) -> bool {
    client::str_at(claim, &["status", "phase"]) == "Bound"
}

fn storage(v: Option<&Value>) -> i128 {
    v.and_then(from_json).map_or(0, |q| q.nanos())
}

fn access_modes(obj: &Value) -> Vec<Value> {
    meta::get_path(obj, &["spec", "accessModes"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn class_of(obj: &Value) -> &str {
    client::str_at(obj, &["spec", "storageClassName"])
}

/// Whether an unclaimed volume fits the claim (`FindMatchingVolume`).
fn fits(pv: &Value, claim: &Value) -> bool {
    let request = storage(meta::get_path(
        claim,
        &["spec", "resources", "requests", "storage"],
    ));
    let capacity = storage(meta::get_path(pv, &["spec", "capacity", "storage"]));
    let modes = access_modes(pv);
    let mode = |o: &Value| match client::str_at(o, &["spec", "volumeMode"]) {
        "" => "Filesystem".to_string(),
        m => m.to_string(),
    };
    let selected = match meta::get_path(claim, &["spec", "selector"]) {
        Some(sel) if !sel.is_null() => LabelSelector::from_object(Some(sel))
            .map(|s| s.matches_object(pv))
            .unwrap_or(false),
        _ => true,
    };
    client::str_at(pv, &["status", "phase"]) == "Available"
        && meta::get_path(pv, &["spec", "claimRef"]).is_none_or(Value::is_null)
        && !meta::is_deleting(pv)
        && class_of(pv) == class_of(claim)
        && capacity >= request
        && access_modes(claim).iter().all(|m| modes.contains(m))
        && mode(pv) == mode(claim)
        && selected
}

fn claim_ref(claim: &Value) -> Value {
    json!({
        "kind": "PersistentVolumeClaim",
        "namespace": meta::namespace(claim),
        "name": meta::name(claim),
        "uid": meta::uid(claim),
        "apiVersion": "v1",
        "resourceVersion": meta::resource_version(claim),
    })
}

/// The persistentvolume controller's look at claim `ns/name`: binds it,
/// or leaves it to its class's provisioner (the simulated one provisions
/// when `simulated_provisioner`).
pub(crate) async fn reconcile_claim(
    app: &App,
    ns: &str,
    name: &str,
    announced: &mut HashSet<String>,
    simulated_provisioner: bool,
) -> ApiResult<()> {
    let Some(claim) = client::get(app, PERSISTENTVOLUMECLAIMS, ns, name) else {
        return Ok(());
    };
    if meta::is_deleting(&claim) {
        return Ok(());
    }
    let volume_name = client::str_at(&claim, &["spec", "volumeName"]).to_string();
    if !volume_name.is_empty() {
        // Bound already, or pre-bound to a volume by its author.
        if let Some(pv) = client::get(app, PERSISTENTVOLUMES, "", &volume_name) {
            return bind(app, &claim, &pv).await;
        }
        return Ok(());
    }
    let volumes = client::list(app, PERSISTENTVOLUMES, None);
    // A volume pre-bound to this claim, then any that fits.
    let chosen = volumes
        .iter()
        .find(|pv| {
            client::str_at(pv, &["spec", "claimRef", "uid"]) == meta::uid(&claim)
                || (client::str_at(pv, &["spec", "claimRef", "uid"]).is_empty()
                    && client::str_at(pv, &["spec", "claimRef", "name"]) == name
                    && client::str_at(pv, &["spec", "claimRef", "namespace"]) == ns)
        })
        .or_else(|| volumes.iter().find(|pv| fits(pv, &claim)));
    if let Some(pv) = chosen {
        return bind(app, &claim, pv).await;
    }
    // `syncUnboundClaim` without a volume: no class, a class that does not
    // exist, a class waiting for its first consumer, or provisioning.
    let class_name = class_of(&claim);
    if class_name.is_empty() {
        tell_once(
            app,
            &claim,
            announced,
            "Normal",
            "FailedBinding",
            "no persistent volumes available for this claim and no storage class is set",
        );
        return Ok(());
    }
    let Some(class) = client::get(app, STORAGECLASSES, "", class_name) else {
        let message = format!("storageclass.storage.k8s.io \"{class_name}\" not found");
        tell_once(
            app,
            &claim,
            announced,
            "Warning",
            "ProvisioningFailed",
            &message,
        );
        return Ok(());
    };
    let mut node = String::new();
    if client::str_at(&class, &["volumeBindingMode"]) == "WaitForFirstConsumer" {
        match consumer_node(app, &claim) {
            Some(n) => node = n,
            None => {
                tell_once(
                    app,
                    &claim,
                    announced,
                    "Normal",
                    "WaitForFirstConsumer",
                    "waiting for first consumer to be created before binding",
                );
                return Ok(());
            }
        }
    }
    // Every provisioner is external to kube-controller-manager: the claim
    // names it, and it is told to wait for it.
    let provisioner = client::str_at(&class, &["provisioner"]).to_string();
    annotate_provisioner(app, &claim, &provisioner, &node).await?;
    tell_once(
        app,
        &claim,
        announced,
        "Normal",
        "ExternalProvisioning",
        &format!(
            "Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."
        ),
    );
    if provisioner != PROVISIONER || !simulated_provisioner {
        return Ok(());
    }
    let pv = provision(app, &claim, &class, &node).await?;
    bind(app, &claim, &pv).await
}

/// The Node of a scheduled Pod that mounts the claim, if any.
fn consumer_node(app: &App, claim: &Value) -> Option<String> {
    client::list(app, PODS, Some(meta::namespace(claim)))
        .into_iter()
        .filter(|p| !meta::is_deleting(p))
        .filter(|p| claims_of(p).iter().any(|c| c == meta::name(claim)))
        .map(|p| client::str_at(&p, &["spec", "nodeName"]).to_string())
        .find(|n| !n.is_empty())
}

/// An event of the persistentvolume controller about a claim, once per
/// claim and reason (`announced` holds those told already; the real
/// controller repeats it every resync, which only raises its `count`).
fn tell_once(
    app: &App,
    claim: &Value,
    announced: &mut HashSet<String>,
    kind: &str,
    reason: &str,
    message: &str,
) {
    if !announced.insert(format!("{}/{reason}", meta::uid(claim))) {
        return;
    }
    client::event(
        app,
        client::PERSISTENTVOLUME_CONTROLLER,
        claim,
        kind,
        reason,
        message,
    );
}

/// The annotations the persistentvolume controller sets on a claim it
/// leaves to an external provisioner (and the Node a delayed claim's first
/// consumer runs on).
async fn annotate_provisioner(
    app: &App,
    claim: &Value,
    provisioner: &str,
    node: &str,
) -> ApiResult<()> {
    let (ns, claim_name) = (meta::namespace(claim), meta::name(claim));
    client::modify_with_admission(
        app,
        PERSISTENTVOLUMECLAIMS,
        ns,
        claim_name,
        None,
        CONTROLLER_MANAGER,
        |c| {
            let mut changed = false;
            for key in [STORAGE_PROVISIONER, BETA_STORAGE_PROVISIONER] {
                if client::str_at(c, &["metadata", "annotations", key]) != provisioner {
                    meta::set_path(c, &["metadata", "annotations", key], json!(provisioner));
                    changed = true;
                }
            }
            if !node.is_empty()
                && client::str_at(c, &["metadata", "annotations", SELECTED_NODE]) != node
            {
                meta::set_path(c, &["metadata", "annotations", SELECTED_NODE], json!(node));
                changed = true;
            }
            changed
        },
    )
    .await
}

/// Creates the volume the provisioner makes for `claim` (or finds it made).
async fn provision(app: &App, claim: &Value, class: &Value, node: &str) -> ApiResult<Arc<Value>> {
    let name = format!("pvc-{}", meta::uid(claim));
    if let Some(pv) = client::get(app, PERSISTENTVOLUMES, "", &name) {
        return Ok(pv);
    }
    client::event(
        app,
        PROVISIONER,
        claim,
        "Normal",
        "Provisioning",
        &format!(
            "External provisioner is provisioning volume for claim \"{}/{}\"",
            meta::namespace(claim),
            meta::name(claim)
        ),
    );
    let request = meta::get_path(claim, &["spec", "resources", "requests", "storage"])
        .cloned()
        .unwrap_or_else(|| json!("1Gi"));
    let mut modes = access_modes(claim);
    if modes.is_empty() {
        modes.push(json!("ReadWriteOnce"));
    }
    let mut spec = json!({
        "capacity": {"storage": request},
        "accessModes": modes,
        "persistentVolumeReclaimPolicy": match client::str_at(class, &["reclaimPolicy"]) {
            "" => "Delete",
            p => p,
        },
        "storageClassName": meta::name(class),
        "volumeMode": match client::str_at(claim, &["spec", "volumeMode"]) {
            "" => "Filesystem",
            m => m,
        },
        "hostPath": {"path": format!("{HOST_ROOT}/{name}"), "type": "DirectoryOrCreate"},
        "claimRef": claim_ref(claim),
    });
    if !node.is_empty() {
        spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
        ]}]}});
    }
    if let Some(opts) = meta::get_path(class, &["mountOptions"]).filter(|o| !o.is_null()) {
        spec["mountOptions"] = opts.clone();
    }
    let pv = json!({
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {PROVISIONED_BY: PROVISIONER}},
        "spec": spec,
    });
    let created = match client::create_object(app, PERSISTENTVOLUMES, "", pv, PROVISIONER).await {
        Ok(pv) => pv,
        Err(e) if e.code == 409 => {
            return client::get(app, PERSISTENTVOLUMES, "", &name).ok_or_else(|| {
                crate::error::ApiError::internal(format!("volume {name} vanished"))
            });
        }
        Err(e) => {
            client::event(
                app,
                PROVISIONER,
                claim,
                "Warning",
                "ProvisioningFailed",
                &e.message,
            );
            return Err(e);
        }
    };
    client::event(
        app,
        PROVISIONER,
        claim,
        "Normal",
        "ProvisioningSucceeded",
        &format!("Successfully provisioned volume {name}"),
    );
    Ok(created)
}

/// Binds claim and volume: the volume's claimRef and phase, then the
/// claim's volumeName, annotations and status. Each write only if needed.
async fn bind(app: &App, claim: &Value, pv: &Value) -> ApiResult<()> {
    let pv_name = meta::name(pv).to_string();
    let claim_uid = meta::uid(claim).to_string();
    let ref_uid = client::str_at(pv, &["spec", "claimRef", "uid"]);
    if !ref_uid.is_empty() && ref_uid != claim_uid {
        // The volume is another claim's: this claim waits (it is Lost if it was bound).
        return Ok(());
    }
    let by_controller = meta::get_path(pv, &["spec", "claimRef"]).is_none_or(Value::is_null);
    if by_controller || ref_uid.is_empty() {
        let cref = claim_ref(claim);
        client::modify_with_admission(
            app,
            PERSISTENTVOLUMES,
            "",
            &pv_name,
            None,
            CONTROLLER_MANAGER,
            |v| {
                v["spec"]["claimRef"] = cref.clone();
                if by_controller {
                    meta::set_path(
                        v,
                        &["metadata", "annotations", BOUND_BY_CONTROLLER],
                        json!("yes"),
                    );
                }
                true
            },
        )
        .await?;
    }
    if client::str_at(pv, &["status", "phase"]) != "Bound" {
        client::modify_with_admission(
            app,
            PERSISTENTVOLUMES,
            "",
            &pv_name,
            Some("status"),
            CONTROLLER_MANAGER,
            |v| set_phase(v, "Bound"),
        )
        .await?;
    }
    let (ns, name) = (meta::namespace(claim), meta::name(claim));
    let pre_bound = !client::str_at(claim, &["spec", "volumeName"]).is_empty();
    client::modify_with_admission(
        app,
        PERSISTENTVOLUMECLAIMS,
        ns,
        name,
        None,
        CONTROLLER_MANAGER,
        |c| {
            let mut changed = false;
            if client::str_at(c, &["spec", "volumeName"]).is_empty() {
                c["spec"]["volumeName"] = json!(pv_name);
                changed = true;
            }
            let mut annotate = |key: &str| {
                if client::str_at(c, &["metadata", "annotations", key]) != "yes" {
                    meta::set_path(c, &["metadata", "annotations", key], json!("yes"));
                    changed = true;
                }
            };
            annotate(BIND_COMPLETED);
            if !pre_bound {
                annotate(BOUND_BY_CONTROLLER);
            }
            changed
        },
    )
    .await?;
    let capacity = meta::get_path(pv, &["spec", "capacity"])
        .cloned()
        .unwrap_or_default();
    let modes = access_modes(pv);
    client::modify_with_admission(
        app,
        PERSISTENTVOLUMECLAIMS,
        ns,
        name,
        Some("status"),
        CONTROLLER_MANAGER,
        |c| {
            let before = c.get("status").cloned();
            c["status"]["phase"] = json!("Bound");
            c["status"]["accessModes"] = json!(modes);
            c["status"]["capacity"] = capacity.clone();
            c.get("status").cloned() != before
        },
    )
    .await
}

/// Sets a volume's phase and, when it changes, `lastPhaseTransitionTime`.
fn set_phase(pv: &mut Value, phase: &str) -> bool {
    if client::str_at(pv, &["status", "phase"]) == phase {
        return false;
    }
    pv["status"]["phase"] = json!(phase);
    pv["status"]["lastPhaseTransitionTime"] = json!(meta::now_rfc3339());
    true
}

/// A volume's side: Available when unclaimed, reclaimed when its claim is gone.
pub(crate) async fn reconcile_volume(app: &App, name: &str) -> ApiResult<()> {
    let Some(pv) = client::get(app, PERSISTENTVOLUMES, "", name) else {
        return Ok(());
    };
    if meta::is_deleting(&pv) {
        return Ok(());
    }
    let ref_uid = client::str_at(&pv, &["spec", "claimRef", "uid"]);
    let ref_name = client::str_at(&pv, &["spec", "claimRef", "name"]);
    if ref_name.is_empty() {
        if client::str_at(&pv, &["status", "phase"]) != "Available" {
            client::modify_with_admission(
                app,
                PERSISTENTVOLUMES,
                "",
                name,
                Some("status"),
                CONTROLLER_MANAGER,
                |v| set_phase(v, "Available"),
            )
            .await?;
        }
        return Ok(());
    }
    let ns = client::str_at(&pv, &["spec", "claimRef", "namespace"]);
    let claim = client::get(app, PERSISTENTVOLUMECLAIMS, ns, ref_name);
    let claim_gone = match &claim {
        None => !ref_uid.is_empty(),
        Some(c) => !ref_uid.is_empty() && meta::uid(c) != ref_uid,
    };
    if !claim_gone {
        return Ok(());
    }
    // Released first (the pv-protection finalizer holds a Bound volume),
    // then reclaimed: deleted when it was provisioned here with `Delete`.
    client::modify_with_admission(
        app,
        PERSISTENTVOLUMES,
        "",
        name,
        Some("status"),
        CONTROLLER_MANAGER,
        |v| set_phase(v, "Released"),
    )
    .await?;
    let ours = client::str_at(&pv, &["metadata", "annotations", PROVISIONED_BY]) == PROVISIONER;
    if client::str_at(&pv, &["spec", "persistentVolumeReclaimPolicy"]) == "Delete" && ours {
        return client::delete(app, PERSISTENTVOLUMES, "", name, meta::uid(&pv));
    }
    Ok(())
}
