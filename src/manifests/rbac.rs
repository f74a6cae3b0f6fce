//! RBAC from `// +opctl:rbac:groups=...,resources=...,verbs=...` markers:
//! parsed from every Rust file under src/, merged, sorted and written as the
//! manager's ClusterRole (or Role, for a `--namespaced` project).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Context as _;

const PREFIX: &str = "+opctl:rbac:";

/// One permission a marker asks for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Grant {
    api_group: String,
    resource: String,
    resource_names: Vec<String>,
}

/// The merged rules of a role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    grants: BTreeMap<Grant, BTreeSet<String>>,
}

/// One rule as it appears in the role.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rule {
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub verbs: Vec<String>,
}

impl Rules {
    /// Adds the markers found in `text` (the file at `path`, for errors).
    pub fn add_source(&mut self, path: &str, text: &str) -> anyhow::Result<()> {
        for (number, line) in text.lines().enumerate() {
            let Some(comment) = line.trim_start().strip_prefix("//") else {
                continue;
            };
            let Some(spec) = comment.trim_start().strip_prefix(PREFIX) else {
                continue;
            };
            self.add_marker(spec.trim())
                .with_context(|| format!("{path}:{}: bad `+opctl:rbac` marker", number + 1))?;
        }
        Ok(())
    }

    fn add_marker(&mut self, spec: &str) -> anyhow::Result<()> {
        let mut groups = None;
        let mut resources = None;
        let mut verbs = None;
        let mut names = Vec::new();
        for part in spec.split(',') {
            let (key, value) = part.split_once('=').with_context(|| {
                format!("{part:?} is not key=value; write groups=apps,resources=deployments,verbs=get;list;watch")
            })?;
            // `groups=""` (as kubebuilder writes the core group) means the empty group.
            let values: Vec<String> = value
                .split(';')
                .map(|v| v.trim())
                .map(|v| if v == "\"\"" { "" } else { v })
                .map(str::to_owned)
                .collect();
            match key.trim() {
                "groups" => groups = Some(values),
                "resources" => resources = Some(values),
                "verbs" => verbs = Some(values),
                "resourceNames" => names = values,
                other => anyhow::bail!(
                    "unknown key {other:?}; the keys are groups, resources, verbs and resourceNames"
                ),
            }
        }
        let (Some(groups), Some(resources), Some(verbs)) = (groups, resources, verbs) else {
            anyhow::bail!("groups=, resources= and verbs= are all required");
        };
        for group in &groups {
            check_word("group", group, true)?;
        }
        for resource in &resources {
            check_word("resource", resource, false)?;
        }
        for verb in &verbs {
            check_word("verb", verb, false)?;
        }
        let mut names: Vec<String> = names.into_iter().filter(|n| !n.is_empty()).collect();
        names.sort();
        names.dedup();
        for group in &groups {
            let api_group = if group == "core" {
                String::new()
            } else {
                group.clone()
            };
            for resource in &resources {
                let grant = Grant {
                    api_group: api_group.clone(),
                    resource: resource.clone(),
                    resource_names: names.clone(),
                };
                self.grants
                    .entry(grant)
                    .or_default()
                    .extend(verbs.iter().cloned());
            }
        }
        Ok(())
    }

    /// Adds the markers of every `.rs` file under `dir` (recursively).
    pub fn add_dir(&mut self, root: &Path, dir: &str) -> anyhow::Result<()> {
        for (path, text) in rust_sources(root, dir)? {
            self.add_source(&path, &text)?;
        }
        Ok(())
    }

    /// The rules: grants with the same group, verbs and names share a rule;
    /// everything sorted.
    pub fn rules(&self) -> Vec<Rule> {
        let mut merged: BTreeMap<(String, Vec<String>, Vec<String>), BTreeSet<String>> =
            BTreeMap::new();
        for (grant, verbs) in &self.grants {
            let verbs: Vec<String> = if verbs.contains("*") {
                vec!["*".to_owned()]
            } else {
                verbs.iter().cloned().collect()
            };
            merged
                .entry((grant.api_group.clone(), verbs, grant.resource_names.clone()))
                .or_default()
                .insert(grant.resource.clone());
        }
        let mut rules: Vec<Rule> = merged
            .into_iter()
            .map(|((api_group, verbs, resource_names), resources)| Rule {
                api_groups: vec![api_group],
                resources: resources.into_iter().collect(),
                resource_names,
                verbs,
            })
            .collect();
        rules.sort();
        rules
    }

    /// The role's YAML: a ClusterRole, or a Role in the manager's namespace.
    pub fn to_yaml(&self, namespaced: bool) -> String {
        let mut out = String::from(
            "# Written by `opctl manifests` from the +opctl:rbac markers in src/. DO NOT EDIT.\n",
        );
        out.push_str("apiVersion: rbac.authorization.k8s.io/v1\n");
        out.push_str(if namespaced {
            "kind: Role\n"
        } else {
            "kind: ClusterRole\n"
        });
        out.push_str("metadata:\n  name: manager-role\n");
        if namespaced {
            out.push_str("  namespace: system\n");
        }
        let rules = self.rules();
        if rules.is_empty() {
            out.push_str("rules: []\n");
            return out;
        }
        out.push_str("rules:\n");
        for rule in rules {
            list(&mut out, "- apiGroups", &rule.api_groups);
            if !rule.resource_names.is_empty() {
                list(&mut out, "  resourceNames", &rule.resource_names);
            }
            list(&mut out, "  resources", &rule.resources);
            list(&mut out, "  verbs", &rule.verbs);
        }
        out
    }
}

