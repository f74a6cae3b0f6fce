//! With `--webhook-self-signed`: the CA goes into the `caBundle` of every
//! webhook (mutating and validating, and the conversion webhooks of CRDs
//! when conversions are registered) whose `clientConfig.service` is this
//! manager's webhook Service, once before the manager reports ready and
//! again whenever a configuration changes while it runs (applying
//! config/webhook again empties the caBundle). Only for local runs and
//! tests: in a cluster, cert-manager's CA injector does this.
//!
//! Each replica makes its own CA, so the CA is added to the bundle rather
//! than put in place of it: two replicas that swapped each other's CA out
//! would rewrite the configurations without end (and webhook calls to the
//! other would fail). The bundle keeps the newest [`KEPT_CAS`] CAs.

use std::fmt::Debug;

use anyhow::Context as _;
use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Options;
use crate::backoff::is_transient;
use crate::{Project, Shutdown};

/// Where a webhook is called: the Service (name, namespace), if any, and
/// the bundle of CAs the API server trusts for it.
struct Target<'a> {
    service: Option<(&'a str, &'a str)>,
    ca_bundle: &'a mut Option<ByteString>,
}

impl<'a> Target<'a> {
    fn of(config: &'a mut WebhookClientConfig) -> Self {
        let WebhookClientConfig {
            service, ca_bundle, ..
        } = config;
        let service = service
            .as_ref()
            .map(|s| (s.name.as_str(), s.namespace.as_str()));
        Target { service, ca_bundle }
    }
}

/// A kind that holds webhook client configurations.
trait Configuration:
    kube::Resource<DynamicType = ()>
    + Clone
    + Debug
    + DeserializeOwned
    + Serialize
    + Send
    + Sync
    + 'static
{
    fn targets(&mut self) -> Vec<Target<'_>>;
}

impl Configuration for MutatingWebhookConfiguration {
    fn targets(&mut self) -> Vec<Target<'_>> {
        let webhooks = self.webhooks.iter_mut().flatten();
        webhooks.map(|w| Target::of(&mut w.client_config)).collect()
    }
}

impl Configuration for ValidatingWebhookConfiguration {
    fn targets(&mut self) -> Vec<Target<'_>> {
        let webhooks = self.webhooks.iter_mut().flatten();
        webhooks.map(|w| Target::of(&mut w.client_config)).collect()
    }
}

impl Configuration for CustomResourceDefinition {
    fn targets(&mut self) -> Vec<Target<'_>> {
        let conversion = self.spec.conversion.as_mut();
        let webhook = conversion.and_then(|c| c.webhook.as_mut());
        let config = webhook.and_then(|w| w.client_config.as_mut());
        config
            .map(|config| {
                let service = config
                    .service
                    .as_ref()
                    .map(|s| (s.name.as_str(), s.namespace.as_str()));
                Target {
                    service,
                    ca_bundle: &mut config.ca_bundle,
                }
            })
            .into_iter()
            .collect()
    }
}

/// How many CAs a bundle keeps: one per replica running at once (a
/// rolling update runs two), and the ones that may still serve.
const KEPT_CAS: usize = 4;

/// `bundle` (PEM certificates) with `ca` added as its newest, keeping the
/// newest [`KEPT_CAS`]; `None` when `ca` is in it already.
fn with_ca(bundle: &[u8], ca: &[u8]) -> Option<Vec<u8>> {
    const END: &str = "-----END CERTIFICATE-----";
    let text = String::from_utf8_lossy(bundle);
    let mut certificates: Vec<String> = text
        .split_inclusive(END)
        .map(str::trim)
        .filter(|pem| pem.ends_with(END))
        .map(str::to_owned)
        .collect();
    let ca = String::from_utf8_lossy(ca).trim().to_owned();
    if certificates.contains(&ca) {
        return None;
    }
    certificates.push(ca);
    let dropped = certificates.len().saturating_sub(KEPT_CAS);
    let mut kept = certificates.split_off(dropped).join("\n");
    kept.push('\n');
    Some(kept.into_bytes())
}

