//! The built-in Kubernetes kinds a controller can be made for with
//! `create api --resource=false`: every kind of envtest's table of built-in
//! kinds (`crates/envtest/src/builtin/kinds.rs`, the one place to add a
//! kind) that a controller can watch.

pub use opctl_envtest::BuiltinKind;

/// Every kind opctl offers, in the table's order (by group, then resource).
pub fn kinds() -> impl Iterator<Item = &'static BuiltinKind> {
    opctl_envtest::builtin_kinds()
        .iter()
        .filter(|k| k.is_watchable())
}

/// Whether a built-in kind (any kind the server serves, watchable or
/// not: `cs` is ComponentStatus's) has `name` among its short names.
pub fn is_builtin_short_name(name: &str) -> bool {
    opctl_envtest::builtin_kinds()
        .iter()
        .any(|k| k.short_names.contains(&name))
}

/// Whether `group` (as given to `--group`, or its full form such as
/// `rbac.authorization.k8s.io`) is a built-in Kubernetes group.
pub fn is_builtin_group(group: &str) -> bool {
    kinds().any(|k| k.short_group() == group || (!k.group.is_empty() && k.group == group))
}

/// The built-in kind `group/version kind`; `group` may be the short form
/// (`apps`, `core`, `rbac`), the full API group (`rbac.authorization.k8s.io`)
/// or empty for core.
pub fn find(group: &str, version: &str, kind: &str) -> Option<&'static BuiltinKind> {
    kinds().find(|k| {
        let group_matches = k.short_group() == group || k.group == group;
        group_matches && k.version == version && k.kind == kind
    })
}

/// The list of kinds for `--help`: `apps/v1 DaemonSet, Deployment; ...`,
/// one group version after the other.
pub fn help_list() -> String {
    let mut entries: Vec<(String, &str)> = kinds()
        .map(|k| (format!("{}/{}", k.short_group(), k.version), k.kind))
        .collect();
    entries.sort();
    let mut groups: Vec<String> = Vec::new();
    let mut current = "";
    for (group_version, kind) in &entries {
        if group_version != current {
            groups.push(format!("{group_version} {kind}"));
            current = group_version;
        } else if let Some(last) = groups.last_mut() {
            last.push_str(&format!(", {kind}"));
        }
    }
    groups.join("; ")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use kube::api::{Api, ApiResource, DynamicObject, ListParams};
    use kube::config::{KubeConfigOptions, Kubeconfig};

    /// A fresh envtest and a kube client of it.
    pub(crate) async fn envtest_client() -> (opctl_envtest::Envtest, kube::Client) {
        let envtest = opctl_envtest::Envtest::start(opctl_envtest::Config::default())
            .await
            .expect("envtest starts");
        let kubeconfig = Kubeconfig::from_yaml(&envtest.kubeconfig_yaml()).expect("kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .expect("client configuration");
        let client = kube::Client::try_from(config).expect("a client");
        (envtest, client)
    }

    #[test]
    fn kinds_are_found_by_short_or_full_group() {
        let deployment = find("apps", "v1", "Deployment").expect("Deployment");
        assert_eq!(deployment.plural, "deployments");
        assert_eq!(deployment.rust_module(), "k8s_openapi::api::apps::v1");
        let pod = find("core", "v1", "Pod").expect("Pod");
        assert_eq!(pod.group, "");
        assert_eq!(find("", "v1", "Pod"), Some(pod));
        assert!(find("rbac.authorization.k8s.io", "v1", "Role").is_some());
        assert!(find("apps", "v1", "Database").is_none());
        assert!(find("apps", "v2", "Deployment").is_none());
    }

    #[test]
    fn built_in_groups_are_recognised() {
        assert!(is_builtin_group("core"));
        assert!(is_builtin_group("apps"));
        assert!(is_builtin_group("networking.k8s.io"));
        assert!(!is_builtin_group("zalando"));
    }

    /// Reviews are answered, never stored: nothing to watch.
    #[test]
    fn reviews_are_not_offered() {
        assert!(find("authorization", "v1", "SelfSubjectAccessReview").is_none());
        assert!(find("apps", "v1", "Deployment").is_some());
    }

    #[test]
    fn the_help_lists_kinds_by_group_version() {
        let help = help_list();
        assert!(
            help.contains(
                "apps/v1 ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet;"
            ),
            "{help}"
        );
        assert!(
            help.contains("core/v1 ConfigMap, Endpoints, Event,"),
            "{help}"
        );
        assert!(!help.contains("Review"), "{help}");
    }

    /// Every kind the scaffolder offers is served by envtest, so the e2e
    /// tests of a generated controller for it run under `opctl envtest`.
    #[tokio::test]
    async fn envtest_serves_every_kind_offered() {
        let (envtest, client) = envtest_client().await;
        let mut missing = Vec::new();
        for k in kinds() {
            let resource = ApiResource {
                group: k.group.to_owned(),
                version: k.version.to_owned(),
                api_version: k.api_version(),
                kind: k.kind.to_owned(),
                plural: k.plural.to_owned(),
            };
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
            if let Err(err) = api.list(&ListParams::default().limit(1)).await {
                missing.push(format!("{}/{}: {err}", k.api_version(), k.kind));
            }
        }
        envtest.shutdown().await;
        assert!(
            missing.is_empty(),
            "envtest does not serve:\n{}",
            missing.join("\n")
        );
    }
}
