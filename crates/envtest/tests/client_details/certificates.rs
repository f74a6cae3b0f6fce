//! CertificateSigningRequests through kubectl as on kube-apiserver v1.32:
//! the request's PEM and signer checked on create, the requestor recorded,
//! `kubectl certificate approve` / `deny` through `/approval` with the
//! conditions the server completes, the `approve` permission on the signer
//! required of other users, and a certificate issued through `/status`.

use base64::Engine;
use rcgen::{CertificateParams, DnType, KeyPair};
use serde_json::{Value, json};

use crate::kubectl_support::Kubectl;
use crate::server;

/// A PEM certificate request for `common_name` in `organization`.
fn request(common_name: &str, organization: &str) -> String {
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params
        .distinguished_name
        .push(DnType::OrganizationName, organization);
    params
        .serialize_request(&key)
        .expect("a request")
        .pem()
        .expect("PEM")
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn csr(name: &str, signer: &str, request: &str) -> String {
    json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": b64(request), "signerName": signer, "usages": ["client auth"],
            "expirationSeconds": 3600},
    })
    .to_string()
}

fn get(k: &Kubectl, name: &str) -> Value {
    let out = k.ok(&["get", "csr", name, "-o", "json", "--show-managed-fields"]);
    serde_json::from_str(&out).expect("JSON")
}

