//! The chart's templates derived from config/: one per CRD of
//! config/crd/bases, the manager's role of config/rbac/role.yaml and the
//! webhook configurations of config/webhook/manifests.yaml. Their bodies
//! (CRD spec, rules, webhooks) are copied; their names, namespaces, labels
//! and certificate wiring become the chart's, so that the release
//! `<project>` in namespace `<project>-system` makes what config/default
//! makes.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context as _;
use serde_json::{Value, json};

use super::Manifest;
use crate::project::Project;
use crate::project::paths::{
    ROLE_FILE, WEBHOOK_MANIFESTS, chart_file as path, crd_base, crd_file, target,
};

/// The chart's copy of the manager's role.
pub const ROLE_TEMPLATE: &str = "dist/chart/templates/rbac/role.yaml";
/// The chart's webhook configurations.
pub const WEBHOOK_TEMPLATE: &str = "dist/chart/templates/webhook/manifests.yaml";

const FULLNAME: &str = r#"{{ include "chart.fullname" . }}"#;
const NAMESPACE: &str = "{{ .Release.Namespace }}";
const LABELS: &str = "  labels:\n    {{- include \"chart.labels\" . | nindent 4 }}\n";

/// The chart's template of the CRD in config/crd/bases/`file`.
pub fn crd_template(file: &str) -> String {
    path(&format!("templates/crd/{file}"))
}

/// The paths [`generated`] writes for `project` once config/ is complete.
pub fn paths(project: &Project) -> Vec<String> {
    let mut out: Vec<String> = project
        .crd_resources()
        .map(|r| crd_template(&crd_file(r)))
        .collect();
    out.push(ROLE_TEMPLATE.to_owned());
    if project.has_webhooks() {
        out.push(WEBHOOK_TEMPLATE.to_owned());
    }
    out.sort();
    out.dedup();
    out
}

/// The derived templates of `project`'s chart, from the texts of its config/
/// files in `config` (by path); a file not there (a CRD not generated yet)
/// has no template.
pub fn generated(
    project: &Project,
    config: &BTreeMap<String, String>,
) -> anyhow::Result<Vec<Manifest>> {
    let mut out = Vec::new();
    let mut files: Vec<String> = project.crd_resources().map(crd_file).collect();
    files.sort();
    files.dedup();
    for file in files {
        let source = crd_base(&file);
        let converts = project
            .crd_resources()
            .any(|r| crd_file(r) == file && project.hub_of(r).is_some());
        if let Some(text) = config.get(&source) {
            out.push(Manifest {
                path: crd_template(&file),
                contents: crd(text, &source, converts)
                    .with_context(|| format!("cannot read {source}"))?,
            });
        }
    }
    if let Some(text) = config.get(ROLE_FILE) {
        out.push(Manifest {
            path: ROLE_TEMPLATE.to_owned(),
            contents: role(text).with_context(|| format!("cannot read {ROLE_FILE}"))?,
        });
    }
    if project.has_webhooks()
        && let Some(text) = config.get(WEBHOOK_MANIFESTS)
    {
        out.push(Manifest {
            path: WEBHOOK_TEMPLATE.to_owned(),
            contents: webhooks(text).with_context(|| format!("cannot read {WEBHOOK_MANIFESTS}"))?,
        });
    }
    Ok(out)
}

/// The config/ files the derived templates come from, as they are under
/// `root` (those missing are left out).
pub fn read_config(root: &Path, project: &Project) -> anyhow::Result<BTreeMap<String, String>> {
    let mut sources: Vec<String> = project
        .crd_resources()
        .map(|r| crd_base(&crd_file(r)))
        .collect();
    sources.push(ROLE_FILE.to_owned());
    sources.push(WEBHOOK_MANIFESTS.to_owned());
    let mut out = BTreeMap::new();
    for source in sources {
        match std::fs::read_to_string(target(root, &source)) {
            Ok(text) => {
                out.insert(source, text);
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => anyhow::bail!("cannot read {source}: {err}"),
        }
    }
    Ok(out)
}

fn header(source: &str) -> String {
    format!("# Written by opctl from {source} (`opctl manifests`). DO NOT EDIT.\n")
}

/// The documents of a YAML file, without empty ones.
fn documents(text: &str) -> anyhow::Result<Vec<Value>> {
    let docs: Vec<Value> = serde_saphyr::from_str_multiple(text)
        .map_err(|err| anyhow::anyhow!("{}", err.to_string().lines().next().unwrap_or("")))?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

fn single(text: &str) -> anyhow::Result<Value> {
    let mut docs = documents(text)?;
    anyhow::ensure!(
        docs.len() == 1,
        "expected one document, found {}",
        docs.len()
    );
    Ok(docs.remove(0))
}

fn str_at<'v>(doc: &'v Value, pointer: &str) -> anyhow::Result<&'v str> {
    doc.pointer(pointer)
        .and_then(Value::as_str)
        .with_context(|| format!("{pointer} is missing"))
}

