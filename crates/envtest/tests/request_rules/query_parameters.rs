//! Query parameters as kube-apiserver v1.32's parameter codec reads them:
//! malformed numbers are 400s with Go's parser text and change nothing,
//! any `watch` value but `false` / `0` watches, `continue` cannot be
//! combined with a resourceVersion, selectors are held to label syntax, and
//! a negative grace period is not an error.

use axum::http::Request;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

use crate::common::{client, kubectl, namespace};

async fn config_map(client: &Client, ns: &str, name: &str) -> ConfigMap {
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"suite": "query"}}, "data": {"k": "v"}
    }))
    .expect("a ConfigMap");
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &cm)
        .await
        .expect("ConfigMap created")
}

/// The JSON answer of a raw GET that must succeed.
async fn get_json(client: &Client, uri: &str) -> serde_json::Value {
    let request = Request::get(uri).body(Vec::new()).expect("request");
    let text = client
        .request_text(request)
        .await
        .unwrap_or_else(|e| panic!("GET {uri}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {uri}: {e}: {text}"))
}

/// The Status of a raw GET that must fail.
async fn get_error(client: &Client, uri: &str) -> kube::core::Status {
    let request = Request::get(uri).body(Vec::new()).expect("request");
    match client.request_text(request).await {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("GET {uri}: expected an API error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_numbers_are_refused_with_the_parsers_text() {
    let client = client().await;
    let ns = namespace(&client, "query-int").await;
    config_map(&client, &ns, "one").await;
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    for query in [
        "limit=abc",
        "timeoutSeconds=abc",
        "watch=true&timeoutSeconds=abc",
        "limit=",
    ] {
        let status = get_error(&client, &format!("{base}?{query}")).await;
        let shown = query.split('=').nth(1).unwrap_or_default();
        let shown = if query.ends_with("timeoutSeconds=abc") {
            "abc"
        } else {
            shown
        };
        assert_eq!(
            (status.code, status.reason.as_str(), status.message.as_str()),
            (
                400,
                "BadRequest",
                format!("strconv.ParseInt: parsing \"{shown}\": invalid syntax").as_str()
            ),
            "{query}"
        );
    }
    let status = get_error(&client, &format!("{base}?limit=99999999999999999999")).await;
    assert_eq!(
        status.message,
        "strconv.ParseInt: parsing \"99999999999999999999\": value out of range"
    );
    // A negative limit is no limit.
    let list = get_json(
        &client,
        &format!("{base}?limit=-1&labelSelector=suite%3Dquery"),
    )
    .await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");

    // kubectl shows the same refusal.
    let out = kubectl().fails(&["get", "--raw", &format!("{base}?timeoutSeconds=1x")]);
    assert!(
        out.contains("strconv.ParseInt: parsing \\\"1x\\\": invalid syntax")
            || out.contains("strconv.ParseInt: parsing \"1x\": invalid syntax"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_watch_value_but_false_or_zero_watches() {
    let client = client().await;
    let ns = namespace(&client, "query-watch").await;
    config_map(&client, &ns, "one").await;
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    for (value, watches) in [("maybe", true), ("", true), ("FALSE", false), ("0", false)] {
        let uri =
            format!("{base}?watch={value}&timeoutSeconds=1&fieldSelector=metadata.name%3Dnone");
        let body = client
            .request_text(Request::get(&uri).body(Vec::new()).unwrap())
            .await
            .unwrap_or_else(|e| panic!("{uri}: {e}"));
        if watches {
            // A watch of nothing that ends after its timeout: no events.
            assert_eq!(body, "", "watch={value}");
        } else {
            let list: serde_json::Value = serde_json::from_str(&body).expect("a list");
            assert_eq!(list["kind"], "ConfigMapList", "watch={value}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_versions_continue_and_selectors_are_checked() {
    let client = client().await;
    let ns = namespace(&client, "query-rv").await;
    config_map(&client, &ns, "a").await;
    config_map(&client, &ns, "b").await;
    let base = format!("/api/v1/namespaces/{ns}/configmaps");
    let invalid_rv = "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax";
    for uri in [
        format!("{base}/a?resourceVersion=abc"),
        format!("{base}?resourceVersion=abc"),
    ] {
        let status = get_error(&client, &uri).await;
        assert_eq!(
            (status.code, status.message.as_str()),
            (500, invalid_rv),
            "{uri}"
        );
    }

    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let page = api
        .list(&ListParams::default().limit(1))
        .await
        .expect("page 1");
    let token = page.metadata.continue_.expect("a continue token");
    let status = get_error(
        &client,
        &format!("{base}?limit=1&continue={token}&resourceVersion=1"),
    )
    .await;
    assert_eq!(
        (status.code, status.message.as_str()),
        (
            400,
            "specifying resource version is not allowed when using continue"
        )
    );
    // resourceVersion=0 is allowed with a continue token.
    let page2 = get_json(
        &client,
        &format!("{base}?limit=1&continue={token}&resourceVersion=0"),
    )
    .await;
    assert_eq!(page2["items"][0]["metadata"]["name"], "b");

    let long_value = "v".repeat(64);
    let err = api
        .list(&ListParams::default().labels(&format!("a={long_value}")))
        .await
        .expect_err("a label value over 63 characters");
    let kube::Error::Api(status) = err else {
        panic!("{err:?}")
    };
    assert_eq!(
        status.message,
        format!(
            "unable to parse requirement: values[0][a]: Invalid value: \"{long_value}\": must be no more than 63 characters"
        )
    );
    let long_key = "k".repeat(64);
    let out = kubectl().fails(&[
        "get",
        "configmaps",
        "-n",
        &ns,
        "-l",
        &format!("{long_key}=v"),
    ]);
    assert!(
        out.contains(&format!("unable to parse requirement: <nil>: Invalid value: \"{long_key}\": name part must be no more than 63 characters")),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_grace_period_deletes_nothing() {
    let client = client().await;
    let ns = namespace(&client, "query-grace").await;
    let created = config_map(&client, &ns, "kept").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps/kept");
    let out = kubectl().fails(&["delete", "--raw", &format!("{path}?gracePeriodSeconds=abc")]);
    assert!(out.contains("strconv.ParseInt: parsing"), "{out}");
    // A body of the wrong type fails to decode: nothing is deleted either.
    let request = Request::delete(&path)
        .header("Content-Type", "application/json")
        .body(br#"{"gracePeriodSeconds":"abc"}"#.to_vec())
        .unwrap();
    let Err(kube::Error::Api(status)) = client.request_text(request).await else {
        panic!("a DeleteOptions body with a string grace period must fail")
    };
    assert_eq!(
        status.message,
        "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64"
    );
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let after = api.get("kept").await.expect("still there");
    assert_eq!(
        after.metadata.resource_version,
        created.metadata.resource_version
    );
    // A negative grace period is no error; ConfigMaps are deleted at once.
    kubectl().ok(&["delete", "--raw", &format!("{path}?gracePeriodSeconds=-1")]);
    assert!(api.get_opt("kept").await.expect("GET").is_none());
}
