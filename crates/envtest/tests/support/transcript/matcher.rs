//! Structural comparison of a recorded (normalised) JSON value with what the
//! server under test sent, honouring the README's "legitimately variable" list:
//!
//! - placeholders match any value of their shape, consistently (see `placeholders`);
//! - JSON object key order is not significant;
//! - `/version` build fields, `serverAddressByClientCIDRs` and Table column
//!   descriptions are not compared;
//! - discovery may serve more or fewer built-in groups, group versions and
//!   resources (what both serve must agree);
//! - items of a `resourceVersion=0` list may come in any order;
//! - a list's own resourceVersion, and the current revision of a 504 for a
//!   future resourceVersion, may equal an earlier write's (the recording's
//!   cluster had unrelated writes in between).

use serde_json::Value;

use super::placeholders::{Bindings, Placeholder, Plain, Template, has_placeholder};

/// Per-response comparison rules.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// The request path (`/version`, `/api`, `/apis/apps/v1`, ...).
    pub request_path: String,
    /// List items may arrive in any order (`resourceVersion=0` lists).
    pub unordered_items: bool,
}

/// Differences (failures) and notes (allowed variations worth showing).
#[derive(Debug, Default, Clone)]
pub struct Findings {
    pub diffs: Vec<String>,
    pub notes: Vec<String>,
}

impl Findings {
    pub fn is_match(&self) -> bool {
        self.diffs.is_empty()
    }

    pub fn absorb(&mut self, other: Findings) {
        self.diffs.extend(other.diffs);
        self.notes.extend(other.notes);
    }
}

/// Compares one recorded value with the actual one, binding placeholders.
pub fn compare(
    expected: &Value,
    actual: &Value,
    bindings: &mut Bindings,
    rules: &Rules,
) -> Findings {
    let root_kind = expected
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut matcher = Matcher {
        bindings,
        rules,
        root_kind,
        findings: Findings::default(),
    };
    matcher.value(expected, actual, "");
    matcher.findings
}

/// Compares a recorded string (possibly with placeholders) with an actual one.
pub fn compare_str(expected: &str, actual: &str, bindings: &mut Bindings, what: &str) -> Findings {
    let rules = Rules::default();
    compare(
        &Value::String(expected.to_string()),
        &Value::String(actual.to_string()),
        bindings,
        &rules,
    )
    .relabel(what)
}

impl Findings {
    fn relabel(mut self, what: &str) -> Findings {
        for d in &mut self.diffs {
            *d = format!("{what}{d}");
        }
        self
    }
}

struct Matcher<'a> {
    bindings: &'a mut Bindings,
    rules: &'a Rules,
    root_kind: String,
    findings: Findings,
}

/// A short rendering of a value for diff lines.
pub fn show(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 160 {
        let cut: String = text.chars().take(157).collect();
        format!("{cut}...")
    } else {
        text
    }
}

fn is_builtin_group(group: &str) -> bool {
    !group.contains('.') || group.ends_with(".k8s.io")
}

