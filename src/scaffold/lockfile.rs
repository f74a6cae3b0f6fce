//! The `Cargo.lock` every scaffold carries: the exact versions opctl's own
//! CI built and tested generated projects with, so that a project builds the
//! same next month as today.
//!
//! One lock is kept in the repository, `templates/Cargo.lock`, made by
//! `scripts/refresh-scaffold-lock.sh` from a project with every option
//! (whose two packages are named [`PLACEHOLDER`] and
//! `PLACEHOLDER-api`). A project gets that lock with its own package names;
//! since a scaffold's dependencies are the same whatever its options, the
//! lock is the same for every project but for those names. `opctl upgrade`
//! moves a project to the lock of the new opctl with [`merge`].
//!
//! The text is written the way cargo writes it (lock format version 4), so
//! that cargo finds nothing to change and `--locked` builds pass.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use anyhow::Context as _;
use serde::Deserialize;

use crate::project::Project;

/// The project name of the scaffold `templates/Cargo.lock` was made from.
pub const PLACEHOLDER: &str = "opctl-scaffold";

/// The lock of `templates/Cargo.lock`, with `project`'s package names.
pub fn render(project: &Project) -> anyhow::Result<String> {
    let template = super::templates::data("Cargo.lock")
        .context("opctl is missing its tested lock (templates/Cargo.lock)")?;
    let mut lock = Lock::parse(template).context("opctl's templates/Cargo.lock is broken")?;
    lock.rename(PLACEHOLDER, &project.project_name);
    lock.rename(
        &format!("{PLACEHOLDER}-api"),
        &crate::project::names::api_package(&project.project_name),
    );
    Ok(lock.encode())
}

/// The lock of an upgraded project: every package of `theirs` (the lock of
/// the current scaffold, with the tested versions) and, from `ours` (the
/// project's lock), the packages whose name `theirs` lacks: the
/// dependencies the user added, kept at the versions they had. Cargo drops
/// what no longer resolves and settles the rest on the next build (`opctl
/// upgrade` runs `opctl manifests`, which builds).
pub fn merge(ours: &str, theirs: &str) -> anyhow::Result<String> {
    let ours = Lock::parse(ours).context("the project's Cargo.lock is not a Cargo lock file")?;
    let mut merged = Lock::parse(theirs)?;
    let known: BTreeSet<String> = merged.packages.iter().map(|p| p.name.clone()).collect();
    for package in &ours.packages {
        if !known.contains(&package.name) {
            merged.packages.push(package.clone());
        }
    }
    // The project's own packages list the dependencies the user added, so
    // that cargo keeps their locked versions.
    for package in merged.packages.iter_mut().filter(|p| p.source.is_none()) {
        let Some(mine) = ours.packages.iter().find(|p| p.same_id(package)) else {
            continue;
        };
        for dep in &mine.dependencies {
            if !package.dependencies.iter().any(|d| d.name == dep.name) {
                package.dependencies.push(dep.clone());
            }
        }
    }
    merged.keep_reachable();
    Ok(merged.encode())
}

/// A Cargo lock file: its packages, each with what it depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    pub packages: Vec<Package>,
}

/// One `[[package]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    pub version: String,
    /// `None` for the workspace's own packages and path dependencies.
    pub source: Option<String>,
    pub checksum: Option<String>,
    pub dependencies: Vec<Dependency>,
}

