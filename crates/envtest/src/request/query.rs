//! Query strings: percent-decoding and the typed options of each verb, with
//! the `422 ... Options.meta.k8s.io "" is invalid` errors kube-apiserver gives.

use serde_json::json;

use crate::error::{ApiError, ApiResult, Cause};
use crate::gofmt;

/// Decoded `key=value` pairs in request order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Query {
    pairs: Vec<(String, String)>,
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Query {
    pub(crate) fn parse(raw: Option<&str>) -> Query {
        let pairs = raw
            .unwrap_or("")
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| match p.split_once('=') {
                Some((k, v)) => (percent_decode(k), percent_decode(v)),
                None => (percent_decode(p), String::new()),
            })
            .collect();
        Query { pairs }
    }

    /// The first value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn all(&self, key: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    #[cfg(test)]
    pub(crate) fn has(&self, key: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == key)
    }

    /// A boolean parameter as kube-apiserver's parameter codec reads it
    /// (`Convert_Slice_string_To_bool`): its first value is false when it is
    /// `0` or `false` in any case, and true otherwise (`watch=maybe`,
    /// `watch=`); `None` when absent.
    pub(crate) fn flag(&self, key: &str) -> Option<bool> {
        self.get(key)
            .map(|v| !(v == "0" || v.eq_ignore_ascii_case("false")))
    }

    /// An int64 parameter (`Convert_Slice_string_To_Pointer_int64`): its
    /// first value through Go's `strconv.ParseInt`, a malformed one being the
    /// 400 kube-apiserver answers with the parser's own text.
    pub(crate) fn int64(&self, key: &str) -> ApiResult<Option<i64>> {
        self.get(key)
            .map(|v| parse_go_int(v).map_err(ApiError::bad_request))
            .transpose()
    }
}

/// Go's `strconv.ParseInt(s, 10, 64)` and its error texts.
pub(crate) fn parse_go_int(s: &str) -> Result<i64, String> {
    let fail = |why: &str| format!("strconv.ParseInt: parsing {}: {why}", gofmt::quote(s));
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(fail("invalid syntax"));
    }
    s.parse::<i64>().map_err(|_| fail("value out of range"))
}

/// `fieldValidation` directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

/// Options shared by create, update and patch.
#[derive(Debug, Clone)]
pub(crate) struct WriteOptions {
    pub dry_run: bool,
    pub field_manager: Option<String>,
    pub field_validation: FieldValidation,
    pub force: bool,
}

pub(crate) fn invalid_options(kind: &str, causes: Vec<Cause>) -> ApiError {
    let mut err = ApiError::invalid("meta.k8s.io", kind, "", causes);
    if let Some(details) = &mut err.details {
        details.name = String::new();
    }
    err
}

fn dry_run_causes(q: &Query) -> Vec<Cause> {
    let values = q.all("dryRun");
    if values.iter().all(|v| *v == "All") {
        return Vec::new();
    }
    let shown = values
        .iter()
        .map(|v| format!("{v:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    vec![Cause::new(
        "FieldValueNotSupported",
        "dryRun",
        format!("Unsupported value: []string{{{shown}}}: supported values: \"All\""),
    )]
}

