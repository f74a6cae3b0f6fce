//! CRD validation cases beyond the recorded ones, with the messages the
//! apiextensions validator produces for them.

use serde_json::{Value, json};

use super::validate_crd;

fn crd(versions: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "kind": "Gadget"},
                 "versions": versions}})
}

fn one_version(schema: Value) -> Value {
    crd(json!([{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema}}]))
}

fn summaries(crd: &Value, old: Option<&Value>) -> Vec<String> {
    validate_crd(crd, old).iter().map(|c| c.summary()).collect()
}

#[test]
fn root_metadata_may_only_restrict_name() {
    let c = one_version(json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}));
    assert_eq!(
        summaries(&c, None),
        vec![
            "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
        ]
    );
    let ok = one_version(json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}}}));
    assert!(summaries(&ok, None).is_empty());
}

#[test]
fn list_and_map_type_rules() {
    let c = one_version(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                  "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "ids": {"type": "array", "x-kubernetes-list-type": "set",
                "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "keyed": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "sel": {"type": "string", "x-kubernetes-map-type": "atomic"}}}}}),
    );
    assert_eq!(
        summaries(&c, None),
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].properties[ids].items.x-kubernetes-map-type: Invalid value: \"null\": must be atomic as item of a list with x-kubernetes-list-type=set",
            "spec.validation.openAPIV3Schema.properties[spec].properties[keyed].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            "spec.validation.openAPIV3Schema.properties[spec].properties[ports].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
            "spec.validation.openAPIV3Schema.properties[spec].properties[sel].type: Invalid value: \"string\": must be object if x-kubernetes-map-type is specified",
        ]
    );
}

#[test]
fn defaults_are_forbidden_in_top_level_metadata_and_must_validate() {
    let c = one_version(json!({"type": "object", "properties": {
        "metadata": {"type": "object", "default": {"name": "x"}},
        "spec": {"type": "object", "properties": {"size": {"type": "integer", "default": "big"}}}}}));
    assert_eq!(
        summaries(&c, None),
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].properties[size].default: Invalid value: \"string\":  in body must be of type integer: \"string\"",
            "spec.validation.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level metadata",
        ]
    );
}

#[test]
fn per_version_schemas_printer_columns_and_subresources() {
    let c = crd(json!([
        {"name": "v1", "served": true, "storage": false,
         "schema": {"openAPIV3Schema": {"type": "object"}},
         "additionalPrinterColumns": [{"name": "Age", "type": "int", "jsonPath": "spec.age"}]},
        {"name": "v2", "served": true, "storage": true,
         "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"properties": {}}}}},
         "subresources": {"scale": {"specReplicasPath": ".status.replicas", "statusReplicasPath": ""}}}
    ]));
    assert_eq!(
        summaries(&c, None),
        vec![
            "spec.versions[0].additionalPrinterColumns[0].type: Invalid value: \"int\": must be one of boolean,date,integer,number,string",
            "spec.versions[0].additionalPrinterColumns[0].JSONPath: Invalid value: \"spec.age\": must be a simple json path starting with .",
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
            "spec.versions[1].subresources.scale.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec",
            "spec.versions[1].subresources.scale.statusReplicasPath: Required value",
        ]
    );
}

#[test]
fn status_subresource_restricts_the_root_schema() {
    let c = crd(
        json!([{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object", "minProperties": 1, "anyOf": [{"required": ["spec"]}],
                                       "properties": {"spec": {"type": "object"}}}}}]),
    );
    let got = summaries(&c, None);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with("spec.validation.openAPIV3Schema: Invalid value: "),
        "{got:?}"
    );
    assert!(got[0].ends_with(
        "fields are allowed at the root of the schema if the status subresource is enabled"
    ));
}

