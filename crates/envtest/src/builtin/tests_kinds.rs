//! Behaviour of kinds the transcripts do not record: webhook configurations,
//! RBAC, CronJobs, updates of Services, DaemonSets, Pods and immutable
//! ConfigMaps, Event tables.

use serde_json::{Value, json};

use super::*;

fn kind(group: &str, plural: &str) -> &'static KindInfo {
    find(group, plural).expect("served kind")
}

/// decode → defaults → prepare_for_create; the object and its causes.
fn create(kind: &KindInfo, body: Value) -> (Value, Vec<Cause>) {
    let (mut obj, unknown) = decode(kind, body).expect("decodes");
    assert!(unknown.is_empty(), "{unknown:?}");
    apply_defaults(kind, &mut obj);
    if obj["metadata"].get("uid").is_none() {
        obj["metadata"]["uid"] = json!("8a4b1c1e-1111-4222-8333-444455556666");
    }
    prepare_for_create(kind, &mut obj);
    let causes = validate(kind, &obj, None);
    (obj, causes)
}

fn update(
    kind: &KindInfo,
    body: Value,
    old: &Value,
    subresource: Option<&str>,
) -> (Value, Vec<Cause>) {
    let (mut obj, _) = decode(kind, body).expect("decodes");
    apply_defaults(kind, &mut obj);
    prepare_for_update(kind, &mut obj, old, subresource);
    let causes = validate(kind, &obj, Some(old));
    (obj, causes)
}

fn summaries(causes: &[Cause]) -> Vec<String> {
    causes.iter().map(Cause::summary).collect()
}

fn webhook() -> Value {
    json!({
        "name": "check.example.com",
        "clientConfig": {"service": {"namespace": "ns", "name": "hook"}},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"]
    })
}

#[test]
fn webhook_configurations_get_their_defaults() {
    let mutating = kind(
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
    );
    let (obj, causes) = create(
        mutating,
        json!({"metadata": {"name": "m"}, "webhooks": [webhook()]}),
    );
    assert!(causes.is_empty(), "{causes:?}");
    let hook = &obj["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Fail");
    assert_eq!(hook["matchPolicy"], "Equivalent");
    assert_eq!(hook["namespaceSelector"], json!({}));
    assert_eq!(hook["objectSelector"], json!({}));
    assert_eq!(hook["timeoutSeconds"], 10);
    assert_eq!(hook["reinvocationPolicy"], "Never");
    assert_eq!(hook["rules"][0]["scope"], "*");
    assert_eq!(hook["clientConfig"]["service"]["port"], 443);
    assert_eq!(obj["metadata"]["generation"], 1);

    let validating = kind(
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
    );
    let (obj, _) = create(
        validating,
        json!({"metadata": {"name": "v"}, "webhooks": [webhook()]}),
    );
    assert!(obj["webhooks"][0].get("reinvocationPolicy").is_none());

    // Changing the webhooks bumps the generation; labels do not.
    let mut body = obj.clone();
    body["metadata"]["labels"] = json!({"a": "b"});
    let (same, _) = update(validating, body.clone(), &obj, None);
    assert_eq!(same["metadata"]["generation"], 1);
    body["webhooks"][0]["timeoutSeconds"] = json!(5);
    let (changed, causes) = update(validating, body, &obj, None);
    assert!(causes.is_empty(), "{causes:?}");
    assert_eq!(changed["metadata"]["generation"], 2);
}

#[test]
fn webhook_configuration_errors() {
    let validating = kind(
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
    );
    let mut hook = webhook();
    hook["name"] = json!("check");
    hook.as_object_mut().unwrap().remove("sideEffects");
    hook.as_object_mut()
        .unwrap()
        .remove("admissionReviewVersions");
    hook["timeoutSeconds"] = json!(31);
    hook["clientConfig"] = json!({"url": "http://example.com/x?y=1"});
    let (_, causes) = create(
        validating,
        json!({"metadata": {"name": "v"}, "webhooks": [hook]}),
    );
    assert_eq!(
        summaries(&causes),
        vec![
            "webhooks[0].name: Invalid value: \"check\": should be a domain with at least three segments separated by dots",
            "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
            "webhooks[0].clientConfig.url: Invalid value: \"y=1\": query parameters are not permitted in the URL",
            "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
        ]
    );
}