/// Puts one CA into the webhooks that call one Service.
#[derive(Clone)]
pub(crate) struct Injector {
    client: Client,
    service_name: String,
    service_namespace: String,
    ca_bundle: ByteString,
    /// Whether the conversion webhooks of CRDs call the Service too (the
    /// manager serves conversions), which needs RBAC for CRDs.
    crds: bool,
}

impl Injector {
    /// Injects `ca_pem` for the Service the options name.
    pub(crate) fn new(
        client: Client,
        options: &Options,
        project: &Project,
        ca_pem: String,
        crds: bool,
    ) -> Self {
        let (service_name, service_namespace) = options.service(project);
        Self {
            client,
            service_name,
            service_namespace,
            ca_bundle: ByteString(ca_pem.into_bytes()),
            crds,
        }
    }

    /// Adds the CA to the bundle of the webhooks of `config` that call the
    /// Service; returns how many there are and whether any changed.
    fn set_ca<K: Configuration>(&self, config: &mut K) -> (usize, bool) {
        let mut calling = 0;
        let mut changed = false;
        for target in config.targets() {
            let ours = target.service.is_some_and(|(name, namespace)| {
                name == self.service_name && namespace == self.service_namespace
            });
            if ours {
                calling += 1;
                let current = target.ca_bundle.as_ref().map(|b| b.0.as_slice());
                if let Some(bundle) = with_ca(current.unwrap_or_default(), &self.ca_bundle.0) {
                    *target.ca_bundle = Some(ByteString(bundle));
                    changed = true;
                }
            }
        }
        (calling, changed)
    }

