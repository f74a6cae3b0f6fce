//! What differs between any two runs of the same scenario, replaced by
//! placeholders so that a recording and envtest's objects compare field for
//! field: uids (`<uid:Kind/name>`), times (`<time>`), resourceVersions
//! (`<rv>`), the random suffixes of generated names (`<suffix>`), Event name
//! suffixes (`<hex>`), cluster IPs (`<clusterIP>`).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

static TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$").expect("regex")
});
static API_ACCESS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"kube-api-access-[a-z0-9]{5}").expect("regex"));
/// The five characters of a generated name (apimachinery's `rand.String`).
static SUFFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[bcdfghjklmnpqrstvwxz2456789]{5}$").expect("regex"));
static EVENT_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\.[0-9a-f]{16}$").expect("regex"));

/// The replacements one side's objects call for, applied in order.
pub struct Normalizer {
    renames: Vec<(String, String)>,
    generated: Option<Regex>,
}

impl Normalizer {
    /// Learns the names and uids of `objects` (one side's, all of them).
    pub fn new(objects: &[&Value]) -> Normalizer {
        let mut names = Vec::new();
        let mut uids = BTreeMap::new();
        for obj in objects {
            let meta = &obj["metadata"];
            let name = meta["name"].as_str().unwrap_or("");
            let generate = meta["generateName"].as_str().unwrap_or("");
            let random = name
                .strip_prefix(generate)
                .is_some_and(|suffix| SUFFIX.is_match(suffix));
            let shown = if !generate.is_empty() && random {
                let shown = format!("{generate}<suffix>");
                names.push((name.to_string(), shown.clone()));
                shown
            } else {
                name.to_string()
            };
            if let Some(uid) = meta["uid"].as_str() {
                let kind = obj["kind"].as_str().unwrap_or("?");
                let shown = match kind {
                    "Event" => EVENT_NAME.replace(&shown, ".<hex>").into_owned(),
                    _ => shown,
                };
                uids.insert(uid.to_string(), format!("<uid:{kind}/{shown}>"));
            }
        }
        // Longer names first: a Pod's name contains its ReplicaSet's.
        names.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
        let prefixes: Vec<String> = objects
            .iter()
            .filter_map(|o| o["metadata"]["generateName"].as_str())
            .filter(|g| !g.is_empty())
            .map(regex::escape)
            .collect();
        let mut renames = names;
        renames.extend(uids);
        // Names made from a generateName seen only in messages (the Event
        // of a Pod not in the recording).
        let generated = (!prefixes.is_empty()).then(|| {
            let pattern = format!(
                r"\b({})[bcdfghjklmnpqrstvwxz2456789]{{5}}\b",
                prefixes.join("|")
            );
            Regex::new(&pattern).expect("regex")
        });
        Normalizer { renames, generated }
    }

    pub fn apply(&self, value: &Value) -> Value {
        self.walk(value, None)
    }

    fn text(&self, s: &str) -> String {
        if TIME.is_match(s) {
            return "<time>".to_string();
        }
        let mut out = match &self.generated {
            Some(re) => re.replace_all(s, "${1}<suffix>").into_owned(),
            None => s.to_string(),
        };
        for (from, to) in &self.renames {
            if out.contains(from.as_str()) {
                out = out.replace(from.as_str(), to);
            }
        }
        API_ACCESS
            .replace_all(&out, "kube-api-access-<suffix>")
            .into_owned()
    }

    fn walk(&self, value: &Value, key: Option<&str>) -> Value {
        match value {
            Value::String(s) => match key {
                Some("resourceVersion") => Value::String("<rv>".into()),
                Some("clusterIP") => Value::String("<clusterIP>".into()),
                _ => Value::String(self.text(s)),
            },
            Value::Array(items) => {
                let mut items: Vec<Value> = items.iter().map(|v| self.walk(v, key)).collect();
                if key == Some("managedFields") {
                    // Sorted by time first: equal once times are normalised,
                    // so by what follows time in kube-apiserver's order.
                    items.sort_by_key(|e| {
                        ["operation", "manager", "apiVersion", "subresource"]
                            .map(|k| e[k].as_str().unwrap_or("").to_string())
                    });
                }
                match key {
                    Some("clusterIPs") => Value::Array(vec![Value::String("<clusterIP>".into())]),
                    _ => Value::Array(items),
                }
            }
            Value::Object(map) => {
                let mut out = Map::new();
                for (k, v) in map {
                    out.insert(self.text(k), self.walk(v, Some(k)));
                }
                let mut out = Value::Object(out);
                if out["kind"] == "Event"
                    && let Some(name) = out.pointer("/metadata/name").and_then(Value::as_str)
                {
                    let name = EVENT_NAME.replace(name, ".<hex>").into_owned();
                    out["metadata"]["name"] = Value::String(name);
                }
                out
            }
            other => other.clone(),
        }
    }
}

/// Every difference between `want` and `got`, one line each, by path.
pub fn diff(want: &Value, got: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk_diff("", want, got, &mut out);
    out
}

fn walk_diff(path: &str, want: &Value, got: &Value, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let p = format!("{path}/{k}");
                match b.get(k) {
                    Some(w) => walk_diff(&p, v, w, out),
                    None => out.push(format!("{p}: missing (kube-controller-manager: {v})")),
                }
            }
            for (k, w) in b {
                if !a.contains_key(k) {
                    out.push(format!("{path}/{k}: unexpected {w}"));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                walk_diff(&format!("{path}/{i}"), v, w, out);
            }
        }
        _ if want == got => {}
        _ => out.push(format!(
            "{path}: kube-controller-manager {want}, envtest {got}"
        )),
    }
}