/// Parses create/update/patch options; `kind` is `CreateOptions`,
/// `UpdateOptions` or `PatchOptions`.
pub(crate) fn write_options(q: &Query, kind: &str, is_apply: bool) -> ApiResult<WriteOptions> {
    let mut causes = dry_run_causes(q);
    let field_validation = match q.get("fieldValidation").unwrap_or("") {
        "" | "Warn" => FieldValidation::Warn,
        "Ignore" => FieldValidation::Ignore,
        "Strict" => FieldValidation::Strict,
        other => {
            causes.push(Cause::not_supported(
                "fieldValidation",
                &json!(other),
                &["", "Ignore", "Strict", "Warn"],
            ));
            FieldValidation::Warn
        }
    };
    let field_manager = q.get("fieldManager").filter(|m| !m.is_empty());
    if let Some(m) = field_manager {
        if m.len() > 128 {
            causes.push(Cause::new(
                "FieldValueTooLong",
                "fieldManager",
                "Too long: may not be more than 128 bytes",
            ));
        } else if m.chars().any(|c| c.is_control()) {
            causes.push(Cause::invalid(
                "fieldManager",
                &json!(m),
                "must only contain printable characters",
            ));
        }
    }
    let force = q.flag("force");
    if kind == "PatchOptions" {
        if is_apply && field_manager.is_none() {
            causes.push(Cause::required(
                "fieldManager",
                "is required for apply patch",
            ));
        }
        if !is_apply && force.is_some() {
            causes.push(Cause::forbidden(
                "force",
                "may not be specified for non-apply patch",
            ));
        }
    }
    if !causes.is_empty() {
        return Err(invalid_options(kind, causes));
    }
    Ok(WriteOptions {
        dry_run: !q.all("dryRun").is_empty(),
        field_manager: field_manager.map(str::to_string),
        field_validation,
        force: force.unwrap_or(false),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Propagation {
    Foreground,
    Background,
    Orphan,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOptions {
    pub dry_run: bool,
    pub grace_period: Option<i64>,
    pub propagation: Option<Propagation>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
}

/// DeleteOptions from a JSON body (when one was sent) or the query.
pub(crate) fn delete_options(
    q: &Query,
    body: Option<&serde_json::Value>,
) -> ApiResult<DeleteOptions> {
    let mut causes = Vec::new();
    let (dry_run, grace, policy, orphan, pre_uid, pre_rv) = match body {
        Some(b) => {
            let dry: Vec<String> = b
                .get("dryRun")
                .and_then(|d| d.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            if dry.iter().any(|d| d != "All") {
                let shown = dry
                    .iter()
                    .map(|v| format!("{v:?}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                causes.push(Cause::new(
                    "FieldValueNotSupported",
                    "dryRun",
                    format!("Unsupported value: []string{{{shown}}}: supported values: \"All\""),
                ));
            }
            body_field_types(b)?;
            (
                !dry.is_empty(),
                b.get("gracePeriodSeconds").and_then(|g| g.as_i64()),
                b.get("propagationPolicy")
                    .and_then(|p| p.as_str())
                    .map(str::to_string),
                b.get("orphanDependents").and_then(|o| o.as_bool()),
                b.pointer("/preconditions/uid")
                    .and_then(|u| u.as_str())
                    .map(str::to_string),
                b.pointer("/preconditions/resourceVersion")
                    .and_then(|u| u.as_str())
                    .map(str::to_string),
            )
        }
        None => {
            let grace = q.int64("gracePeriodSeconds")?;
            causes.extend(dry_run_causes(q));
            (
                !q.all("dryRun").is_empty(),
                grace,
                q.get("propagationPolicy").map(str::to_string),
                q.flag("orphanDependents"),
                None,
                None,
            )
        }
    };
    let propagation = match policy.as_deref() {
        None | Some("") => None,
        Some("Foreground") => Some(Propagation::Foreground),
        Some("Background") => Some(Propagation::Background),
        Some("Orphan") => Some(Propagation::Orphan),
        Some(other) => {
            causes.push(Cause::not_supported(
                "propagationPolicy",
                &json!(other),
                &["Foreground", "Background", "Orphan", "nil"],
            ));
            None
        }
    };
    if orphan.is_some() && propagation.is_some() {
        causes.push(Cause::invalid(
            "propagationPolicy",
            &json!(policy.unwrap_or_default()),
            "orphanDependents and deletionPropagation cannot be both set",
        ));
    }
    if !causes.is_empty() {
        return Err(invalid_options("DeleteOptions", causes));
    }
    let propagation = propagation.or(match orphan {
        Some(true) => Some(Propagation::Orphan),
        Some(false) => Some(Propagation::Background),
        None => None,
    });
    Ok(DeleteOptions {
        dry_run,
        grace_period: grace,
        propagation,
        precondition_uid: pre_uid,
        precondition_rv: pre_rv,
    })
}

/// A DeleteOptions body whose fields have the wrong JSON type fails to
/// decode, and nothing is deleted; kube-apiserver's delete handler passes the
/// decoder's error on unwrapped, which makes it a 500 carrying Go's text.
fn body_field_types(body: &serde_json::Value) -> ApiResult<()> {
    type Fits = fn(&serde_json::Value) -> bool;
    let fields: [(&str, &str, Fits); 3] = [
        ("gracePeriodSeconds", "int64", |v| v.is_i64()),
        ("orphanDependents", "bool", serde_json::Value::is_boolean),
        (
            "propagationPolicy",
            "v1.DeletionPropagation",
            serde_json::Value::is_string,
        ),
    ];
    for (field, go_type, fits) in fields {
        match body.get(field) {
            None | Some(serde_json::Value::Null) => {}
            Some(v) if fits(v) => {}
            Some(v) => {
                let found = match v {
                    serde_json::Value::Number(n) => format!("number {n}"),
                    other => gofmt::json_kind(other).to_string(),
                };
                return Err(ApiError::new(
                    500,
                    "",
                    format!(
                        "json: cannot unmarshal {found} into Go struct field DeleteOptions.{field} of type {go_type}"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// List and watch options.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListOptions {
    pub label_selector: String,
    pub field_selector: String,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub watch: bool,
    pub allow_bookmarks: bool,
    /// How long a watch may last; 0 or less ends it at once.
    pub timeout_seconds: Option<i64>,
    pub send_initial_events: Option<bool>,
}

/// Parses and validates ListOptions as current kube-apiserver does (streaming
/// lists — `sendInitialEvents` with `resourceVersionMatch=NotOlderThan` — are
/// supported).
pub(crate) fn list_options(q: &Query, watch_path: bool) -> ApiResult<ListOptions> {
    // The parameter codec converts timeoutSeconds before limit and stops at
    // the first malformed number: 400, whatever else the query holds.
    let timeout_seconds = q.int64("timeoutSeconds")?;
    let limit = q.int64("limit")?;
    let o = ListOptions {
        label_selector: q.get("labelSelector").unwrap_or("").to_string(),
        field_selector: q.get("fieldSelector").unwrap_or("").to_string(),
        limit: limit
            .filter(|l| *l > 0)
            .map(|l| usize::try_from(l).unwrap_or(usize::MAX)),
        continue_token: q
            .get("continue")
            .filter(|c| !c.is_empty())
            .map(str::to_string),
        resource_version: q.get("resourceVersion").map(str::to_string),
        resource_version_match: q
            .get("resourceVersionMatch")
            .filter(|m| !m.is_empty())
            .map(str::to_string),
        watch: watch_path || q.flag("watch").unwrap_or(false),
        allow_bookmarks: q.flag("allowWatchBookmarks").unwrap_or(false),
        timeout_seconds,
        send_initial_events: q.flag("sendInitialEvents"),
    };
    let mut causes = Vec::new();
    let rv_given = o.resource_version.as_deref().is_some_and(|r| !r.is_empty());
    let forbid = |msg: &str| Cause::forbidden("resourceVersionMatch", msg);
    if o.watch {
        if o.send_initial_events.is_some()
            && o.resource_version_match.as_deref() != Some("NotOlderThan")
        {
            causes.push(forbid(
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if let Some(m) = &o.resource_version_match {
            if o.send_initial_events.is_none() {
                causes.push(forbid("resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"));
            }
            if m != "NotOlderThan" {
                causes.push(Cause::not_supported(
                    "resourceVersionMatch",
                    &json!(m),
                    &["NotOlderThan"],
                ));
            }
            if o.continue_token.is_some() {
                causes.push(forbid(
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
    } else {
        if let Some(m) = &o.resource_version_match {
            if !rv_given {
                causes.push(forbid(
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if o.continue_token.is_some() {
                causes.push(forbid(
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if m != "Exact" && m != "NotOlderThan" {
                causes.push(Cause::not_supported(
                    "resourceVersionMatch",
                    &json!(m),
                    &["Exact", "NotOlderThan", ""],
                ));
            }
            if m == "Exact" && o.resource_version.as_deref() == Some("0") {
                causes.push(forbid(
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if o.send_initial_events.is_some() {
            causes.push(Cause::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is only supported on watch requests",
            ));
        }
    }
    if !causes.is_empty() {
        return Err(invalid_options("ListOptions", causes));
    }
    Ok(o)
}

/// A resourceVersion parameter: empty is "latest", otherwise an unsigned
/// number (anything else is the real server's 500).
pub(crate) fn parse_resource_version(rv: &str) -> ApiResult<u64> {
    rv.parse::<u64>().map_err(|_| {
        ApiError::new(
            500,
            "",
            format!("resourceVersion: Invalid value: {rv:?}: strconv.ParseUint: parsing {rv:?}: invalid syntax"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_percent_and_plus() {
        let q = Query::parse(Some("labelSelector=app%20in%20(a%2Cb)&x=a+b&flag"));
        assert_eq!(q.get("labelSelector"), Some("app in (a,b)"));
        assert_eq!(q.get("x"), Some("a b"));
        assert!(q.has("flag"));
        let odd = Query::parse(Some("a=%zz&b=%4"));
        assert_eq!((odd.get("a"), odd.get("b")), (Some("%zz"), Some("%4")));
    }

    #[test]
    fn invalid_field_validation_is_create_options_422() {
        let q = Query::parse(Some("fieldValidation=Bogus"));
        let err = write_options(&q, "CreateOptions", false).unwrap_err();
        assert_eq!(
            err.message,
            "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Bogus\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
        );
        let q = Query::parse(Some("dryRun=Yes"));
        let err = write_options(&q, "CreateOptions", false).unwrap_err();
        assert!(
            err.message.ends_with(
                "dryRun: Unsupported value: []string{\"Yes\"}: supported values: \"All\""
            )
        );
    }

    #[test]
    fn apply_requires_field_manager_and_force_only_for_apply() {
        let err = write_options(&Query::default(), "PatchOptions", true).unwrap_err();
        assert!(
            err.message
                .contains("fieldManager: Required value: is required for apply patch")
        );
        let q = Query::parse(Some("fieldManager=m&force=true"));
        let err = write_options(&q, "PatchOptions", false).unwrap_err();
        assert!(
            err.message
                .contains("force: Forbidden: may not be specified for non-apply patch")
        );
    }

    #[test]
    fn watch_list_options_follow_current_rules() {
        let q = Query::parse(Some(
            "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=",
        ));
        assert!(list_options(&q, false).is_ok());
        let q = Query::parse(Some("watch=true&sendInitialEvents=true"));
        assert_eq!(list_options(&q, false).unwrap_err().code, 422);
        let q = Query::parse(Some("resourceVersionMatch=Exact"));
        assert!(
            list_options(&q, false)
                .unwrap_err()
                .message
                .contains("unless resourceVersion is provided")
        );
    }

    #[test]
    fn delete_options_reject_unknown_policy() {
        let q = Query::parse(Some("propagationPolicy=Sideways"));
        let err = delete_options(&q, None).unwrap_err();
        assert!(
            err.message
                .contains("supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"")
        );
        let body = json!({"propagationPolicy": "Foreground", "preconditions": {"uid": "u"}});
        let o = delete_options(&Query::default(), Some(&body)).unwrap();
        assert_eq!(
            (o.propagation, o.precondition_uid.as_deref()),
            (Some(Propagation::Foreground), Some("u"))
        );
    }
}
