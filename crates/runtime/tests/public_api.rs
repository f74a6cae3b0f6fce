//! Pins the public API: every bare `pub` item of the crate (the crate
//! denies `unreachable_pub`, so each one is reachable from outside), with
//! its signature, the derives and trait impls of public types, and the
//! `clap` attributes of the flags, listed from the source with `syn` and
//! compared with public-api.txt. A change there is a change of the API:
//! regenerate the list with `UPDATE_PUBLIC_API=1 cargo test -p
//! opctl-runtime --test public_api`, bump the version as semver asks and
//! say it in CHANGELOG.md.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use quote::ToTokens;
use syn::{Attribute, ImplItem, Item, TraitItem, Visibility};

/// Where `mod name;` of the module in `file` lives.
fn module_file(file: &Path, name: &str) -> PathBuf {
    let dir = if file.ends_with("lib.rs") || file.ends_with("mod.rs") {
        file.parent().expect("a directory").to_path_buf()
    } else {
        file.with_extension("")
    };
    let flat = dir.join(format!("{name}.rs"));
    if flat.exists() {
        flat
    } else {
        dir.join(name).join("mod.rs")
    }
}

/// A where clause with the space before it, or nothing.
fn where_clause(generics: &syn::Generics) -> String {
    match &generics.where_clause {
        Some(clause) => format!(" {}", text(clause)),
        None => String::new(),
    }
}

fn is_test(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg") && attr.to_token_stream().to_string().contains("test")
    })
}

fn is_pub(vis: &Visibility) -> bool {
    matches!(vis, Visibility::Public(_))
}

/// Tokens as one line, with the spaces `quote` puts everywhere taken out
/// where Rust would not write them.
fn text(tokens: impl ToTokens) -> String {
    let mut text = tokens.to_token_stream().to_string();
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" ,", ","),
        ("< ", "<"),
        (" >", ">"),
        (" <", "<"),
        ("& ", "&"),
        (" (", "("),
        ("( ", "("),
        (" )", ")"),
        (" :", ":"),
        ("[ ", "["),
        (" ]", "]"),
        (" ;", ";"),
        ("! (", "!("),
        (" .", "."),
        (". ", "."),
    ] {
        text = text.replace(from, to);
    }
    text.replace("->", " -> ").replace("  ", " ")
}

/// The attributes that are API: derives and clap's.
fn api_attributes(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|attr| {
            ["derive", "arg", "command", "group", "must_use"]
                .iter()
                .any(|name| attr.path().is_ident(name))
        })
        .map(text)
        .collect()
}

struct Listing {
    lines: BTreeSet<String>,
    /// Trait impls, kept for the public types once all are known.
    impls: Vec<(String, String, String)>,
    public_types: BTreeSet<String>,
}

impl Listing {
    fn module(&mut self, file: &Path, path: &str) {
        let source = std::fs::read_to_string(file)
            .unwrap_or_else(|err| panic!("cannot read {}: {err}", file.display()));
        let parsed = syn::parse_file(&source)
            .unwrap_or_else(|err| panic!("{} does not parse: {err}", file.display()));
        self.items(&parsed.items, file, path);
    }