impl Matcher<'_> {
    fn diff(&mut self, path: &str, message: impl AsRef<str>) {
        let at = if path.is_empty() { "(root)" } else { path };
        self.findings
            .diffs
            .push(format!("{at}: {}", message.as_ref()));
    }

    fn note(&mut self, message: String) {
        self.findings.notes.push(message);
    }

    /// Keys the README says are not comparable.
    fn ignored(&self, path: &str, key: &str) -> bool {
        match self.rules.request_path.as_str() {
            "/version" if path.is_empty() => {
                return matches!(key, "gitCommit" | "buildDate" | "goVersion" | "platform");
            }
            "/api" if path.is_empty() => return key == "serverAddressByClientCIDRs",
            _ => {}
        }
        key == "description" && path.starts_with(".columnDefinitions[")
    }

    /// A list's own resourceVersion may equal an earlier write's, and so may
    /// the current revision a 504 for a future resourceVersion reports
    /// (README: unrelated writes move it).
    fn alias_ok(&self, path: &str, expected: &str) -> bool {
        let list_version = path == ".metadata.resourceVersion"
            && (self.root_kind.ends_with("List") || self.root_kind == "Table");
        let current_revision = self.root_kind == "Status"
            && path == ".message"
            && expected.contains("Too large resource version:");
        list_version || current_revision
    }

    fn value(&mut self, expected: &Value, actual: &Value, path: &str) {
        match (expected, actual) {
            (Value::String(e), Value::Number(n)) if e == "<nodePort>" => {
                let as_text = n.to_string();
                if let Err(e) =
                    self.bindings
                        .unify(Placeholder::Plain(Plain::NodePort), &as_text, false)
                {
                    self.diff(path, e);
                }
            }
            (Value::String(e), Value::String(a)) => self.string(e, a, path),
            (Value::Object(e), Value::Object(a)) => self.object(e, a, path),
            (Value::Array(e), Value::Array(a)) => self.array(e, a, path),
            (e, a) if e == a => {}
            (e, a) => self.diff(path, format!("expected {}, got {}", show(e), show(a))),
        }
    }

    fn string(&mut self, expected: &str, actual: &str, path: &str) {
        if !has_placeholder(expected) {
            if expected != actual {
                self.diff(
                    path,
                    format!(
                        "expected {}, got {}",
                        show(&Value::String(expected.to_string())),
                        show(&Value::String(actual.to_string()))
                    ),
                );
            }
            return;
        }
        let alias_ok = self.alias_ok(path, expected);
        let template = Template::compile(expected);
        let mut trial = self.bindings.clone();
        match template.unify(actual, &mut trial, alias_ok) {
            Ok(()) => *self.bindings = trial,
            Err(e) => self.diff(path, format!("expected {expected:?}, got {actual:?}: {e}")),
        }
    }

    fn object(
        &mut self,
        expected: &serde_json::Map<String, Value>,
        actual: &serde_json::Map<String, Value>,
        path: &str,
    ) {
        let mut used: Vec<&str> = Vec::new();
        for (key, ev) in expected {
            if self.ignored(path, key) {
                used.push(key);
                continue;
            }
            let child = format!("{path}.{key}");
            if let Some(av) = actual.get(key) {
                used.push(key);
                self.value(ev, av, &child);
                continue;
            }
            if has_placeholder(key) {
                // A key such as k:{"uid":"<uid:3>"}: find the actual key it stands for.
                let template = Template::compile(key);
                let candidate = actual.keys().find(|ak| {
                    !expected.contains_key(ak.as_str())
                        && !used.contains(&ak.as_str())
                        && template
                            .unify(ak, &mut self.bindings.clone(), false)
                            .is_ok()
                });
                if let Some(ak) = candidate {
                    let _ = template.unify(ak, self.bindings, false);
                    used.push(ak);
                    if let Some(av) = actual.get(ak) {
                        self.value(ev, av, &child);
                    }
                    continue;
                }
            }
            self.diff(&child, format!("missing (expected {})", show(ev)));
        }
        for (key, av) in actual {
            if used.contains(&key.as_str()) || self.ignored(path, key) {
                continue;
            }
            self.diff(
                &format!("{path}.{key}"),
                format!("unexpected field = {}", show(av)),
            );
        }
    }

    fn array(&mut self, expected: &[Value], actual: &[Value], path: &str) {
        let kind = self.root_kind.as_str();
        let keyed = match (kind, path) {
            ("APIGroupList", ".groups") => Some(("name", Lenient::Groups)),
            ("APIGroupList", p) if p.starts_with(".groups[") && p.ends_with("].versions") => {
                Some(("groupVersion", Lenient::Versions))
            }
            ("APIGroup", ".versions") => Some(("groupVersion", Lenient::Versions)),
            ("APIResourceList", ".resources") => {
                let path = self.rules.request_path.as_str();
                let required = REQUIRED_RESOURCES
                    .iter()
                    .find(|(p, _)| *p == path)
                    .map_or(&[][..], |(_, r)| *r);
                Some((
                    "name",
                    Lenient::Resources(self.builtin_discovery_path(), required),
                ))
            }
            _ => None,
        };
        if let Some((key, lenient)) = keyed {
            return self.keyed_array(expected, actual, path, key, lenient);
        }
        if path.ends_with(".metadata.managedFields") {
            return self.managed_fields(expected, actual, path);
        }
        if path == ".items" && self.rules.unordered_items {
            let (e, a) = (sorted_by_name(expected), sorted_by_name(actual));
            return self.ordered_array(&e, &a, path);
        }
        self.ordered_array(expected, actual, path);
    }

    /// kube-apiserver sorts managedFields by operation, then time (in
    /// seconds), then manager: entries written in other seconds than in the
    /// recording may come in another order (the order itself is covered by
    /// the unit tests of `patch`). Entries are matched by manager, operation
    /// and subresource.
    fn managed_fields(&mut self, expected: &[Value], actual: &[Value], path: &str) {
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let identity = |v: &Value| {
            (
                text(v, "manager"),
                text(v, "operation"),
                text(v, "subresource"),
            )
        };
        let mut remaining: Vec<&Value> = actual.iter().collect();
        let mut reordered: Vec<Value> = Vec::with_capacity(actual.len());
        for e in expected {
            if let Some(i) = remaining.iter().position(|a| identity(a) == identity(e)) {
                reordered.push(remaining.remove(i).clone());
            }
        }
        reordered.extend(remaining.into_iter().cloned());
        if reordered.as_slice() != actual {
            self.note(format!(
                "{path}: entries written in other seconds than recorded, compared by manager"
            ));
        }
        self.ordered_array(expected, &reordered, path);
    }

    fn builtin_discovery_path(&self) -> bool {
        let p = self.rules.request_path.as_str();
        if p.starts_with("/api/") || p == "/api" {
            return true;
        }
        p.strip_prefix("/apis/")
            .and_then(|rest| rest.split('/').next())
            .is_some_and(is_builtin_group)
    }

    fn ordered_array(&mut self, expected: &[Value], actual: &[Value], path: &str) {
        for (i, (e, a)) in expected.iter().zip(actual).enumerate() {
            self.value(e, a, &format!("{path}[{i}]"));
        }
        if expected.len() != actual.len() {
            let mut message = format!("expected {} items, got {}", expected.len(), actual.len());
            for (i, extra) in actual.iter().enumerate().skip(expected.len()).take(3) {
                message.push_str(&format!("; extra [{i}] = {}", show(extra)));
            }
            for (i, missing) in expected.iter().enumerate().skip(actual.len()).take(3) {
                message.push_str(&format!("; missing [{i}] = {}", show(missing)));
            }
            self.diff(path, message);
        }
    }

    /// Discovery lists: elements matched by a key; built-in entries only one
    /// side serves are notes rather than differences.
    fn keyed_array(
        &mut self,
        expected: &[Value],
        actual: &[Value],
        path: &str,
        key: &str,
        lenient: Lenient,
    ) {
        let key_of = |v: &Value| {
            v.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        for e in expected {
            let name = key_of(e);
            match actual.iter().find(|a| key_of(a) == name) {
                Some(a) => self.value(e, a, &format!("{path}[{name}]")),
                None if lenient.may_differ(&name) => {
                    self.note(format!("{path}: not served here: {name}"))
                }
                None => self.diff(
                    &format!("{path}[{name}]"),
                    format!("missing (expected {})", show(e)),
                ),
            }
        }
        for a in actual {
            let name = key_of(a);
            if expected.iter().any(|e| key_of(e) == name) {
                continue;
            }
            if lenient.may_differ(&name) {
                self.note(format!("{path}: served here only: {name}"));
            } else {
                self.diff(
                    &format!("{path}[{name}]"),
                    format!("unexpected entry = {}", show(a)),
                );
            }
        }
    }
}

