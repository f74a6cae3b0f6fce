//! kube-controller-manager's node lifecycle controller, its NoSchedule
//! pass: a Node's condition taints (`node.kubernetes.io/not-ready`, ...) and
//! its unschedulable taint follow its conditions and `spec.unschedulable`
//! after every change (see [`crate::node_status::condition_taints`]).

use super::{CONTROLLER_MANAGER, modify_without_admission, resource_for};
use crate::app::App;
use crate::store::{Event, EventType};

const NODES_KEY: &str = "nodes";

pub(super) fn on_event(app: &App, ev: &Event) {
    if &*ev.resource != NODES_KEY || ev.kind == EventType::Deleted {
        return;
    }
    let mut probe = (*ev.object).clone();
    if !crate::node_status::condition_taints(&mut probe) {
        return;
    }
    let Some(res) = resource_for(app, NODES_KEY) else {
        return;
    };
    // A Node deleted meanwhile is no longer tainted; nothing else can fail
    // that a later change would not retry.
    let _ = modify_without_admission(app, &res, "", &ev.name, None, CONTROLLER_MANAGER, |node| {
        crate::node_status::condition_taints(node)
    });
}
