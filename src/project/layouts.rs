//! Scaffold layouts and how files moved between them. A project of an
//! older layout is upgraded by reading each file of the current layout from
//! where the older one kept it (the user's text and its pristine copy), and
//! removing the old place afterwards.

use super::LAYOUT;

/// How one layout's files map to the next one's.
struct Migration {
    from: &'static str,
    to: &'static str,
    /// (old, new) paths; a path ending in '/' moves everything under it.
    /// Exact paths are listed before the prefixes they fall under.
    moves: &'static [(&'static str, &'static str)],
    /// Scaffold-owned files of the old layout that the new one drops.
    removed: &'static [&'static str],
}

/// Every layout change, oldest first.
const MIGRATIONS: &[Migration] = &[
    Migration {
        // v2: the API types and the CRD generator are a crate of their own in
        // api/, so that `opctl manifests` builds only them.
        from: "opctl.rs/v1",
        to: "opctl.rs/v2",
        moves: &[
            ("src/api/mod.rs", "api/src/lib.rs"),
            ("src/crdgen.rs", "api/src/crdgen.rs"),
            ("src/api/", "api/src/"),
        ],
        removed: &[],
    },
    Migration {
        // v3: the manager runtime is the library opctl-runtime (vendored under
        // .opctl/runtime until it is published) instead of a copy in
        // src/manager/, which keeps only the project's glue (mod.rs).
        from: "opctl.rs/v2",
        to: "opctl.rs/v3",
        moves: &[],
        removed: &[
            "src/manager/backoff.rs",
            "src/manager/cache.rs",
            "src/manager/conditions.rs",
            "src/manager/context.rs",
            "src/manager/controller.rs",
            "src/manager/expectations.rs",
            "src/manager/http.rs",
            "src/manager/leader.rs",
            "src/manager/metrics.rs",
            "src/manager/metrics_auth.rs",
            "src/manager/options.rs",
            "src/manager/readiness.rs",
            "src/manager/self_signed.rs",
            "src/manager/shutdown.rs",
            "src/manager/telemetry.rs",
            "src/manager/tls.rs",
            "src/manager/writes.rs",
            "src/manager/webhook/convert.rs",
            "src/manager/webhook/inject.rs",
            "src/manager/webhook/mod.rs",
            "src/manager/webhook/options.rs",
            "src/manager/webhook/self_signed.rs",
        ],
    },
    Migration {
        // v4: the CRD generator prints through opctl-runtime (`crdgen`), which
        // the API crate takes without the runtime's `manager` feature; no
        // file moves, api/Cargo.toml gains the dependency in the merge.
        from: "opctl.rs/v3",
        to: "opctl.rs/v4",
        moves: &[],
        removed: &[],
    },
];

/// The layouts this opctl upgrades from, oldest first (without the current one).
pub fn older_layouts() -> impl Iterator<Item = &'static str> {
    MIGRATIONS.iter().map(|m| m.from)
}

/// The moves from `layout` to the current one, in order; `None` for a
/// layout this opctl does not know.
fn chain(layout: &str) -> Option<Vec<&'static Migration>> {
    let mut steps = Vec::new();
    let mut at = layout;
    while at != LAYOUT {
        let step = MIGRATIONS.iter().find(|m| m.from == at)?;
        steps.push(step);
        at = step.to;
    }
    Some(steps)
}

/// Where the project of `layout` keeps what the current layout calls `path`.
pub fn old_path(layout: &str, path: &str) -> String {
    let Some(steps) = chain(layout) else {
        return path.to_owned();
    };
    let mut path = path.to_owned();
    for step in steps.iter().rev() {
        path = move_back(step, &path);
    }
    path
}

fn move_back(step: &Migration, path: &str) -> String {
    for (old, new) in step.moves {
        if new.ends_with('/') {
            if let Some(rest) = path.strip_prefix(new) {
                return format!("{old}{rest}");
            }
        } else if path == *new {
            return (*old).to_owned();
        }
    }
    path.to_owned()
}

/// Scaffold-owned files of `layout` that the current layout no longer has.
pub fn removed(layout: &str) -> Vec<&'static str> {
    let steps = chain(layout).unwrap_or_default();
    steps
        .iter()
        .flat_map(|s| s.removed.iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1_project_keeps_its_types_and_generator_in_src() {
        let old = |path| old_path("opctl.rs/v1", path);
        assert_eq!(old("api/src/lib.rs"), "src/api/mod.rs");
        assert_eq!(old("api/src/crdgen.rs"), "src/crdgen.rs");
        assert_eq!(
            old("api/src/web/v1/guestbook.rs"),
            "src/api/web/v1/guestbook.rs"
        );
        assert_eq!(old("api/src/web/mod.rs"), "src/api/web/mod.rs");
        // Files new in v2 and files that did not move are where they are.
        assert_eq!(old("api/Cargo.toml"), "api/Cargo.toml");
        assert_eq!(old("src/main.rs"), "src/main.rs");
        assert_eq!(old_path(LAYOUT, "api/src/lib.rs"), "api/src/lib.rs");
        assert_eq!(
            older_layouts().collect::<Vec<_>>(),
            ["opctl.rs/v1", "opctl.rs/v2", "opctl.rs/v3"]
        );
    }

    #[test]
    fn a_v2_project_drops_its_copy_of_the_runtime() {
        let removed = removed("opctl.rs/v2");
        assert!(removed.contains(&"src/manager/cache.rs"), "{removed:?}");
        assert!(removed.contains(&"src/manager/webhook/mod.rs"));
        // The glue stays where the copy's root module was.
        assert!(!removed.contains(&"src/manager/mod.rs"));
        // A v1 project goes through both steps.
        assert_eq!(removed, super::removed("opctl.rs/v1"));
        assert!(super::removed(LAYOUT).is_empty());
    }

    #[test]
    fn a_v3_project_keeps_every_file_where_it_is() {
        assert!(removed("opctl.rs/v3").is_empty());
        for path in ["api/src/crdgen.rs", "api/Cargo.toml", "src/manager/mod.rs"] {
            assert_eq!(old_path("opctl.rs/v3", path), path);
        }
        assert_eq!(chain("opctl.rs/v3").map(|steps| steps.len()), Some(1));
    }
}
