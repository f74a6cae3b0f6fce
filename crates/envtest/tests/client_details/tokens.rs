//! `kubectl create token` issues a token that TokenReview (`kubectl create
//! -f` of a review) authenticates as the ServiceAccount, until the
//! ServiceAccount is deleted. (kubectl sends bearer tokens only over TLS;
//! requests made with such a token are checked through the Python client,
//! tests/python/service_account_tokens.py.)

use serde_json::Value;

use crate::kubectl_support::Kubectl;
use crate::server;

fn review(k: &Kubectl, token: &str) -> Value {
    let body = format!(
        "{{\"apiVersion\": \"authentication.k8s.io/v1\", \"kind\": \"TokenReview\", \"spec\": {{\"token\": \"{token}\"}}}}"
    );
    let out = k.ok_stdin(&["create", "-f", "-", "-o", "json"], &body);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("review output: {e}\n{out}"))
}

#[test]
fn kubectl_create_token_issues_a_token_for_the_service_account() {
    let k = Kubectl::new(&server::shared().kubeconfig);
    let ns = server::unique_name("tokens");
    k.ok(&["create", "namespace", &ns]);
    k.ok(&["create", "serviceaccount", "builder", "-n", &ns]);
    let token = k.ok(&["create", "token", "builder", "-n", &ns, "--duration=20m"]);
    let token = token.trim();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");

    let answer = review(&k, token);
    assert_eq!(answer["status"]["authenticated"], true, "{answer}");
    assert_eq!(
        answer["status"]["user"]["username"],
        format!("system:serviceaccount:{ns}:builder")
    );
    assert_eq!(
        answer["status"]["audiences"],
        serde_json::json!(["https://kubernetes.default.svc"])
    );
    let short = k.fails(&["create", "token", "builder", "-n", &ns, "--duration=1m"]);
    assert!(
        short.contains("may not specify a duration less than 10 minutes"),
        "{short}"
    );

    k.ok(&["delete", "serviceaccount", "builder", "-n", &ns]);
    let answer = review(&k, token);
    // The bound-token validator's lookup of the account fails.
    assert_eq!(
        answer["status"]["error"],
        format!("serviceaccounts \"builder\" not found"),
        "{answer}"
    );
    assert_eq!(answer["status"].get("authenticated"), None);
}
