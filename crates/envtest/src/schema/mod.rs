//! Custom resource schemas: the structural-schema check, validation against
//! `openAPIV3Schema` (including CEL `x-kubernetes-validations`), defaulting and
//! pruning, plus validation of CustomResourceDefinition objects themselves.
//!
//! Messages and field paths follow kube-apiserver v1.32: the transcripts
//! recorded from it, then its sources.

pub(crate) mod cel;
mod cel_quantity;
mod cellib;
pub(crate) mod celvalues;
mod crd_validation;
mod crdparts;
mod default;
mod embedded;
mod fielderr;
mod formats;
mod listtypes;
mod names;
mod node;
mod prune;
mod schemacheck;
mod structural;
mod validate;

#[cfg(test)]
mod celtests;
#[cfg(test)]
mod crd_tests;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod validate_tests;

use std::sync::Arc;

use serde_json::Value;

use crate::error::Cause;
use crate::typeinfo::{ListType, TypeInfo};

use fielderr::{ErrKind, FieldError, FieldPath, into_causes};
use node::Schema;

pub(crate) use crd_validation::validate_crd;

/// A compiled structural schema of one served CRD version.
#[derive(Debug, Clone)]
pub(crate) struct Structural {
    schema: Arc<Schema>,
    cel: Option<Arc<cel::CelNode>>,
}

/// Every check the CRD validator makes on one `openAPIV3Schema`, rooted at
/// `path`: decoding, structural rules, defaults, keyword checks and CEL
/// compilation, in the order kube-apiserver reports them.
pub(crate) fn schema_errors(raw: &Value, path: &FieldPath) -> (Schema, Vec<FieldError>) {
    let s = Schema::parse(raw, path);
    let mut decode = Vec::new();
    s.all_decode_errors(&mut decode);
    if !decode.is_empty() {
        return (s, decode);
    }
    let mut errs = Vec::new();
    let init_errs = unsupported_keywords(&s, path);
    let mut cel_enabled = false;
    if init_errs.is_empty() {
        let structural_errs = structural::validate_structural(path, &s);
        if !structural_errs.is_empty() {
            errs.extend(structural_errs);
        } else {
            let default_errs = default::validate_defaults(path, &s);
            if !default_errs.is_empty() {
                errs.extend(default_errs);
            } else {
                cel_enabled = true;
            }
        }
    }
    errs.extend(schemacheck::check_schema(&s, path, cel_enabled));
    if errs.is_empty() {
        errs = init_errs;
    }
    (s, errs)
}

/// Keywords a structural schema cannot hold at all (`NewStructural` errors).
fn unsupported_keywords(s: &Schema, path: &FieldPath) -> Vec<FieldError> {
    let found = s.has(&|n: &Schema| {
        !n.id.is_empty()
            || !n.schema_uri.is_empty()
            || n.ref_.as_deref().is_some_and(|r| !r.is_empty())
            || n.pattern_properties
            || n.dependencies
            || n.additional_items
            || n.definitions
            || n.items_array.is_some()
    });
    if !found {
        return Vec::new();
    }
    let which = first_unsupported(s).unwrap_or("id");
    let detail = if which == "items" {
        "OpenAPIV3Schema 'items' must be a schema, but is an array".to_string()
    } else {
        format!("OpenAPIV3Schema '{which}' is not supported")
    };
    vec![FieldError::invalid(
        path,
        fielderr::BadValue::str(""),
        &detail,
    )]
}

fn first_unsupported(s: &Schema) -> Option<&'static str> {
    let here = if !s.id.is_empty() {
        Some("id")
    } else if !s.schema_uri.is_empty() {
        Some("schema")
    } else if s.ref_.as_deref().is_some_and(|r| !r.is_empty()) {
        Some("$ref")
    } else if s.pattern_properties {
        Some("patternProperties")
    } else if s.dependencies {
        Some("dependencies")
    } else if s.additional_items {
        Some("additionalItems")
    } else if s.definitions {
        Some("definitions")
    } else if s.items_array.is_some() {
        Some("items")
    } else {
        None
    };
    here.or_else(|| {
        s.items.as_deref().and_then(first_unsupported).or_else(|| {
            s.properties
                .values()
                .chain(s.additional_schema())
                .chain(s.all_of.iter().chain(&s.any_of).chain(&s.one_of))
                .chain(s.not.as_deref())
                .find_map(first_unsupported)
        })
    })
}

