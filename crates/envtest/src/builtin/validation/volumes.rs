//! `ValidateVolumes` and the volume sources tests commonly use.

use std::collections::HashSet;

use serde_json::Value;

use super::fields::{dns_label, list, present, s};
use super::storage;
use crate::error::Cause;
use crate::name_rules::name_is_dns_subdomain;
use crate::quantity;

/// `ValidateVolumes`; returns the names of the valid volumes. `pod_name` is
/// the Pod's name (none for a template), which names an ephemeral volume's
/// claim.
pub(super) fn volumes(
    spec: &Value,
    path: &str,
    pod_name: Option<&str>,
    causes: &mut Vec<Cause>,
) -> HashSet<String> {
    let mut names = HashSet::new();
    for (i, volume) in list(spec, "volumes").iter().enumerate() {
        let idx = format!("{path}[{i}]");
        let mut errs = Vec::new();
        let sources: Vec<&str> = crate::builtin::VOLUME_SOURCES
            .iter()
            .copied()
            .filter(|src| present(volume, src))
            .collect();
        match sources.as_slice() {
            [] => errs.push(Cause::required(idx.clone(), "must specify a volume type")),
            [one] => {
                volume_source(volume, one, &idx, &mut errs);
                let name = s(volume, "name");
                if *one == "ephemeral"
                    && let Some(pod) = pod_name.filter(|p| !p.is_empty() && !name.is_empty())
                {
                    let claim = format!("{pod}-{name}");
                    for msg in name_is_dns_subdomain(&claim, false) {
                        errs.push(Cause::invalid(
                            format!("{idx}.name"),
                            &Value::String(name.into()),
                            &format!("PVC name {claim:?}: {msg}"),
                        ));
                    }
                }
            }
            [first, rest @ ..] => {
                volume_source(volume, first, &idx, &mut errs);
                for other in rest {
                    errs.push(Cause::forbidden(
                        format!("{idx}.{other}"),
                        "may not specify more than 1 volume type",
                    ));
                }
            }
        }
        let name = s(volume, "name");
        if name.is_empty() {
            errs.push(Cause::required(format!("{idx}.name"), ""));
        } else {
            errs.extend(dns_label(name, &format!("{idx}.name")));
        }
        if names.contains(name) {
            errs.push(Cause::duplicate(
                format!("{idx}.name"),
                &Value::String(name.into()),
            ));
        }
        if errs.is_empty() {
            names.insert(name.to_string());
        } else {
            causes.extend(errs);
        }
    }
    names
}

fn default_mode(src: &Value, path: &str, errs: &mut Vec<Cause>) {
    if let Some(mode) = src.get("defaultMode").and_then(Value::as_i64)
        && !(0..=0o777).contains(&mode)
    {
        errs.push(Cause::invalid(
            format!("{path}.defaultMode"),
            &Value::from(mode),
            "must be a number between 0 and 0777 (octal), both inclusive",
        ));
    }
}

fn volume_source(volume: &Value, source: &str, idx: &str, errs: &mut Vec<Cause>) {
    let Some(src) = volume.get(source) else {
        return;
    };
    let path = format!("{idx}.{source}");
    match source {
        "configMap" => {
            if s(src, "name").is_empty() {
                errs.push(Cause::required(format!("{path}.name"), ""));
            }
            default_mode(src, &path, errs);
            key_to_paths(src, &path, errs);
        }
        "secret" => {
            if s(src, "secretName").is_empty() {
                errs.push(Cause::required(format!("{path}.secretName"), ""));
            }
            default_mode(src, &path, errs);
            key_to_paths(src, &path, errs);
        }
        "hostPath" => storage::host_path(src, &path, errs),
        "ephemeral" => storage::ephemeral(src, &path, errs),
        "persistentVolumeClaim" if s(src, "claimName").is_empty() => {
            errs.push(Cause::required(format!("{path}.claimName"), ""));
        }
        "emptyDir" => {
            if let Some(limit) = src.get("sizeLimit").and_then(quantity::from_json)
                && limit.nanos() < 0
            {
                errs.push(Cause::forbidden(
                    format!("{path}.sizeLimit"),
                    "SizeLimit field must be a valid resource quantity",
                ));
            }
        }
        "downwardAPI" | "projected" => default_mode(src, &path, errs),
        "nfs" => storage::nfs(src, &path, errs),
        "csi" if s(src, "driver").is_empty() => {
            errs.push(Cause::required(format!("{path}.driver"), ""));
        }
        _ => {}
    }
}

fn key_to_paths(src: &Value, path: &str, errs: &mut Vec<Cause>) {
    for (i, item) in list(src, "items").iter().enumerate() {
        let item_path = format!("{path}.items[{i}]");
        if s(item, "key").is_empty() {
            errs.push(Cause::required(format!("{item_path}.key"), ""));
        }
        let p = s(item, "path");
        if p.is_empty() {
            errs.push(Cause::required(format!("{item_path}.path"), ""));
        } else {
            relative_path(p, &format!("{item_path}.path"), errs);
        }
        if let Some(mode) = item.get("mode").and_then(Value::as_i64)
            && !(0..=0o777).contains(&mode)
        {
            errs.push(Cause::invalid(
                format!("{item_path}.mode"),
                &Value::from(mode),
                "must be a number between 0 and 0777 (octal), both inclusive",
            ));
        }
    }
}

/// `validateLocalDescendingPath`.
pub(super) fn relative_path(p: &str, field: &str, errs: &mut Vec<Cause>) {
    if p.starts_with('/') {
        errs.push(Cause::invalid(
            field,
            &Value::String(p.into()),
            "must be a relative path",
        ));
    }
    if p.split('/').any(|part| part == "..") {
        errs.push(Cause::invalid(
            field,
            &Value::String(p.into()),
            "must not contain '..'",
        ));
    }
}
