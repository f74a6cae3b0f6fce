//! Validation errors worded as kube-apiserver words them
//! (`k8s.io/apimachinery/pkg/util/validation/field`), so that a refused
//! SidecarSet reads like any other refused object.

use std::fmt;

/// What is wrong with a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The field is missing or empty.
    Required,
    /// The field may not be set here.
    Forbidden,
    /// The value was given before (in a list whose items must be unique).
    Duplicate(String),
    /// The value is malformed.
    Invalid(String),
    /// The value is none of the supported ones (listed in the detail).
    NotSupported(String),
}

/// One invalid field: its path (`spec.containers[1].name`), what is wrong,
/// and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub field: String,
    pub kind: Kind,
    pub detail: String,
}

impl Error {
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(field, Kind::Required, detail)
    }

    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(field, Kind::Forbidden, detail)
    }

    pub fn duplicate(field: impl Into<String>, value: &str) -> Self {
        Self::new(field, Kind::Duplicate(value.to_owned()), "")
    }

    pub fn invalid(field: impl Into<String>, value: &str, detail: impl Into<String>) -> Self {
        Self::new(field, Kind::Invalid(value.to_owned()), detail)
    }

    pub fn not_supported(field: impl Into<String>, value: &str, supported: &[&str]) -> Self {
        let supported: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        let detail = format!("supported values: {}", supported.join(", "));
        Self::new(field, Kind::NotSupported(value.to_owned()), detail)
    }

    fn new(field: impl Into<String>, kind: Kind, detail: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            kind,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.field)?;
        match &self.kind {
            Kind::Required => f.write_str("Required value")?,
            Kind::Forbidden => f.write_str("Forbidden")?,
            Kind::Duplicate(value) => write!(f, "Duplicate value: {value:?}")?,
            Kind::Invalid(value) => write!(f, "Invalid value: {value:?}")?,
            Kind::NotSupported(value) => write!(f, "Unsupported value: {value:?}")?,
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Several errors as one message: `[first, second]`, or the only one alone
/// (as Kubernetes aggregates them).
pub fn message(errors: &[Error]) -> String {
    let parts: Vec<String> = errors.iter().map(Error::to_string).collect();
    match parts.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", parts.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_kube_apiservers() {
        let cases = [
            (
                Error::required("spec.containers", "at least one"),
                "spec.containers: Required value: at least one",
            ),
            (
                Error::forbidden("spec.x", "may not be set"),
                "spec.x: Forbidden: may not be set",
            ),
            (
                Error::duplicate("spec.containers[1].name", "log"),
                "spec.containers[1].name: Duplicate value: \"log\"",
            ),
            (
                Error::invalid("spec.y", "a b", "no spaces"),
                "spec.y: Invalid value: \"a b\": no spaces",
            ),
            (
                Error::not_supported("spec.z", "Sometimes", &["Always", "Never"]),
                "spec.z: Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\"",
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
    }

    #[test]
    fn one_error_stands_alone_and_several_are_bracketed() {
        let a = Error::required("a", "");
        let b = Error::required("b", "");
        assert_eq!(message(std::slice::from_ref(&a)), "a: Required value");
        assert_eq!(message(&[a, b]), "[a: Required value, b: Required value]");
    }
}