#[test]
fn rbac_defaults_and_errors() {
    let bindings = kind("rbac.authorization.k8s.io", "rolebindings");
    let (obj, causes) = create(
        bindings,
        json!({"metadata": {"name": "b", "namespace": "n"},
               "roleRef": {"kind": "Role", "name": "r"},
               "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "default"}]}),
    );
    assert!(causes.is_empty(), "{causes:?}");
    assert_eq!(obj["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(obj["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
    assert!(obj["subjects"][1].get("apiGroup").is_none());

    let mut changed = obj.clone();
    changed["roleRef"]["name"] = json!("other");
    let (_, causes) = update(bindings, changed, &obj, None);
    assert_eq!(
        summaries(&causes),
        vec![
            "roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"other\"}: cannot change roleRef"
        ]
    );

    let cluster_bindings = kind("rbac.authorization.k8s.io", "clusterrolebindings");
    let (_, causes) = create(
        cluster_bindings,
        json!({"metadata": {"name": "b"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
               "subjects": [{"kind": "ServiceAccount", "name": "x"}, {"kind": "Robot", "name": "y"}]}),
    );
    assert_eq!(
        summaries(&causes),
        vec![
            "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
            "subjects[0].namespace: Required value",
            "subjects[1].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
        ]
    );

    let roles = kind("rbac.authorization.k8s.io", "roles");
    let (obj, causes) = create(
        roles,
        json!({"metadata": {"name": "a/b", "namespace": "n"}, "rules": [{"apiGroups": [""]}]}),
    );
    assert_eq!(
        summaries(&causes),
        vec![
            "metadata.name: Invalid value: \"a/b\": may not contain '/'",
            "rules[0].verbs: Required value: verbs must contain at least one value",
            "rules[0].resources: Required value: resource rules must supply at least one resource",
        ]
    );
    assert_eq!(obj["rules"][0]["verbs"], Value::Null);
}

#[test]
fn cron_jobs() {
    let cron_jobs = kind("batch", "cronjobs");
    let body = json!({"metadata": {"name": "c", "namespace": "n"}, "spec": {"schedule": "*/5 * * * *",
        "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
            "containers": [{"name": "c", "image": "busybox"}]}}}}}});
    let (obj, causes) = create(cron_jobs, body.clone());
    assert!(causes.is_empty(), "{causes:?}");
    assert_eq!(obj["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(obj["spec"]["suspend"], false);
    assert_eq!(obj["spec"]["successfulJobsHistoryLimit"], 3);
    assert_eq!(obj["spec"]["failedJobsHistoryLimit"], 1);
    assert_eq!(
        obj["spec"]["jobTemplate"]["metadata"],
        json!({"creationTimestamp": null})
    );
    assert_eq!(
        obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );
    assert_eq!(obj["metadata"]["generation"], 1);
    assert_eq!(obj["status"], json!({}));

    let mut bad = body;
    bad["spec"]["schedule"] = json!("70 * * * *");
    bad["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
    let (_, causes) = create(cron_jobs, bad);
    assert_eq!(
        summaries(&causes),
        vec![
            "spec.schedule: Invalid value: \"70 * * * *\": end of range (70) above maximum (59): 70",
            "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
        ]
    );
}

#[test]
fn service_updates_keep_allocated_values() {
    let services = kind("", "services");
    let mut alloc = Allocator::default();
    let (mut obj, _) = decode(
        services,
        json!({"metadata": {"name": "s", "namespace": "n"}, "spec": {"type": "NodePort", "selector": {"a": "b"},
               "ports": [{"name": "http", "port": 80}]}}),
    )
    .unwrap();
    apply_defaults(services, &mut obj);
    alloc.allocate_service(&mut obj, false).unwrap();
    prepare_for_create(services, &mut obj);
    assert!(validate(services, &obj, None).is_empty());

    // A PUT without the allocated values keeps them.
    let body = json!({"metadata": {"name": "s", "namespace": "n"}, "spec": {"type": "NodePort", "selector": {"a": "c"},
                      "ports": [{"name": "http", "port": 80}]}});
    let (mut updated, _) = decode(services, body).unwrap();
    apply_defaults(services, &mut updated);
    prepare_for_update(services, &mut updated, &obj, None);
    alloc.allocate_service(&mut updated, false).unwrap();
    assert!(validate(services, &updated, Some(&obj)).is_empty());
    assert_eq!(updated["spec"]["clusterIP"], obj["spec"]["clusterIP"]);
    assert_eq!(
        updated["spec"]["ports"][0]["nodePort"],
        obj["spec"]["ports"][0]["nodePort"]
    );
    assert_eq!(updated["status"], json!({"loadBalancer": {}}));

    // Turning it into a ClusterIP Service drops and frees its node ports.
    let mut cluster_ip = updated.clone();
    cluster_ip["spec"]["type"] = json!("ClusterIP");
    prepare_for_update(services, &mut cluster_ip, &updated, None);
    alloc.allocate_service(&mut cluster_ip, false).unwrap();
    assert!(validate(services, &cluster_ip, Some(&updated)).is_empty());
    assert!(cluster_ip["spec"]["ports"][0].get("nodePort").is_none());
    let node_port = updated["spec"]["ports"][0]["nodePort"].clone();
    let mut other = json!({"metadata": {"name": "o", "namespace": "n"}, "spec": {"type": "NodePort",
        "ports": [{"port": 80, "nodePort": node_port}]}});
    alloc.allocate_service(&mut other, false).unwrap();

    // Changing the cluster IP is refused.
    let mut moved = updated.clone();
    moved["spec"]["clusterIP"] = json!("10.96.0.99");
    moved["spec"]["clusterIPs"] = json!(["10.96.0.99"]);
    let causes = validate(services, &moved, Some(&obj));
    assert_eq!(
        summaries(&causes),
        vec![
            "spec.clusterIPs[0]: Invalid value: []string{\"10.96.0.99\"}: may not change once set"
        ]
    );
}

#[test]
fn daemon_set_template_generation_follows_template_changes() {
    let daemon_sets = kind("apps", "daemonsets");
    let body = json!({"metadata": {"name": "d", "namespace": "n"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}});
    let (obj, causes) = create(daemon_sets, body.clone());
    assert!(causes.is_empty(), "{causes:?}");
    let annotation = |o: &Value| {
        o["metadata"]["annotations"]["deprecated.daemonset.template.generation"].clone()
    };
    assert_eq!(annotation(&obj), "1");

    let mut changed = body.clone();
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("i:2");
    let (updated, causes) = update(daemon_sets, changed, &obj, None);
    assert!(causes.is_empty(), "{causes:?}");
    assert_eq!(updated["metadata"]["generation"], 2);
    assert_eq!(annotation(&updated), "2");

    let mut other = body;
    other["spec"]["minReadySeconds"] = json!(5);
    let (updated, _) = update(daemon_sets, other, &obj, None);
    assert_eq!(updated["metadata"]["generation"], 2);
    assert_eq!(annotation(&updated), "1");
}

#[test]
fn pod_updates_may_change_images_and_remove_scheduling_gates_only() {
    let pods = kind("", "pods");
    let body = json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}});
    let (obj, causes) = create(pods, body);
    assert!(causes.is_empty(), "{causes:?}");

    let mut image = obj.clone();
    image["spec"]["containers"][0]["image"] = json!("i:2");
    image["status"] = json!({"phase": "Running"});
    let (updated, causes) = update(pods, image, &obj, None);
    assert!(causes.is_empty(), "{causes:?}");
    assert_eq!(updated["status"], obj["status"]);

    let mut restart = obj.clone();
    restart["spec"]["restartPolicy"] = json!("Never");
    let (_, causes) = update(pods, restart, &obj, None);
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].field, "spec");
    assert!(
        causes[0]
            .message
            .starts_with("Forbidden: pod updates may not change fields other than")
    );

    let gated_body = json!({"metadata": {"name": "g", "namespace": "n"}, "spec": {
        "containers": [{"name": "c", "image": "i:1"}],
        "schedulingGates": [{"name": "a"}, {"name": "b"}],
    }});
    let (gated, causes) = create(pods, gated_body);
    assert!(causes.is_empty(), "{causes:?}");
    let mut one_removed = gated.clone();
    one_removed["spec"]["schedulingGates"] = json!([{"name": "b"}]);
    let (updated, causes) = update(pods, one_removed, &gated, None);
    assert!(causes.is_empty(), "{causes:?}");
    assert_eq!(updated["spec"]["schedulingGates"], json!([{"name": "b"}]));
    let mut all_removed = gated.clone();
    all_removed["spec"]
        .as_object_mut()
        .map(|s| s.remove("schedulingGates"));
    let (_, causes) = update(pods, all_removed, &gated, None);
    assert!(causes.is_empty(), "{causes:?}");
    let mut added = gated.clone();
    added["spec"]["schedulingGates"] = json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]);
    let (_, causes) = update(pods, added, &gated, None);
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(causes[0].field, "spec.schedulingGates[2].name");
    assert_eq!(
        causes[0].message,
        "Forbidden: only deletion is allowed, but found new scheduling gate 'c'"
    );

    let mut status = obj.clone();
    status["status"] = json!({"phase": "Running"});
    status["spec"]["restartPolicy"] = json!("Never");
    let (updated, _) = update(pods, status, &obj, Some("status"));
    assert_eq!(updated["status"]["phase"], "Running");
    assert_eq!(updated["spec"]["restartPolicy"], "Always");
}

