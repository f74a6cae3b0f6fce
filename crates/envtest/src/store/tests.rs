use super::*;
use serde_json::json;
use tokio::sync::mpsc;

fn key(s: &str) -> ResKey {
    Arc::from(s)
}

fn cm(name: &str, v: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns"}, "data": {"v": v}})
}

#[test]
fn writes_share_one_counter_and_detect_conflicts() {
    let store = Store::new(100);
    let cms = key("configmaps");
    let a = store.create(&cms, "ns", "a", cm("a", "1")).unwrap();
    let b = store
        .create(&key("secrets"), "ns", "b", cm("b", "1"))
        .unwrap();
    assert_eq!(meta::resource_version(&a), "1");
    assert_eq!(meta::resource_version(&b), "2");
    assert_eq!(
        store.create(&cms, "ns", "a", cm("a", "x")),
        Err(WriteError::AlreadyExists)
    );
    assert_eq!(
        store.update(&cms, "ns", "a", 7, cm("a", "2")),
        Err(WriteError::Conflict { current: 1 })
    );
    let a2 = store.update(&cms, "ns", "a", 1, cm("a", "2")).unwrap();
    assert_eq!(meta::resource_version(&a2), "3");
    let (last, rv) = store
        .delete(&cms, "ns", "a", &Preconditions::default())
        .unwrap();
    assert_eq!((meta::resource_version(&last), rv), ("3", 4));
    assert!(store.get(&cms, "ns", "a").is_none());
}

#[test]
fn list_is_sorted_and_resumes_after_a_key() {
    let store = Store::new(100);
    let cms = key("configmaps");
    for n in ["c", "a", "b"] {
        store.create(&cms, "ns", n, cm(n, "1")).unwrap();
    }
    store.create(&cms, "other", "z", cm("z", "1")).unwrap();
    let (items, rv) = store.list(&cms, Some("ns"), None);
    let names: Vec<_> = items.iter().map(|(k, _)| k.1.as_str()).collect();
    assert_eq!((names, rv), (vec!["a", "b", "c"], 4));
    let after = ("ns".to_string(), "a".to_string());
    let (rest, _) = store.list(&cms, Some("ns"), Some(&after));
    assert_eq!(rest.len(), 2);
    assert_eq!(store.list(&cms, None, None).0.len(), 4);
}

#[test]
fn list_at_rolls_back_changes_and_expires() {
    let store = Store::new(3);
    let cms = key("configmaps");
    store.create(&cms, "ns", "a", cm("a", "1")).unwrap(); // rv 1
    store.update(&cms, "ns", "a", 1, cm("a", "2")).unwrap(); // rv 2
    store.create(&cms, "ns", "b", cm("b", "1")).unwrap(); // rv 3
    let at1 = store.list_at(&cms, Some("ns"), None, 1).unwrap();
    assert_eq!(at1.len(), 1);
    assert_eq!(at1[0].1["data"]["v"], "1");
    store
        .delete(&cms, "ns", "b", &Preconditions::default())
        .unwrap(); // rv 4, evicts rv 1
    assert_eq!(store.list_at(&cms, Some("ns"), None, 0), Err(1));
    assert_eq!(store.list_at(&cms, Some("ns"), None, 3).unwrap().len(), 2);
    assert_eq!(store.can_resume_from(0), Err(1));
    assert_eq!(store.can_resume_from(1), Ok(()));
}

#[test]
fn reads_of_the_past_reach_further_back_than_watches() {
    let store = Store::with_windows(2, 10);
    let cms = key("configmaps");
    store.create(&cms, "ns", "a", cm("a", "1")).unwrap(); // rv 1
    for rv in 1..5 {
        store
            .update(&cms, "ns", "a", rv, cm("a", &format!("{}", rv + 1)))
            .unwrap();
    } // rv 5
    // Watches resume only through the last two changes (rv 4 and 5)...
    assert_eq!(store.can_resume_from(2), Err(3));
    assert_eq!(store.can_resume_from(3), Ok(()));
    let (tx, _rx) = tokio::sync::mpsc::channel(8);
    let filter = WatchFilter::default();
    assert_eq!(
        store
            .subscribe(filter, Some(1), WatcherTx::Bounded(tx))
            .err(),
        Some(3)
    );
    // ...while a list at rv 1 is still served from the history.
    let at1 = store.list_at(&cms, Some("ns"), None, 1).unwrap();
    assert_eq!(at1[0].1["data"]["v"], "1");
}

#[test]
fn subscribe_returns_backlog_then_live_changes_and_drops_full_watchers() {
    let store = Store::new(100);
    let cms = key("configmaps");
    store.create(&cms, "ns", "a", cm("a", "1")).unwrap();
    let filter = WatchFilter {
        resource: Some(cms.clone()),
        ..WatchFilter::default()
    };
    let (tx, mut rx) = mpsc::channel(1);
    let sub = store
        .subscribe(filter.clone(), Some(0), WatcherTx::Bounded(tx))
        .unwrap();
    assert_eq!(sub.backlog.len(), 1);
    store.create(&cms, "ns", "b", cm("b", "1")).unwrap();
    store.create(&cms, "ns", "c", cm("c", "1")).unwrap(); // channel full: watcher dropped
    assert_eq!(rx.try_recv().unwrap().name, "b");
    assert!(rx.try_recv().is_err());
    assert!(rx.is_closed());
    let (tx2, _rx2) = mpsc::channel(8);
    let snap = store
        .subscribe(filter, None, WatcherTx::Bounded(tx2))
        .unwrap();
    assert_eq!(snap.backlog.len(), 3);
    assert_eq!(snap.start_rv, 3);
}

/// A resource's watches reach back as far as its own watch cache: fresh
/// changes make it grow, but once its oldest changes are older than 75 s it
/// drops them, and a watch from before the oldest kept one gets 410 although
/// the store's history still holds them (and other resources' watches are
/// unaffected).
#[test]
fn a_resource_whose_watch_cache_dropped_changes_refuses_older_watches() {
    let store = Store::new(10_000);
    let cms = key("configmaps");
    let secrets = key("secrets");
    store.create(&secrets, "ns", "s", cm("s", "1")).unwrap(); // rv 1
    store.create(&cms, "ns", "a", cm("a", "0")).unwrap(); // rv 2
    for rv in 2..150 {
        store
            .update(&cms, "ns", "a", rv, cm("a", &rv.to_string()))
            .unwrap();
    } // rv 150: 149 changes of configmaps, all fresh
    let watch = |res: &ResKey, since: u64| {
        let (tx, _rx) = mpsc::channel(8);
        let filter = WatchFilter {
            resource: Some(res.clone()),
            ..WatchFilter::default()
        };
        store
            .subscribe(filter, Some(since), WatcherTx::Bounded(tx))
            .map(|s| s.backlog.len())
    };
    assert_eq!(
        watch(&cms, 2),
        Ok(148),
        "a fresh cache grew: nothing dropped"
    );
    store.age_watch_caches(std::time::Duration::from_secs(80));
    for rv in 150..250 {
        store
            .update(&cms, "ns", "a", rv, cm("a", &rv.to_string()))
            .unwrap();
    } // rv 250
    // The cache (capacity 200) had to drop its stale changes: it keeps the
    // last 200, rv 51..250.
    assert_eq!(watch(&cms, 49), Err(50));
    assert_eq!(watch(&cms, 50), Ok(200));
    assert_eq!(watch(&secrets, 0).map(|_| ()), Ok(()));
    // Lists of the past still reach back through the history.
    assert!(store.list_at(&cms, Some("ns"), None, 10).is_ok());
}
