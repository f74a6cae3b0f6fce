//! apps/v1 and batch/v1 validation: selectors matching templates, strategies,
//! Job selector generation, CronJob schedules.

use serde_json::Value;

use super::go_syntax::{self, invalid_raw};
use super::pod;
use super::selector::{self, Selects, go_selector};
use crate::builtin::prepare::{JOB_NAME_LABELS, JOB_UID_LABELS};
use crate::error::Cause;

fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

pub(super) fn nonnegative(v: &Value, key: &str, field: &str, causes: &mut Vec<Cause>) {
    if let Some(n) = int(v, key)
        && n < 0
    {
        causes.push(Cause::invalid(
            field,
            &Value::from(n),
            "must be greater than or equal to 0",
        ));
    }
}

fn template_labels(spec: &Value) -> Option<&Value> {
    spec.pointer("/template/metadata/labels")
}

fn mismatch(spec: &Value) -> Cause {
    invalid_raw(
        "spec.template.metadata.labels",
        &go_syntax::string_map(template_labels(spec)),
        "`selector` does not match template `labels`",
    )
}

/// Selector present, valid, non-empty, and matching the template.
fn replica_selector(spec: &Value, kind: &str, causes: &mut Vec<Cause>) -> Selects {
    let sel = spec.get("selector").filter(|s| !s.is_null());
    match sel {
        None => causes.push(Cause::required("spec.selector", "")),
        Some(sel) => {
            causes.extend(selector::validate(Some(sel), "spec.selector"));
            let empty = sel
                .get("matchLabels")
                .and_then(Value::as_object)
                .is_none_or(|m| m.is_empty())
                && sel
                    .get("matchExpressions")
                    .and_then(Value::as_array)
                    .is_none_or(|e| e.is_empty());
            if empty {
                causes.push(invalid_raw(
                    "spec.selector",
                    &go_selector(Some(sel)),
                    &format!("empty selector is invalid for {kind}"),
                ));
            }
        }
    }
    selector::selects(sel, template_labels(spec))
}

fn template_for_replicas(spec: &Value, selects: Selects, causes: &mut Vec<Cause>, kind_name: &str) {
    match selects {
        Selects::Invalid => causes.push(invalid_raw(
            "spec.selector",
            &go_selector(spec.get("selector")),
            "invalid label selector",
        )),
        selects => {
            if matches!(selects, Selects::Nothing | Selects::Matches(false)) {
                causes.push(mismatch(spec));
            }
            causes.extend(pod::template(spec.get("template"), "spec.template"));
            let restart = spec
                .pointer("/template/spec/restartPolicy")
                .and_then(Value::as_str)
                .unwrap_or("");
            if restart != "Always" {
                causes.push(Cause::not_supported(
                    "spec.template.spec.restartPolicy",
                    &Value::String(restart.into()),
                    &["Always"],
                ));
            }
            if let Some(deadline) = spec
                .pointer("/template/spec/activeDeadlineSeconds")
                .and_then(Value::as_i64)
            {
                causes.push(Cause::invalid(
                    "spec.template.spec.activeDeadlineSeconds",
                    &Value::from(deadline),
                    &format!("activeDeadlineSeconds in {kind_name} is not Supported"),
                ));
            }
        }
    }
}

/// Go's `%#v` of an `intstr.IntOrString`, as field errors print one (its
/// `String` method has a pointer receiver, so the struct is printed).
pub(super) fn go_int_or_string(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => format!(
            "intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}",
            crate::gofmt::quote(text)
        ),
        other => format!(
            "intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}",
            other.and_then(Value::as_i64).unwrap_or(0)
        ),
    }
}

