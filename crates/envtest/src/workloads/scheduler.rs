//! The default scheduler's filters and a simple spreading score: a Pod
//! without `spec.nodeName` goes to a Node that is schedulable, matches its
//! nodeSelector and required node affinity, whose taints it tolerates and
//! whose allocatable resources hold its requests; among those, the Node
//! with the fewest Pods, to which it is bound through `pods/binding`. A
//! Pod no Node fits gets `PodScheduled=False` (reason `Unschedulable`, the
//! scheduler's message) and a FailedScheduling event.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::client::{self, ConditionStyle, NODES, PODS, SCHEDULER};
use crate::api::WriteCtx;
use crate::app::App;
use crate::error::ApiResult;
use crate::meta;
use crate::quantity::{Quantity, from_json};

/// A cordoned Node admits the Pods that tolerate this taint (DaemonSets' do).
pub(super) const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// What a Pod asks of a Node, in units of 10⁻⁹ (pods counted one each).
#[derive(Debug, Clone, Default)]
struct Demand {
    cpu: i128,
    memory: i128,
}

struct Candidate {
    node: Arc<Value>,
    cpu: i128,
    memory: i128,
    pods: i128,
    used: Demand,
    count: i128,
}

/// Whether the default scheduler should place this Pod.
pub(crate) fn is_pending(pod: &Value) -> bool {
    client::str_at(pod, &["spec", "nodeName"]).is_empty()
        && !meta::is_deleting(pod)
        && matches!(
            client::str_at(pod, &["spec", "schedulerName"]),
            "" | "default-scheduler"
        )
        && meta::get_path(pod, &["spec", "schedulingGates"])
            .and_then(Value::as_array)
            .is_none_or(|g| g.is_empty())
        && !matches!(
            client::str_at(pod, &["status", "phase"]),
            "Succeeded" | "Failed"
        )
}

/// Whether a Pod still holds its Node's resources.
fn holds_resources(pod: &Value) -> bool {
    !matches!(
        client::str_at(pod, &["status", "phase"]),
        "Succeeded" | "Failed"
    )
}

fn quantity(v: Option<&Value>) -> i128 {
    v.and_then(from_json)
        .map(|q: Quantity| q.nanos())
        .unwrap_or(0)
}

fn container_demand(c: &Value) -> Demand {
    let requests = meta::get_path(c, &["resources", "requests"]);
    Demand {
        cpu: quantity(requests.and_then(|r| r.get("cpu"))),
        memory: quantity(requests.and_then(|r| r.get("memory"))),
    }
}

/// A Pod's effective requests: its containers' sum, or its largest init container's.
fn demand(pod: &Value) -> Demand {
    let list = |field: &str| -> Vec<Demand> {
        meta::get_path(pod, &["spec", field])
            .and_then(Value::as_array)
            .map(|cs| cs.iter().map(container_demand).collect())
            .unwrap_or_default()
    };
    let mut total = list("containers")
        .into_iter()
        .fold(Demand::default(), |acc, d| Demand {
            cpu: acc.cpu + d.cpu,
            memory: acc.memory + d.memory,
        });
    for init in list("initContainers") {
        total.cpu = total.cpu.max(init.cpu);
        total.memory = total.memory.max(init.memory);
    }
    total
}

/// Whether `tolerations` tolerate `taint`.
pub(super) fn tolerated(taint: &Value, tolerations: &[Value]) -> bool {
    let key = client::str_at(taint, &["key"]);
    let value = client::str_at(taint, &["value"]);
    let effect = client::str_at(taint, &["effect"]);
    tolerations.iter().any(|t| {
        let t_effect = client::str_at(t, &["effect"]);
        if !t_effect.is_empty() && t_effect != effect {
            return false;
        }
        let t_key = client::str_at(t, &["key"]);
        match client::str_at(t, &["operator"]) {
            "Exists" => t_key.is_empty() || t_key == key,
            _ => t_key == key && client::str_at(t, &["value"]) == value,
        }
    })
}

