//! A minimal OpenAPI v3 surface. kubectl reads `/openapi/v3` to learn whether
//! the server supports `fieldValidation` on PATCH of a kind (to choose
//! server-side validation) and refuses to apply when the download fails. The
//! documents list every served kind's PATCH operation with its query
//! parameters; they carry no schemas (kubectl then falls back to its built-in
//! types for strategic merge patches, and to JSON merge patches for custom
//! resources, exactly as with a server whose schema lacks a kind).
//!
//! `/openapi/v2` is a schema-less Swagger 2.0 document. kubectl downloads it
//! (as protobuf) to validate a kind the v3 documents do not list, such as a
//! cert-manager `Certificate` whose CRD is not installed; with no definition
//! for the kind it skips client-side validation and reports the missing
//! kind ("no matches for kind ... ensure CRDs are installed first"), as it
//! does against kube-apiserver.

use serde_json::{Map, Value, json};

use crate::registry::Registry;

/// The version `/openapi/v2` and `/openapi/v3` documents name.
const SPEC_VERSION: &str = crate::version::KUBE_GIT_VERSION;

/// The content type of `/openapi/v2` in protobuf (the media type kubectl
/// asks for, `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`,
/// is no valid Content-Type, so kube-apiserver answers with this one).
pub const V2_PROTOBUF: &str = "application/octet-stream";

/// `GET /openapi/v2` as JSON.
pub fn v2() -> Value {
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
pub fn v2_protobuf() -> Vec<u8> {
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
pub fn root(reg: &Registry) -> Value {
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

/// `GET /openapi/v3/<api/v1 | apis/group/version>`; `None` for unknown paths.
pub fn group_version(reg: &Registry, path: &str) -> Option<Value> {
    let (group, version) = match path.split('/').collect::<Vec<_>>().as_slice() {
        ["api", v] => (String::new(), v.to_string()),
        ["apis", g, v] => (g.to_string(), v.to_string()),
        _ => return None,
    };
    if !reg.serves_group_version(&group, &version) {
        return None;
    }
    let mut paths = Map::new();
    for r in reg
        .resources()
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let prefix = format!("/{}", gv_path(&group, &version));
        let item = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("{prefix}/{}/{{name}}", r.plural)
        };
        let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
        paths.insert(
            item,
            json!({
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
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": SPEC_VERSION},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}