/// YAML of `value`, its text escaped so that Go templates print it as is.
fn yaml(value: &Value) -> anyhow::Result<String> {
    let text = serde_saphyr::to_string(value).context("cannot render YAML")?;
    Ok(escape(&text))
}

/// `{{` starts an action in a Go template; a raw string prints it.
fn escape(text: &str) -> String {
    text.replace("{{", "{{`{{`}}")
}

/// The chart's template of a CRD; with `converts`, its conversion webhook
/// (the chart's Service, `/convert`) and CA as for the admission webhooks,
/// while the chart's webhooks are enabled.
fn crd(text: &str, source: &str, converts: bool) -> anyhow::Result<String> {
    let doc = single(text)?;
    let name = str_at(&doc, "/metadata/name")?;
    let spec = doc.get("spec").context("spec is missing")?;
    let (annotations, conversion) = if converts {
        (
            format!(
                "  {{{{- if or .Values.crd.keep (and .Values.webhook.enable .Values.certManager.enable) }}}}\n  \
                 annotations:\n    \
                 {{{{- if .Values.crd.keep }}}}\n    \
                 helm.sh/resource-policy: keep\n    \
                 {{{{- end }}}}\n    \
                 {{{{- if and .Values.webhook.enable .Values.certManager.enable }}}}\n    \
                 cert-manager.io/inject-ca-from: {NAMESPACE}/{FULLNAME}-serving-cert\n    \
                 {{{{- end }}}}\n  \
                 {{{{- end }}}}\n"
            ),
            format!(
                "  {{{{- if .Values.webhook.enable }}}}\n  \
                 conversion:\n    \
                 strategy: Webhook\n    \
                 webhook:\n      \
                 {}\n      \
                 conversionReviewVersions:\n      \
                 - v1\n  \
                 {{{{- end }}}}\n",
                client_config(
                    &" ".repeat(8),
                    &[("path", "/convert".to_owned()), ("port", "443".to_owned())]
                )
            ),
        )
    } else {
        (
            "  {{- if .Values.crd.keep }}\n  \
             annotations:\n    \
             helm.sh/resource-policy: keep\n  \
             {{- end }}\n"
                .to_owned(),
            String::new(),
        )
    };
    Ok(format!(
        "{}{{{{- if .Values.crd.enable }}}}\n\
         apiVersion: apiextensions.k8s.io/v1\n\
         kind: CustomResourceDefinition\n\
         metadata:\n\
         {annotations}\
         {LABELS}  \
         name: {}\n\
         {}\
         {conversion}\
         {{{{- end }}}}\n",
        header(source),
        escape(name),
        yaml(&json!({ "spec": spec }))?,
    ))
}

fn role(text: &str) -> anyhow::Result<String> {
    let doc = single(text)?;
    let kind = str_at(&doc, "/kind")?;
    anyhow::ensure!(
        kind == "ClusterRole" || kind == "Role",
        "kind {kind} is neither ClusterRole nor Role"
    );
    let name = str_at(&doc, "/metadata/name")?;
    let namespace = if kind == "Role" {
        format!("  namespace: {NAMESPACE}\n")
    } else {
        String::new()
    };
    let rules = doc.get("rules").cloned().unwrap_or(json!([]));
    Ok(format!(
        "{}{{{{- if .Values.rbac.enable }}}}\n\
         apiVersion: rbac.authorization.k8s.io/v1\n\
         kind: {kind}\n\
         metadata:\n\
         {LABELS}  \
         name: {FULLNAME}-{}\n\
         {namespace}\
         {}\
         {{{{- end }}}}\n",
        header(ROLE_FILE),
        escape(name),
        yaml(&json!({ "rules": rules }))?,
    ))
}

