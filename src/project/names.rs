//! Names and their validation: domains, groups, versions, kinds, plurals and
//! project names, each checked before anything is written, each failure one
//! line that names the problem and the fix.

use heck::{ToKebabCase, ToSnakeCase};

/// Longest kind accepted: longer names would push generated code past
/// rustfmt's line width and no Kubernetes kind comes near it.
pub const MAX_KIND_LEN: usize = 32;
/// Longest project name accepted (it becomes crate and binary names).
pub const MAX_PROJECT_NAME_LEN: usize = 40;
/// Longest API group (the part given to `--group`) accepted.
pub const MAX_GROUP_LEN: usize = 40;

/// Rust keywords (strict, reserved and 2018+ ones) that cannot name a type or module.
const RUST_KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "true", "try", "type",
    "typeof", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// Type names the generated modules already use: a kind with one of these
/// names would collide with an import or a generated item.
const RESERVED_KINDS: &[&str] = &[
    "Action",
    "Api",
    "Arc",
    "Backoff",
    "Box",
    "Client",
    "Condition",
    "Context",
    "Controller",
    "CustomResource",
    "Default",
    "Deserialize",
    "Duration",
    "Err",
    "Error",
    "Event",
    "EventType",
    "JsonSchema",
    "Manager",
    "None",
    "ObjectMeta",
    "ObjectRef",
    "Ok",
    "Option",
    "Patch",
    "PatchParams",
    "Resource",
    "ResourceExt",
    "Result",
    "Serialize",
    "Some",
    "String",
    "Time",
    "Vec",
];

/// Whether `s` is a DNS-1123 label: lowercase letters, digits and '-', starting
/// and ending with a letter or digit, at most 63 characters.
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether `s` is a DNS-1123 subdomain: dot-separated DNS-1123 labels, at most
/// 253 characters.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// `--domain`: a DNS-1123 subdomain such as `example.com`.
pub fn validate_domain(domain: &str) -> anyhow::Result<()> {
    if !is_dns1123_subdomain(domain) {
        anyhow::bail!(
            "invalid --domain {domain:?}: a domain must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', each part starting and ending with a letter or digit), for example --domain example.com"
        );
    }
    Ok(())
}

/// `--group`: a DNS-1123 subdomain whose Rust module name is usable.
pub fn validate_group(group: &str) -> anyhow::Result<()> {
    if !is_dns1123_subdomain(group) {
        anyhow::bail!(
            "invalid --group {group:?}: a group must be a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit), for example --group batch"
        );
    }
    if group.len() > MAX_GROUP_LEN {
        anyhow::bail!(
            "invalid --group {group:?}: at most {MAX_GROUP_LEN} characters are supported; choose a shorter group"
        );
    }
    if group.starts_with(|c: char| c.is_ascii_digit()) {
        anyhow::bail!(
            "invalid --group {group:?}: a group must start with a letter (it becomes a Rust module name)"
        );
    }
    let module = group_module(group);
    if RUST_KEYWORDS.contains(&module.as_str()) {
        anyhow::bail!(
            "invalid --group {group:?}: `{module}` is a Rust keyword and cannot name the group's module; choose another group"
        );
    }
    Ok(())
}

/// A project kind's API group is `<group>.<domain>`, as in kubebuilder: a
/// `--group` that already ends with the domain (`webapp.example.com` with
/// the domain `example.com`) is refused rather than taken as the full
/// group, so that every command names the group the same way.
pub fn check_group_against_domain(group: &str, domain: &str) -> anyhow::Result<()> {
    if group == domain {
        anyhow::bail!(
            "--group {group} is the project's domain, and opctl appends the domain to the group (the API group would be {group}.{domain}); pass the group's own name, such as --group webapp for webapp.{domain}"
        );
    }
    if let Some(short) = group.strip_suffix(&format!(".{domain}")) {
        anyhow::bail!(
            "--group {group} already ends with the project's domain {domain}, which opctl appends (the API group would be {group}.{domain}); pass --group {short} for the API group {group}"
        );
    }
    Ok(())
}

/// `--version`: `v1`, `v1alpha1`, `v2beta3` and the like.
pub fn validate_version(version: &str) -> anyhow::Result<()> {
    let ok = (|| {
        let rest = version.strip_prefix('v')?;
        let major_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (major, rest) = rest.split_at(major_len);
        if major.is_empty() || major.starts_with('0') {
            return None;
        }
        if rest.is_empty() {
            return Some(());
        }
        let minor = rest
            .strip_prefix("alpha")
            .or_else(|| rest.strip_prefix("beta"))?;
        (!minor.is_empty() && !minor.starts_with('0') && minor.bytes().all(|b| b.is_ascii_digit()))
            .then_some(())
    })();
    if ok.is_none() {
        anyhow::bail!(
            "invalid --version {version:?}: a version looks like v1, v1alpha1 or v2beta3 ('v', a number from 1, optionally 'alpha' or 'beta' and a number from 1)"
        );
    }
    Ok(())
}

