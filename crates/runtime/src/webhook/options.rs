//! The webhook server's flags (part of the manager's [`Options`](crate::Options)).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::ArgAction;

use crate::Project;

/// Where the webhook server listens and where its certificate comes from.
/// Every project has these flags (as kubebuilder's `main.go` has its
/// webhook flags); the server only starts when webhooks are registered.
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
    /// NAME.NAMESPACE.svc [default: the project name, then
    /// "-webhook-service"].
    #[arg(long, env = "WEBHOOK_SERVICE_NAME")]
    pub webhook_service_name: Option<String>,

    /// Namespace of the webhook Service [default: the project name, then
    /// "-system"].
    #[arg(long, env = "WEBHOOK_SERVICE_NAMESPACE")]
    pub webhook_service_namespace: Option<String>,
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

    /// The webhook Service's name and namespace: the flags', or the names
    /// `config/default` gives it for `project`.
    pub fn service(&self, project: &Project) -> (String, String) {
        let name = self.webhook_service_name.clone();
        let namespace = self.webhook_service_namespace.clone();
        (
            name.unwrap_or_else(|| project.webhook_service_name()),
            namespace.unwrap_or_else(|| project.system_namespace()),
        )
    }

    /// The names the API server may use for the webhook Service, the one
    /// it verifies (`<name>.<namespace>.svc`) first.
    pub fn service_dns_names(&self, project: &Project) -> Vec<String> {
        let (name, namespace) = self.service(project);
        vec![
            format!("{name}.{namespace}.svc"),
            format!("{name}.{namespace}.svc.cluster.local"),
            format!("{name}.{namespace}"),
            name,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    const PROJECT: Project = Project::new("demo", "example.com", "0.1.0");

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
        // As config/default names the Service.
        let names = options.service_dns_names(&PROJECT);
        assert_eq!(names[0], "demo-webhook-service.demo-system.svc");
        assert_eq!(names[3], "demo-webhook-service");
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
            "--webhook-service-name=hooks",
            "--webhook-service-namespace=ops",
        ])
        .expect("flags parse")
        .options;
        assert!(!options.enable_webhooks);
        assert!(options.webhook_self_signed);
        assert_eq!(options.webhook_bind_address.port(), 10443);
        assert_eq!(options.key_path(), PathBuf::from("/certs/key.pem"));
        assert_eq!(options.service_dns_names(&PROJECT)[0], "hooks.ops.svc");
    }
}