fn webhooks(text: &str) -> anyhow::Result<String> {
    let mut out = header(WEBHOOK_MANIFESTS);
    out.push_str("{{- if .Values.webhook.enable }}\n");
    for (i, doc) in documents(text)?.into_iter().enumerate() {
        let kind = str_at(&doc, "/kind")?;
        anyhow::ensure!(
            kind == "MutatingWebhookConfiguration" || kind == "ValidatingWebhookConfiguration",
            "kind {kind} is not a webhook configuration"
        );
        let name = str_at(&doc, "/metadata/name")?;
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&format!(
            "apiVersion: admissionregistration.k8s.io/v1\n\
             kind: {kind}\n\
             metadata:\n  \
             {{{{- if .Values.certManager.enable }}}}\n  \
             annotations:\n    \
             cert-manager.io/inject-ca-from: {NAMESPACE}/{FULLNAME}-serving-cert\n  \
             {{{{- end }}}}\n\
             {LABELS}  \
             name: {FULLNAME}-{}\n",
            escape(name)
        ));
        out.push_str(&webhook_list(&doc)?);
    }
    out.push_str("{{- end }}\n");
    Ok(out)
}

/// The `webhooks:` list with each clientConfig pointing at the chart's
/// Service, and its CA from cert-manager or from the values.
fn webhook_list(doc: &Value) -> anyhow::Result<String> {
    let mut list = doc
        .get("webhooks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut configs = Vec::new();
    for (i, webhook) in list.iter_mut().enumerate() {
        let service = webhook
            .pointer("/clientConfig/service")
            .cloned()
            .context("a webhook has no clientConfig.service")?;
        configs.push(service);
        webhook["clientConfig"] = json!(placeholder(i));
    }
    // kustomize leaves out an empty list (a project whose only webhook
    // converts has a configuration without webhooks): so does the chart.
    if list.is_empty() {
        return Ok(String::new());
    }
    let mut text = yaml(&json!({ "webhooks": list }))?;
    for (i, service) in configs.iter().enumerate() {
        let token = format!("clientConfig: {}", placeholder(i));
        let line_start = text[..text.find(&token).context("clientConfig was not written")?]
            .rfind('\n')
            .map_or(0, |n| n + 1);
        let at = text[line_start..].find(&token).unwrap_or(0);
        let pad = " ".repeat(at + 2);
        let fields: Vec<(&str, String)> = ["path", "port"]
            .into_iter()
            .filter_map(|key| {
                let value = match service.get(key)? {
                    Value::String(s) => escape(s),
                    other => other.to_string(),
                };
                Some((key, value))
            })
            .collect();
        text = text.replacen(&token, &client_config(&pad, &fields), 1);
    }
    Ok(text)
}

/// A `clientConfig:` calling the chart's webhook Service, its CA from
/// cert-manager or from the values; its lines after the first indented by
/// `pad`, the Service's `fields` (path, port) last.
fn client_config(pad: &str, fields: &[(&str, String)]) -> String {
    let mut block = format!(
        "clientConfig:\n\
         {pad}{{{{- if not .Values.certManager.enable }}}}\n\
         {pad}caBundle: {{{{ .Values.webhook.caBundle | quote }}}}\n\
         {pad}{{{{- end }}}}\n\
         {pad}service:\n\
         {pad}  name: {FULLNAME}-webhook-service\n\
         {pad}  namespace: {NAMESPACE}"
    );
    for (key, value) in fields {
        block.push_str(&format!("\n{pad}  {key}: {value}"));
    }
    block
}

fn placeholder(i: usize) -> String {
    format!("opctl-client-config-{i}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_template_actions_in_copied_text_are_escaped() {
        assert_eq!(escape("a {{ b }} c"), "a {{`{{`}} b }} c");
    }

    #[test]
    fn a_webhook_gets_the_charts_service_and_ca() {
        let text = "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: validating-webhook-configuration\nwebhooks:\n- admissionReviewVersions:\n  - v1\n  clientConfig:\n    service:\n      name: webhook-service\n      namespace: system\n      path: /validate-x\n  name: vx.example.com\n  sideEffects: None\n";
        let out = webhooks(text).expect("converts");
        assert!(
            out.contains(
                "  name: {{ include \"chart.fullname\" . }}-validating-webhook-configuration\n"
            ),
            "{out}"
        );
        assert!(out.contains("  clientConfig:\n    {{- if not .Values.certManager.enable }}\n    caBundle: {{ .Values.webhook.caBundle | quote }}\n    {{- end }}\n    service:\n      name: {{ include \"chart.fullname\" . }}-webhook-service\n      namespace: {{ .Release.Namespace }}\n      path: /validate-x\n  name: vx.example.com\n"), "{out}");
        assert!(!out.contains("opctl-client-config"), "{out}");
    }

    #[test]
    fn other_documents_are_refused() {
        assert!(role("kind: Pod\nmetadata:\n  name: x\n").is_err());
        assert!(crd("a: [\n", "x.yaml", false).is_err());
        assert!(webhooks("kind: Pod\nmetadata:\n  name: x\n").is_err());
    }
}
