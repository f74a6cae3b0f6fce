//! Webhook configurations from `// +opctl:webhook:...` markers (kubebuilder's
//! `+kubebuilder:webhook` in spirit):
//!
//! ```text
//! // +opctl:webhook:path=/mutate-apps-kruise-io-v1alpha1-sidecarset,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps.kruise.io,resources=sidecarsets,verbs=create;update,versions=v1alpha1,name=msidecarset-v1alpha1.apps.kruise.io,admissionReviewVersions=v1
//! ```
//!
//! Every marker of every Rust file under src/ becomes one webhook of the
//! project's MutatingWebhookConfiguration or ValidatingWebhookConfiguration
//! (sorted by name), calling the webhook Service at the marker's path:
//! config/webhook/manifests.yaml.

use std::collections::BTreeMap;

use anyhow::Context as _;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
    ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::project::names;

const PREFIX: &str = "+opctl:webhook:";

/// The configurations' names and the Service they call, before
/// config/default adds the project's prefix and namespace.
pub const MUTATING_CONFIGURATION: &str = "mutating-webhook-configuration";
pub const VALIDATING_CONFIGURATION: &str = "validating-webhook-configuration";
pub const SERVICE_NAME: &str = "webhook-service";
pub const SERVICE_NAMESPACE: &str = "system";

/// One parsed marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub name: String,
    pub path: String,
    pub mutating: bool,
    /// `Fail` or `Ignore`.
    pub failure_policy: String,
    /// `None` or `NoneOnDryRun`.
    pub side_effects: String,
    pub groups: Vec<String>,
    pub resources: Vec<String>,
    /// Upper case: CREATE, UPDATE, DELETE, CONNECT or `*`.
    pub operations: Vec<String>,
    pub versions: Vec<String>,
    pub admission_review_versions: Vec<String>,
    pub timeout_seconds: Option<i32>,
    /// `Never` or `IfNeeded` (mutating webhooks only).
    pub reinvocation_policy: Option<String>,
    /// `Exact` or `Equivalent`.
    pub match_policy: Option<String>,
}

/// Every marker found, by webhook name.
#[derive(Debug, Clone, Default)]
pub struct Markers {
    by_name: BTreeMap<String, (String, Marker)>,
}

impl Markers {
    /// Adds the markers found in `text` (the file at `path`, for errors).
    pub fn add_source(&mut self, path: &str, text: &str) -> anyhow::Result<()> {
        for (number, line) in text.lines().enumerate() {
            let Some(comment) = line.trim_start().strip_prefix("//") else {
                continue;
            };
            let Some(spec) = comment.trim_start().strip_prefix(PREFIX) else {
                continue;
            };
            let at = format!("{path}:{}", number + 1);
            let marker =
                parse(spec.trim()).with_context(|| format!("{at}: bad `+opctl:webhook` marker"))?;
            if let Some((other, _)) = self.by_name.get(&marker.name) {
                anyhow::bail!(
                    "{at}: the webhook name {} is already used at {other}; every webhook needs its own name",
                    marker.name
                );
            }
            self.by_name.insert(marker.name.clone(), (at, marker));
        }
        Ok(())
    }