fn list(out: &mut String, key: &str, values: &[String]) {
    out.push_str(key);
    out.push_str(":\n");
    for value in values {
        out.push_str("  - ");
        out.push_str(&yaml_scalar(value));
        out.push('\n');
    }
}

/// Marker values are checked to be plain words; only the empty group and `*`
/// need quotes.
fn yaml_scalar(value: &str) -> String {
    if value.is_empty() || value == "*" {
        format!("\"{value}\"")
    } else {
        value.to_owned()
    }
}

fn check_word(what: &str, value: &str, may_be_empty: bool) -> anyhow::Result<()> {
    if value.is_empty() {
        if may_be_empty {
            return Ok(());
        }
        anyhow::bail!("an empty {what}");
    }
    let ok = value == "*"
        || value.bytes().all(|b| {
            b.is_ascii_lowercase()
                || b.is_ascii_digit()
                || b"-./".contains(&b)
                || (what == "verb" && b.is_ascii_alphabetic())
        });
    if !ok {
        anyhow::bail!("{what} {value:?} has characters Kubernetes does not allow there");
    }
    Ok(())
}

/// `(relative path, text)` of every `.rs` file under `root/dir`, sorted by path.
pub fn rust_sources(root: &Path, dir: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(relative) = stack.pop() {
        let path = crate::project::paths::target(root, &relative);
        let entries = match std::fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(err).with_context(|| format!("cannot read {relative}")),
        };
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot read {relative}"))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = format!("{relative}/{name}");
            let kind = entry
                .file_type()
                .with_context(|| format!("cannot read {child}"))?;
            if kind.is_dir() {
                stack.push(child);
            } else if name.ends_with(".rs") && !name.starts_with('.') {
                let text = std::fs::read_to_string(entry.path())
                    .with_context(|| format!("cannot read {child}"))?;
                out.push((child, text));
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules_of(sources: &[(&str, &str)]) -> anyhow::Result<Rules> {
        let mut rules = Rules::default();
        for (path, text) in sources {
            rules.add_source(path, text)?;
        }
        Ok(rules)
    }

    #[test]
    fn markers_are_merged_sorted_and_deduplicated() {
        let rules = rules_of(&[
            ("b.rs", "// +opctl:rbac:groups=apps,resources=deployments,verbs=watch;get;list\n"),
            (
                "a.rs",
                "fn x() {}\n    // +opctl:rbac:groups=core,resources=pods;services,verbs=get;list;watch;create\n\
                 // +opctl:rbac:groups=apps,resources=statefulsets,verbs=list;get;watch\n\
                 // +opctl:rbac:groups=\"\",resources=pods,verbs=delete\n",
            ),
        ])
        .expect("valid markers");
        let yaml = rules.to_yaml(false);
        let expected = "\
# Written by `opctl manifests` from the +opctl:rbac markers in src/. DO NOT EDIT.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: manager-role
rules:
- apiGroups:
  - \"\"
  resources:
  - pods
  verbs:
  - create
  - delete
  - get
  - list
  - watch
- apiGroups:
  - \"\"
  resources:
  - services
  verbs:
  - create
  - get
  - list
  - watch
- apiGroups:
  - apps
  resources:
  - deployments
  - statefulsets
  verbs:
  - get
  - list
  - watch
";
        assert_eq!(yaml, expected);
    }

    #[test]
    fn a_namespaced_project_gets_a_role() {
        let rules = rules_of(&[(
            "a.rs",
            "// +opctl:rbac:groups=apps,resources=deployments,verbs=get\n",
        )])
        .expect("valid");
        let yaml = rules.to_yaml(true);
        assert!(
            yaml.contains("kind: Role\nmetadata:\n  name: manager-role\n  namespace: system\n"),
            "{yaml}"
        );
        assert_eq!(
            Rules::default().to_yaml(false).lines().last(),
            Some("rules: []")
        );
    }

    #[test]
    fn resource_names_and_wildcards() {
        let rules = rules_of(&[(
            "a.rs",
            "// +opctl:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;update,resourceNames=b;a\n\
             // +opctl:rbac:groups=x.io,resources=things,verbs=get;*\n",
        )])
        .expect("valid");
        let rules = rules.rules();
        assert_eq!(rules[0].resource_names, ["a", "b"]);
        assert_eq!(rules[1].verbs, ["*"]);
    }

    #[test]
    fn bad_markers_name_the_file_and_line() {
        for (marker, expected) in [
            ("groups=apps,resources=deployments", "required"),
            (
                "groups=apps,resources=deployments,verbs=get,colour=red",
                "unknown key",
            ),
            ("groups=apps,resources=Deployments,verbs=get", "characters"),
            ("groups=apps,resources,verbs=get", "not key=value"),
        ] {
            let err = rules_of(&[("src/x.rs", &format!("\n// +opctl:rbac:{marker}\n"))])
                .expect_err(marker);
            let text = format!("{err:#}");
            assert!(
                text.starts_with("src/x.rs:2: bad `+opctl:rbac` marker"),
                "{text}"
            );
            assert!(text.contains(expected), "{text}");
        }
    }

    #[test]
    fn text_that_only_mentions_markers_is_ignored() {
        let rules = rules_of(&[(
            "a.rs",
            "let s = \"// +opctl:rbac:nonsense\";\n/// +opctl:rbac:in docs\n",
        )]);
        // Doc comments start with `///`: after `//` comes `/`, not the marker.
        assert_eq!(rules.expect("ignored").rules(), Vec::new());
    }
}