#[test]
fn immutable_config_maps_keep_their_data() {
    let config_maps = kind("", "configmaps");
    let (obj, _) = create(
        config_maps,
        json!({"metadata": {"name": "c", "namespace": "n"}, "data": {"a": "1"}, "immutable": true}),
    );
    let (_, causes) = update(
        config_maps,
        json!({"metadata": {"name": "c", "namespace": "n"}, "data": {"a": "2"}}),
        &obj,
        None,
    );
    assert_eq!(
        summaries(&causes),
        vec![
            "immutable: Forbidden: field is immutable when `immutable` is set",
            "data: Forbidden: field is immutable when `immutable` is set",
        ]
    );
}

#[test]
fn metadata_rules() {
    let config_maps = kind("", "configmaps");
    let (_, causes) = create(
        config_maps,
        json!({"metadata": {"name": "c", "namespace": "n", "labels": {"bad key": "-x"},
               "annotations": {"big": "x".repeat(262_145)}, "finalizers": ["custom"]}}),
    );
    assert_eq!(
        summaries(&causes)
            .iter()
            .map(|s| s.split(" (").next().unwrap_or(""))
            .collect::<Vec<_>>(),
        vec![
            "metadata.labels: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            "metadata.labels: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            "metadata.annotations: Too long: may not be more than 262144 bytes",
            "metadata.finalizers[0]: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified",
        ]
    );

    // Custom resources use the same rules, without the core finalizer rule.
    let cr = json!({"metadata": {"generateName": "Bad_", "namespace": "n"}});
    assert_eq!(
        summaries(&validate_metadata(&cr, true, false))[..2]
            .iter()
            .map(|s| s.split(':').next().unwrap_or(""))
            .collect::<Vec<_>>(),
        vec!["metadata.generateName", "metadata.name"]
    );
    let old = json!({"metadata": {"name": "w", "namespace": "n", "deletionTimestamp": "2026-11-30T10:00:00Z", "finalizers": ["a.io/x"]}});
    let new = json!({"metadata": {"name": "w", "namespace": "n", "deletionTimestamp": "2026-11-30T10:00:00Z", "finalizers": ["a.io/x", "a.io/y"]}});
    assert_eq!(
        summaries(&validate_metadata_update(&new, &old)),
        vec![
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"a.io/y\"}"
        ]
    );
}

#[test]
fn event_tables_read_both_shapes() {
    let doc: Value = serde_json::from_str(include_str!(
        "../../tests/fixtures/transcripts/13-events-leases.json"
    ))
    .unwrap();
    let now: jiff::Timestamp = "2026-11-30T10:00:10Z".parse().unwrap();
    let mut core = doc["steps"][0]["response"]["body"].clone();
    core["firstTimestamp"] = json!("2026-11-30T10:00:00Z");
    core["lastTimestamp"] = json!("2026-11-30T10:00:05Z");
    let v1 = events::core_to_events_v1(&core);
    let (columns, rows) = table(kind("", "events"), &[core], now).unwrap();
    assert_eq!(columns.len(), 10);
    assert_eq!(
        rows[0],
        vec![
            json!("5s"),
            json!("Normal"),
            json!("Tested"),
            json!("configmap/cm1"),
            json!(""),
            json!("transcripts"),
            json!("hello from core/v1"),
            json!("10s"),
            json!(1),
            json!("cm1.ev1"),
        ]
    );
    let (_, v1_rows) = table(kind("events.k8s.io", "events"), &[v1], now).unwrap();
    assert_eq!(v1_rows, rows);
}

#[test]
fn namespaces_finalize_subresource_writes_finalizers_only() {
    let namespaces = kind("", "namespaces");
    let (obj, causes) = create(namespaces, json!({"metadata": {"name": "ns1"}}));
    assert!(causes.is_empty(), "{causes:?}");
    assert_eq!(obj["spec"]["finalizers"], json!(["kubernetes"]));
    let (finalized, causes) = update(
        namespaces,
        json!({"metadata": {"name": "ns1"}, "spec": {"finalizers": []}, "status": {"phase": "Bogus"}}),
        &obj,
        Some("finalize"),
    );
    assert!(causes.is_empty(), "{causes:?}");
    assert!(finalized["spec"].get("finalizers").is_none());
    assert_eq!(finalized["status"]["phase"], "Active");
    // A plain update keeps the finalizers.
    let (kept, _) = update(
        namespaces,
        json!({"metadata": {"name": "ns1"}, "spec": {}}),
        &obj,
        None,
    );
    assert_eq!(kept["spec"]["finalizers"], json!(["kubernetes"]));
}