    /// Whether no marker was found.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    fn markers(&self, mutating: bool) -> impl Iterator<Item = &Marker> {
        self.by_name
            .values()
            .map(|(_, m)| m)
            .filter(move |m| m.mutating == mutating)
    }

    /// The MutatingWebhookConfiguration, if any marker is mutating.
    pub fn mutating(&self) -> Option<MutatingWebhookConfiguration> {
        let webhooks: Vec<MutatingWebhook> = self
            .markers(true)
            .map(|m| MutatingWebhook {
                admission_review_versions: m.admission_review_versions.clone(),
                client_config: client_config(&m.path),
                failure_policy: Some(m.failure_policy.clone()),
                match_policy: m.match_policy.clone(),
                name: m.name.clone(),
                reinvocation_policy: m.reinvocation_policy.clone(),
                rules: Some(vec![rule(m)]),
                side_effects: m.side_effects.clone(),
                timeout_seconds: m.timeout_seconds,
                ..MutatingWebhook::default()
            })
            .collect();
        (!webhooks.is_empty()).then(|| MutatingWebhookConfiguration {
            metadata: ObjectMeta {
                name: Some(MUTATING_CONFIGURATION.to_owned()),
                ..ObjectMeta::default()
            },
            webhooks: Some(webhooks),
        })
    }

    /// The ValidatingWebhookConfiguration, if any marker is validating.
    pub fn validating(&self) -> Option<ValidatingWebhookConfiguration> {
        let webhooks: Vec<ValidatingWebhook> = self
            .markers(false)
            .map(|m| ValidatingWebhook {
                admission_review_versions: m.admission_review_versions.clone(),
                client_config: client_config(&m.path),
                failure_policy: Some(m.failure_policy.clone()),
                match_policy: m.match_policy.clone(),
                name: m.name.clone(),
                rules: Some(vec![rule(m)]),
                side_effects: m.side_effects.clone(),
                timeout_seconds: m.timeout_seconds,
                ..ValidatingWebhook::default()
            })
            .collect();
        (!webhooks.is_empty()).then(|| ValidatingWebhookConfiguration {
            metadata: ObjectMeta {
                name: Some(VALIDATING_CONFIGURATION.to_owned()),
                ..ObjectMeta::default()
            },
            webhooks: Some(webhooks),
        })
    }

    /// config/webhook/manifests.yaml: the configurations that have webhooks.
    pub fn to_yaml(&self) -> anyhow::Result<String> {
        let mut out = String::from(
            "# Written by `opctl manifests` from the +opctl:webhook markers in src/. DO NOT EDIT.\n",
        );
        let mut documents = Vec::new();
        if let Some(config) = self.mutating() {
            documents.push(serde_saphyr::to_string(&config)?);
        }
        if let Some(config) = self.validating() {
            documents.push(serde_saphyr::to_string(&config)?);
        }
        if documents.is_empty() {
            // kustomize needs an object in every file it lists: an empty
            // configuration keeps config/webhook valid without markers.
            documents.push(serde_saphyr::to_string(&ValidatingWebhookConfiguration {
                metadata: ObjectMeta {
                    name: Some(VALIDATING_CONFIGURATION.to_owned()),
                    ..ObjectMeta::default()
                },
                webhooks: None,
            })?);
        }
        for document in documents {
            out.push_str("---\n");
            out.push_str(&document);
        }
        Ok(out)
    }
}

fn client_config(path: &str) -> WebhookClientConfig {
    WebhookClientConfig {
        service: Some(ServiceReference {
            name: SERVICE_NAME.to_owned(),
            namespace: SERVICE_NAMESPACE.to_owned(),
            path: Some(path.to_owned()),
            port: None,
        }),
        ..WebhookClientConfig::default()
    }
}

fn rule(m: &Marker) -> RuleWithOperations {
    RuleWithOperations {
        api_groups: Some(m.groups.clone()),
        api_versions: Some(m.versions.clone()),
        operations: Some(m.operations.clone()),
        resources: Some(m.resources.clone()),
        scope: None,
    }
}

/// The values of a `;`-separated list, each checked.
fn list(key: &str, value: &str, check: impl Fn(&str) -> bool) -> anyhow::Result<Vec<String>> {
    let values: Vec<String> = value
        .split(';')
        .map(str::trim)
        .map(|v| if v == "\"\"" { "" } else { v })
        .map(str::to_owned)
        .collect();
    for v in &values {
        if !check(v) {
            anyhow::bail!("{key}={value}: {v:?} is not a valid value");
        }
    }
    Ok(values)
}

/// One of `choices`, compared without case; returns the canonical spelling.
fn choice(key: &str, value: &str, choices: &[&str]) -> anyhow::Result<String> {
    choices
        .iter()
        .find(|c| c.eq_ignore_ascii_case(value))
        .map(|c| (*c).to_owned())
        .ok_or_else(|| anyhow::anyhow!("{key}={value}: expected one of {}", choices.join(", ")))
}

fn is_word(v: &str) -> bool {
    !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '/' | '*'))
}

