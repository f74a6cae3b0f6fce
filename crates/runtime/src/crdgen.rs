//! The printing half of a project's CRD generator (`api/src/crdgen.rs`,
//! which `opctl manifests` builds and runs): the CRDs as one JSON array on
//! stdout, which opctl reads and writes as YAML under config/crd/bases.
//!
//! Here rather than in the generator because the serializer of
//! `CustomResourceDefinition` (its whole OpenAPI schema type) is a large
//! piece of generic code: written in the generator, it would be compiled
//! again after every change to a type; compiled here, once, the generator
//! after a change is the types' own code and a link. Available without
//! the `manager` feature, so that the API crate depends on nothing else.

use std::io::{self, Write};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// Prints `crds` on stdout as `opctl manifests` reads them: one JSON array
/// and a newline.
///
/// ```
/// use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
///
/// // In a generator: `opctl_runtime::crdgen::print(&crds)?` with the
/// // `crd()` of each kind.
/// let crds: Vec<CustomResourceDefinition> = Vec::new();
/// opctl_runtime::crdgen::print(&crds)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn print(crds: &[CustomResourceDefinition]) -> io::Result<()> {
    write(&mut io::stdout().lock(), crds)
}

/// Writes `crds` to `out` as [`print()`] does (not generic, so that its
/// code is compiled in this crate and not in the generator).
pub fn write(out: &mut dyn Write, crds: &[CustomResourceDefinition]) -> io::Result<()> {
    serde_json::to_writer(&mut *out, crds)?;
    writeln!(out)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        CustomResourceDefinitionNames, CustomResourceDefinitionSpec,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn crd(plural: &str) -> CustomResourceDefinition {
        CustomResourceDefinition {
            metadata: ObjectMeta {
                name: Some(format!("{plural}.web.example.com")),
                ..ObjectMeta::default()
            },
            spec: CustomResourceDefinitionSpec {
                group: "web.example.com".to_owned(),
                names: CustomResourceDefinitionNames {
                    kind: "Guestbook".to_owned(),
                    plural: plural.to_owned(),
                    ..CustomResourceDefinitionNames::default()
                },
                scope: "Namespaced".to_owned(),
                ..CustomResourceDefinitionSpec::default()
            },
            status: None,
        }
    }

    #[test]
    fn the_crds_are_one_json_array_on_one_line() {
        let crds = vec![crd("guestbooks"), crd("visitors")];
        let mut out = Vec::new();
        write(&mut out, &crds).expect("written");
        let text = String::from_utf8(out).expect("UTF-8");
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.ends_with(']') || text.ends_with("]\n"), "{text}");
        let back: Vec<CustomResourceDefinition> =
            serde_json::from_str(&text).expect("a JSON array of CRDs");
        assert_eq!(back, crds);
    }

    #[test]
    fn no_crds_is_an_empty_array() {
        let mut out = Vec::new();
        write(&mut out, &[]).expect("written");
        assert_eq!(out, b"[]\n");
    }
}