#[test]
fn transcript_08_crd_create_is_stored_as_recorded() {
    let doc: Value = serde_json::from_str(include_str!(
        "../../tests/fixtures/transcripts/08-crd-lifecycle.json"
    ))
    .unwrap();
    let step = &doc["steps"][0];
    let body: Value = serde_saphyr::from_str(step["request"]["body"].as_str().unwrap()).unwrap();
    let crds = kind("apiextensions.k8s.io", "customresourcedefinitions");
    let (obj, causes) = create(crds, body);
    assert!(causes.is_empty(), "{causes:?}");
    let mut expected = step["response"]["body"].clone();
    let mut actual = obj;
    for meta in [&mut expected["metadata"], &mut actual["metadata"]] {
        let meta = meta.as_object_mut().unwrap();
        for key in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
        ] {
            meta.remove(key);
        }
    }
    assert_eq!(actual, expected);
}

#[test]
fn crd_schemas_round_trip_unchanged() {
    let crds = kind("apiextensions.k8s.io", "customresourcedefinitions");
    let schema = json!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {
            "list": {"type": "array", "items": {"type": "string", "maxLength": 5}, "x-kubernetes-list-type": "set"},
            "tuple": {"type": "array", "items": [{"type": "string"}]},
            "map": {"type": "object", "additionalProperties": {"type": "integer", "format": "int32"}},
            "open": {"type": "object", "additionalProperties": true},
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "ratio": {"type": "number", "minimum": 0.5, "default": 1.5, "example": {"a": [1, 2.0]}},
            "rules": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() > 1", "message": "m"}]}
        }
    });
    let body = json!({"metadata": {"name": "things.example.com"}, "spec": {"group": "example.com", "scope": "Cluster",
        "names": {"plural": "things", "kind": "Thing"},
        "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]}});
    let (obj, unknown) = decode(crds, body).unwrap();
    assert!(unknown.is_empty(), "{unknown:?}");
    let mut expected = schema;
    // Go writes the float64 2.0 of free-form JSON as 2.
    expected["properties"]["ratio"]["example"]["a"][1] = json!(2);
    assert_eq!(
        obj["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
        expected
    );
}

#[test]
fn cron_job_schedules_refuse_a_time_zone_and_time_zones_are_checked() {
    let cron_jobs = kind("batch", "cronjobs");
    let body = |schedule: &str, zone: Option<&str>| {
        let mut spec = json!({"schedule": schedule,
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                "containers": [{"name": "c", "image": "busybox"}]}}}}});
        if let Some(zone) = zone {
            spec["timeZone"] = json!(zone);
        }
        json!({"metadata": {"name": "c", "namespace": "n"}, "spec": spec})
    };
    let (_, causes) = create(cron_jobs, body("CRON_TZ=UTC * * * * *", None));
    assert_eq!(
        summaries(&causes),
        [
            "spec.schedule: Invalid value: \"CRON_TZ=UTC * * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
        ]
    );
    let (_, causes) = create(cron_jobs, body("0 3 * * *", Some("Europe/Pariss")));
    assert_eq!(
        summaries(&causes),
        ["spec.timeZone: Invalid value: \"Europe/Pariss\": unknown time zone Europe/Pariss"]
    );
    let (_, causes) = create(cron_jobs, body("0 3 * * *", Some("")));
    assert_eq!(
        summaries(&causes),
        ["spec.timeZone: Invalid value: \"\": timeZone must be nil or non-empty string"]
    );
    let (ok, causes) = create(cron_jobs, body("0 3 * * *", Some("Europe/Paris")));
    assert!(causes.is_empty(), "{causes:?}");
    // A stored schedule with a zone may be kept (not with timeZone too).
    let mut old = ok;
    old["spec"]["schedule"] = json!("TZ=UTC 0 3 * * *");
    old["spec"]["timeZone"] = Value::Null;
    old["metadata"]["resourceVersion"] = json!("5");
    let mut next = body("TZ=UTC 0 4 * * *", None);
    next["metadata"]["resourceVersion"] = json!("5");
    let (_, causes) = update(cron_jobs, next, &old, None);
    assert!(causes.is_empty(), "{causes:?}");
    let mut both = body("TZ=UTC 0 4 * * *", Some("UTC"));
    both["metadata"]["resourceVersion"] = json!("5");
    let (_, causes) = update(cron_jobs, both, &old, None);
    assert_eq!(
        summaries(&causes),
        [
            "spec.schedule: Invalid value: \"TZ=UTC 0 4 * * *\": cannot use both timeZone field and TZ or CRON_TZ in schedule"
        ]
    );
}