/// Parses the text after `+opctl:webhook:`.
pub fn parse(spec: &str) -> anyhow::Result<Marker> {
    let mut values: BTreeMap<&str, &str> = BTreeMap::new();
    for part in spec.split(',') {
        let (key, value) = part.split_once('=').with_context(|| {
            format!("{part:?} is not key=value; write path=/validate-...,mutating=false,...")
        })?;
        let key = key.trim();
        if values.insert(key, value.trim()).is_some() {
            anyhow::bail!("{key} is given twice");
        }
    }
    let mut take = |key: &str| values.remove(key);
    fn required<'a>(key: &str, value: Option<&'a str>) -> anyhow::Result<&'a str> {
        value.ok_or_else(|| {
            anyhow::anyhow!("{key}= is missing; path, mutating, failurePolicy, sideEffects, groups, resources, verbs, versions, name and admissionReviewVersions are required")
        })
    }
    let path = required("path", take("path"))?.to_owned();
    if !path.starts_with('/') || path.contains(char::is_whitespace) {
        anyhow::bail!("path={path}: a URL path starts with '/' and has no spaces");
    }
    let mutating = match required("mutating", take("mutating"))? {
        "true" => true,
        "false" => false,
        other => anyhow::bail!("mutating={other}: expected true or false"),
    };
    let failure_policy = choice(
        "failurePolicy",
        required("failurePolicy", take("failurePolicy"))?,
        &["Fail", "Ignore"],
    )?;
    let side_effects = choice(
        "sideEffects",
        required("sideEffects", take("sideEffects"))?,
        &["None", "NoneOnDryRun"],
    )?;
    let groups = list("groups", required("groups", take("groups"))?, |g| {
        g.is_empty() || g == "*" || names::is_dns1123_subdomain(g) || g == "core"
    })?
    .into_iter()
    .map(|g| if g == "core" { String::new() } else { g })
    .collect();
    let resources = list(
        "resources",
        required("resources", take("resources"))?,
        is_word,
    )?;
    let operations = list("verbs", required("verbs", take("verbs"))?, |v| {
        ["create", "update", "delete", "connect", "*"].contains(&v.to_ascii_lowercase().as_str())
    })?
    .into_iter()
    .map(|v| v.to_ascii_uppercase())
    .collect();
    let versions = list("versions", required("versions", take("versions"))?, is_word)?;
    let name = required("name", take("name"))?.to_owned();
    if !names::is_dns1123_subdomain(&name) || name.split('.').count() < 3 {
        anyhow::bail!(
            "name={name}: a webhook name is a fully qualified DNS name of at least three parts, such as mguestbook-v1.web.example.com"
        );
    }
    let admission_review_versions = list(
        "admissionReviewVersions",
        required("admissionReviewVersions", take("admissionReviewVersions"))?,
        |v| v == "v1" || v == "v1beta1",
    )?;
    let timeout_seconds = match take("timeoutSeconds") {
        None => None,
        Some(value) => match value.parse::<i32>() {
            Ok(seconds) if (1..=30).contains(&seconds) => Some(seconds),
            _ => anyhow::bail!("timeoutSeconds={value}: expected a number of seconds from 1 to 30"),
        },
    };
    let reinvocation_policy = take("reinvocationPolicy")
        .map(|v| choice("reinvocationPolicy", v, &["Never", "IfNeeded"]))
        .transpose()?;
    if reinvocation_policy.is_some() && !mutating {
        anyhow::bail!("reinvocationPolicy is only for mutating webhooks");
    }
    let match_policy = take("matchPolicy")
        .map(|v| choice("matchPolicy", v, &["Exact", "Equivalent"]))
        .transpose()?;
    if let Some(key) = values.keys().next() {
        anyhow::bail!(
            "unknown key {key:?}; the keys are path, mutating, failurePolicy, sideEffects, groups, resources, verbs, versions, name, admissionReviewVersions, timeoutSeconds, reinvocationPolicy and matchPolicy"
        );
    }
    Ok(Marker {
        name,
        path,
        mutating,
        failure_policy,
        side_effects,
        groups,
        resources,
        operations,
        versions,
        admission_review_versions,
        timeout_seconds,
        reinvocation_policy,
        match_policy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MUTATING: &str = "// +opctl:webhook:path=/mutate-core-v1-pod,mutating=true,failurePolicy=fail,sideEffects=None,groups=\"\",resources=pods,verbs=create;update,versions=v1,name=mpod-v1.core.example.com,admissionReviewVersions=v1\n";
    const VALIDATING: &str = "    // +opctl:webhook:path=/validate-web-example-com-v1-guestbook,mutating=false,failurePolicy=Ignore,sideEffects=None,groups=web.example.com,resources=guestbooks,verbs=create;update;delete,versions=v1,name=vguestbook-v1.web.example.com,admissionReviewVersions=v1;v1beta1,timeoutSeconds=5\n";

    #[test]
    fn markers_become_configurations() {
        let mut markers = Markers::default();
        markers
            .add_source("src/a.rs", &format!("fn x() {{}}\n{MUTATING}"))
            .expect("valid");
        markers.add_source("src/b.rs", VALIDATING).expect("valid");
        let mutating = markers.mutating().expect("a mutating configuration");
        let webhooks = mutating.webhooks.expect("webhooks");
        assert_eq!(webhooks.len(), 1);
        let hook = &webhooks[0];
        assert_eq!(hook.name, "mpod-v1.core.example.com");
        assert_eq!(hook.failure_policy.as_deref(), Some("Fail"));
        let rules = hook.rules.as_deref().expect("rules");
        assert_eq!(rules[0].api_groups.as_deref(), Some(&[String::new()][..]));
        assert_eq!(
            rules[0].operations.as_deref(),
            Some(&["CREATE".to_owned(), "UPDATE".to_owned()][..])
        );
        let service = hook.client_config.service.as_ref().expect("service");
        assert_eq!(service.path.as_deref(), Some("/mutate-core-v1-pod"));
        assert_eq!(service.name, SERVICE_NAME);

        let validating = markers.validating().expect("a validating configuration");
        let hook = &validating.webhooks.expect("webhooks")[0];
        assert_eq!(hook.failure_policy.as_deref(), Some("Ignore"));
        assert_eq!(hook.timeout_seconds, Some(5));
        assert_eq!(hook.admission_review_versions, ["v1", "v1beta1"]);

        let yaml = markers.to_yaml().expect("renders");
        let docs: Vec<serde_json::Value> =
            serde_saphyr::from_str_multiple(&yaml).expect("YAML parses");
        assert_eq!(docs.len(), 2);
        assert_eq!(markers.to_yaml().expect("renders"), yaml, "deterministic");
    }

    #[test]
    fn no_marker_gives_an_empty_configuration() {
        let yaml = Markers::default().to_yaml().expect("renders");
        let config: ValidatingWebhookConfiguration =
            serde_saphyr::from_str(yaml.trim_start_matches(|c| c != '-')).expect("parses");
        assert!(config.webhooks.is_none());
    }

    #[test]
    fn bad_markers_are_reported_with_their_place() {
        for (marker, expected) in [
            ("path=/x", "mutating= is missing"),
            (
                &MUTATING.replace("failurePolicy=fail", "failurePolicy=sometimes"),
                "expected one of Fail, Ignore",
            ),
            (&MUTATING.replace("path=/", "path="), "starts with '/'"),
            (&MUTATING.replace("verbs=create", "verbs=get"), "verbs="),
            (
                &MUTATING.replace("name=mpod-v1.core.example.com", "name=mpod"),
                "at least three parts",
            ),
            (
                &MUTATING.replace(",versions=v1", ",colour=blue,versions=v1"),
                "unknown key \"colour\"",
            ),
            (
                &MUTATING.replace(
                    "mutating=true",
                    "mutating=false,reinvocationPolicy=IfNeeded",
                ),
                "only for mutating",
            ),
            ("path=/x,path=/y", "given twice"),
        ] {
            let text = if marker.starts_with("//") {
                marker.to_owned()
            } else {
                format!("// +opctl:webhook:{marker}\n")
            };
            let err = Markers::default()
                .add_source("src/x.rs", &format!("\n{text}"))
                .expect_err(marker);
            let message = format!("{err:#}");
            assert!(
                message.starts_with("src/x.rs:2: bad `+opctl:webhook` marker"),
                "{message}"
            );
            assert!(message.contains(expected), "{marker}: {message}");
        }
    }

    #[test]
    fn a_name_used_twice_is_refused() {
        let mut markers = Markers::default();
        markers.add_source("src/a.rs", MUTATING).expect("valid");
        let err = markers.add_source("src/b.rs", MUTATING).expect_err("twice");
        assert!(
            err.to_string().contains("already used at src/a.rs:1"),
            "{err}"
        );
    }
}