    fn items(&mut self, items: &[Item], file: &Path, path: &str) {
        for item in items {
            match item {
                Item::Mod(module) if !is_test(&module.attrs) => {
                    let name = module.ident.to_string();
                    let inner = format!("{path}::{name}");
                    if is_pub(&module.vis) {
                        self.lines.insert(format!("mod {inner}"));
                    }
                    match &module.content {
                        Some((_, items)) => self.items(items, file, &inner),
                        None => self.module(&module_file(file, &name), &inner),
                    }
                }
                Item::Use(used) if is_pub(&used.vis) => {
                    self.lines
                        .insert(format!("{path}: use {}", text(&used.tree)));
                }
                Item::Fn(function) if is_pub(&function.vis) => {
                    self.lines
                        .insert(format!("{path}::{}", text(&function.sig)));
                }
                Item::Const(constant) if is_pub(&constant.vis) => {
                    let line = format!("const {path}::{}: {}", constant.ident, text(&constant.ty));
                    self.lines.insert(line);
                }
                Item::Type(alias) if is_pub(&alias.vis) => {
                    let line = format!("type {path}::{} = {}", alias.ident, text(&alias.ty));
                    self.lines.insert(line);
                }
                Item::Struct(structure) if is_pub(&structure.vis) => {
                    let name = structure.ident.to_string();
                    self.public_types.insert(name.clone());
                    let head = format!("struct {path}::{name}{}", text(&structure.generics));
                    self.attributed(&head, &structure.attrs);
                    for field in &structure.fields {
                        if is_pub(&field.vis) {
                            let ident = field.ident.as_ref().map(ToString::to_string);
                            let line = format!(
                                "{head}::{}: {}",
                                ident.unwrap_or_default(),
                                text(&field.ty)
                            );
                            self.attributed(&line, &field.attrs);
                        }
                    }
                }
                Item::Enum(enumeration) if is_pub(&enumeration.vis) => {
                    let name = enumeration.ident.to_string();
                    self.public_types.insert(name.clone());
                    let head = format!("enum {path}::{name}{}", text(&enumeration.generics));
                    self.attributed(&head, &enumeration.attrs);
                    for variant in &enumeration.variants {
                        let line = format!("{head}::{}{}", variant.ident, text(&variant.fields));
                        self.lines.insert(line);
                    }
                }
                Item::Trait(definition) if is_pub(&definition.vis) => {
                    let name = definition.ident.to_string();
                    self.public_types.insert(name.clone());
                    let bounds = text(&definition.supertraits);
                    let head = format!(
                        "trait {path}::{name}{}: {bounds}",
                        text(&definition.generics)
                    );
                    self.lines.insert(head.clone());
                    for member in &definition.items {
                        let line = match member {
                            TraitItem::Fn(function) => text(&function.sig),
                            TraitItem::Const(constant) => {
                                format!("const {}: {}", constant.ident, text(&constant.ty))
                            }
                            TraitItem::Type(alias) => format!("type {}", alias.ident),
                            other => text(other),
                        };
                        self.lines.insert(format!("{head} {{ {line} }}"));
                    }
                }
                Item::Impl(block) if !is_test(&block.attrs) => {
                    let self_type = text(&block.self_ty);
                    let generics = text(&block.generics);
                    match &block.trait_ {
                        Some((negative, name, _)) => {
                            let not = if negative.is_some() { "!" } else { "" };
                            let line = format!(
                                "impl{generics} {not}{} for {self_type}{}",
                                text(name),
                                where_clause(&block.generics)
                            );
                            let trait_name = name.segments.last().map(|s| s.ident.to_string());
                            self.impls
                                .push((self_type, trait_name.unwrap_or_default(), line));
                        }
                        None => {
                            for member in &block.items {
                                let ImplItem::Fn(function) = member else {
                                    if let ImplItem::Const(constant) = member
                                        && is_pub(&constant.vis)
                                    {
                                        self.lines.insert(format!(
                                            "impl{generics} {self_type} {{ const {}: {} }}",
                                            constant.ident,
                                            text(&constant.ty)
                                        ));
                                    }
                                    continue;
                                };
                                if is_pub(&function.vis) {
                                    self.lines.insert(format!(
                                        "impl{generics} {self_type}{} {{ {} }}",
                                        where_clause(&block.generics),
                                        text(&function.sig)
                                    ));
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn attributed(&mut self, line: &str, attrs: &[Attribute]) {
        let attributes = api_attributes(attrs);
        if attributes.is_empty() {
            self.lines.insert(line.to_owned());
        } else {
            self.lines
                .insert(format!("{line} {}", attributes.join(" ")));
        }
    }
}

fn listing() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut listing = Listing {
        lines: BTreeSet::new(),
        impls: Vec::new(),
        public_types: BTreeSet::new(),
    };
    listing.module(&root.join("src/lib.rs"), "opctl_runtime");
    let public_types = listing.public_types.clone();
    for (self_type, trait_name, line) in std::mem::take(&mut listing.impls) {
        let name = self_type
            .split('<')
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        if public_types.contains(&name) || public_types.contains(&trait_name) {
            listing.lines.insert(line);
        }
    }
    let mut out = String::from(
        "# The public API of opctl-runtime, listed by tests/public_api.rs.\n\
         # Regenerate: UPDATE_PUBLIC_API=1 cargo test -p opctl-runtime --test public_api\n",
    );
    for line in listing.lines {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[test]
fn the_public_api_is_the_one_on_record() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("public-api.txt");
    let current = listing();
    if std::env::var_os("UPDATE_PUBLIC_API").is_some() {
        std::fs::write(&path, &current).expect("public-api.txt written");
        return;
    }
    let recorded = std::fs::read_to_string(&path).unwrap_or_default();
    if recorded != current {
        let old: BTreeSet<&str> = recorded.lines().collect();
        let new: BTreeSet<&str> = current.lines().collect();
        let gone: Vec<&&str> = old.difference(&new).collect();
        let added: Vec<&&str> = new.difference(&old).collect();
        panic!(
            "the public API changed: bump the version in Cargo.toml as semver asks, say so in \
             CHANGELOG.md, and run UPDATE_PUBLIC_API=1 cargo test -p opctl-runtime --test public_api\n\
             removed or changed:\n  {}\nadded or changed:\n  {}",
            gone.iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join("\n  "),
            added
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join("\n  ")
        );
    }
}

#[test]
fn the_listing_sees_what_is_public_and_only_that() {
    let listing = listing();
    for expected in [
        "opctl_runtime: use manager::Manager",
        "struct opctl_runtime::manager::Manager",
        "impl Manager { fn context(&self) -> &Context }",
        "const opctl_runtime::webhook::convert::PATH: &str",
        "impl ApiScope for NamespaceResourceScope",
    ] {
        assert!(
            listing
                .lines()
                .any(|line| line.starts_with(expected) || line.contains(expected)),
            "{expected} missing from\n{listing}"
        );
    }
    for private in [
        "Readiness",
        "fn install_default_provider",
        "ChildWrites",
        "mod tests",
    ] {
        assert!(
            !listing.lines().any(|line| line.contains(private)),
            "{private} is listed\n{listing}"
        );
    }
}