#[test]
fn requests_are_checked_approved_denied_and_issued() {
    let k = Kubectl::new(&server::shared().kubeconfig);
    let name = server::unique_name("csr");
    let denied = format!("{name}-denied");
    k.ok_stdin(
        &["create", "-f", "-"],
        &csr(&name, "example.com/clients", &request("alice", "dev")),
    );
    k.ok_stdin(
        &["create", "-f", "-"],
        &csr(&denied, "example.com/clients", &request("bob", "dev")),
    );

    let created = get(&k, &name);
    assert_eq!(created["spec"]["username"], "system:admin", "{created}");
    assert_eq!(
        created["spec"]["groups"],
        json!(["system:masters", "system:authenticated"])
    );
    assert_eq!(created["status"], json!({}));
    let table = k.table(&["get", "csr", &name]);
    assert_eq!(
        table[0],
        [
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ]
    );
    assert_eq!(
        table[1][2..],
        ["example.com/clients", "system:admin", "60m", "Pending"]
    );

    let out = k.ok(&["certificate", "approve", &name]);
    assert!(out.contains("approved"), "{out}");
    let approved = get(&k, &name);
    let condition = &approved["status"]["conditions"][0];
    assert_eq!(
        (
            &condition["type"],
            &condition["status"],
            &condition["reason"],
            &condition["message"]
        ),
        (
            &json!("Approved"),
            &json!("True"),
            &json!("KubectlApprove"),
            &json!("This CSR was approved by kubectl certificate approve.")
        ),
        "{approved}"
    );
    assert!(condition["lastUpdateTime"].is_string() && condition["lastTransitionTime"].is_string());
    let managers: Vec<&Value> = approved["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .filter(|m| m["subresource"] == "approval")
        .collect();
    assert_eq!(managers.len(), 1, "{approved}");

    k.ok(&["certificate", "deny", &denied]);
    assert_eq!(
        get(&k, &denied)["status"]["conditions"][0]["reason"],
        "KubectlDeny"
    );
    let both = k.fails(&["certificate", "approve", &denied]);
    assert!(both.contains("is already Denied"), "{both}");
    // The server refuses both conditions at once, as v1.32 does.
    let mut twice = get(&k, &denied);
    twice["status"]["conditions"]
        .as_array_mut()
        .expect("conditions")
        .push(json!({"type": "Approved", "status": "True"}));
    let err = k.fails_stdin(
        &[
            "replace",
            "--raw",
            &format!("/apis/certificates.k8s.io/v1/certificatesigningrequests/{denied}/approval"),
            "-f",
            "-",
        ],
        &twice.to_string(),
    );
    assert!(
        err.contains("status.conditions[1].type: Invalid value: \"Approved\": Approved and Denied conditions are mutually exclusive"),
        "{err}"
    );

    // A signer writes the certificate through /status.
    let mut issued = get(&k, &name);
    issued["status"]["certificate"] = json!(b64(&self_signed_pem()));
    k.ok_stdin(
        &[
            "replace",
            "--raw",
            &format!("/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/status"),
            "-f",
            "-",
        ],
        &issued.to_string(),
    );
    let table = k.ok(&["get", "csr", &name, "--no-headers"]);
    assert!(table.trim_end().ends_with("Approved,Issued"), "{table}");
    // ... which only /status may write.
    let mut again = get(&k, &name);
    again["status"]["certificate"] = json!(b64(&self_signed_pem()));
    let err = k.fails_stdin(
        &[
            "replace",
            "--raw",
            &format!("/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/status"),
            "-f",
            "-",
        ],
        &again.to_string(),
    );
    assert!(
        err.contains("updates may not modify existing certificate content"),
        "{err}"
    );
}

fn self_signed_pem() -> String {
    let key = KeyPair::generate().expect("key");
    CertificateParams::new(vec!["client.example.com".to_string()])
        .expect("params")
        .self_signed(&key)
        .expect("certificate")
        .pem()
}

#[test]
fn invalid_requests_are_refused_with_kube_apiservers_messages() {
    let k = Kubectl::new(&server::shared().kubeconfig);
    let name = server::unique_name("csr-bad");
    let not_pem = k.fails_stdin(
        &["create", "-f", "-"],
        &csr(&name, "example.com/x", "not a request"),
    );
    assert!(
        not_pem.contains("spec.request: Invalid value: []byte{0x6e, 0x6f, 0x74,")
            && not_pem.contains("PEM block type must be CERTIFICATE REQUEST"),
        "{not_pem}"
    );
    let signer = k.fails_stdin(
        &["create", "-f", "-"],
        &csr(&name, "clients", &request("a", "b")),
    );
    assert!(
        signer.contains("spec.signerName: Invalid value: \"clients\": must be a fully qualified domain and path of the form 'example.com/signer-name'"),
        "{signer}"
    );
    let masters = k.fails_stdin(
        &["create", "-f", "-"],
        &csr(
            &name,
            "kubernetes.io/kube-apiserver-client",
            &request("root", "system:masters"),
        ),
    );
    assert!(
        masters.contains("use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"),
        "{masters}"
    );
}

#[test]
fn approving_needs_the_approve_permission_on_the_signer() {
    let k = Kubectl::new(&server::shared().kubeconfig);
    let name = server::unique_name("csr-perm");
    let user = format!("{name}-approver");
    k.ok_stdin(
        &["create", "-f", "-"],
        &csr(&name, "example.com/team", &request("carol", "dev")),
    );
    k.ok(&[
        "create",
        "clusterrole",
        &user,
        "--verb=get,list,update",
        "--resource=certificatesigningrequests,certificatesigningrequests/approval",
    ]);
    k.ok(&[
        "create",
        "clusterrolebinding",
        &user,
        &format!("--clusterrole={user}"),
        &format!("--user={user}"),
    ]);
    let refused = k.fails(&["certificate", "approve", &name, &format!("--as={user}")]);
    assert!(
        refused.contains(&format!(
            "certificatesigningrequests.certificates.k8s.io \"{name}\" is forbidden: user not permitted to approve requests with signerName \"example.com/team\""
        )),
        "{refused}"
    );
    let signers = format!("{user}-signers");
    // `signers` is no served resource, so the rule is written out.
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": signers},
        "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
            "resourceNames": ["example.com/*"], "verbs": ["approve"]}],
    });
    k.ok_stdin(&["create", "-f", "-"], &role.to_string());
    k.ok(&[
        "create",
        "clusterrolebinding",
        &signers,
        &format!("--clusterrole={signers}"),
        &format!("--user={user}"),
    ]);
    k.ok(&["certificate", "approve", &name, &format!("--as={user}")]);
    assert_eq!(
        get(&k, &name)["status"]["conditions"][0]["type"],
        "Approved"
    );
}
