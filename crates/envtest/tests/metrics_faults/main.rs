//! `/metrics` and fault injection, seen by real clients (kube-rs, kubectl):
//! the request counters move exactly as kube-apiserver's do, and injected
//! faults reach the clients as a real server's failures would.
//!
//! Each test starts its own server, so that no other test's requests move
//! the counters it checks.

#[allow(dead_code)]
#[path = "../support/server.rs"]
mod server;
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

mod metrics;

use std::collections::BTreeMap;

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use opctl_envtest::Envtest;

/// A kube-rs client of `env` (through the kubeconfig it writes).
async fn client_of(env: &Envtest) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(&env.kubeconfig_yaml()).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube-rs accepts the kubeconfig");
    Client::try_from(config).expect("client")
}

/// The samples of a Prometheus text exposition: series → value.
#[derive(Debug, Clone, PartialEq)]
struct Samples(BTreeMap<String, i64>);

impl Samples {
    fn parse(text: &str) -> Samples {
        let mut samples = BTreeMap::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let (series, value) = line
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("not a sample line: {line:?}"));
            let value: i64 = value
                .parse()
                .unwrap_or_else(|_| panic!("not an integer sample: {line:?}"));
            samples.insert(series.to_string(), value);
        }
        Samples(samples)
    }

    /// What changed since `before`, by series (series that did not move are left out).
    fn since(&self, before: &Samples) -> BTreeMap<String, i64> {
        self.0
            .iter()
            .map(|(k, v)| (k.clone(), v - before.0.get(k).copied().unwrap_or(0)))
            .filter(|(_, d)| *d != 0)
            .collect()
    }

    fn get(&self, series: &str) -> i64 {
        self.0.get(series).copied().unwrap_or(0)
    }
}

/// `/metrics` read through the kube client (its credentials, its TLS).
async fn scrape(client: &Client) -> Samples {
    let request = axum::http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let text = client
        .request_text(request)
        .await
        .expect("GET /metrics answers");
    Samples::parse(&text)
}