/// Built-in group versions issue 3 requires envtest to serve: discovery
/// may not leave these out.
const REQUIRED_GROUP_VERSIONS: &[&str] = &[
    "v1",
    "apps/v1",
    "batch/v1",
    "events.k8s.io/v1",
    "coordination.k8s.io/v1",
    "rbac.authorization.k8s.io/v1",
    "apiextensions.k8s.io/v1",
    "admissionregistration.k8s.io/v1",
];

/// The resources of those group versions that issue 3 names.
const REQUIRED_RESOURCES: &[(&str, &[&str])] = &[
    (
        "/api/v1",
        &[
            "namespaces",
            "pods",
            "services",
            "endpoints",
            "configmaps",
            "secrets",
            "serviceaccounts",
            "events",
        ],
    ),
    (
        "/apis/apps/v1",
        &["deployments", "statefulsets", "daemonsets", "replicasets"],
    ),
    (
        "/apis/apiextensions.k8s.io/v1",
        &["customresourcedefinitions"],
    ),
];

/// Which discovery entries may be present on one side only.
#[derive(Debug, Clone, Copy)]
enum Lenient {
    /// API groups: the built-in ones (no dot, or `*.k8s.io`) not required.
    Groups,
    /// Versions of a group (`apps/v1`): those of built-in groups not required.
    Versions,
    /// Resources of a group version: when the group is built-in, all but the
    /// required ones.
    Resources(bool, &'static [&'static str]),
}

impl Lenient {
    fn may_differ(self, name: &str) -> bool {
        match self {
            Lenient::Groups => {
                is_builtin_group(name)
                    && !REQUIRED_GROUP_VERSIONS
                        .iter()
                        .any(|gv| gv.split_once('/').is_some_and(|(g, _)| g == name))
            }
            Lenient::Versions => {
                !REQUIRED_GROUP_VERSIONS.contains(&name)
                    && name
                        .split_once('/')
                        .is_none_or(|(group, _)| is_builtin_group(group))
            }
            Lenient::Resources(builtin, required) => builtin && !required.contains(&name),
        }
    }
}

/// Items ordered by namespace and name (for lists whose order is not defined).
pub fn sorted_by_name(items: &[Value]) -> Vec<Value> {
    let mut sorted = items.to_vec();
    sorted.sort_by_key(object_name);
    sorted
}

/// `namespace/name` of an object or of a watch event's object.
pub fn object_name(value: &Value) -> String {
    let object = value.get("object").unwrap_or(value);
    let meta = object.get("metadata");
    let field = |f: &str| {
        meta.and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    format!("{}/{}", field("namespace"), field("name"))
}
