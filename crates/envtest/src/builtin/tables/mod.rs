//! `kubectl get` columns of built-in kinds, as kube-apiserver's printers
//! (`pkg/printers/internalversion`) produce them for `as=Table` requests.

use serde_json::{Value, json};

mod autoscaling;
mod column;
mod columns;
mod control_plane;
mod nodes;
mod rows;
mod storage;

pub(crate) use control_plane::sort_for_printing;

use columns::columns;
use rows::row;

use super::KindInfo;

/// See [`super::table`].
pub(crate) fn table<'a>(
    kind: &KindInfo,
    objects: impl IntoIterator<Item = &'a Value>,
    now: jiff::Timestamp,
) -> Option<(Vec<Value>, Vec<Vec<Value>>)> {
    let columns = columns(kind)?;
    let definitions = columns
        .iter()
        .map(|(name, ty, format, priority, description)| {
            json!({
                "name": name,
                "type": ty,
                "format": format,
                "description": description,
                "priority": priority
            })
        })
        .collect();
    let rows = objects.into_iter().map(|obj| row(kind, obj, now)).collect();
    Some((definitions, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_rows_follow_container_states() {
        let kind = crate::builtin::find("", "pods").unwrap();
        let now: jiff::Timestamp = "2026-11-30T10:10:00Z".parse().unwrap();
        let pod = json!({
            "metadata": {"name": "p", "creationTimestamp": "2026-11-30T10:00:00Z"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}],
                "containerStatuses": [
                    {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}},
                     "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2026-11-30T10:09:00Z"}}},
                    {"name": "b", "ready": false, "restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
                ]}
        });
        let (_, rows) = table(kind, &[pod], now).unwrap();
        assert_eq!(
            rows[0],
            vec![
                json!("p"),
                json!("1/2"),
                json!("CrashLoopBackOff"),
                json!("3 (60s ago)"),
                json!("10m"),
                json!("10.0.0.5"),
                json!("n1"),
                json!("<none>"),
                json!("<none>"),
            ]
        );
    }
}
