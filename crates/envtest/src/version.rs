//! The kube-apiserver release this server implements (its recorded
//! transcripts are the ground truth), as `/version` and the simulated
//! kubelets report it.

use serde_json::{Value, json};

pub(crate) const KUBE_VERSION: (&str, &str) = ("1", "32");
pub(crate) const KUBE_GIT_VERSION: &str = "v1.32.13";

/// The `/version` document.
pub(crate) fn document() -> Value {
    json!({
        "major": KUBE_VERSION.0, "minor": KUBE_VERSION.1,
        "gitVersion": KUBE_GIT_VERSION,
        // No Kubernetes commit is built here; the build fields only keep
        // the shape clients parse (`compiler` as every release reports it).
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.12",
        "compiler": "gc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}