/// A dependency of a package, as the lock names it: its name, and its
/// version and source where the name alone is ambiguous.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    pub name: String,
    pub version: Option<String>,
    pub source: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLock {
    version: u32,
    #[serde(default, rename = "package")]
    packages: Vec<RawPackage>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPackage {
    name: String,
    version: String,
    source: Option<String>,
    checksum: Option<String>,
    #[serde(default)]
    dependencies: Vec<String>,
}

impl Lock {
    /// Reads a lock file of format version 4 (cargo 1.78 and later).
    pub fn parse(text: &str) -> anyhow::Result<Lock> {
        let raw: RawLock = toml::from_str(text)?;
        anyhow::ensure!(
            raw.version == 4,
            "lock file format version {} (opctl reads version 4)",
            raw.version
        );
        let packages = raw
            .packages
            .into_iter()
            .map(|p| {
                let dependencies = p
                    .dependencies
                    .iter()
                    .map(|d| Dependency::parse(d))
                    .collect::<anyhow::Result<_>>()?;
                Ok(Package {
                    name: p.name,
                    version: p.version,
                    source: p.source,
                    checksum: p.checksum,
                    dependencies,
                })
            })
            .collect::<anyhow::Result<Vec<Package>>>()?;
        // Each dependency named in full, so that renaming a package cannot
        // make a short name point elsewhere.
        let ids: Vec<(String, String, Option<String>)> = packages
            .iter()
            .map(|p| (p.name.clone(), p.version.clone(), p.source.clone()))
            .collect();
        let mut packages = packages;
        for package in &mut packages {
            for dep in &mut package.dependencies {
                let mut matching = ids.iter().filter(|(name, version, source)| {
                    *name == dep.name
                        && dep.version.as_ref().is_none_or(|v| v == version)
                        && dep
                            .source
                            .as_ref()
                            .is_none_or(|s| Some(s) == source.as_ref())
                });
                if let (Some((_, version, source)), None) = (matching.next(), matching.next()) {
                    dep.version = Some(version.clone());
                    dep.source = source.clone();
                }
            }
        }
        Ok(Lock { packages })
    }

    /// Renames the workspace package `from` (and every reference to it) to `to`.
    pub fn rename(&mut self, from: &str, to: &str) {
        for package in &mut self.packages {
            if package.name == from && package.source.is_none() {
                package.name = to.to_owned();
            }
            for dep in &mut package.dependencies {
                if dep.name == from && dep.source.is_none() {
                    dep.name = to.to_owned();
                }
            }
        }
    }

    /// Drops the packages no workspace package (one without a source)
    /// depends on, directly or not: what the user's old versions needed.
    fn keep_reachable(&mut self) {
        let mut reachable = vec![false; self.packages.len()];
        let mut todo: Vec<usize> = (0..self.packages.len())
            .filter(|&i| self.packages[i].source.is_none())
            .collect();
        while let Some(i) = todo.pop() {
            if std::mem::replace(&mut reachable[i], true) {
                continue;
            }
            for dep in &self.packages[i].dependencies {
                let found = self.packages.iter().position(|p| p.matches(dep));
                todo.extend(found.filter(|&j| !reachable[j]));
            }
        }
        let mut index = 0;
        self.packages.retain(|_| {
            index += 1;
            reachable[index - 1]
        });
    }

    /// The lock as cargo writes it: packages sorted by name, version and
    /// source; each dependency named by as little as tells it apart.
    pub fn encode(&self) -> String {
        let mut packages = self.packages.clone();
        packages.sort_by(|a, b| {
            (a.name.as_str())
                .cmp(&b.name)
                .then_with(|| compare_versions(&a.version, &b.version))
                .then_with(|| a.source.cmp(&b.source))
        });
        packages.dedup_by(|a, b| a.same_id(b));
        let mut out = String::from(
            "# This file is automatically @generated by Cargo.\n\
             # It is not intended for manual editing.\n\
             version = 4\n",
        );
        for package in &packages {
            out.push_str("\n[[package]]\n");
            out.push_str(&format!("name = {}\n", quote(&package.name)));
            out.push_str(&format!("version = {}\n", quote(&package.version)));
            if let Some(source) = &package.source {
                out.push_str(&format!("source = {}\n", quote(source)));
            }
            if let Some(checksum) = &package.checksum {
                out.push_str(&format!("checksum = {}\n", quote(checksum)));
            }
            let mut deps: Vec<(String, Option<String>, Option<String>)> = package
                .dependencies
                .iter()
                .map(|dep| minimal_id(&packages, dep))
                .collect();
            deps.sort();
            deps.dedup();
            if !deps.is_empty() {
                out.push_str("dependencies = [\n");
                for (name, version, source) in deps {
                    let mut id = name;
                    if let Some(version) = version {
                        id.push(' ');
                        id.push_str(&version);
                    }
                    if let Some(source) = source {
                        id.push_str(&format!(" ({source})"));
                    }
                    out.push_str(&format!(" {},\n", quote(&id)));
                }
                out.push_str("]\n");
            }
        }
        out
    }
}

impl Package {
    fn same_id(&self, other: &Package) -> bool {
        self.name == other.name && self.version == other.version && self.source == other.source
    }

    /// Whether `dep` names this package.
    fn matches(&self, dep: &Dependency) -> bool {
        self.name == dep.name
            && dep.version.as_ref().is_none_or(|v| *v == self.version)
            && dep
                .source
                .as_ref()
                .is_none_or(|s| Some(s) == self.source.as_ref())
    }
}

impl Dependency {
    /// `name`, `name version` or `name version (source)`.
    fn parse(text: &str) -> anyhow::Result<Dependency> {
        let (ids, source) = match text.split_once(" (") {
            Some((ids, source)) => {
                let source = source
                    .strip_suffix(')')
                    .with_context(|| format!("dependency {text:?}: unclosed source"))?;
                (ids, Some(source.to_owned()))
            }
            None => (text, None),
        };
        let mut words = ids.split(' ');
        let name = words.next().unwrap_or_default().to_owned();
        let version = words.next().map(str::to_owned);
        anyhow::ensure!(
            !name.is_empty() && words.next().is_none(),
            "dependency {text:?} is not `name [version] [(source)]`"
        );
        Ok(Dependency {
            name,
            version,
            source,
        })
    }
}

/// The fewest parts that name `dep`'s package among `packages`: the name
/// if no other package has it, with the version if another has the name,
/// with the source if another has both. Cargo sorts dependencies by these
/// parts (the version as text).
fn minimal_id(packages: &[Package], dep: &Dependency) -> (String, Option<String>, Option<String>) {
    let target = packages.iter().find(|p| p.matches(dep));
    let Some(target) = target else {
        // Named as the lock named it: cargo will settle it.
        return (dep.name.clone(), dep.version.clone(), dep.source.clone());
    };
    let same_name = packages.iter().filter(|p| p.name == target.name).count();
    if same_name == 1 {
        return (target.name.clone(), None, None);
    }
    let same_version = packages
        .iter()
        .filter(|p| p.name == target.name && p.version == target.version)
        .count();
    let source = (same_version > 1).then(|| target.source.clone()).flatten();
    (target.name.clone(), Some(target.version.clone()), source)
}

/// Orders two semver versions (`major.minor.patch[-pre][+build]`).
fn compare_versions(a: &str, b: &str) -> Ordering {
    fn parts(v: &str) -> (Vec<u64>, Option<&str>) {
        let v = v.split('+').next().unwrap_or(v);
        let (core, pre) = match v.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (v, None),
        };
        (
            core.split('.').map(|n| n.parse().unwrap_or(0)).collect(),
            pre,
        )
    }
    let (a_core, a_pre) = parts(a);
    let (b_core, b_pre) = parts(b);
    a_core.cmp(&b_core).then_with(|| match (a_pre, b_pre) {
        (None, None) => Ordering::Equal,
        // A pre-release comes before its release.
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (Some(a), Some(b)) => a.cmp(b),
    })
}

