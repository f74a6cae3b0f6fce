//! The ReplicaSet controller, which kube-controller-manager also runs for
//! ReplicationControllers: keeps `spec.replicas` active Pods from the
//! template, deleting the least useful first, and reports `replicas`,
//! `fullyLabeledReplicas`, `readyReplicas`, `availableReplicas` and
//! `observedGeneration` as kube-controller-manager does.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::client::{self, PODS, REPLICASETS, REPLICATIONCONTROLLERS};
use super::{owned_pods, ownership};
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;
use crate::selectors::LabelSelector;

/// The two kinds the controller keeps Pods for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Replicated {
    ReplicaSet,
    ReplicationController,
}

impl Replicated {
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Replicated::ReplicaSet => "ReplicaSet",
            Replicated::ReplicationController => "ReplicationController",
        }
    }

    /// The kube-controller-manager controller that runs it.
    pub(crate) fn controller(self) -> crate::controller_selection::Controller {
        use crate::controller_selection::Controller;
        match self {
            Replicated::ReplicaSet => Controller::ReplicaSet,
            Replicated::ReplicationController => Controller::ReplicationController,
        }
    }

    pub(crate) fn store_key(self) -> &'static str {
        match self {
            Replicated::ReplicaSet => REPLICASETS,
            Replicated::ReplicationController => REPLICATIONCONTROLLERS,
        }
    }

    /// The object's selector, parsed (an unparsable one selects nothing):
    /// a LabelSelector, or a ReplicationController's plain label map.
    pub(crate) fn selector(self, obj: &Value) -> Option<LabelSelector> {
        let sel = meta::get_path(obj, &["spec", "selector"])?;
        let sel = match self {
            Replicated::ReplicaSet => sel.clone(),
            Replicated::ReplicationController => json!({"matchLabels": sel}),
        };
        LabelSelector::from_object(Some(&sel)).ok()
    }
}

pub(crate) async fn reconcile(
    app: &App,
    which: Replicated,
    ns: &str,
    name: &str,
) -> ApiResult<Option<Duration>> {
    let Some(rs) = client::get(app, which.store_key(), ns, name) else {
        return Ok(None);
    };
    if meta::is_deleting(&rs) {
        return Ok(None);
    }
    // Its active Pods, orphans it selects adopted, those it no longer selects released.
    let candidates = client::list(app, PODS, Some(ns))
        .into_iter()
        .filter(|p| owned_pods::is_active(p))
        .collect();
    let claim = ownership::Claim {
        key: PODS,
        selector: which.selector(&rs),
        finalizers: &[],
    };
    let mut active = ownership::claim(app, &rs, &claim, candidates, |_| true).await?;
    let want = client::int_at(&rs, &["spec", "replicas"])
        .unwrap_or(1)
        .max(0) as usize;
    let min_ready = client::int_at(&rs, &["spec", "minReadySeconds"]).unwrap_or(0);

    // Status from the Pods as they are before this sync changes them.
    let fully_labeled = which
        .selector(&rs)
        .map_or(0, |s| active.iter().filter(|p| s.matches_object(p)).count());
    let ready = active.iter().filter(|p| owned_pods::is_ready(p)).count();
    let mut available = 0;
    let mut recheck: Option<Duration> = None;
    for p in &active {
        match owned_pods::available_in(p, min_ready) {
            None => available += 1,
            Some(d) if d != Duration::MAX => recheck = Some(recheck.map_or(d, |r| r.min(d))),
            Some(_) => {}
        }
    }
    let counts = [
        ("replicas", active.len()),
        ("fullyLabeledReplicas", fully_labeled),
        ("readyReplicas", ready),
        ("availableReplicas", available),
    ];
    write_status(app, which, &rs, &counts).await?;

    if active.len() < want {
        let template = meta::get_path(&rs, &["spec", "template"])
            .cloned()
            .unwrap_or_default();
        for _ in active.len()..want {
            owned_pods::create_from_template(
                app,
                &rs,
                &template,
                &format!("{name}-"),
                &Map::new(),
                &Map::new(),
            )
            .await?;
        }
    } else if active.len() > want {
        owned_pods::deletion_order(&mut active);
        for pod in &active[..active.len() - want] {
            owned_pods::delete(app, &rs, pod)?;
        }
    }
    Ok(recheck)
}

async fn write_status(
    app: &App,
    which: Replicated,
    rs: &Value,
    counts: &[(&str, usize)],
) -> ApiResult<()> {
    let generation = meta::generation(rs);
    let (ns, name) = (meta::namespace(rs), meta::name(rs));
    client::write_status(app, which.store_key(), ns, name, |_, status| {
        for (field, value) in counts {
            owned_pods::set_count(status, field, *value as i64);
        }
        // `replicas` is not omitempty in either kind's status.
        status.insert(
            "replicas".into(),
            json!(counts.first().map_or(0, |(_, v)| *v)),
        );
        status.insert("observedGeneration".into(), json!(generation));
    })
    .await
}
