//! Every request carries `<project>/<version>` as its User-Agent, and the
//! API server records the project as field manager of what it writes.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use opctl_runtime::{Context, WatchScope};

use super::support::{PROJECT, Proxy, address_of, eventually, start};

#[tokio::test]
async fn requests_carry_the_project_as_user_agent_and_field_manager() {
    let env = start().await;
    let proxy = Proxy::start(address_of(&env)).await;
    let client = PROJECT.client(proxy.config(&env).await).expect("a client");
    let ctx = Context::new(PROJECT, client.clone(), WatchScope::AllNamespaces);

    // A create that names no field manager: the API server takes the
    // product part of the User-Agent, as kube-apiserver does.
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut object = ConfigMap::default();
    object.metadata.name = Some("identity".to_owned());
    object.data = Some([("key".to_owned(), "value".to_owned())].into());
    let created = api
        .create(&PostParams::default(), &object)
        .await
        .expect("created");
    let managers: Vec<String> = created
        .managed_fields()
        .iter()
        .filter_map(|entry| entry.manager.clone())
        .collect();
    assert_eq!(managers, ["runtime-test"]);

    // The runtime's own writes name the project.
    let mut child = ConfigMap {
        data: Some([("key".to_owned(), "value".to_owned())].into()),
        ..ConfigMap::default()
    };
    child.metadata.name = Some("identity-child".to_owned());
    child.metadata.namespace = Some("default".to_owned());
    let cached: Option<&ConfigMap> = None;
    assert!(ctx.apply_owned(&api, cached, child).await.expect("applied"));
    let applied = api.get("identity-child").await.expect("read back");
    let entry = &applied.managed_fields()[0];
    assert_eq!(entry.manager.as_deref(), Some("runtime-test"));
    assert_eq!(entry.operation.as_deref(), Some("Apply"));

    eventually(
        Duration::from_secs(5),
        "the proxy to see the requests",
        || async { proxy.requests.lock().expect("lock").len() >= 3 },
    )
    .await;
    let requests = proxy.requests.lock().expect("lock").clone();
    let heads: Vec<&String> = requests
        .iter()
        .filter(|text| text.contains(" HTTP/1.1\r\n"))
        .collect();
    assert!(heads.len() >= 3, "{requests:?}");
    for head in heads {
        let agent = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("user-agent")
                    .then(|| value.trim())
            })
            .unwrap_or_else(|| panic!("no User-Agent in {head}"));
        assert_eq!(agent, "runtime-test/1.2.3");
    }
}