    /// Injects the CA into `config` if it needs it (reading it again after
    /// a conflicting write, trying again after a passing refusal); returns
    /// how many of its webhooks call the Service.
    async fn inject<K: Configuration>(&self, api: &Api<K>, mut config: K) -> anyhow::Result<usize> {
        let name = config.name_any();
        let mut delay = std::time::Duration::from_millis(100);
        for _ in 0..8 {
            // The CA goes into a copy: after a failed write, `config` is
            // still what the server holds, and the next try writes again.
            let mut updated = config.clone();
            let (calling, changed) = self.set_ca(&mut updated);
            if !changed {
                return Ok(calling);
            }
            match api.replace(&name, &PostParams::default(), &updated).await {
                Ok(_) => {
                    tracing::info!(configuration = %name, webhooks = calling, "injected the webhook CA");
                    return Ok(calling);
                }
                Err(kube::Error::Api(status)) if status.is_conflict() => {
                    config = api.get(&name).await?;
                }
                Err(err) if is_transient(&err) => {
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                Err(err) => return Err(err.into()),
            }
        }
        anyhow::bail!(
            "{name} kept changing, or its writes kept failing, while its caBundle was being set"
        )
    }

    async fn inject_kind<K: Configuration>(&self) -> anyhow::Result<usize> {
        let api: Api<K> = Api::all(self.client.clone());
        let mut calling = 0;
        for config in api.list(&ListParams::default()).await? {
            calling += self.inject(&api, config).await?;
        }
        Ok(calling)
    }

    /// Injects the CA into every configuration that calls the Service.
    pub(crate) async fn inject_all(&self) -> anyhow::Result<()> {
        let calling = async {
            let mutating = self.inject_kind::<MutatingWebhookConfiguration>().await?;
            let validating = self.inject_kind::<ValidatingWebhookConfiguration>().await?;
            let conversion = if self.crds {
                self.inject_kind::<CustomResourceDefinition>().await?
            } else {
                0
            };
            anyhow::Ok(mutating + validating + conversion)
        };
        let needs = if self.crds {
            "mutating- and validatingwebhookconfigurations and customresourcedefinitions"
        } else {
            "mutating- and validatingwebhookconfigurations"
        };
        let calling = calling.await.with_context(|| {
            format!(
                "cannot put the self-signed CA into the webhook configurations (--webhook-self-signed needs to list and update {needs})"
            )
        })?;
        if calling == 0 {
            tracing::warn!(
                service = %format!("{}/{}", self.service_namespace, self.service_name),
                "no webhook calls this Service yet: its CA is injected when one is created (kubectl apply -k config/webhook)"
            );
        }
        Ok(())
    }

    /// Keeps the CA in place until shutdown.
    pub(crate) async fn keep_injected(self, shutdown: Shutdown) {
        let crds = async {
            if self.crds {
                self.watch::<CustomResourceDefinition>().await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            () = shutdown.wait() => {}
            () = self.watch::<MutatingWebhookConfiguration>() => {}
            () = self.watch::<ValidatingWebhookConfiguration>() => {}
            () = crds => {}
        }
    }

    async fn watch<K: Configuration>(&self) {
        let api: Api<K> = Api::all(self.client.clone());
        let events = watcher(api.clone(), watcher::Config::default())
            .default_backoff()
            .applied_objects();
        let mut events = std::pin::pin!(events);
        while let Some(event) = events.next().await {
            let result = match event {
                Ok(config) => self.inject(&api, config).await.map(|_| ()),
                Err(err) => Err(err.into()),
            };
            if let Err(err) = result {
                tracing::warn!(error = %format!("{err:#}"), "cannot keep the webhook CA injected");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::admissionregistration::v1::{ServiceReference, ValidatingWebhook};

    fn webhook(name: &str, service: &str) -> ValidatingWebhook {
        ValidatingWebhook {
            name: name.to_owned(),
            client_config: WebhookClientConfig {
                service: Some(ServiceReference {
                    name: service.to_owned(),
                    namespace: "system".to_owned(),
                    ..ServiceReference::default()
                }),
                ..WebhookClientConfig::default()
            },
            ..ValidatingWebhook::default()
        }
    }

    #[tokio::test]
    async fn only_the_webhooks_calling_the_service_get_the_ca() {
        // A client that is never used: set_ca works on the object alone.
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a URL"));
        let project = Project::new("demo", "example.com", "0.1.0");
        let client = project.client(config).expect("a client");
        let options = Options {
            enable_webhooks: true,
            webhook_bind_address: "127.0.0.1:9443".parse().expect("an address"),
            webhook_cert_dir: "/tmp".into(),
            webhook_cert_name: "tls.crt".to_owned(),
            webhook_key_name: "tls.key".to_owned(),
            webhook_self_signed: true,
            webhook_service_name: Some("webhook-service".to_owned()),
            webhook_service_namespace: Some("system".to_owned()),
        };
        let injector = Injector::new(client, &options, &project, pem("CA"), false);
        let mut config = ValidatingWebhookConfiguration {
            webhooks: Some(vec![
                webhook("ours.example.com", "webhook-service"),
                webhook("theirs.example.com", "other-service"),
            ]),
            ..ValidatingWebhookConfiguration::default()
        };
        assert_eq!(injector.set_ca(&mut config), (1, true));
        assert_eq!(injector.set_ca(&mut config), (1, false), "already in place");
        let webhooks = config.webhooks.expect("webhooks");
        assert_eq!(
            webhooks[0].client_config.ca_bundle,
            Some(ByteString(pem("CA").into_bytes()))
        );
        assert_eq!(webhooks[1].client_config.ca_bundle, None);
    }

    /// A certificate in PEM whose body is `body`.
    fn pem(body: &str) -> String {
        format!("-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n")
    }

    #[test]
    fn a_second_replicas_ca_is_added_and_neither_swaps_the_other_out() {
        let first = with_ca(b"", pem("ONE").as_bytes()).expect("added");
        let both = with_ca(&first, pem("TWO").as_bytes()).expect("added");
        assert_eq!(String::from_utf8_lossy(&both), pem("ONE") + &pem("TWO"));
        assert_eq!(with_ca(&both, pem("ONE").as_bytes()), None);
        assert_eq!(with_ca(&both, pem("TWO").as_bytes()), None);
    }

    #[test]
    fn the_bundle_keeps_the_newest_cas() {
        let mut bundle = Vec::new();
        for n in 0..6 {
            bundle = with_ca(&bundle, pem(&n.to_string()).as_bytes()).expect("added");
        }
        let kept: String = (2..6).map(|n| pem(&n.to_string())).collect();
        assert_eq!(String::from_utf8_lossy(&bundle), kept);
    }
}