#[test]
fn deployment_selectors_are_converted_as_kube_apiserver_converts_them() {
    let deployments = kind("apps", "deployments");
    let body = |selector: Value, labels: Value| {
        json!({"metadata": {"name": "d", "namespace": "n"}, "spec": {"selector": selector,
            "template": {"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    };
    // An invalid value: the field error, then the selector that cannot be
    // converted; the template is not checked against it.
    let (_, causes) = create(
        deployments,
        body(
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a b"]}]}),
            json!({"app": "other"}),
        ),
    );
    assert_eq!(
        summaries(&causes),
        [
            "spec.selector.matchExpressions[0].values[0]: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:\"app\", Operator:\"In\", Values:[]string{\"a b\"}}}}: invalid label selector",
        ]
    );
    let (_, causes) = create(
        deployments,
        body(json!({"matchLabels": {"app": "web"}}), json!({"app": "db"})),
    );
    assert_eq!(
        summaries(&causes),
        [
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"db\"}: `selector` does not match template `labels`"
        ]
    );
    let (_, causes) = create(deployments, body(json!({}), json!({"app": "db"})));
    assert_eq!(
        summaries(&causes),
        [
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment"
        ]
    );
}

/// `metadata.generation` as each kind's v1.32 strategy keeps it.
#[test]
fn generation_follows_each_kinds_strategy() {
    let with_rv = |mut v: Value| {
        v["metadata"]["resourceVersion"] = json!("9");
        v
    };
    // Deployment: spec and annotations bump it, labels do not; a status
    // write keeps annotations (the controller's revision) but not labels,
    // and never bumps it.
    let deployments = kind("apps", "deployments");
    let body = json!({"metadata": {"name": "d", "namespace": "n"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let (old, _) = create(deployments, body.clone());
    let old = with_rv(old);
    let mut labelled = with_rv(body.clone());
    labelled["metadata"]["labels"] = json!({"x": "y"});
    let (after, _) = update(deployments, labelled, &old, None);
    assert_eq!(after["metadata"]["generation"], 1);
    let mut annotated = with_rv(body.clone());
    annotated["metadata"]["annotations"] = json!({"x": "y"});
    let (after, _) = update(deployments, annotated, &old, None);
    assert_eq!(after["metadata"]["generation"], 2);
    let mut status = old.clone();
    status["metadata"]["annotations"] = json!({"deployment.kubernetes.io/revision": "1"});
    status["metadata"]["labels"] = json!({"x": "y"});
    status["status"] = json!({"observedGeneration": 1});
    let (after, _) = update(deployments, status, &old, Some("status"));
    assert_eq!(after["metadata"]["generation"], 1);
    assert_eq!(
        after["metadata"]["annotations"],
        json!({"deployment.kubernetes.io/revision": "1"})
    );
    assert_eq!(after["metadata"].get("labels"), None);

    // PriorityClass: 1 on create, never bumped.
    let classes = kind("scheduling.k8s.io", "priorityclasses");
    let (old, _) = create(classes, json!({"metadata": {"name": "p"}, "value": 10}));
    assert_eq!(old["metadata"]["generation"], 1);
    let (after, _) = update(
        classes,
        with_rv(json!({"metadata": {"name": "p"}, "value": 10, "description": "changed"})),
        &with_rv(old),
        None,
    );
    assert_eq!(after["metadata"]["generation"], 1);

    // PodTemplate: bumped by its template.
    let templates = kind("", "podtemplates");
    let body = json!({"metadata": {"name": "t", "namespace": "n"}, "template": {"spec": {
        "containers": [{"name": "c", "image": "i"}]}}});
    let (old, _) = create(templates, body.clone());
    assert_eq!(old["metadata"]["generation"], 1);
    let mut changed = with_rv(body);
    changed["template"]["spec"]["containers"][0]["image"] = json!("j");
    let (after, _) = update(templates, changed, &with_rv(old), None);
    assert_eq!(after["metadata"]["generation"], 2);

    // CSIDriver: not set on create, bumped by spec changes.
    let drivers = kind("storage.k8s.io", "csidrivers");
    let body = json!({"metadata": {"name": "csi.example.com"}, "spec": {"attachRequired": true}});
    let (old, _) = create(drivers, body.clone());
    assert_eq!(old["metadata"].get("generation"), None);
    let mut changed = with_rv(body);
    changed["spec"]["podInfoOnMount"] = json!(true);
    let (after, _) = update(drivers, changed, &with_rv(old), None);
    assert_eq!(after["metadata"]["generation"], 1);
}

/// What status writes keep of the stored object besides the spec: a CRD's
/// status write may change its metadata (v1.32 resets it with itself), an
/// APIService's may not; a volume's phase change moves its transition time.
#[test]
fn status_writes_keep_what_each_status_strategy_keeps() {
    let crds = kind("apiextensions.k8s.io", "customresourcedefinitions");
    let body = json!({"metadata": {"name": "gadgets.example.com"}, "spec": {"group": "example.com",
        "scope": "Namespaced", "names": {"plural": "gadgets", "kind": "Gadget"},
        "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
    let (mut old, causes) = create(crds, body);
    assert!(causes.is_empty(), "{causes:?}");
    old["metadata"]["resourceVersion"] = json!("4");
    let mut status = old.clone();
    status["metadata"]["labels"] = json!({"team": "a"});
    let (after, _) = update(crds, status, &old, Some("status"));
    assert_eq!(after["metadata"]["labels"], json!({"team": "a"}));

    let volumes = kind("", "persistentvolumes");
    let body = json!({"metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/pv"}}});
    let (mut old, causes) = create(volumes, body);
    assert!(causes.is_empty(), "{causes:?}");
    assert_eq!(old["status"]["phase"], "Pending");
    assert!(
        old["status"]["lastPhaseTransitionTime"].is_string(),
        "{old}"
    );
    old["status"]["lastPhaseTransitionTime"] = json!("2020-01-01T00:00:00Z");
    old["metadata"]["resourceVersion"] = json!("4");
    let mut same = old.clone();
    same["status"] = json!({"phase": "Pending"});
    let (after, _) = update(volumes, same, &old, Some("status"));
    assert_eq!(
        after["status"]["lastPhaseTransitionTime"],
        "2020-01-01T00:00:00Z"
    );
    let mut bound = old.clone();
    bound["status"]["phase"] = json!("Available");
    let (after, _) = update(volumes, bound, &old, Some("status"));
    assert_ne!(
        after["status"]["lastPhaseTransitionTime"],
        "2020-01-01T00:00:00Z"
    );
    assert!(after["status"]["lastPhaseTransitionTime"].is_string());
}

/// `ValidatePodSpec` beyond names and images: host ports, init containers
/// and sidecars, probes, the security context, affinity, DNS, topology
/// spread and host aliases, with v1.32's texts.
#[test]
fn pod_specs_are_validated_in_depth() {
    let pods = kind("", "pods");
    let pod = |spec: Value| json!({"metadata": {"name": "p", "namespace": "n"}, "spec": spec});
    let c = |name: &str, extra: Value| {
        let mut c = json!({"name": name, "image": "busybox"});
        if let (Some(m), Some(e)) = (c.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        c
    };
    let errors = |spec: Value| summaries(&create(pods, pod(spec)).1);

    assert_eq!(
        errors(json!({"containers": [
            c("a", json!({"ports": [{"containerPort": 80, "hostPort": 8080}]})),
            c("b", json!({"ports": [{"containerPort": 81, "hostPort": 8080}]})),
        ]})),
        ["spec.containers[1].ports[0].hostPort: Duplicate value: \"TCP//8080\""]
    );
    assert_eq!(
        errors(json!({"hostNetwork": true, "containers": [
            c("a", json!({"ports": [{"containerPort": 80, "hostPort": 81}]})),
        ]})),
        [
            "spec.containers[0].ports[0].hostPort: Invalid value: 81: must match `containerPort` when `hostNetwork` is true"
        ]
    );
    // A Deployment's template may leave the host port to its Pods.
    let deployments = kind("apps", "deployments");
    let (_, causes) = create(
        deployments,
        json!({"metadata": {"name": "d", "namespace": "n"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"hostNetwork": true,
                "containers": [c("a", json!({"ports": [{"containerPort": 80}]}))]}}}}),
    );
    assert!(causes.is_empty(), "{causes:?}");

    let probe = json!({"exec": {"command": ["true"]}});
    assert_eq!(
        errors(json!({
            "initContainers": [
                c("init", json!({"readinessProbe": probe})),
                c("side", json!({"restartPolicy": "Always", "readinessProbe": probe})),
                c("bad", json!({"restartPolicy": "OnFailure"})),
            ],
            "containers": [c("a", json!({"restartPolicy": "Always",
                "readinessProbe": {"exec": {"command": ["true"]}, "terminationGracePeriodSeconds": 5}}))],
        })),
        [
            // Probes first, then the restart policy, as validateContainers orders them.
            "spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes",
            "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
            "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
            "spec.initContainers[2].restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
        ]
    );

    assert_eq!(
        errors(json!({
            "containers": [c("a", json!({}))],
            "securityContext": {"runAsUser": -1, "seccompProfile": {"type": "Localhost"}},
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []},
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"a": "b"}}}]},
            },
            "dnsPolicy": "None",
            "topologySpreadConstraints": [
                {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 2},
            ],
            "hostAliases": [{"ip": "300.1.1.1", "hostnames": ["Web"]}],
        })),
        [
            "spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
            "spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost",
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term",
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"\": name part must be non-empty",
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None",
            "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
            "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{zone, DoNotSchedule}\"",
            "spec.hostAliases[0].ip: Invalid value: \"300.1.1.1\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            "spec.hostAliases[0].hostnames[0]: Invalid value: \"Web\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ]
    );
}

/// ValidateRollingUpdateDeployment and ValidateRollingUpdateDaemonSet: an
/// IntOrString is printed as Go's `%#v` prints the struct, a percent must
/// match `[0-9]+%`, and a DaemonSet may surge or leave Pods unavailable, not
/// both.
#[test]
fn rolling_updates_are_validated_as_v1_32_does() {
    let deployments = kind("apps", "deployments");
    let deployment = |rolling: Value| {
        json!({"metadata": {"name": "d", "namespace": "n"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": rolling},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    };
    let errors = |rolling: Value| summaries(&create(deployments, deployment(rolling)).1);
    assert_eq!(
        errors(json!({"maxUnavailable": "-5%", "maxSurge": "150%"})),
        [
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"-5%\"}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
        ],
        "maxSurge is not held to 100%"
    );
    assert_eq!(
        errors(json!({"maxUnavailable": 0, "maxSurge": "0%"})),
        [
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: may not be 0 when `maxSurge` is 0"
        ]
    );
    assert_eq!(
        errors(json!({"maxUnavailable": "101%", "maxSurge": -1})),
        [
            "spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0",
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"101%\"}: must not be greater than 100%",
        ]
    );

    let daemon_sets = kind("apps", "daemonsets");
    let daemon_set = |strategy: Value| {
        json!({"metadata": {"name": "d", "namespace": "n"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
            "updateStrategy": strategy,
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    };
    let errors = |strategy: Value| summaries(&create(daemon_sets, daemon_set(strategy)).1);
    // maxUnavailable defaults to 1, so a surge alone is refused.
    assert_eq!(
        errors(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "10%"}})),
        [
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"10%\"}: may not be set when maxUnavailable is non-zero"
        ]
    );
    assert!(
        errors(
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})
        )
        .is_empty()
    );
    assert_eq!(
        errors(
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "200%", "maxUnavailable": 0}})
        ),
        [
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"200%\"}: must not be greater than 100%"
        ]
    );
    assert_eq!(
        errors(
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}})
        ),
        [
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"
        ]
    );
    assert_eq!(
        errors(json!({"type": "Sometimes"})),
        [
            "spec.updateStrategy: Unsupported value: apps.DaemonSetUpdateStrategy{Type:\"Sometimes\", RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: supported values: \"RollingUpdate\", \"OnDelete\""
        ]
    );
}

