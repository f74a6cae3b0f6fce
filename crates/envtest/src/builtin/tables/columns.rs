//! Column definitions of the printers (name, type, format, priority,
//! description).

use crate::builtin::KindInfo;

use super::column::{AGE, AGE_DESC, Column, NAME, NAME_DESC};

const CREATED_AT: Column = ("Created At", "date", "", 0, AGE_DESC);
const CONTAINERS: Column = (
    "Containers",
    "string",
    "",
    1,
    "Names of each container in the template.",
);
const IMAGES: Column = (
    "Images",
    "string",
    "",
    1,
    "Images referenced by each container in the template.",
);
const SELECTOR: Column = (
    "Selector",
    "string",
    "",
    1,
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
);

pub(super) fn columns(kind: &KindInfo) -> Option<Vec<Column>> {
    if let Some(columns) = super::control_plane::columns(kind) {
        return Some(columns);
    }
    if let Some(columns) = super::storage::columns(kind) {
        return Some(columns);
    }
    if let Some(columns) = super::autoscaling::columns(kind) {
        return Some(columns);
    }
    if let Some(columns) = super::nodes::columns(kind) {
        return Some(columns);
    }
    Some(match (kind.group, kind.kind) {
        ("", "Pod") => vec![
            NAME,
            (
                "Ready",
                "string",
                "",
                0,
                "The aggregate readiness state of this pod for accepting traffic.",
            ),
            (
                "Status",
                "string",
                "",
                0,
                "The aggregate status of the containers in this pod.",
            ),
            (
                "Restarts",
                "string",
                "",
                0,
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            ),
            AGE,
            (
                "IP",
                "string",
                "",
                1,
                "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
            ),
            (
                "Node",
                "string",
                "",
                1,
                "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
            ),
            (
                "Nominated Node",
                "string",
                "",
                1,
                "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.",
            ),
            (
                "Readiness Gates",
                "string",
                "",
                1,
                "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
            ),
        ],
        ("", "Service") => vec![
            NAME,
            (
                "Type",
                "string",
                "",
                0,
                "type determines how the Service is exposed. Defaults to ClusterIP.",
            ),
            (
                "Cluster-IP",
                "string",
                "",
                0,
                "clusterIP is the IP address of the service and is usually assigned randomly.",
            ),
            (
                "External-IP",
                "string",
                "",
                0,
                "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
            ),
            (
                "Port(s)",
                "string",
                "",
                0,
                "The list of ports that are exposed by this service.",
            ),
            AGE,
            (
                "Selector",
                "string",
                "",
                1,
                "Route service traffic to pods with label keys and values matching this selector.",
            ),
        ],
        ("", "ConfigMap") => vec![
            NAME,
            (
                "Data",
                "integer",
                "",
                0,
                "Data contains the configuration data.",
            ),
            AGE,
        ],
        ("", "Secret") => vec![
            NAME,
            (
                "Type",
                "string",
                "",
                0,
                "Used to facilitate programmatic handling of secret data.",
            ),
            ("Data", "integer", "", 0, "Data contains the secret data."),
            AGE,
        ],
        ("", "ServiceAccount") => vec![
            NAME,
            (
                "Secrets",
                "integer",
                "",
                0,
                "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
            ),
            AGE,
        ],
        ("", "Namespace") => vec![
            NAME,
            ("Status", "string", "", 0, "The status of the namespace"),
            AGE,
        ],
        ("", "Endpoints") => vec![
            NAME,
            (
                "Endpoints",
                "string",
                "",
                0,
                "Endpoints is the list of endpoints in the set.",
            ),
            AGE,
        ],
        ("", "Event") | ("events.k8s.io", "Event") => vec![
            (
                "Last Seen",
                "string",
                "",
                0,
                "The time at which the most recent occurrence of this event was recorded.",
            ),
            (
                "Type",
                "string",
                "",
                0,
                "Type of this event (Normal, Warning), new types could be added in the future.",
            ),
            (
                "Reason",
                "string",
                "",
                0,
                "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
            ),
            (
                "Object",
                "string",
                "",
                0,
                "The object that this event is about.",
            ),
            (
                "Subobject",
                "string",
                "",
                1,
                "The subobject that this event is about.",
            ),
            (
                "Source",
                "string",
                "",
                1,
                "The component reporting this event. Should be a short machine understandable string.",
            ),
            (
                "Message",
                "string",
                "",
                0,
                "A human-readable description of the status of this operation.",
            ),
            (
                "First Seen",
                "string",
                "",
                1,
                "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
            ),
            (
                "Count",
                "string",
                "",
                1,
                "The number of times this event has occurred.",
            ),
            ("Name", "string", "", 1, NAME_DESC),
        ],
        ("apps", "Deployment") => vec![
            NAME,
            (
                "Ready",
                "string",
                "",
                0,
                "Number of the pod with ready state",
            ),
            (
                "Up-to-date",
                "integer",
                "",
                0,
                "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
            ),
            (
                "Available",
                "integer",
                "",
                0,
                "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
            ),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        ("apps", "ReplicaSet") | ("", "ReplicationController") => vec![
            NAME,
            (
                "Desired",
                "integer",
                "",
                0,
                "Replicas is the number of desired replicas.",
            ),
            (
                "Current",
                "integer",
                "",
                0,
                "Replicas is the most recently observed number of replicas.",
            ),
            (
                "Ready",
                "integer",
                "",
                0,
                "readyReplicas is the number of pods targeted by this ReplicaSet with a Ready Condition.",
            ),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        ("apps", "StatefulSet") => vec![
            NAME,
            (
                "Ready",
                "string",
                "",
                0,
                "Number of the pod with ready state",
            ),
            AGE,
            CONTAINERS,
            IMAGES,
        ],
        ("apps", "DaemonSet") => vec![
            NAME,
            (
                "Desired",
                "integer",
                "",
                0,
                "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod).",
            ),
            (
                "Current",
                "integer",
                "",
                0,
                "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
            ),
            (
                "Ready",
                "integer",
                "",
                0,
                "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.",
            ),
            (
                "Up-to-date",
                "integer",
                "",
                0,
                "The total number of nodes that are running updated daemon pod",
            ),
            (
                "Available",
                "integer",
                "",
                0,
                "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
            ),
            (
                "Node Selector",
                "string",
                "",
                0,
                "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node.",
            ),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        ("batch", "Job") => vec![
            NAME,
            (
                "Completions",
                "string",
                "",
                0,
                "The desired number of successfully finished pods the job should be run with.",
            ),
            (
                "Duration",
                "string",
                "",
                0,
                "Time required to complete the job.",
            ),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        ("batch", "CronJob") => vec![
            NAME,
            (
                "Schedule",
                "string",
                "",
                0,
                "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
            ),
            (
                "Suspend",
                "boolean",
                "",
                0,
                "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.",
            ),
            (
                "Active",
                "integer",
                "",
                0,
                "A list of pointers to currently running jobs.",
            ),
            (
                "Last Schedule",
                "string",
                "",
                0,
                "Information when was the last time the job was successfully scheduled.",
            ),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        ("coordination.k8s.io", "Lease") => vec![
            NAME,
            (
                "Holder",
                "string",
                "",
                0,
                "holderIdentity contains the identity of the holder of a current lease.",
            ),
            AGE,
        ],
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => vec![NAME, CREATED_AT],
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => vec![
            NAME,
            (
                "Role",
                "string",
                "",
                0,
                "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.",
            ),
            AGE,
            ("Users", "string", "", 1, "Users in the roleBinding"),
            ("Groups", "string", "", 1, "Groups in the roleBinding"),
            (
                "ServiceAccounts",
                "string",
                "",
                1,
                "ServiceAccounts in the roleBinding",
            ),
        ],
        ("apiextensions.k8s.io", "CustomResourceDefinition") => vec![NAME, CREATED_AT],
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => vec![
            NAME,
            (
                "Validations",
                "integer",
                "",
                0,
                "Validations indicates the number of validation rules defined in this configuration",
            ),
            (
                "ParamKind",
                "string",
                "",
                0,
                "ParamKind specifies the kind of resources used to parameterize this policy",
            ),
            AGE,
        ],
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => vec![
            NAME,
            (
                "PolicyName",
                "string",
                "",
                0,
                "PolicyName indicates the policy definition which the policy binding binded to",
            ),
            (
                "ParamRef",
                "string",
                "",
                0,
                "ParamRef indicates the param resource which sets the configration param",
            ),
            AGE,
        ],
        ("admissionregistration.k8s.io", _) => vec![
            NAME,
            (
                "Webhooks",
                "integer",
                "",
                0,
                "Webhooks is a list of webhooks and the affected resources and operations.",
            ),
            AGE,
        ],
        _ => return None,
    })
}
