//! The layers of the three crates (opctl, envtest, the runtime) point one
//! way: no module reaches (through `crate::` or `super::` paths) a module
//! that reaches back to it, and in envtest nothing outside the HTTP front
//! imports `http/`. See
//! docs/architecture.md for the layers and the seams that keep them so.
//!
//! A module's own submodules and its parents are not counted as circles
//! (a parent declares its children; a child may use its parent's items);
//! unit tests (`#[cfg(test)] mod tests`) and comments are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`api::update`) to its source, without tests and comments.
fn modules(root: &Path) -> BTreeMap<String, String> {
    let mut files = Vec::new();
    collect(root, &mut files);
    files
        .into_iter()
        .map(|file| {
            let relative = file.strip_prefix(root).expect("under the root");
            let mut parts: Vec<String> = relative
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            let text = std::fs::read_to_string(&file).expect("readable");
            (parts.join("::"), code_only(&text))
        })
        .collect()
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// `text` without its unit-test module and without comments.
fn code_only(text: &str) -> String {
    let text = text
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default();
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module a `crate::`/`super::`/`self::` path names, as seen from
/// `from`: the longest prefix that is a module.
fn resolve(modules: &BTreeMap<String, String>, from: &str, path: &[&str]) -> Option<String> {
    let mut base: Vec<&str> = if from.is_empty() {
        Vec::new()
    } else {
        from.split("::").collect()
    };
    let mut rest = path;
    match rest.first() {
        Some(&"crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some(&"super") => {
            while rest.first() == Some(&"super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        Some(&"self") => rest = &rest[1..],
        _ => return None,
    }
    (0..=rest.len()).rev().find_map(|n| {
        let candidate = base
            .iter()
            .chain(&rest[..n])
            .copied()
            .collect::<Vec<_>>()
            .join("::");
        modules.contains_key(&candidate).then_some(candidate)
    })
}

/// Every module each module reaches, parents and children left out.
fn edges(modules: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let path = regex::Regex::new(r"\b(?:crate|super|self)(?:::\w+)+").expect("regex");
    let group = regex::Regex::new(r"\b((?:crate|super)(?:::\w+)*)::\{([^{}]*)\}").expect("regex");
    let related = |a: &str, b: &str| {
        a == b || a.starts_with(&format!("{b}::")) || b.starts_with(&format!("{a}::"))
    };
    let mut out = BTreeMap::new();
    for (module, code) in modules {
        let mut reached = BTreeSet::new();
        let mut add = |segments: Vec<&str>| {
            if let Some(target) = resolve(modules, module, &segments)
                && !related(module, &target)
            {
                reached.insert(target);
            }
        };
        for found in path.find_iter(code) {
            add(found.as_str().split("::").collect());
        }
        for found in group.captures_iter(code) {
            for item in found[2].split(',') {
                let item = item.split(" as ").next().unwrap_or_default().trim();
                if item.is_empty() || item == "self" {
                    continue;
                }
                let full = format!("{}::{item}", &found[1]);
                add(full.split("::").collect());
            }
        }
        out.insert(module.clone(), reached);
    }
    out
}

/// A circle of modules, if there is one.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut found = stack[at..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, edges, done, stack) {
                return Some(found);
            }
        }
        stack.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut done, &mut Vec::new()))
}

fn source(relative: &str) -> BTreeMap<String, String> {
    modules(&Path::new(env!("CARGO_MANIFEST_DIR")).join(relative))
}

#[test]
fn no_module_of_opctl_reaches_back_to_itself() {
    let modules = source("src");
    assert!(
        modules.contains_key("scaffold::plans"),
        "the scaffolder's modules are read"
    );
    let edges = edges(&modules);
    assert!(
        edges["scaffold::plans"].contains("project::paths"),
        "paths are resolved"
    );
    assert_eq!(circle(&edges), None, "a circle of imports in src/");
}

#[test]
fn no_module_of_envtest_reaches_back_to_itself() {
    let modules = source("crates/envtest/src");
    let edges = edges(&modules);
    assert!(
        edges["api::update"].contains("api::update_steps"),
        "paths are resolved"
    );
    assert_eq!(
        circle(&edges),
        None,
        "a circle of imports in crates/envtest/src/"
    );
}

#[test]
fn no_module_of_the_runtime_reaches_back_to_itself() {
    let modules = source("crates/runtime/src");
    let edges = edges(&modules);
    assert!(edges["controller"].contains("cache"), "paths are resolved");
    assert_eq!(
        circle(&edges),
        None,
        "a circle of imports in crates/runtime/src/"
    );
}

#[test]
fn only_the_http_front_imports_http() {
    let modules = source("crates/envtest/src");
    let edges = edges(&modules);
    let below: Vec<&String> = edges
        .iter()
        .filter(|(module, reached)| {
            !module.starts_with("http")
                && module.as_str() != "server"
                && reached
                    .iter()
                    .any(|r| r == "http" || r.starts_with("http::"))
        })
        .map(|(module, _)| module)
        .collect();
    assert!(
        below.is_empty(),
        "modules below the HTTP layer import it: {below:?}"
    );
}

#[test]
fn a_circle_is_found_when_there_is_one() {
    let edges: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(
        circle(&edges),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}