/// `getPercentValue`: the number of a valid percent string (`[0-9]+%`).
fn percent_value(value: Option<&Value>) -> Option<i64> {
    let text = value?.as_str()?.strip_suffix('%')?;
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `getIntOrPercentValue`: a percent's number, else `IntValue()` (a string
/// that is no percent goes through `strconv.Atoi`, 0 when it fails).
pub(super) fn int_or_percent_value(value: Option<&Value>) -> i64 {
    if let Some(percent) = percent_value(value) {
        return percent;
    }
    match value {
        Some(Value::String(text)) => text.parse().unwrap_or(0),
        Some(other) => other.as_i64().unwrap_or(0),
        None => 0,
    }
}

/// `ValidatePositiveIntOrPercent` (an absent value is the zero int).
pub(super) fn positive_int_or_percent(value: Option<&Value>, field: &str, causes: &mut Vec<Cause>) {
    match value {
        Some(Value::String(_)) if percent_value(value).is_none() => causes.push(invalid_raw(
            field,
            &go_int_or_string(value),
            "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
        )),
        Some(Value::Number(n)) if n.as_i64().unwrap_or(0) < 0 => causes.push(Cause::invalid(
            field,
            &Value::from(n.as_i64().unwrap_or(0)),
            "must be greater than or equal to 0",
        )),
        _ => {}
    }
}

/// `IsNotMoreThan100Percent`.
pub(super) fn not_more_than_100_percent(
    value: Option<&Value>,
    field: &str,
    causes: &mut Vec<Cause>,
) {
    if percent_value(value).is_some_and(|p| p > 100) {
        causes.push(invalid_raw(
            field,
            &go_int_or_string(value),
            "must not be greater than 100%",
        ));
    }
}

pub(crate) fn deployment(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    nonnegative(spec, "replicas", "spec.replicas", &mut causes);
    let selects = replica_selector(spec, "deployment", &mut causes);
    template_for_replicas(spec, selects, &mut causes, "ReplicaSet");
    let strategy = spec.get("strategy").unwrap_or(&empty);
    match strategy.get("type").and_then(Value::as_str).unwrap_or("") {
        "Recreate" => {
            if strategy.get("rollingUpdate").is_some_and(|r| !r.is_null()) {
                causes.push(Cause::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => match strategy.get("rollingUpdate").filter(|r| !r.is_null()) {
            None => causes.push(Cause::required(
                "spec.strategy.rollingUpdate",
                "this should be defaulted and never be nil",
            )),
            Some(rolling) => {
                // ValidateRollingUpdateDeployment: only maxUnavailable is
                // held to 100%, after the zero rule.
                let unavailable = rolling.get("maxUnavailable");
                let surge = rolling.get("maxSurge");
                let unavailable_field = "spec.strategy.rollingUpdate.maxUnavailable";
                positive_int_or_percent(unavailable, unavailable_field, &mut causes);
                positive_int_or_percent(surge, "spec.strategy.rollingUpdate.maxSurge", &mut causes);
                if int_or_percent_value(unavailable) == 0 && int_or_percent_value(surge) == 0 {
                    causes.push(invalid_raw(
                        unavailable_field,
                        &go_int_or_string(unavailable),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
                not_more_than_100_percent(unavailable, unavailable_field, &mut causes);
            }
        },
        other => causes.push(Cause::new(
            "FieldValueNotSupported",
            "spec.strategy",
            format!(
                "Unsupported value: apps.DeploymentStrategy{{Type:{other:?}, RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}}: supported values: \"Recreate\", \"RollingUpdate\""
            ),
        )),
    }
    nonnegative(spec, "minReadySeconds", "spec.minReadySeconds", &mut causes);
    nonnegative(
        spec,
        "revisionHistoryLimit",
        "spec.revisionHistoryLimit",
        &mut causes,
    );
    if let Some(deadline) = int(spec, "progressDeadlineSeconds") {
        nonnegative(
            spec,
            "progressDeadlineSeconds",
            "spec.progressDeadlineSeconds",
            &mut causes,
        );
        if deadline <= int(spec, "minReadySeconds").unwrap_or(0) {
            causes.push(Cause::invalid(
                "spec.progressDeadlineSeconds",
                &Value::from(deadline),
                "must be greater than minReadySeconds",
            ));
        }
    }
    causes
}

pub(crate) fn replica_set(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    nonnegative(spec, "replicas", "spec.replicas", &mut causes);
    nonnegative(spec, "minReadySeconds", "spec.minReadySeconds", &mut causes);
    let selects = replica_selector(spec, "deployment", &mut causes);
    template_for_replicas(spec, selects, &mut causes, "ReplicaSet");
    causes
}

pub(crate) fn stateful_set(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    match spec
        .get("podManagementPolicy")
        .and_then(Value::as_str)
        .unwrap_or("")
    {
        "" => causes.push(Cause::required("spec.podManagementPolicy", "")),
        "OrderedReady" | "Parallel" => {}
        other => causes.push(Cause::invalid(
            "spec.podManagementPolicy",
            &Value::String(other.into()),
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let strategy = spec.get("updateStrategy").unwrap_or(&empty);
    match strategy.get("type").and_then(Value::as_str).unwrap_or("") {
        "" => causes.push(Cause::required("spec.updateStrategy", "")),
        "OnDelete" => {
            if strategy.get("rollingUpdate").is_some_and(|r| !r.is_null()) {
                causes.push(invalid_raw(
                    "spec.updateStrategy.rollingUpdate",
                    "apps.RollingUpdateStatefulSetStrategy{...}",
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(rolling) = strategy.get("rollingUpdate") {
                nonnegative(rolling, "partition", "spec.updateStrategy.rollingUpdate.partition", &mut causes);
            }
        }
        other => causes.push(invalid_raw(
            "spec.updateStrategy",
            &format!("apps.StatefulSetUpdateStrategy{{Type:{other:?}, RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}}"),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    nonnegative(spec, "replicas", "spec.replicas", &mut causes);
    nonnegative(spec, "minReadySeconds", "spec.minReadySeconds", &mut causes);
    let selects = replica_selector(spec, "statefulset", &mut causes);
    match selects {
        Selects::Invalid => causes.push(invalid_raw(
            "spec.selector",
            &go_selector(spec.get("selector")),
            "",
        )),
        selects => {
            if matches!(selects, Selects::Nothing | Selects::Matches(false)) {
                causes.push(mismatch(spec));
            }
            let meta = spec.pointer("/template/metadata").unwrap_or(&empty);
            causes.extend(super::meta::labels(
                meta.get("labels"),
                "spec.template.labels",
            ));
            causes.extend(super::meta::annotations(
                meta.get("annotations"),
                "spec.template.annotations",
            ));
        }
    }
    causes.extend(pods_always_restart(spec, "StatefulSet"));
    causes
}

/// The template of a StatefulSet or ReplicationController: its Pods
/// restart always and have no deadline.
pub(super) fn pods_always_restart(spec: &Value, kind: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let restart = spec
        .pointer("/template/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    if restart != "Always" {
        causes.push(Cause::not_supported(
            "spec.template.spec.restartPolicy",
            &Value::String(restart.into()),
            &["Always"],
        ));
    }
    if spec
        .pointer("/template/spec/activeDeadlineSeconds")
        .is_some_and(|v| !v.is_null())
    {
        causes.push(Cause::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    causes
}

/// StatefulSet updates may only change some spec fields.
pub(crate) fn stateful_set_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = stateful_set(obj);
    let strip = |v: &Value| {
        let mut spec = v.get("spec").cloned().unwrap_or(Value::Null);
        if let Some(map) = spec.as_object_mut() {
            for key in [
                "replicas",
                "template",
                "updateStrategy",
                "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds",
            ] {
                map.remove(key);
            }
        }
        spec
    };
    if strip(obj) != strip(old) {
        causes.push(Cause::forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
    causes
}

pub(crate) fn daemon_set(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let sel = spec.get("selector").filter(|s| !s.is_null());
    causes.extend(selector::validate(sel, "spec.selector"));
    if matches!(
        selector::selects(sel, template_labels(spec)),
        Selects::Nothing | Selects::Matches(false)
    ) {
        causes.push(mismatch(spec));
    }
    if let Some(sel) = sel {
        let empty_sel = sel
            .get("matchLabels")
            .and_then(Value::as_object)
            .is_none_or(|m| m.is_empty())
            && sel
                .get("matchExpressions")
                .and_then(Value::as_array)
                .is_none_or(|e| e.is_empty());
        if empty_sel {
            causes.push(invalid_raw(
                "spec.selector",
                &go_selector(Some(sel)),
                "empty selector is invalid for daemonset",
            ));
        }
    }
    causes.extend(pod::template(spec.get("template"), "spec.template"));
    let restart = spec
        .pointer("/template/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    if restart != "Always" {
        causes.push(Cause::not_supported(
            "spec.template.spec.restartPolicy",
            &Value::String(restart.into()),
            &["Always"],
        ));
    }
    if let Some(deadline) = spec
        .pointer("/template/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64)
    {
        causes.push(Cause::invalid(
            "spec.template.spec.activeDeadlineSeconds",
            &Value::from(deadline),
            "activeDeadlineSeconds in DaemonSet is not Supported",
        ));
    }
    nonnegative(spec, "minReadySeconds", "spec.minReadySeconds", &mut causes);
    let strategy = spec.get("updateStrategy").unwrap_or(&empty);
    match strategy.get("type").and_then(Value::as_str).unwrap_or("") {
        "OnDelete" => {}
        "RollingUpdate" => match strategy.get("rollingUpdate").filter(|r| !r.is_null()) {
            None => causes.push(Cause::required("spec.updateStrategy.rollingUpdate", "")),
            Some(rolling) => {
                // ValidateRollingUpdateDaemonSet: exactly one of the two
                // may be non-zero.
                let unavailable = rolling.get("maxUnavailable");
                let surge = rolling.get("maxSurge");
                let unavailable_field = "spec.updateStrategy.rollingUpdate.maxUnavailable";
                let surge_field = "spec.updateStrategy.rollingUpdate.maxSurge";
                positive_int_or_percent(unavailable, unavailable_field, &mut causes);
                positive_int_or_percent(surge, surge_field, &mut causes);
                not_more_than_100_percent(unavailable, unavailable_field, &mut causes);
                not_more_than_100_percent(surge, surge_field, &mut causes);
                match (
                    int_or_percent_value(unavailable) != 0,
                    int_or_percent_value(surge) != 0,
                ) {
                    (true, true) => causes.push(invalid_raw(
                        surge_field,
                        &go_int_or_string(surge),
                        "may not be set when maxUnavailable is non-zero",
                    )),
                    (false, false) => causes.push(Cause::required(
                        unavailable_field,
                        "cannot be 0 when maxSurge is 0",
                    )),
                    _ => {}
                }
            }
        },
        other => {
            let rolling = strategy.get("rollingUpdate").is_none_or(Value::is_null);
            let pointer = go_syntax::pointer("apps.RollingUpdateDaemonSet", rolling);
            causes.push(Cause::new(
                "FieldValueNotSupported",
                "spec.updateStrategy",
                format!(
                    "Unsupported value: apps.DaemonSetUpdateStrategy{{Type:{}, RollingUpdate:{pointer}}}: supported values: \"RollingUpdate\", \"OnDelete\"",
                    crate::gofmt::quote(other)
                ),
            ));
        }
    }
    nonnegative(
        spec,
        "revisionHistoryLimit",
        "spec.revisionHistoryLimit",
        &mut causes,
    );
    causes
}

/// `validateJobSpec` (shared by Jobs and CronJob templates).
fn job_spec(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
    ] {
        nonnegative(spec, key, &format!("{path}.{key}"), causes);
    }
    if let Some(mode) = spec.get("completionMode").and_then(Value::as_str) {
        match mode {
            "NonIndexed" => {}
            "Indexed" => {
                if spec.get("completions").is_none_or(Value::is_null) {
                    causes.push(Cause::required(
                        format!("{path}.completions"),
                        "when completion mode is Indexed",
                    ));
                }
            }
            other => causes.push(Cause::not_supported(
                format!("{path}.completionMode"),
                &Value::String(other.into()),
                &["NonIndexed", "Indexed"],
            )),
        }
    }
    causes.extend(pod::template(
        spec.get("template"),
        &format!("{path}.template"),
    ));
    let restart = spec
        .pointer("/template/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    match restart {
        "" | "Always" => causes.push(Cause::required(
            format!("{path}.template.spec.restartPolicy"),
            "valid values: \"OnFailure\", \"Never\"",
        )),
        "OnFailure" | "Never" => {}
        other => causes.push(Cause::not_supported(
            format!("{path}.template.spec.restartPolicy"),
            &Value::String(other.into()),
            &["OnFailure", "Never"],
        )),
    }
}

/// A Job on create; `require_prefixed`: the `batch.kubernetes.io/` labels
/// must be on the template too (always on create, on update only when the
/// old Job had them, as the Job strategy decides).
pub(crate) fn job(obj: &Value, require_prefixed: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
    let template_meta = spec.pointer("/template/metadata").unwrap_or(&empty);
    // `validateGeneratedSelector`; a missing selector is reported below.
    if !manual && spec.get("selector").is_some_and(|s| !s.is_null()) {
        let uid = obj
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("");
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        if uid.is_empty() {
            causes.push(Cause::required("metadata.uid", ""));
        }
        let [legacy_name, prefixed_name] = JOB_NAME_LABELS;
        let [legacy_uid, prefixed_uid] = JOB_UID_LABELS;
        let mut expected = vec![(legacy_uid, uid), (legacy_name, name)];
        if require_prefixed {
            expected.extend([(prefixed_uid, uid), (prefixed_name, name)]);
        }
        for &(key, want) in &expected {
            match template_meta
                .get("labels")
                .and_then(|l| l.get(key))
                .and_then(Value::as_str)
            {
                None => causes.push(Cause::required(
                    format!("spec.template.metadata.labels[{key}]"),
                    want,
                )),
                Some(actual) if actual != want => causes.push(invalid_raw(
                    format!("spec.template.metadata.labels[{key}]"),
                    &go_syntax::string_map(template_meta.get("labels")),
                    &format!("must be '{want}'"),
                )),
                Some(_) => {}
            }
        }
        let expected: serde_json::Map<String, Value> = expected
            .into_iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect();
        let expected = Value::Object(expected);
        if selector::selects(spec.get("selector"), Some(&expected)) == Selects::Matches(false) {
            causes.push(invalid_raw(
                "spec.selector",
                &go_selector(spec.get("selector")),
                "`selector` not auto-generated",
            ));
        }
    }
    job_spec(spec, "spec", &mut causes);
    let sel = spec.get("selector").filter(|s| !s.is_null());
    match sel {
        None => causes.push(Cause::required("spec.selector", "")),
        Some(sel) => causes.extend(selector::validate(Some(sel), "spec.selector")),
    }
    if matches!(
        selector::selects(sel, template_labels(spec)),
        Selects::Nothing | Selects::Matches(false)
    ) {
        causes.push(mismatch(spec));
    }
    causes
}

/// Jobs may not change their template, selector or completions.
pub(crate) fn job_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let old_prefixed = old
        .pointer("/spec/template/metadata/labels")
        .and_then(|l| l.get(JOB_UID_LABELS[1]))
        .is_some();
    let mut causes = job(obj, old_prefixed);
    for (pointer, field, rendered) in [
        (
            "/spec/selector",
            "spec.selector",
            go_selector(obj.pointer("/spec/selector")),
        ),
        (
            "/spec/template",
            "spec.template",
            "core.PodTemplateSpec{...}".to_string(),
        ),
        (
            "/spec/completions",
            "spec.completions",
            obj.pointer("/spec/completions")
                .map_or("null".into(), Value::to_string),
        ),
    ] {
        if obj.pointer(pointer) != old.pointer(pointer) {
            causes.push(go_syntax::immutable(field, &rendered));
        }
    }
    causes
}

/// `validateTimeZone`: an IANA name of sane parts that Go's
/// `time.LoadLocation` knows (kube-apiserver embeds the time zone database).
fn cron_time_zone(zone: Option<&str>) -> Vec<Cause> {
    let Some(zone) = zone else {
        return Vec::new();
    };
    let invalid = |detail: &str| {
        vec![Cause::invalid(
            "spec.timeZone",
            &Value::String(zone.into()),
            detail,
        )]
    };
    if zone.is_empty() {
        return invalid("timeZone must be nil or non-empty string");
    }
    let sane_part = |part: &str| {
        part != "."
            && part != ".."
            && !part.starts_with('-')
            && (1..=14).contains(&part.len())
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b))
    };
    let known = zone == "UTC" || zone == "Local" || jiff::tz::TimeZone::get(zone).is_ok();
    if !zone.split('/').all(sane_part) || !known {
        return invalid(&format!("unknown time zone {zone}"));
    }
    Vec::new()
}

/// `ValidateCronJobCreate` / `ValidateCronJobUpdate` (`old` on update).
pub(crate) fn cron_job(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let schedule = spec.get("schedule").and_then(Value::as_str).unwrap_or("");
    let time_zone = spec.get("timeZone").and_then(Value::as_str);
    if schedule.is_empty() {
        causes.push(Cause::required("spec.schedule", ""));
    } else {
        let invalid =
            |detail: &str| Cause::invalid("spec.schedule", &Value::String(schedule.into()), detail);
        if let Err(msg) = super::cron::parse_standard(schedule) {
            causes.push(invalid(&msg));
        }
        // A zone in the schedule is refused since v1.27, unless the stored
        // schedule already had one (and then never with `timeZone` too).
        let allow_tz = old
            .and_then(|o| o.pointer("/spec/schedule"))
            .and_then(Value::as_str)
            .is_some_and(|s| s.contains("TZ"));
        if schedule.contains("TZ") {
            if !allow_tz {
                causes.push(invalid(
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                ));
            } else if time_zone.is_some() {
                causes.push(invalid(
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                ));
            }
        }
    }
    nonnegative(
        spec,
        "startingDeadlineSeconds",
        "spec.startingDeadlineSeconds",
        &mut causes,
    );
    let old_zone = old.map(|o| o.pointer("/spec/timeZone").and_then(Value::as_str));
    if old_zone.is_none_or(|z| z != time_zone) {
        causes.extend(cron_time_zone(time_zone));
    }
    match spec
        .get("concurrencyPolicy")
        .and_then(Value::as_str)
        .unwrap_or("")
    {
        "Allow" | "Forbid" | "Replace" => {}
        "" => causes.push(Cause::required("spec.concurrencyPolicy", "")),
        other => causes.push(Cause::not_supported(
            "spec.concurrencyPolicy",
            &Value::String(other.into()),
            &["Allow", "Forbid", "Replace"],
        )),
    }
    let job_template_spec = spec.pointer("/jobTemplate/spec").unwrap_or(&empty);
    job_spec(job_template_spec, "spec.jobTemplate.spec", &mut causes);
    if job_template_spec
        .get("selector")
        .is_some_and(|s| !s.is_null())
    {
        causes.push(invalid_raw(
            "spec.jobTemplate.spec.selector",
            &go_selector(job_template_spec.get("selector")),
            "`selector` will be auto-generated",
        ));
    }
    if job_template_spec
        .get("manualSelector")
        .and_then(Value::as_bool)
        == Some(true)
    {
        causes.push(Cause::not_supported(
            "spec.jobTemplate.spec.manualSelector",
            &Value::Bool(true),
            &["nil", "false"],
        ));
    }
    nonnegative(
        spec,
        "successfulJobsHistoryLimit",
        "spec.successfulJobsHistoryLimit",
        &mut causes,
    );
    nonnegative(
        spec,
        "failedJobsHistoryLimit",
        "spec.failedJobsHistoryLimit",
        &mut causes,
    );
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    // Only on create: older CronJobs with longer names stay writable.
    if old.is_none() && name.len() > 52 {
        causes.push(Cause::invalid(
            "metadata.name",
            &Value::String(name.into()),
            "must be no more than 52 characters",
        ));
    }
    causes
}