fn labels_of(node: &Value) -> Map<String, Value> {
    meta::labels(node).cloned().unwrap_or_default()
}

/// One `matchExpressions` requirement of a node selector term.
fn requirement_holds(req: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = req
        .get("values")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let number = |s: &str| s.parse::<i64>().ok();
    match client::str_at(req, &["operator"]) {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => value.is_none_or(|v| !values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => {
            matches!((value.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a > b)
        }
        "Lt" => {
            matches!((value.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a < b)
        }
        _ => false,
    }
}

/// Whether the Node matches the Pod's nodeSelector and required node affinity.
pub(super) fn selects(pod: &Value, node: &Value) -> bool {
    let labels = labels_of(node);
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    if let Some(sel) = meta::get_path(pod, &["spec", "nodeSelector"]).and_then(Value::as_object)
        && sel.iter().any(|(k, v)| label(k) != v.as_str())
    {
        return false;
    }
    let Some(terms) = meta::get_path(
        pod,
        &[
            "spec",
            "affinity",
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            "nodeSelectorTerms",
        ],
    )
    .and_then(Value::as_array) else {
        return true;
    };
    let name = meta::name(node);
    terms.iter().any(|term| {
        let exprs = term.get("matchExpressions").and_then(Value::as_array);
        let fields = term.get("matchFields").and_then(Value::as_array);
        if exprs.is_none_or(|e| e.is_empty()) && fields.is_none_or(|f| f.is_empty()) {
            return false;
        }
        exprs
            .into_iter()
            .flatten()
            .all(|r| requirement_holds(r, label(client::str_at(r, &["key"]))))
            && fields.into_iter().flatten().all(|r| {
                let value = (client::str_at(r, &["key"]) == "metadata.name").then_some(name);
                requirement_holds(r, value)
            })
    })
}

/// Why the Node does not fit the Pod, as the scheduler words it; `None` if it fits.
fn misfit(pod: &Value, want: &Demand, c: &Candidate) -> Option<String> {
    let tolerations: Vec<Value> = meta::get_path(pod, &["spec", "tolerations"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let cordoned = json!({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"});
    if meta::get_path(&c.node, &["spec", "unschedulable"]).and_then(Value::as_bool) == Some(true)
        && !tolerated(&cordoned, &tolerations)
    {
        return Some("node(s) were unschedulable".to_string());
    }
    if !selects(pod, &c.node) {
        return Some("node(s) didn't match Pod's node affinity/selector".to_string());
    }
    let taints = meta::get_path(&c.node, &["spec", "taints"])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for taint in &taints {
        let effect = client::str_at(taint, &["effect"]);
        if matches!(effect, "NoSchedule" | "NoExecute") && !tolerated(taint, &tolerations) {
            return Some(format!(
                "node(s) had untolerated taint {{{}: {}}}",
                client::str_at(taint, &["key"]),
                client::str_at(taint, &["value"])
            ));
        }
    }
    if c.count + 1 > c.pods {
        return Some("Too many pods".to_string());
    }
    if want.cpu > 0 && c.used.cpu + want.cpu > c.cpu {
        return Some("Insufficient cpu".to_string());
    }
    if want.memory > 0 && c.used.memory + want.memory > c.memory {
        return Some("Insufficient memory".to_string());
    }
    None
}

fn candidates(app: &App) -> Vec<Candidate> {
    let nodes = client::list(app, NODES, None);
    let mut by_name: BTreeMap<String, Candidate> = nodes
        .into_iter()
        .filter(|n| !meta::is_deleting(n))
        .map(|node| {
            let alloc = meta::get_path(&node, &["status", "allocatable"]);
            let cpu = quantity(alloc.and_then(|a| a.get("cpu")));
            let memory = quantity(alloc.and_then(|a| a.get("memory")));
            let pods = quantity(alloc.and_then(|a| a.get("pods"))) / 1_000_000_000;
            (
                meta::name(&node).to_string(),
                Candidate {
                    node,
                    cpu,
                    memory,
                    pods,
                    used: Demand::default(),
                    count: 0,
                },
            )
        })
        .collect();
    for pod in client::list(app, PODS, None) {
        let node = client::str_at(&pod, &["spec", "nodeName"]);
        if let Some(c) = by_name.get_mut(node)
            && holds_resources(&pod)
        {
            let d = demand(&pod);
            c.used.cpu += d.cpu;
            c.used.memory += d.memory;
            c.count += 1;
        }
    }
    by_name.into_values().collect()
}

/// The scheduler's message when no Node fits.
fn unschedulable_message(total: usize, reasons: &HashMap<String, usize>) -> String {
    if total == 0 {
        return "no nodes available to schedule pods".to_string();
    }
    let mut parts: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    let resource = |r: &str| r.starts_with("Insufficient") || r == "Too many pods";
    let mut preemption: BTreeMap<&str, usize> = BTreeMap::new();
    for (r, n) in reasons {
        let why = if resource(r) {
            "No preemption victims found for incoming pod"
        } else {
            "Preemption is not helpful for scheduling"
        };
        *preemption.entry(why).or_default() += n;
    }
    let preemption: Vec<String> = preemption.iter().map(|(r, n)| format!("{n} {r}")).collect();
    format!(
        "0/{total} nodes are available: {}. preemption: 0/{total} nodes are available: {}.",
        parts.join(", "),
        preemption.join(", ")
    )
}

/// Places every pending Pod it can; reports the others as unschedulable.
pub(crate) async fn schedule_pending(app: &App) -> ApiResult<()> {
    let mut pending: Vec<Arc<Value>> = client::list(app, PODS, None)
        .into_iter()
        .filter(|p| is_pending(p))
        .collect();
    if pending.is_empty() {
        return Ok(());
    }
    pending.sort_by(|a, b| {
        meta::meta_str(a, "creationTimestamp").cmp(meta::meta_str(b, "creationTimestamp"))
    });
    let mut nodes = candidates(app);
    for pod in pending {
        let want = demand(&pod);
        let mut reasons: HashMap<String, usize> = HashMap::new();
        let mut best: Option<usize> = None;
        for (i, c) in nodes.iter().enumerate() {
            match misfit(&pod, &want, c) {
                Some(r) => *reasons.entry(r).or_default() += 1,
                None => {
                    if best.is_none_or(|b| c.count < nodes[b].count) {
                        best = Some(i);
                    }
                }
            }
        }
        match best {
            Some(i) => {
                let node = meta::name(&nodes[i].node).to_string();
                if bind(app, &pod, &node).await? {
                    nodes[i].used.cpu += want.cpu;
                    nodes[i].used.memory += want.memory;
                    nodes[i].count += 1;
                    client::event(
                        app,
                        SCHEDULER,
                        &pod,
                        "Normal",
                        "Scheduled",
                        &format!(
                            "Successfully assigned {}/{} to {node}",
                            meta::namespace(&pod),
                            meta::name(&pod)
                        ),
                    );
                }
            }
            None => {
                report_unschedulable(app, &pod, &unschedulable_message(nodes.len(), &reasons))
                    .await?
            }
        }
    }
    Ok(())
}

async fn report_unschedulable(app: &App, pod: &Value, message: &str) -> ApiResult<()> {
    let already = client::condition(pod, "PodScheduled")
        .is_some_and(|c| c.get("message").and_then(Value::as_str) == Some(message));
    if already {
        return Ok(());
    }
    let (ns, name) = (meta::namespace(pod), meta::name(pod));
    client::modify_with_admission(app, PODS, ns, name, Some("status"), SCHEDULER, |p| {
        if !is_pending(p) {
            return false;
        }
        let mut conditions = client::conditions(p);
        let cond = json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message});
        if !client::set_condition(&mut conditions, cond, ConditionStyle::Pod) {
            return false;
        }
        meta::set_path(p, &["status", "conditions"], json!(conditions));
        if client::str_at(p, &["status", "phase"]).is_empty() {
            meta::set_path(p, &["status", "phase"], json!("Pending"));
        }
        true
    })
    .await?;
    client::event(app, SCHEDULER, pod, "Warning", "FailedScheduling", message);
    Ok(())
}

/// Binds the Pod to `node` through `pods/binding`, as the scheduler does
/// (its uid as precondition), so watchers and admission webhooks see what a
/// cluster shows them. False when the Pod was bound, deleted or replaced
/// meanwhile (it is looked at again on its next change).
async fn bind(app: &App, pod: &Value, node: &str) -> ApiResult<bool> {
    let res = client::resource(app, PODS)?;
    let (ns, name) = (meta::namespace(pod), meta::name(pod));
    let binding = json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": ns, "uid": meta::uid(pod)},
        "target": {"kind": "Node", "name": node},
    });
    let ctx = WriteCtx::internal(SCHEDULER);
    match crate::api::pod_subresources::bind(app, &res, ns, name, binding, &ctx).await {
        Ok(_) => Ok(true),
        Err(e) if e.code == 404 || e.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(labels: Value, taints: Value) -> Candidate {
        Candidate {
            node: Arc::new(
                json!({"metadata": {"name": "n", "labels": labels}, "spec": {"taints": taints}}),
            ),
            cpu: 2_000_000_000,
            memory: 1 << 40,
            pods: 110,
            used: Demand::default(),
            count: 0,
        }
    }

    #[test]
    fn filters_name_the_first_reason_a_node_is_refused() {
        let pod = json!({"spec": {"nodeSelector": {"disk": "ssd"}, "containers": [{"resources": {"requests": {"cpu": "3"}}}]}});
        let want = demand(&pod);
        assert_eq!(want.cpu, 3_000_000_000);
        let c = node(json!({"disk": "hdd"}), json!([]));
        assert_eq!(
            misfit(&pod, &want, &c).unwrap(),
            "node(s) didn't match Pod's node affinity/selector"
        );
        let c = node(
            json!({"disk": "ssd"}),
            json!([{"key": "gpu", "value": "x", "effect": "NoSchedule"}]),
        );
        assert_eq!(
            misfit(&pod, &want, &c).unwrap(),
            "node(s) had untolerated taint {gpu: x}"
        );
        let c = node(json!({"disk": "ssd"}), json!([]));
        assert_eq!(misfit(&pod, &want, &c).unwrap(), "Insufficient cpu");
        let tolerant = json!({"spec": {"tolerations": [{"operator": "Exists"}], "containers": []}});
        let c = node(json!({}), json!([{"key": "gpu", "effect": "NoExecute"}]));
        assert!(misfit(&tolerant, &demand(&tolerant), &c).is_none());
    }

    #[test]
    fn required_node_affinity_terms_are_ored_and_expressions_anded() {
        let pod = json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}, {"key": "gpu", "operator": "DoesNotExist"}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["special"]}]},
        ]}}}}});
        let n = |name: &str, labels: Value| json!({"metadata": {"name": name, "labels": labels}});
        assert!(selects(&pod, &n("x", json!({"zone": "a"}))));
        assert!(!selects(&pod, &n("x", json!({"zone": "a", "gpu": "1"}))));
        assert!(selects(&pod, &n("special", json!({}))));
        assert!(!selects(&pod, &n("x", json!({"zone": "b"}))));
    }

    #[test]
    fn the_message_counts_reasons_as_the_scheduler_does() {
        let mut reasons = HashMap::new();
        reasons.insert("Insufficient cpu".to_string(), 1);
        reasons.insert("node(s) had untolerated taint {a: b}".to_string(), 2);
        assert_eq!(
            unschedulable_message(3, &reasons),
            "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {a: b}. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
        );
        assert_eq!(
            unschedulable_message(0, &HashMap::new()),
            "no nodes available to schedule pods"
        );
    }
}
