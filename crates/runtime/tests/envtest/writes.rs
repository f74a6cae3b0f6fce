//! The request budget of a reconcile: each new Widget costs its three
//! child writes (issued together), one status write and one event, and a
//! Widget already as it should be costs nothing, resync after resync.
//! Writes are remembered until the caches show them, so reconciles
//! triggered by the children's own events write nothing twice.

use std::time::Duration;

use kube::api::{Api, ListParams, PostParams};
use opctl_runtime::{Manager, WatchScope};

use super::support::{
    PROJECT, Widget, admin, config_of, eventually, options, request_counts, since, start,
};
use super::widgets::{self, Writes};

const WIDGETS: usize = 10;

/// Whether a request counted as `<VERB> <resource>` writes.
fn is_write(what: &str) -> bool {
    ["POST ", "PUT ", "PATCH ", "APPLY ", "DELETE "]
        .iter()
        .any(|verb| what.starts_with(verb))
}

async fn all_ready(api: &Api<Widget>) -> bool {
    let list = api.list(&ListParams::default()).await.expect("a list");
    list.items.len() == WIDGETS && list.items.iter().all(widgets::is_ready)
}

#[tokio::test]
async fn new_objects_cost_their_writes_and_settled_ones_nothing() {
    writes_of_new_and_settled_objects(Writes::Together).await;
}

#[tokio::test]
async fn writes_in_turn_cost_the_same() {
    writes_of_new_and_settled_objects(Writes::InTurn).await;
}

async fn writes_of_new_and_settled_objects(writes: Writes) {
    let env = start().await;
    let admin = admin(&env).await;
    let namespace = "default";
    // Resync every second: settled objects are reconciled again and again.
    let options = options(&["--sync-period-seconds=1"]);
    let manager = Manager::with_config(
        PROJECT,
        options,
        WatchScope::AllNamespaces,
        config_of(&env).await,
    )
    .expect("a manager");
    let shutdown = manager.context().shutdown.clone();
    let running = tokio::spawn(widgets::register(manager, writes).run());

    let before = request_counts(&env).await;
    let api: Api<Widget> = Api::namespaced(admin, namespace);
    for n in 0..WIDGETS {
        let widget = widgets::widget(&format!("widget-{n}"), namespace);
        api.create(&PostParams::default(), &widget)
            .await
            .expect("created");
    }
    eventually(Duration::from_secs(30), "every Widget to be Ready", || {
        all_ready(&api)
    })
    .await;
    // Late watch events of the last writes trigger reconciles too.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let settled = request_counts(&env).await;
    let writes: Vec<(String, u64)> = since(&before, &settled)
        .into_iter()
        .filter(|(what, _)| is_write(what))
        .collect();
    let n = WIDGETS as u64;
    assert_eq!(
        writes,
        [
            ("APPLY configmaps".to_owned(), 2 * n),
            ("APPLY widgets/status".to_owned(), n),
            ("POST events".to_owned(), n),
            ("POST secrets".to_owned(), n),
            ("POST widgets".to_owned(), n), // the test's own
        ],
        "the writes since the Widgets were created"
    );

    // Three resyncs later: not one more write.
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    let later = since(&settled, &request_counts(&env).await);
    let more_writes: Vec<_> = later.iter().filter(|(what, _)| is_write(what)).collect();
    assert!(more_writes.is_empty(), "{later:?}");

    shutdown.trigger();
    running
        .await
        .expect("joined")
        .expect("the manager stops cleanly");
}