/// PersistentVolumeClaims, PersistentVolumes and ephemeral volumes'
/// claim templates, validated as v1.32's storage rules validate them.
#[test]
fn claims_and_volumes_are_validated() {
    let claims = kind("", "persistentvolumeclaims");
    let claim = |spec: Value| json!({"metadata": {"name": "data", "namespace": "n"}, "spec": spec});
    assert_eq!(
        summaries(&create(claims, claim(json!({}))).1),
        [
            "spec.accessModes: Required value: at least 1 access mode is required",
            "spec.resources[storage]: Required value",
        ]
    );
    assert_eq!(
        summaries(
            &create(
                claims,
                claim(
                    json!({"accessModes": ["ReadWriteOncePod", "ReadWriteOnce", "Sometimes"],
                "resources": {"requests": {"storage": "0"}}, "storageClassName": "Fast",
                "dataSource": {"kind": "Snapshot", "name": "s"}})
                )
            )
            .1
        ),
        [
            "spec.accessModes: Unsupported value: \"Sometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
            "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
            "spec.resources[storage]: Invalid value: \"0\": must be greater than zero",
            "spec.storageClassName: Invalid value: \"Fast\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "spec.dataSource: Invalid value: \"Snapshot\": must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ]
    );
    // Updates: a first volumeName is allowed, a bound claim may grow, nothing else changes.
    let valid =
        json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
    let (old, causes) = create(claims, claim(valid.clone()));
    assert!(causes.is_empty(), "{causes:?}");
    let mut named = old.clone();
    named["spec"]["volumeName"] = json!("pv-1");
    assert!(update(claims, named.clone(), &old, None).1.is_empty());
    let mut grown = named.clone();
    grown["spec"]["resources"]["requests"]["storage"] = json!("1024Mi");
    assert!(
        update(claims, grown.clone(), &named, None).1.is_empty(),
        "the same quantity in another unit"
    );
    grown["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
    assert_eq!(
        summaries(&update(claims, grown.clone(), &named, None).1),
        [
            "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
        ]
    );
    let mut bound = named.clone();
    bound["status"] = json!({"phase": "Bound"});
    grown["status"] = json!({"phase": "Bound"});
    assert!(update(claims, grown.clone(), &bound, None).1.is_empty());
    grown["spec"]["resources"]["requests"]["storage"] = json!("512Mi");
    assert_eq!(
        summaries(&update(claims, grown, &bound, None).1),
        ["spec.resources.requests.storage: Forbidden: field can not be less than previous value"]
    );
    let mut mode = named.clone();
    mode["spec"]["volumeMode"] = json!("Block");
    let errors = summaries(&update(claims, mode, &named, None).1);
    assert_eq!(
        errors.last().map(String::as_str),
        Some("volumeMode: Invalid value: \"Block\": field is immutable")
    );

    let volumes = kind("", "persistentvolumes");
    let volume = |spec: Value| json!({"metadata": {"name": "pv"}, "spec": spec});
    assert_eq!(
        summaries(&create(volumes, volume(json!({}))).1),
        [
            "spec.accessModes: Required value",
            "spec.capacity: Required value",
            "spec.capacity: Unsupported value: core.ResourceList(nil): supported values: \"storage\"",
            "spec: Required value: must specify a volume type",
        ]
    );
    assert_eq!(
        summaries(
            &create(
                volumes,
                volume(
                    json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
                "persistentVolumeReclaimPolicy": "Recycle",
                "hostPath": {"path": "/var/..", "type": "Folder"}, "local": {"path": "/mnt"}})
                )
            )
            .1
        ),
        [
            "spec.hostPath.path: Invalid value: \"/var/..\": must not contain '..'",
            "spec.hostPath.type: Unsupported value: \"Folder\": supported values: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\"",
            "spec.local: Forbidden: may not specify more than 1 volume type",
            "spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'",
        ]
    );
    assert_eq!(
        summaries(
            &create(
                volumes,
                volume(
                    json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
                "local": {"path": "/mnt/disk"}, "csi": {"driver": "x"}})
                )
            )
            .1
        ),
        [
            "spec.nodeAffinity: Required value: Local volume requires node affinity",
            "spec.csi: Forbidden: may not specify more than 1 volume type",
        ]
    );
    let (old, causes) = create(
        volumes,
        volume(
            json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
            "nfs": {"server": "nfs.example.com", "path": "/exports"}}),
        ),
    );
    assert!(causes.is_empty(), "{causes:?}");
    let mut moved = old.clone();
    moved["spec"]["nfs"]["path"] = json!("/other");
    assert_eq!(
        summaries(&update(volumes, moved, &old, None).1),
        [
            "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation"
        ]
    );
    let mut resized = old.clone();
    resized["spec"]["capacity"]["storage"] = json!("2Gi");
    assert!(update(volumes, resized, &old, None).1.is_empty());

    // A Pod's ephemeral volume: its claim template, and the claim's name.
    let pods = kind("", "pods");
    let pod = |name: &str, ephemeral: Value| {
        json!({"metadata": {"name": name, "namespace": "n"}, "spec": {
            "containers": [{"name": "c", "image": "i"}],
            "volumes": [{"name": "scratch", "ephemeral": ephemeral}]}})
    };
    assert_eq!(
        summaries(&create(pods, pod("p", json!({}))).1),
        ["spec.volumes[0].ephemeral.volumeClaimTemplate: Required value"]
    );
    assert_eq!(
        summaries(
            &create(
                pods,
                pod(
                    "p",
                    json!({"volumeClaimTemplate": {"metadata": {"name": "x", "labels": {"a": "b"}},
                    "spec": {"accessModes": ["ReadWriteOnce"]}}})
                )
            )
            .1
        ),
        [
            "spec.volumes[0].ephemeral.volumeClaimTemplate.metadata.name: Forbidden: cannot be set",
            "spec.volumes[0].ephemeral.volumeClaimTemplate.spec.resources[storage]: Required value",
        ]
    );
    let long = "p".repeat(250);
    let template = json!({"volumeClaimTemplate": {"spec": valid}});
    assert_eq!(
        summaries(&create(pods, pod(&long, template)).1),
        [format!(
            "spec.volumes[0].name: Invalid value: \"scratch\": PVC name \"{long}-scratch\": must be no more than 253 characters"
        )]
    );
}

