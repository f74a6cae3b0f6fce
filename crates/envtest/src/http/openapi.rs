//! The OpenAPI surface. `/openapi/v3` lists a document per group-version;
//! each document carries the schemas of its kinds (built-in kinds from
//! k8s-openapi's, custom resources from their CRD's `openAPIV3Schema`),
//! tagged with `x-kubernetes-group-version-kind` as kube-apiserver tags
//! them, so `kubectl explain` can show them, and every kind's GET and PATCH
//! operations (kubectl reads the PATCH parameters to learn whether the
//! server supports `fieldValidation`, i.e. server-side validation).
//!
//! `/openapi/v2` is a schema-less Swagger 2.0 document. kubectl downloads it
//! (as protobuf) to validate a kind the v3 documents do not list, such as a
//! cert-manager `Certificate` whose CRD is not installed; with no definition
//! for the kind it skips client-side validation and reports the missing
//! kind ("no matches for kind ... ensure CRDs are installed first"), as it
//! does against kube-apiserver.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::registry::Registry;

/// The version `/openapi/v2` and `/openapi/v3` documents name.
const SPEC_VERSION: &str = crate::version::KUBE_GIT_VERSION;

/// The content type of `/openapi/v2` in protobuf (the media type kubectl
/// asks for, `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`,
/// is no valid Content-Type, so kube-apiserver answers with this one).
pub(crate) const V2_PROTOBUF: &str = "application/octet-stream";

/// `GET /openapi/v2` as JSON.
pub(crate) fn v2() -> Value {
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": SPEC_VERSION},
        "paths": {},
        "definitions": {},
    })
}

/// `GET /openapi/v2` as protobuf: gnostic's `openapi.v2.Document` with
/// `swagger` (field 1) and `info` (field 2: `title` 1, `version` 2). Two
/// length-delimited strings do not justify a protobuf code generator.
pub(crate) fn v2_protobuf() -> Vec<u8> {
    fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
        // Wire type 2 (length-delimited); every length here fits one byte.
        let len = u8::try_from(bytes.len()).expect("short protobuf field");
        let mut out = vec![(number << 3) | 2, len];
        out.extend_from_slice(bytes);
        out
    }
    let info = [field(1, b"Kubernetes"), field(2, SPEC_VERSION.as_bytes())].concat();
    [field(1, b"2.0"), field(2, &info)].concat()
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `GET /openapi/v3`.
pub(crate) fn root(reg: &Registry) -> Value {
    let mut paths = Map::new();
    for (group, versions) in reg.groups() {
        for v in versions {
            let p = gv_path(group, v);
            paths.insert(
                p.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash=envtest")}),
            );
        }
    }
    json!({"paths": paths})
}

fn param(name: &str, type_: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": type_, "uniqueItems": true}})
}

/// Where a document's schemas live, as `$ref`s name them.
const SCHEMAS: &str = "#/components/schemas/";

/// kube-apiserver's descriptions of the fields it adds to a CRD's schema.
const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DOC: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The schema name kube-apiserver gives a custom resource's kind: the
/// group reversed, the version, the kind (`com.example.v1.Widget`).
fn custom_schema_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// A CRD version's `openAPIV3Schema` as kube-apiserver publishes it:
/// `apiVersion`, `kind` and `metadata` (a reference to ObjectMeta) added.
fn custom_schema(raw: Option<&Value>, object_meta_ref: &str) -> Value {
    let mut schema = match raw {
        Some(Value::Object(map)) => Value::Object(map.clone()),
        _ => json!({"type": "object"}),
    };
    let Some(map) = schema.as_object_mut() else {
        return schema;
    };
    map.entry("type").or_insert_with(|| json!("object"));
    let props = map.entry("properties").or_insert_with(|| json!({}));
    if let Some(props) = props.as_object_mut() {
        props.insert(
            "apiVersion".into(),
            json!({"type": "string", "description": API_VERSION_DOC}),
        );
        props.insert(
            "kind".into(),
            json!({"type": "string", "description": KIND_DOC}),
        );
        props.insert(
            "metadata".into(),
            json!({"allOf": [{"$ref": object_meta_ref}], "description": METADATA_DOC}),
        );
    }
    schema
}