impl Structural {
    /// Compiles an `openAPIV3Schema`. Non-structural schemas are refused with the
    /// causes kube-apiserver reports (paths relative to the schema, e.g.
    /// `properties[spec].type`); the CRD validator prefixes them.
    pub(crate) fn compile(schema: &Value) -> Result<Structural, Vec<Cause>> {
        let (s, errs) = schema_errors(schema, &FieldPath::nil());
        if !errs.is_empty() {
            return Err(into_causes(errs));
        }
        let cel = cel::build(&s).map(Arc::new);
        Ok(Structural {
            schema: Arc::new(s),
            cel,
        })
    }

    /// Fills `default`s into `obj` (objects that exist, recursively).
    pub(crate) fn apply_defaults(&self, obj: &mut Value) {
        default::apply(obj, &self.schema);
    }

    /// Drops fields the schema does not know (respecting
    /// `x-kubernetes-preserve-unknown-fields` and embedded resources) and returns
    /// their paths (`spec.extra`, `extraTop`), sorted, for warnings or Strict errors.
    /// `apiVersion`, `kind` and `metadata` at the root are never pruned here.
    pub(crate) fn prune(&self, obj: &mut Value) -> Vec<String> {
        prune::prune_root(obj, &self.schema)
    }

    /// Validates `obj` (after defaulting and pruning). `old` is the stored object
    /// on update, for CEL transition rules (`oldSelf`) and ratcheting.
    pub(crate) fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        self.validate_with_warnings(obj, old).0
    }

    /// Validates `obj` as [`Self::validate`] does, and returns too the
    /// warnings of ratcheted rule failures (an update that leaves a value as
    /// it was is not refused for rules that value fails; kube-apiserver
    /// sends their messages as warnings).
    pub(crate) fn validate_with_warnings(
        &self,
        obj: &Value,
        old: Option<&Value>,
    ) -> (Vec<Cause>, Vec<String>) {
        let s = &self.schema;
        let mut errs = validate::validate_update(s, obj, old, &FieldPath::nil());
        // Embedded resources below the root (the root's metadata is the server's).
        errs.extend(embedded::validate(obj, s, &FieldPath::nil(), false));
        let mut warnings = Vec::new();
        let old_lists_ok = old.is_none_or(|o| listtypes::validate_lists(s, o).is_empty());
        if old_lists_ok {
            errs.extend(listtypes::validate_lists(s, obj));
        }
        if let Some(node) = &self.cel {
            let blocking = errs.iter().any(|e| {
                matches!(
                    e.kind,
                    ErrKind::NotSupported
                        | ErrKind::Required
                        | ErrKind::TooLong
                        | ErrKind::TooMany
                        | ErrKind::TypeInvalid
                )
            });
            if blocking {
                errs.push(FieldError::invalid(
                    &FieldPath::nil(),
                    fielderr::BadValue::Raw("null".into()),
                    "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
                ));
            } else {
                let mut out = match old {
                    Some(_) => cel::Outcome::ratcheting(),
                    None => cel::Outcome::default(),
                };
                let at = cel::Position {
                    is_resource_root: true,
                    ancestor_unchanged: false,
                };
                cel::validate(node, s, obj, old, &FieldPath::nil(), at, &mut out);
                errs.extend(out.errs);
                warnings = out.ratcheted.iter().map(FieldError::error_string).collect();
            }
        }
        (into_causes(errs), warnings)
    }
}

impl TypeInfo for Structural {
    fn list_type(&self, path: &[&str]) -> ListType {
        listtypes::SchemaTypeInfo(&self.schema).list_type(path)
    }

    fn map_is_atomic(&self, path: &[&str]) -> bool {
        listtypes::SchemaTypeInfo(&self.schema).map_is_atomic(path)
    }
}