/// A TOML basic string (lock files hold no characters needing more than this).
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> &'static str {
        crate::scaffold::templates::data("Cargo.lock").expect("templates/Cargo.lock")
    }

    #[test]
    fn the_template_is_written_as_cargo_writes_it() {
        let lock = Lock::parse(template()).expect("parses");
        assert_eq!(lock.encode(), template());
    }

    #[test]
    fn a_project_gets_its_own_package_names() {
        let project = Project::new(
            "example.com",
            "guestbook",
            None,
            crate::project::License::Apache2,
            false,
        );
        let text = render(&project).expect("renders");
        let lock = Lock::parse(&text).expect("parses");
        let local: Vec<&str> = lock
            .packages
            .iter()
            .filter(|p| p.source.is_none())
            .map(|p| p.name.as_str())
            .collect();
        assert!(local.contains(&"guestbook"), "{local:?}");
        assert!(local.contains(&"guestbook-api"), "{local:?}");
        assert!(!text.contains(PLACEHOLDER), "placeholder left in the lock");
        let manager = lock
            .packages
            .iter()
            .find(|p| p.name == "guestbook")
            .unwrap();
        assert!(
            manager
                .dependencies
                .iter()
                .any(|d| d.name == "guestbook-api"),
            "the manager depends on its API crate"
        );
        // Written as cargo would: encoding again changes nothing.
        assert_eq!(lock.encode(), text);
    }

    #[test]
    fn a_name_shared_with_a_registry_package_is_told_apart_by_version() {
        let text = "version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\n \"app-api\",\n \"b\",\n]\n\n[[package]]\nname = \"app-api\"\nversion = \"0.1.0\"\n\n[[package]]\nname = \"b\"\nversion = \"1.0.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"00\"\n";
        let mut lock = Lock::parse(text).expect("parses");
        lock.rename("app", "b");
        let encoded = lock.encode();
        assert!(encoded.contains(" \"b 1.0.0\",\n"), "{encoded}");
        let again = Lock::parse(&encoded).expect("parses");
        let local = again
            .packages
            .iter()
            .find(|p| p.source.is_none() && p.name == "b");
        assert!(local.is_some(), "{encoded}");
    }

    #[test]
    fn packages_of_one_name_sort_by_version_not_text() {
        let text = "version = 4\n\n[[package]]\nname = \"a\"\nversion = \"0.10.0\"\nsource = \"s\"\n\n[[package]]\nname = \"a\"\nversion = \"0.9.0\"\nsource = \"s\"\n";
        let encoded = Lock::parse(text).expect("parses").encode();
        let nine = encoded.find("0.9.0").expect("0.9.0");
        let ten = encoded.find("0.10.0").expect("0.10.0");
        assert!(nine < ten, "{encoded}");
    }

    #[test]
    fn an_upgrade_takes_the_new_versions_and_keeps_what_the_user_added() {
        let ours = "version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\n \"either\",\n \"tokio\",\n]\n\n[[package]]\nname = \"either\"\nversion = \"1.15.0\"\nsource = \"registry+x\"\nchecksum = \"e\"\n\n[[package]]\nname = \"tokio\"\nversion = \"1.40.0\"\nsource = \"registry+x\"\nchecksum = \"old\"\n";
        let theirs = "version = 4\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\n \"tokio\",\n]\n\n[[package]]\nname = \"tokio\"\nversion = \"1.48.0\"\nsource = \"registry+x\"\nchecksum = \"new\"\n";
        let merged = merge(ours, theirs).expect("merges");
        let lock = Lock::parse(&merged).expect("parses");
        let versions: Vec<(&str, &str)> = lock
            .packages
            .iter()
            .map(|p| (p.name.as_str(), p.version.as_str()))
            .collect();
        assert_eq!(
            versions,
            [("app", "0.1.0"), ("either", "1.15.0"), ("tokio", "1.48.0")]
        );
        let app = &lock.packages[0];
        let deps: Vec<&str> = app.dependencies.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(deps, ["either", "tokio"]);
    }

    #[test]
    fn bad_locks_are_refused_with_the_reason() {
        let err = Lock::parse("version = 3\n").unwrap_err();
        assert!(err.to_string().contains("version 3"), "{err}");
        let err = merge("not a lock", template()).unwrap_err();
        assert!(err.to_string().contains("not a Cargo lock file"), "{err}");
    }
}
