//! The modules of the three crates (opctl, envtest, the runtime) import one
//! another one way: no module reaches a module that reaches back to it,
//! and in envtest and the scaffolder every module stays in its layer,
//! importing only its own layer and the layers below. See
//! docs/architecture.md for the layers.
//!
//! Every file is read whole. An import is any path that names a module of
//! the crate: `crate::`, `super::` and `self::` paths, bare paths that
//! start with a child module (`tables::render`) or with a name a `use`
//! brought in (`use crate::builtin; builtin::tables::row`), and every
//! branch of a `use` group. A parent calling into its child is an import
//! like any other (`builtin/mod.rs` → `builtin::tables` → `table` →
//! `builtin` is a circle). Two things are not: a parent's `mod child;`,
//! which declares; and a child naming its own ancestor's items, as a
//! module's children share the vocabulary (types, constants) its `mod.rs`
//! defines. What only tests compile (`#[cfg(test)]` items and the modules
//! declared under it), comments and the text of string literals are left
//! out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's modules: path (`api::update`) to code without tests.
type Modules = BTreeMap<String, String>;
/// Module to the modules it imports.
type Edges = BTreeMap<String, BTreeSet<String>>;

/// The modules of the crate whose root file (`lib.rs` or `main.rs`) is in
/// `root`, read from disk.
fn modules(root: &Path) -> Modules {
    let mut files = Vec::new();
    collect(root, &mut files);
    let texts = files
        .into_iter()
        .map(|file| {
            let relative = file.strip_prefix(root).expect("under the root");
            let parts: Vec<String> = relative
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let text = std::fs::read_to_string(&file).expect("readable");
            (parts, text)
        })
        .collect();
    modules_of(texts)
}

/// The modules of a crate from its files, each given as its path under the
/// source root without `.rs` (`["api", "mod"]`) and its text.
fn modules_of(files: Vec<(Vec<String>, String)>) -> Modules {
    let mut test_only = BTreeSet::new();
    let mut out = Modules::new();
    for (mut parts, text) in files {
        if matches!(
            parts.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            parts.pop();
        }
        let module = parts.join("::");
        let (code, test_children) = without_tests(&tokens_only(&text));
        for child in test_children {
            test_only.insert(join(&module, &child));
        }
        out.insert(module, code);
    }
    out.retain(|module, _| {
        !test_only
            .iter()
            .any(|t| module == t || module.starts_with(&format!("{t}::")))
    });
    out
}