/// `--kind`: PascalCase, ASCII letters and digits, not a Rust keyword, not a
/// name the generated code already uses.
pub fn validate_kind(kind: &str) -> anyhow::Result<()> {
    let starts_upper = kind.starts_with(|c: char| c.is_ascii_uppercase());
    if !starts_upper || !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
        anyhow::bail!(
            "invalid --kind {kind:?}: a kind is PascalCase, made of ASCII letters and digits and starting with an uppercase letter, for example --kind CronTab"
        );
    }
    if kind.len() > MAX_KIND_LEN {
        anyhow::bail!(
            "invalid --kind {kind:?}: at most {MAX_KIND_LEN} characters are supported; choose a shorter kind"
        );
    }
    if RUST_KEYWORDS.contains(&kind) {
        anyhow::bail!("invalid --kind {kind:?}: `{kind}` is a Rust keyword; choose another kind");
    }
    if RESERVED_KINDS.contains(&kind) {
        anyhow::bail!(
            "invalid --kind {kind:?}: `{kind}` collides with a name the generated code uses; choose another kind"
        );
    }
    let module = kind_module(kind);
    if RUST_KEYWORDS.contains(&module.as_str()) {
        anyhow::bail!(
            "invalid --kind {kind:?}: its module name `{module}` is a Rust keyword; choose another kind"
        );
    }
    Ok(())
}

/// `--plural`: a lowercase DNS-1123 label.
pub fn validate_plural(plural: &str) -> anyhow::Result<()> {
    if !is_dns1123_label(plural) || !plural.starts_with(|c: char| c.is_ascii_lowercase()) {
        anyhow::bail!(
            "invalid --plural {plural:?}: a plural is a lowercase DNS-1123 label (letters, digits and '-', starting with a letter), for example --plural crontabs"
        );
    }
    Ok(())
}

/// `--project-name` (or the directory's name): a DNS-1123 label that starts
/// with a letter, since it names the crate, its binaries and Kubernetes objects.
pub fn validate_project_name(name: &str) -> anyhow::Result<()> {
    if !is_dns1123_label(name) || !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        anyhow::bail!(
            "invalid project name {name:?}: it must be a DNS-1123 label (lowercase letters, digits and '-', starting with a letter); pass --project-name my-operator"
        );
    }
    if name.len() > MAX_PROJECT_NAME_LEN {
        anyhow::bail!(
            "invalid project name {name:?}: at most {MAX_PROJECT_NAME_LEN} characters are supported; pass a shorter --project-name"
        );
    }
    let crate_name = name.to_snake_case();
    if RUST_KEYWORDS.contains(&crate_name.as_str())
        || ["core", "std", "alloc", "test", "proc_macro"].contains(&crate_name.as_str())
    {
        anyhow::bail!(
            "invalid project name {name:?}: `{crate_name}` cannot name a Rust crate; pass another --project-name"
        );
    }
    Ok(())
}

/// The Rust module of an API group: `zalando` for `zalando`, `foo_bar` for `foo-bar` or `foo.bar`.
pub fn group_module(group: &str) -> String {
    group.replace(['.', '-'], "_")
}

/// The Rust module of a kind: `sidecar_set` for `SidecarSet`.
pub fn kind_module(kind: &str) -> String {
    kind.to_snake_case()
}

/// A project's crate name (`simple_deployment` for `simple-deployment`).
pub fn crate_name(project: &str) -> String {
    project.to_snake_case()
}

/// The package of a project's API types, in api/ (`database-api`).
pub fn api_package(project: &str) -> String {
    format!("{project}-api")
}

/// The crate name of a project's API types (`simple_deployment_api`).
pub fn api_crate(project: &str) -> String {
    format!("{}_api", crate_name(project))
}

/// A project name derived from a directory name (`My_Operator` → `my-operator`).
pub fn project_name_from_dir(dir: &str) -> String {
    dir.to_kebab_case()
}

pub use super::plural::plural_of;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_and_groups_are_dns_subdomains() {
        for good in ["example.com", "org", "a-b.c1", "kruise.io"] {
            assert!(validate_domain(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Example.com",
            "-a.com",
            "a..b",
            "a_b.com",
            "a.com.",
            &"a".repeat(64),
        ] {
            assert!(validate_domain(bad).is_err(), "{bad}");
        }
        assert!(validate_group("zalando").is_ok());
        assert!(validate_group("web-apps").is_ok());
        assert!(validate_group("Apps").is_err());
        assert!(validate_group("1apps").is_err());
        assert!(validate_group("type").is_err());
    }

    #[test]
    fn versions_look_like_kubernetes_versions() {
        for good in ["v1", "v2", "v10", "v1alpha1", "v2beta3", "v1beta12"] {
            assert!(validate_version(good).is_ok(), "{good}");
        }
        for bad in [
            "", "1", "v", "v0", "V1", "v1alpha", "v1gamma1", "v1alpha0", "v01", "v1-beta1",
            "v1beta1x",
        ] {
            assert!(validate_version(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn kinds_are_pascal_case_and_not_reserved() {
        for good in ["Database", "SidecarSet", "DNSRecord", "V1Thing"] {
            assert!(validate_kind(good).is_ok(), "{good}");
        }
        for bad in [
            "database",
            "Data-base",
            "Data_base",
            "",
            "Self",
            "Context",
            "Error",
            "Ünicode",
            &"A".repeat(33),
        ] {
            assert!(validate_kind(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_error_is_one_line() {
        let errors = [
            validate_domain("BAD").unwrap_err(),
            validate_group("BAD").unwrap_err(),
            validate_version("1").unwrap_err(),
            validate_kind("bad").unwrap_err(),
            validate_plural("Bad").unwrap_err(),
            validate_project_name("Bad").unwrap_err(),
        ];
        for err in errors {
            assert!(!err.to_string().contains('\n'), "{err}");
        }
    }

    #[test]
    fn module_names() {
        assert_eq!(group_module("foo-bar.baz"), "foo_bar_baz");
        assert_eq!(kind_module("SidecarSet"), "sidecar_set");
        assert_eq!(kind_module("DNSRecord"), "dns_record");
        assert_eq!(crate_name("simple-deployment"), "simple_deployment");
        assert_eq!(project_name_from_dir("My_Operator"), "my-operator");
    }
}