/// The name a `$ref` made by the generator points at.
fn ref_name(schema: &schemars::Schema) -> Option<String> {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(SCHEMAS))
        .map(str::to_string)
}

/// `GET /openapi/v3/<api/v1 | apis/group/version>`; `None` for unknown
/// paths. `crd` finds a CRD object by name (for its schemas).
pub(crate) fn group_version(
    reg: &Registry,
    path: &str,
    crd: impl Fn(&str) -> Option<Arc<Value>>,
) -> Option<Value> {
    let (group, version) = match path.split('/').collect::<Vec<_>>().as_slice() {
        ["api", v] => (String::new(), v.to_string()),
        ["apis", g, v] => (g.to_string(), v.to_string()),
        _ => return None,
    };
    if !reg.serves_group_version(&group, &version) {
        return None;
    }
    let mut generator = SchemaSettings::openapi3()
        .with(|s| s.meta_schema = None)
        .into_generator();
    let object_meta_ref = generator.subschema_for::<ObjectMeta>();
    let object_meta_ref = object_meta_ref.get("$ref").cloned().unwrap_or_else(|| {
        json!(format!(
            "{SCHEMAS}io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        ))
    });
    let object_meta_ref = object_meta_ref.as_str().unwrap_or_default().to_string();
    let mut paths = Map::new();
    let mut kinds: Vec<(String, Value)> = Vec::new();
    let mut custom = Map::new();
    for r in reg
        .resources()
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
        let schema_name = if let Some(info) = r.builtin() {
            ref_name(&info.schema(&mut generator))
        } else if let Some(c) = r.custom() {
            let stored = crd(&c.crd_name);
            let raw = stored.as_deref().and_then(|crd| {
                crd.pointer("/spec/versions")?
                    .as_array()?
                    .iter()
                    .find(|v| v.get("name").and_then(Value::as_str) == Some(version.as_str()))?
                    .pointer("/schema/openAPIV3Schema")
            });
            let name = custom_schema_name(&r.group, &r.version, &r.kind);
            custom.insert(name.clone(), custom_schema(raw, &object_meta_ref));
            Some(name)
        } else {
            None
        };
        if let Some(name) = schema_name {
            kinds.push((name, gvk.clone()));
        }
        let prefix = format!("/{}", gv_path(&group, &version));
        let collection = format!("{prefix}/{}", r.plural);
        let item = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("{collection}/{{name}}")
        };
        let get = |operation: String| {
            json!({
                "operationId": operation,
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind": gvk,
                "responses": {"200": {"description": "OK"}},
            })
        };
        // kubectl explain finds a resource's kind by its collection path
        // (the all-namespaces one for namespaced kinds).
        paths.insert(collection, json!({"get": get(format!("list{}", r.kind))}));
        if r.namespaced {
            paths.insert(
                format!("{prefix}/namespaces/{{namespace}}/{}", r.plural),
                json!({"get": get(format!("listNamespaced{}", r.kind))}),
            );
        }
        paths.insert(
            item,
            json!({
                "get": get(format!("read{}", r.kind)),
                "patch": {
                    "operationId": format!("patch{}", r.kind),
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": gvk,
                    "parameters": [
                        param("dryRun", "string"),
                        param("fieldManager", "string"),
                        param("fieldValidation", "string"),
                        param("force", "boolean"),
                    ],
                    "responses": {"200": {"description": "OK"}},
                }
            }),
        );
    }
    let mut schemas = generator.take_definitions(true);
    schemas.extend(custom);
    for (name, gvk) in kinds {
        if let Some(Value::Object(schema)) = schemas.get_mut(&name) {
            let tags = schema
                .entry("x-kubernetes-group-version-kind")
                .or_insert_with(|| json!([]));
            if let Some(tags) = tags.as_array_mut()
                && !tags.contains(&gvk)
            {
                tags.push(gvk);
            }
        }
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": SPEC_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}
