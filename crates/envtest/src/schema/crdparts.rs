//! Parts of the CRD validator: subresources, printer columns, conversion,
//! stored versions, API approval and immutable fields.

use serde_json::{Map, Value};

use super::fielderr::{BadValue, FieldError, FieldPath};
use crate::gofmt;

const PRINTER_COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const PRINTER_COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";

/// The string at `key` of a JSON object, or "".
pub(crate) fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The boolean at `key` of a JSON object, or false.
pub(crate) fn b(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn simple_json_path(p: &str, path: &FieldPath) -> Vec<FieldError> {
    if p.is_empty() {
        vec![FieldError::invalid(
            path,
            BadValue::str(p),
            "must not be empty",
        )]
    } else if !p.starts_with('.') {
        vec![FieldError::invalid(
            path,
            BadValue::str(p),
            "must be a simple json path starting with .",
        )]
    } else {
        Vec::new()
    }
}

pub(crate) fn subresources(sub: &Value, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(scale) = sub.get("scale").filter(|v| v.is_object()) else {
        return errs;
    };
    for (key, prefix, want) in [
        (
            "specReplicasPath",
            ".spec.",
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            ".status.",
            "should be a json path under .status",
        ),
    ] {
        let fp = path.child(&format!("scale.{key}"));
        let p = s(scale, key);
        if p.is_empty() {
            errs.push(FieldError::required(&fp, ""));
        } else {
            let e = simple_json_path(p, &fp);
            if !e.is_empty() {
                errs.extend(e);
            } else if !p.starts_with(prefix) {
                errs.push(FieldError::invalid(&fp, BadValue::str(p), want));
            }
        }
    }
    let lp = s(scale, "labelSelectorPath");
    if !lp.is_empty() {
        let fp = path.child("scale.labelSelectorPath");
        let e = simple_json_path(lp, &fp);
        if !e.is_empty() {
            errs.extend(e);
        } else if !lp.starts_with(".spec.") && !lp.starts_with(".status.") {
            errs.push(FieldError::invalid(
                &fp,
                BadValue::str(lp),
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errs
}

pub(crate) fn column(c: &Value, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if s(c, "name").is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    let t = s(c, "type");
    let types_msg = format!("must be one of {PRINTER_COLUMN_TYPES}");
    if t.is_empty() {
        errs.push(FieldError::required(&path.child("type"), &types_msg));
    } else if !PRINTER_COLUMN_TYPES.split(',').any(|x| x == t) {
        errs.push(FieldError::invalid(
            &path.child("type"),
            BadValue::str(t),
            &types_msg,
        ));
    }
    let f = s(c, "format");
    if !f.is_empty() && !PRINTER_COLUMN_FORMATS.split(',').any(|x| x == f) {
        errs.push(FieldError::invalid(
            &path.child("format"),
            BadValue::str(f),
            &format!("must be one of {PRINTER_COLUMN_FORMATS}"),
        ));
    }
    let jp = s(c, "jsonPath");
    if jp.is_empty() {
        errs.push(FieldError::required(&path.child("JSONPath"), ""));
    } else {
        errs.extend(simple_json_path(jp, &path.child("JSONPath")));
    }
    errs
}

pub(crate) fn conversion(spec: &Value, sp: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(conv) = spec.get("conversion").filter(|v| v.is_object()) else {
        return errs;
    };
    let cp = sp.child("conversion");
    let strategy = s(conv, "strategy");
    if strategy != "None" && !strategy.is_empty() && b(spec, "preserveUnknownFields") {
        errs.push(FieldError::invalid(
            &cp.child("strategy"),
            BadValue::str(strategy),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    if strategy.is_empty() {
        errs.push(FieldError::required(&cp.child("strategy"), ""));
    } else if strategy != "None" && strategy != "Webhook" {
        errs.push(FieldError::not_supported(
            &cp.child("strategy"),
            BadValue::str(strategy),
            &["None".into(), "Webhook".into()],
        ));
    }
    let webhook = conv.get("webhook").filter(|v| !v.is_null());
    let client_config = webhook
        .and_then(|w| w.get("clientConfig"))
        .filter(|v| !v.is_null());
    let review_versions: Vec<String> = webhook
        .and_then(|w| w.get("conversionReviewVersions"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|x| x.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    if strategy == "Webhook" {
        match client_config {
            None => errs.push(FieldError::required(
                &cp.child("webhookClientConfig"),
                "required when strategy is set to Webhook",
            )),
            Some(cc) => {
                let has_url = cc.get("url").is_some_and(|v| !v.is_null());
                let has_service = cc.get("service").is_some_and(|v| !v.is_null());
                if has_url == has_service {
                    errs.push(FieldError::required(
                        &cp.child("webhookClientConfig"),
                        "exactly one of url or service is required",
                    ));
                }
            }
        }
        let rp = cp.child("conversionReviewVersions");
        if review_versions.is_empty() {
            errs.push(FieldError::required(&rp, ""));
        } else if !review_versions.iter().any(|v| v == "v1" || v == "v1beta1") {
            errs.push(FieldError::invalid(
                &rp,
                BadValue::Raw(gofmt::string_slice(&review_versions)),
                "must include at least one of v1, v1beta1",
            ));
        }
    } else {
        if client_config.is_some() {
            errs.push(FieldError::forbidden(
                &cp.child("webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review_versions.is_empty() {
            errs.push(FieldError::forbidden(
                &cp.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    errs
}

/// `status.storedVersions` as the strategy sets it before validation: the
/// old list (on update) plus the current storage version.
pub(crate) fn stored_versions(
    crd: &Value,
    old: Option<&Value>,
    versions: &[Value],
) -> Vec<FieldError> {
    let mut stored: Vec<String> = match old {
        Some(o) => o
            .get("status")
            .and_then(|st| st.get("storedVersions"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let _ = crd;
    if let Some(storage) = versions.iter().find(|v| b(v, "storage")) {
        let name = s(storage, "name").to_string();
        if !stored.contains(&name) {
            stored.push(name);
        }
    }
    let path = FieldPath::new("status").child("storedVersions");
    if stored.is_empty() {
        return vec![FieldError::invalid(
            &path,
            BadValue::Raw(gofmt::string_slice(&stored)),
            "must have at least one stored version",
        )];
    }
    let mut errs = Vec::new();
    let mut remaining: Vec<(usize, &String)> = stored.iter().enumerate().collect();
    for v in versions {
        let name = s(v, "name");
        let found = remaining.iter().position(|(_, x)| x.as_str() == name);
        if b(v, "storage") && found.is_none() {
            errs.push(FieldError::invalid(
                &path,
                BadValue::Raw(gofmt::string_slice(&stored)),
                &format!("must have the storage version {name}"),
            ));
        }
        if let Some(i) = found {
            remaining.remove(i);
        }
    }
    for (i, v) in remaining {
        errs.push(FieldError::invalid(
            &path.index(i),
            BadValue::str(v),
            &format!("missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"),
        ));
    }
    errs
}

const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// Groups under k8s.io and kubernetes.io need the API approval annotation.
pub(crate) fn api_approval(crd: &Value, group: &str, old: Option<&Value>) -> Vec<FieldError> {
    let protected = |g: &str| {
        g == "k8s.io"
            || g == "kubernetes.io"
            || g.ends_with(".k8s.io")
            || g.ends_with(".kubernetes.io")
    };
    if !protected(group) {
        return Vec::new();
    }
    let annotation = |o: &Value| {
        o.get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(APPROVAL_ANNOTATION))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let new = annotation(crd);
    if let Some(o) = old
        && annotation(o) == new
    {
        return Vec::new();
    }
    let path = FieldPath::new("metadata")
        .child("annotations")
        .key(APPROVAL_ANNOTATION);
    match new {
        None => vec![FieldError::required(
            &path,
            &format!(
                "protected groups must have approval annotation {}, see https://github.com/kubernetes/enhancements/pull/1111",
                gofmt::quote(APPROVAL_ANNOTATION)
            ),
        )],
        Some(v)
            if v.starts_with("unapproved")
                || v.starts_with("https://")
                || v.starts_with("http://") =>
        {
            Vec::new()
        }
        Some(v) => vec![FieldError::invalid(
            &path,
            BadValue::str(&v),
            &format!(
                "protected groups must have approval annotation {}, with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111",
                gofmt::quote(APPROVAL_ANNOTATION)
            ),
        )],
    }
}

pub(crate) fn immutable_fields(spec: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = Value::Object(Map::new());
    let old_spec = old.get("spec").unwrap_or(&empty);
    let names_of = |x: &Value| x.get("names").cloned().unwrap_or(Value::Null);
    let established = old
        .get("status")
        .and_then(|st| st.get("conditions"))
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| s(c, "type") == "Established" && s(c, "status") == "True")
        });
    let sp = FieldPath::new("spec");
    let mut check = |new: &str, old: &str, path: FieldPath| {
        if new != old {
            errs.push(FieldError::invalid(
                &path,
                BadValue::str(new),
                "field is immutable",
            ));
        }
    };
    if established {
        check(s(spec, "scope"), s(old_spec, "scope"), sp.child("scope"));
        check(
            s(&names_of(spec), "kind"),
            s(&names_of(old_spec), "kind"),
            sp.child("names").child("kind"),
        );
    }
    check(s(spec, "group"), s(old_spec, "group"), sp.child("group"));
    check(
        s(&names_of(spec), "plural"),
        s(&names_of(old_spec), "plural"),
        sp.child("names").child("plural"),
    );
    errs
}