#[test]
fn names_versions_and_conversion() {
    let mut c = one_version(json!({"type": "object"}));
    c["spec"]["names"] =
        json!({"plural": "gadgets", "kind": "Gadget", "listKind": "Gadget", "shortNames": ["G"]});
    c["spec"]["scope"] = json!("Global");
    c["spec"]["versions"][0]["name"] = json!("V1");
    c["spec"]["conversion"] = json!({"strategy": "Webhook"});
    assert_eq!(
        summaries(&c, None),
        vec![
            "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
            "spec.versions[0].name: Invalid value: \"V1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            "spec.version: Invalid value: \"V1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            "spec.names.shortNames[0]: Invalid value: \"G\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            "spec.names.listKind: Invalid value: \"Gadget\": kind and listKind may not be the same",
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
            "spec.conversion.conversionReviewVersions: Required value",
        ]
    );
}

#[test]
fn updates_keep_group_and_plural_and_stored_versions() {
    let mut old = one_version(json!({"type": "object"}));
    old["status"] = json!({"storedVersions": ["v1beta1", "v1"],
        "conditions": [{"type": "Established", "status": "True"}]});
    let mut new = old.clone();
    new["spec"]["group"] = json!("other.example.com");
    new["spec"]["scope"] = json!("Cluster");
    assert_eq!(
        summaries(&new, Some(&old)),
        vec![
            "status.storedVersions[0]: Invalid value: \"v1beta1\": missing from spec.versions; v1beta1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1beta1 and removes v1beta1 from status.storedVersions",
            "spec.scope: Invalid value: \"Cluster\": field is immutable",
            "spec.group: Invalid value: \"other.example.com\": field is immutable",
        ]
    );
}

#[test]
fn protected_groups_need_api_approval() {
    let mut c = one_version(json!({"type": "object"}));
    c["metadata"]["name"] = json!("gadgets.apps.k8s.io");
    c["spec"]["group"] = json!("apps.k8s.io");
    assert_eq!(
        summaries(&c, None),
        vec![
            "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111",
        ]
    );
}

#[test]
fn cel_rules_that_do_not_compile_reject_the_crd() {
    let rules = |r: Value| {
        one_version(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": r, "properties": {"a": {"type": "string"}}}}}),
        )
    };
    // CEL is compiled only once the schema itself is sound.
    assert_eq!(
        summaries(
            &rules(
                json!([{"rule": "self.a ==", "message": "m"}, {"rule": "true", "reason": "Bogus"}])
            ),
            None
        ),
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].reason: Unsupported value: \"Bogus\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
        ]
    );
    let got = summaries(&rules(json!([{"rule": "self.a ==", "message": "m"}])), None);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {\"rule\":\"self.a ==\",\"message\":\"m\"}: compilation failed: ERROR: <input>:1:"),
        "{got:?}"
    );
}

#[test]
fn every_version_needs_a_schema() {
    let c = crd(json!([
        {"name": "v1", "served": true, "storage": true,
         "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v2", "served": true, "storage": false},
        {"name": "v3", "served": false, "storage": false}
    ]));
    assert_eq!(
        summaries(&c, None),
        vec![
            "spec.versions[1].schema.openAPIV3Schema: Required value: schemas are required",
            "spec.versions[2].schema.openAPIV3Schema: Required value: schemas are required",
        ]
    );
    // A stored CRD that already lacked one is held only to what pruning
    // needs: served versions.
    let mut old = c.clone();
    old["metadata"]["resourceVersion"] = json!("7");
    let mut next = old.clone();
    next["spec"]["versions"][1]["deprecated"] = json!(true);
    assert_eq!(
        summaries(&next, Some(&old)),
        vec![
            "spec.versions[1].schema.openAPIV3Schema: Required value: because otherwise all fields are pruned"
        ]
    );
}

#[test]
fn the_root_schema_with_status_is_checked_in_field_order() {
    // `nullable` comes before `type` in the JSON, after it in Go's struct:
    // the type is reported.
    let c = crd(
        json!([{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"nullable": true, "type": "string"}}}]),
    );
    let got = summaries(&c, None);
    assert_eq!(
        got[0],
        "spec.validation.openAPIV3Schema.type: Invalid value: \"string\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
        "{got:?}"
    );
}