/// PodDisruptionBudgets, ResourceQuotas, RuntimeClasses and IngressClasses,
/// which v1.32 validates beyond their metadata.
#[test]
fn budgets_quotas_and_classes_are_validated() {
    let budgets = kind("policy", "poddisruptionbudgets");
    let budget = |spec: Value| json!({"metadata": {"name": "b", "namespace": "n"}, "spec": spec});
    let causes = create(
        budgets,
        budget(json!({"minAvailable": "150%", "maxUnavailable": -1,
            "unhealthyPodEvictionPolicy": "Never"})),
    )
    .1;
    let errors = summaries(&causes);
    // The spec is printed with its pointers' addresses.
    assert!(
        errors[0].starts_with("spec: Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)(0xc000")
            && errors[0].contains(", Selector:(*v1.LabelSelector)(nil), MaxUnavailable:(*intstr.IntOrString)(0xc000")
            && errors[0].ends_with(": minAvailable and maxUnavailable cannot be both set"),
        "{errors:?}"
    );
    assert_eq!(
        errors[1..],
        [
            "spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}: must not be greater than 100%",
            "spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0",
            "spec.unhealthyPodEvictionPolicy: Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\"",
        ]
    );

    let quotas = kind("", "resourcequotas");
    let quota = |spec: Value| json!({"metadata": {"name": "q", "namespace": "n"}, "spec": spec});
    assert_eq!(
        summaries(
            &create(
                quotas,
                quota(
                    json!({"hard": {"pods": "1500m", "gpus": "1", "storage": "1Gi",
                    "count/deployments.apps": "2", "requests.example.com/gpu": "1"}})
                )
            )
            .1
        ),
        [
            "spec.hard[gpus]: Invalid value: \"gpus\": must be a standard resource type or fully qualified",
            "spec.hard[pods]: Invalid value: \"1500m\": must be an integer",
            "spec.hard[storage]: Invalid value: \"storage\": must be a standard resource for quota",
        ]
    );
    assert_eq!(
        summaries(
            &create(
                quotas,
                quota(json!({"hard": {"pods": "10", "cpu": "1"},
                    "scopes": ["BestEffort", "NotBestEffort"]}))
            )
            .1
        ),
        [
            "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\"}: unsupported scope applied to resource",
            "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\"}: conflicting scopes",
        ]
    );
    assert_eq!(
        summaries(
            &create(
                quotas,
                quota(
                    json!({"hard": {"pods": "10"}, "scopeSelector": {"matchExpressions": [
                        {"scopeName": "PriorityClass", "operator": "In"},
                        {"scopeName": "Terminating", "operator": "In", "values": ["x"]},
                    ]}})
                )
            )
            .1
        ),
        [
            "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
        ]
    );

    let runtime_classes = kind("node.k8s.io", "runtimeclasses");
    let (old, causes) = create(
        runtime_classes,
        json!({"metadata": {"name": "gvisor"}, "handler": "runsc",
            "overhead": {"podFixed": {"cpu": "100m", "nvidia.com/gpu": "1"}}}),
    );
    assert!(causes.is_empty(), "{causes:?}");
    assert_eq!(
        summaries(
            &create(
                runtime_classes,
                json!({"metadata": {"name": "r"}, "handler": "Run_SC"})
            )
            .1
        ),
        [
            "handler: Invalid value: \"Run_SC\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        ]
    );
    let mut changed = old.clone();
    changed["handler"] = json!("runc");
    assert_eq!(
        summaries(&update(runtime_classes, changed, &old, None).1),
        ["handler: Invalid value: \"runc\": field is immutable"]
    );

    let ingress_classes = kind("networking.k8s.io", "ingressclasses");
    let class = |spec: Value| json!({"metadata": {"name": "c"}, "spec": spec});
    assert_eq!(
        summaries(&create(ingress_classes, class(json!({}))).1),
        ["spec.controller: Required value"]
    );
    assert_eq!(
        summaries(
            &create(
                ingress_classes,
                class(
                    json!({"controller": "nginx", "parameters": {"kind": "Params", "name": "p",
                    "scope": "Namespace"}})
                )
            )
            .1
        ),
        [
            "spec.controller: Invalid value: \"nginx\": must be a domain-prefixed path (such as \"acme.io/foo\")",
            "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'",
        ]
    );
    let (old, causes) = create(
        ingress_classes,
        class(
            json!({"controller": "example.com/ingress", "parameters": {"kind": "Params", "name": "p"}}),
        ),
    );
    assert!(causes.is_empty(), "{causes:?}");
    assert_eq!(old["spec"]["parameters"]["scope"], "Cluster");
    let mut changed = old.clone();
    changed["spec"]["controller"] = json!("example.com/other");
    assert_eq!(
        summaries(&update(ingress_classes, changed, &old, None).1),
        ["spec.controller: Invalid value: \"example.com/other\": field is immutable"]
    );
}

/// The update strategies of kube-apiserver v1.32 (`AllowCreateOnUpdate`,
/// `AllowUnconditionalUpdate` of each registry's strategy) and the
/// registries that return the deleted object, as the rows say.
#[test]
fn write_strategies_are_those_of_v1_32() {
    use std::collections::BTreeSet;
    let rows = |pick: fn(&KindInfo) -> bool| -> BTreeSet<(&str, &str)> {
        kinds()
            .iter()
            .filter(|k| pick(k))
            .map(|k| (k.group, k.plural))
            .collect()
    };
    let creating = rows(|k| k.create_on_update);
    let expected: BTreeSet<(&str, &str)> = [
        ("", "endpoints"),
        ("", "events"),
        ("", "limitranges"),
        ("", "services"),
        ("coordination.k8s.io", "leases"),
        ("events.k8s.io", "events"),
        ("node.k8s.io", "runtimeclasses"),
        ("rbac.authorization.k8s.io", "clusterrolebindings"),
        ("rbac.authorization.k8s.io", "clusterroles"),
        ("rbac.authorization.k8s.io", "rolebindings"),
        ("rbac.authorization.k8s.io", "roles"),
    ]
    .into();
    assert_eq!(creating, expected);
    let conditional = rows(|k| !k.unconditional_update);
    let expected: BTreeSet<(&str, &str)> = [
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("apiregistration.k8s.io", "apiservices"),
        ("storage.k8s.io", "csidrivers"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "csistoragecapacities"),
        ("storage.k8s.io", "volumeattachments"),
    ]
    .into();
    assert_eq!(conditional, expected);
    // The registries created with `ReturnDeletedObject: true`.
    let returning = rows(|k| k.returns_deleted_object);
    let expected: BTreeSet<(&str, &str)> = [
        ("", "pods"),
        ("", "serviceaccounts"),
        ("", "services"),
        ("storage.k8s.io", "storageclasses"),
    ]
    .into();
    assert_eq!(returning, expected);
}