fn join(module: &str, child: &str) -> String {
    if module.is_empty() {
        child.to_owned()
    } else {
        format!("{module}::{child}")
    }
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

/// `text` without comments, and with string and character literals
/// emptied (`"crate::x"` names no module), so that only code is read.
fn tokens_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if i >= chars.len() {
                    break;
                }
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (at(i + 1) == '"' || (at(i + 1) == '#' && matches!(at(i + 2), '"' | '#')))
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'))
        {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (1..=hashes).all(|h| at(j + h) == '#') {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i = j + 1;
        } else if c == '\'' {
            // A character literal ('a', '\n', '\u{1F600}') or a lifetime ('a).
            if at(i + 1) == '\\' {
                let mut j = i + 2;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                out.push_str("' '");
                i = j + 1;
            } else if at(i + 2) == '\'' {
                out.push_str("' '");
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `code` without the items only tests compile (those under
/// `#[cfg(test)]`), and the modules declared there as files (`mod tests;`).
fn without_tests(code: &str) -> (String, Vec<String>) {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(code.len());
    let mut children = Vec::new();
    let mut rest = code;
    while let Some(start) = rest.find(MARK) {
        out.push_str(&rest[..start]);
        let item = &rest[start + MARK.len()..];
        let bytes = item.as_bytes();
        // The item ends at its first `;` outside braces, or at the brace
        // that closes its first `{`.
        let mut depth = 0usize;
        let mut end = item.len();
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        let declared = &item[..end];
        let words: Vec<&str> = declared
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        if let Some(at) = words.iter().position(|w| *w == "mod")
            && let Some(name) = words.get(at + 1)
            && declared.trim_end().ends_with(';')
        {
            children.push((*name).to_owned());
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    (out, children)
}

/// The paths a `use` tree names, in full, each with the name it binds
/// (`None` for a glob): `crate::{a::{self, b}, c as d}` gives `crate::a`
/// (as `a`), `crate::a::b` (as `b`) and `crate::c` (as `d`).
fn use_paths(tree: &str) -> Vec<(Vec<String>, Option<String>)> {
    fn expand(prefix: &[String], tree: &str, out: &mut Vec<(Vec<String>, Option<String>)>) {
        let tree = tree.trim();
        if tree.is_empty() {
            return;
        }
        if let Some(open) = tree.find('{') {
            let head: Vec<String> = tree[..open]
                .split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            let mut base = prefix.to_vec();
            base.extend(head);
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            for branch in split_top(inner) {
                expand(&base, branch, out);
            }
            return;
        }
        let (path, alias) = match tree.split_once(" as ") {
            Some((path, alias)) => (path.trim(), Some(alias.trim().to_owned())),
            None => (tree, None),
        };
        let mut full = prefix.to_vec();
        let segments: Vec<&str> = path.split("::").map(str::trim).collect();
        for segment in &segments {
            if *segment != "self" {
                full.push((*segment).to_owned());
            }
        }
        let last = segments.last().copied().unwrap_or_default();
        let bound = match (alias, last) {
            (Some(alias), _) => Some(alias),
            (None, "*") => None,
            (None, "self") => prefix.last().cloned(),
            (None, name) => Some(name.to_owned()),
        };
        if last == "*" {
            full.pop();
        }
        out.push((full, bound));
    }
    fn split_top(text: &str) -> Vec<&str> {
        let mut parts = Vec::new();
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in text.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&text[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&text[start..]);
        parts
    }
    let mut out = Vec::new();
    expand(&[], tree, &mut out);
    out
}

/// The module a path names, as seen from `from` (with the names its `use`
/// items bound): the longest prefix that is a module of the crate, or
/// `None` for a path outside the crate (std, other crates, a local type).
fn resolve(
    modules: &Modules,
    from: &str,
    bound: &BTreeMap<String, Vec<String>>,
    path: &[String],
) -> Option<String> {
    let mut base: Vec<String> = if from.is_empty() {
        Vec::new()
    } else {
        from.split("::").map(str::to_owned).collect()
    };
    let mut rest: Vec<String> = path.to_vec();
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest.remove(0);
        }
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest.remove(0);
            }
        }
        Some("self") => {
            rest.remove(0);
        }
        Some(first) if modules.contains_key(&join(from, first)) => {}
        Some(first) if bound.contains_key(first) => {
            let mut full = bound[first].clone();
            full.extend(rest.drain(1..));
            return resolve(modules, from, &BTreeMap::new(), &full);
        }
        _ => return None,
    }
    (0..=rest.len()).rev().find_map(|n| {
        let candidate = base
            .iter()
            .chain(&rest[..n])
            .cloned()
            .collect::<Vec<_>>()
            .join("::");
        modules.contains_key(&candidate).then_some(candidate)
    })
}

/// Every module each module imports (itself and its ancestors left out).
fn edges(modules: &Modules) -> Edges {
    let use_item = regex::Regex::new(r"\buse\s+([^;]+);").expect("regex");
    let path =
        regex::Regex::new(r"(?:^|[^\w:$])([A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)+)").expect("regex");
    let mut out = Edges::new();
    for (module, code) in modules {
        let mut reached = BTreeSet::new();
        let mut bound = BTreeMap::new();
        let mut uses = Vec::new();
        for found in use_item.captures_iter(code) {
            for (path, name) in use_paths(&found[1]) {
                uses.push(path.clone());
                if let Some(name) = name {
                    bound.insert(name, path);
                }
            }
        }
        let no_bindings = BTreeMap::new();
        for path in &uses {
            if let Some(target) = resolve(modules, module, &no_bindings, path) {
                reached.insert(target);
            }
        }
        let code = use_item.replace_all(code, ";");
        for found in path.captures_iter(&code) {
            let segments: Vec<String> = found[1].split("::").map(|s| s.trim().to_owned()).collect();
            if let Some(target) = resolve(modules, module, &bound, &segments) {
                reached.insert(target);
            }
        }
        // A module's own ancestors (the crate root included) are the
        // namespace it lives in, not imports.
        reached.retain(|target| !(target.is_empty() || module.starts_with(&format!("{target}::"))));
        reached.remove(module);
        out.insert(module.clone(), reached);
    }
    out
}

/// A circle of modules, if there is one.
fn circle(edges: &Edges) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &Edges,
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

/// envtest's layers, top first: each may import its own layer and those
/// below it, never one above. A module belongs to the layer of its longest
/// listed prefix; the crate root (`lib.rs`), which declares them all, is
/// above every layer. docs/architecture.md explains each layer.
const ENVTEST_LAYERS: &[(&str, &[&str])] = &[
    ("server", &["server", "bootstrap"]),
    ("http", &["http", "pod_streams"]),
    ("controllers", &["workloads", "controllers"]),
    ("api", &["api", "conversion", "authn"]),
    ("state", &["app", "faults", "metrics"]),
    ("resources", &["registry", "table"]),
    ("kinds", &["builtin"]),
    ("rules", &["admission", "authz", "patch", "schema"]),
    ("store", &["store"]),
    (
        "leaves",
        &[
            "bootstrap_policy",
            "component_statuses",
            "controller_selection",
            "duration",
            "error",
            "field_selectors",
            "gofmt",
            "gojson",
            "jsonpath",
            "memory",
            "meta",
            "name_rules",
            "node_status",
            "pki",
            "quantity",
            "request",
            "selectors",
            "serving",
            "tokens",
            "typeinfo",
            "user",
            "version",
        ],
    ),
];

/// The scaffolder's layers, top first: the commands use the plans, the
/// plans (and upgrades) use the manifests, and all of them the project.
const OPCTL_LAYERS: &[(&str, &[&str])] = &[
    ("commands", &["cli"]),
    ("upgrades", &["upgrade"]),
    ("plans", &["scaffold"]),
    ("manifests", &["manifests"]),
    ("project", &["project"]),
];

/// The layer (index into `layers`, top first) of `module`.
fn layer_of(layers: &[(&str, &[&str])], module: &str) -> Option<usize> {
    layers
        .iter()
        .enumerate()
        .flat_map(|(i, (_, prefixes))| prefixes.iter().map(move |p| (i, *p)))
        .filter(|(_, p)| module == *p || module.starts_with(&format!("{p}::")))
        .max_by_key(|(_, p)| p.len())
        .map(|(i, _)| i)
}

/// Every import that points up a layer, as `from -> to (layers)`, and
/// every module that no layer holds.
fn upward_arrows(layers: &[(&str, &[&str])], edges: &Edges) -> Vec<String> {
    let mut out = Vec::new();
    for (from, reached) in edges.iter().filter(|(from, _)| !from.is_empty()) {
        let Some(own) = layer_of(layers, from) else {
            out.push(format!("{from}: in no layer"));
            continue;
        };
        for to in reached {
            match layer_of(layers, to) {
                Some(theirs) if theirs < own => out.push(format!(
                    "{from} ({}) -> {to} ({})",
                    layers[own].0, layers[theirs].0
                )),
                _ => {}
            }
        }
    }
    out
}

fn source(relative: &str) -> Modules {
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
fn every_module_of_opctl_imports_only_its_layer_and_those_below() {
    let arrows = upward_arrows(OPCTL_LAYERS, &edges(&source("src")));
    assert!(
        arrows.is_empty(),
        "imports that point up a layer (see docs/architecture.md):\n{}",
        arrows.join("\n")
    );
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
fn every_module_of_envtest_imports_only_its_layer_and_those_below() {
    let modules = source("crates/envtest/src");
    let arrows = upward_arrows(ENVTEST_LAYERS, &edges(&modules));
    assert!(
        arrows.is_empty(),
        "imports that point up a layer (see docs/architecture.md):\n{}",
        arrows.join("\n")
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

/// A crate made of the given files (path under `src/`, text).
fn planted(files: &[(&str, &str)]) -> Modules {
    modules_of(
        files
            .iter()
            .map(|(path, text)| {
                (
                    path.trim_end_matches(".rs")
                        .split('/')
                        .map(str::to_owned)
                        .collect(),
                    (*text).to_owned(),
                )
            })
            .collect(),
    )
}

#[test]
fn every_path_form_is_an_import() {
    let modules = planted(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\nmod e;\nmod f;\n"),
        (
            "a/mod.rs",
            "mod child;\nmod other;\npub fn go() { child::run(); }\n",
        ),
        (
            "a/child.rs",
            "pub fn run() { super::helper(); super::other::f(); }\n",
        ),
        ("a/other.rs", "use self::inner::X;\nmod inner;\n"),
        ("a/other/inner.rs", "pub struct X;\n"),
        (
            "b.rs",
            "use crate::{c, d::{self as dee}};\nfn f() { c::x(); dee::y(); }\n",
        ),
        (
            "c.rs",
            "use crate::e;\nfn g() -> e::nested::T { todo!() }\n",
        ),
        ("d.rs", "pub fn y() {}\n"),
        ("e/mod.rs", "pub mod nested;\n"),
        ("e/nested.rs", "pub struct T;\n"),
        ("f.rs", "const S: &str = \"crate::a\"; // crate::b\n"),
    ]);
    let edges = edges(&modules);
    let of = |m: &str| edges[m].iter().cloned().collect::<Vec<_>>();
    assert_eq!(of("a"), ["a::child"], "a parent calling its child");
    assert_eq!(
        of("a::child"),
        ["a::other"],
        "super:: (the parent's own items are its namespace)"
    );
    assert_eq!(of("a::other"), ["a::other::inner"], "self::");
    assert_eq!(of("b"), ["c", "d"], "a use group, with self and as");
    assert_eq!(
        of("c"),
        ["e", "e::nested"],
        "a bare path through a use binding"
    );
    assert!(of("f").is_empty(), "strings and comments are no imports");
}

#[test]
fn a_whole_file_is_read_and_its_tests_left_out() {
    let modules = planted(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod inline { use crate::b; }\n\
             pub fn after_the_tests() { crate::b::f(); }\n",
        ),
        ("a/tests.rs", "use crate::b;\n"),
        ("b.rs", "pub fn f() {}\n"),
    ]);
    assert!(
        !modules.contains_key("a::tests"),
        "a test module is left out"
    );
    let edges = edges(&modules);
    assert_eq!(
        edges["a"].iter().collect::<Vec<_>>(),
        ["b"],
        "code after `mod tests;` is read"
    );
}

#[test]
fn a_planted_circle_is_found() {
    let modules = planted(&[
        ("lib.rs", "mod api;\nmod builtin;\nmod leaf;\n"),
        ("api/mod.rs", "mod create;\npub use create::create;\n"),
        ("api/create.rs", "use crate::builtin::validate;\n"),
        (
            "builtin/mod.rs",
            "pub fn validate() { tables::t(); }\nmod tables;\n",
        ),
        (
            "builtin/tables.rs",
            "use crate::{leaf, api};\nfn t() { api::create(); }\n",
        ),
        ("leaf.rs", "pub fn f() {}\n"),
    ]);
    let found_edges = edges(&modules);
    let found = circle(&found_edges).expect("the planted circle");
    assert!(
        found.contains(&"builtin::tables".to_owned()) && found.contains(&"api".to_owned()),
        "{found:?}"
    );
    // Without the upward import the same crate has none.
    let modules = planted(&[
        ("lib.rs", "mod api;\nmod builtin;\nmod leaf;\n"),
        ("api/mod.rs", "mod create;\npub use create::create;\n"),
        ("api/create.rs", "use crate::builtin::validate;\n"),
        (
            "builtin/mod.rs",
            "pub fn validate() { tables::t(); }\nmod tables;\n",
        ),
        (
            "builtin/tables.rs",
            "use crate::leaf;\npub fn t() { leaf::f(); }\n",
        ),
        ("leaf.rs", "pub fn f() {}\n"),
    ]);
    assert_eq!(circle(&edges(&modules)), None);
}

#[test]
fn a_planted_upward_arrow_is_found() {
    let layers: &[(&str, &[&str])] = &[("top", &["api"]), ("bottom", &["builtin", "leaf"])];
    let modules = planted(&[
        ("lib.rs", ""),
        ("api.rs", "use crate::builtin::x;\n"),
        ("builtin/mod.rs", "mod validation;\n"),
        ("builtin/validation.rs", "fn v() { crate::api::y(); }\n"),
        ("leaf.rs", ""),
    ]);
    let arrows = upward_arrows(layers, &edges(&modules));
    assert_eq!(arrows, ["builtin::validation (bottom) -> api (top)"]);
    assert_eq!(
        upward_arrows(&layers[..1], &edges(&modules)),
        [
            "builtin: in no layer",
            "builtin::validation: in no layer",
            "leaf: in no layer"
        ],
        "a module outside every layer is named"
    );
}
