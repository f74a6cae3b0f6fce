//! The webhook server's flags (part of the manager's [`Options`](super::super::Options)).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::ArgAction;

/// Where the webhook server listens and where its certificate comes from.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "webhook")]
#[command(next_help_heading = "Admission webhooks")]
pub struct Options {
    /// Serve the admission webhooks (false: run without them, for example
    /// `make run ARGS=--enable-webhooks=false` without a certificate).
    #[arg(long, env = "ENABLE_WEBHOOKS", action = ArgAction::Set)]
    #[arg(num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    pub enable_webhooks: bool,

    /// Address of the webhook server (HTTPS).
    #[arg(long, env = "WEBHOOK_BIND_ADDRESS", default_value = "0.0.0.0:9443")]
    pub webhook_bind_address: SocketAddr,

    /// Directory of the serving certificate and key, reloaded when they
    /// change (in a cluster, cert-manager's Secret is mounted here).
    #[arg(long, env = "WEBHOOK_CERT_DIR")]
    #[arg(default_value = "/tmp/k8s-webhook-server/serving-certs")]
    pub webhook_cert_dir: PathBuf,

    /// File name of the certificate (PEM, leaf first) in the certificate directory.
    #[arg(long, env = "WEBHOOK_CERT_NAME", default_value = "tls.crt")]
    pub webhook_cert_name: String,

    /// File name of the private key (PEM) in the certificate directory.
    #[arg(long, env = "WEBHOOK_KEY_NAME", default_value = "tls.key")]
    pub webhook_key_name: String,

    /// For local runs and tests without cert-manager: make a CA and a serving
    /// certificate at start-up, write them (and ca.crt) to the certificate
    /// directory, and put the CA into the caBundle of every webhook whose
    /// clientConfig names the webhook Service.
    #[arg(long, env = "WEBHOOK_SELF_SIGNED")]
    pub webhook_self_signed: bool,

    /// Name of the webhook Service: the self-signed certificate is made for
    /// `<name>.<namespace>.svc`.
    #[arg(long, env = "WEBHOOK_SERVICE_NAME")]
    #[arg(default_value = "database-webhook-service")]
    pub webhook_service_name: String,

    /// Namespace of the webhook Service.
    #[arg(long, env = "WEBHOOK_SERVICE_NAMESPACE")]
    #[arg(default_value = "database-system")]
    pub webhook_service_namespace: String,
}

impl Options {
    /// The certificate file.
    pub fn cert_path(&self) -> PathBuf {
        self.webhook_cert_dir.join(&self.webhook_cert_name)
    }

    /// The private key file.
    pub fn key_path(&self) -> PathBuf {
        self.webhook_cert_dir.join(&self.webhook_key_name)
    }

    /// The names the API server may use for the webhook Service, the one
    /// it verifies (`<name>.<namespace>.svc`) first.
    pub fn service_dns_names(&self) -> Vec<String> {
        let name = &self.webhook_service_name;
        let namespace = &self.webhook_service_namespace;
        vec![
            format!("{name}.{namespace}.svc"),
            format!("{name}.{namespace}.svc.cluster.local"),
            format!("{name}.{namespace}"),
            name.clone(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The webhook Service as config/default names it.
    const SERVICE: &str = "database-webhook-service";
    const NAMESPACE: &str = "database-system";

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        options: Options,
    }

    #[test]
    fn defaults_match_the_webhook_service_and_cert_manager() {
        let options = Cli::try_parse_from(["manager"])
            .expect("defaults parse")
            .options;
        assert!(options.enable_webhooks);
        assert!(!options.webhook_self_signed);
        assert_eq!(options.webhook_bind_address.port(), 9443);
        assert_eq!(
            options.cert_path(),
            PathBuf::from("/tmp/k8s-webhook-server/serving-certs/tls.crt")
        );
        let names = options.service_dns_names();
        assert_eq!(names[0], format!("{SERVICE}.{NAMESPACE}.svc"));
    }

    #[test]
    fn flags_override_defaults() {
        let options = Cli::try_parse_from([
            "manager",
            "--enable-webhooks=false",
            "--webhook-self-signed",
            "--webhook-bind-address=127.0.0.1:10443",
            "--webhook-cert-dir=/certs",
            "--webhook-key-name=key.pem",
        ])
        .expect("flags parse")
        .options;
        assert!(!options.enable_webhooks);
        assert!(options.webhook_self_signed);
        assert_eq!(options.webhook_bind_address.port(), 10443);
        assert_eq!(options.key_path(), PathBuf::from("/certs/key.pem"));
    }
}
