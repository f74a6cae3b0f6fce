//! Tests of the transcript replay harness itself, against a fake server that
//! answers with the recording: the harness must accept a faithful server
//! completely and catch a server that differs.

#[allow(dead_code)]
mod support;

use std::sync::Arc;

use serde_json::{Value, json};
use support::transcript::fake::{self, Mutation};
use support::transcript::matcher::{Rules, compare};
use support::transcript::model::{self, Transcript};
use support::transcript::placeholders::Bindings;
use support::transcript::replay::{FileReport, Outcome, render, replay};

fn transcript(number: &str) -> Transcript {
    model::load_all()
        .into_iter()
        .find(|t| t.number == number)
        .unwrap_or_else(|| panic!("no transcript {number}"))
}

async fn replay_against_fake(t: &Transcript, mutation: Option<Mutation>) -> FileReport {
    let base = fake::start(t.clone(), mutation).await;
    replay(&base, t).await
}

fn outcomes(report: &FileReport) -> Vec<(usize, Outcome)> {
    report.steps.iter().map(|s| (s.index, s.outcome)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_answering_as_recorded_passes_every_step() {
    let all = model::load_all();
    assert_eq!(all.len(), 20, "expected the 20 recorded scenarios");
    let runs = all.iter().map(|t| replay_against_fake(t, None));
    let reports = futures::future::join_all(runs).await;
    let mut failures = String::new();
    for report in &reports {
        if report.steps.iter().any(|s| s.outcome != Outcome::Pass) {
            failures.push_str(&render(report, &|_| false));
        }
    }
    assert!(failures.is_empty(), "the faithful fake failed:\n{failures}");
    let steps: usize = reports.iter().map(|r| r.steps.len()).sum();
    assert!(steps > 450, "only {steps} steps replayed");
}

fn mutate(index: usize, f: impl Fn(&mut Value) + Send + Sync + 'static) -> Option<Mutation> {
    Some(Arc::new(move |i, v: &mut Value| {
        if i == index {
            f(v)
        }
    }))
}

#[tokio::test]
async fn a_write_that_keeps_its_resource_version_is_caught() {
    // 02 step 5 is an update: it must produce a new resourceVersion.
    let t = transcript("02");
    let report = replay_against_fake(
        &t,
        mutate(5, |v| v["metadata"]["resourceVersion"] = json!("<rv:2>")),
    )
    .await;
    let step = &report.steps[5];
    assert_eq!(
        step.outcome,
        Outcome::Fail,
        "{}",
        render(&report, &|_| false)
    );
    assert!(
        step.findings
            .diffs
            .iter()
            .any(|d| d.contains("expected a new value for <rv:3>")),
        "{:?}",
        step.findings.diffs
    );
}

#[tokio::test]
async fn a_changed_field_and_an_extra_field_are_caught() {
    let t = transcript("02");
    let report = replay_against_fake(
        &t,
        mutate(2, |v| {
            v["data"]["a"] = json!("other");
            v["metadata"]["annotations"] = json!({"x": "y"});
        }),
    )
    .await;
    let diffs = &report.steps[2].findings.diffs;
    assert!(
        diffs
            .iter()
            .any(|d| d.starts_with(".data.a: expected \"1\", got \"other\"")),
        "{diffs:?}"
    );
    assert!(
        diffs
            .iter()
            .any(|d| d.starts_with(".metadata.annotations: unexpected field")),
        "{diffs:?}"
    );
    let failing: Vec<usize> = outcomes(&report)
        .into_iter()
        .filter(|(_, o)| *o != Outcome::Pass)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(failing, vec![2], "only the altered step should fail");
}

#[tokio::test]
async fn watch_events_out_of_order_are_caught_but_synthetic_added_may_come_in_any_order() {
    let t = transcript("07");
    // WATCH 1 (step 6): swap the first two events.
    let mut swapped = t.clone();
    if let Some(events) = swapped.steps[6].response.events.as_mut() {
        events.swap(0, 1);
    }
    let base = fake::start(swapped, None).await;
    let report = replay(&base, &t).await;
    assert_eq!(report.steps[6].outcome, Outcome::Fail);

    // WATCH 2 (step 7) has only synthetic ADDED events: their order is free.
    let mut reordered = t.clone();
    if let Some(events) = reordered.steps[7].response.events.as_mut() {
        events.reverse();
    }
    let base = fake::start(reordered, None).await;
    let report = replay(&base, &t).await;
    assert_eq!(
        report.steps[7].outcome,
        Outcome::Pass,
        "{}",
        render(&report, &|_| false)
    );
}

#[tokio::test]
async fn discovery_may_serve_fewer_builtin_groups_but_not_fewer_custom_ones() {
    let drop_group = |name: &'static str| {
        move |v: &mut Value| {
            if let Some(groups) = v["groups"].as_array_mut() {
                groups.retain(|g| g["name"] != name);
            }
        }
    };
    let report = replay_against_fake(&transcript("01"), mutate(3, drop_group("autoscaling"))).await;
    let step = &report.steps[3];
    assert_eq!(
        step.outcome,
        Outcome::Pass,
        "{}",
        render(&report, &|_| false)
    );
    assert!(
        step.findings
            .notes
            .iter()
            .any(|n| n.contains("autoscaling"))
    );
    // Groups issue 3 requires may not be missing.
    let report = replay_against_fake(&transcript("01"), mutate(3, drop_group("apps"))).await;
    assert_eq!(report.steps[3].outcome, Outcome::Fail);

    let report = replay_against_fake(&transcript("08"), mutate(5, drop_group("example.com"))).await;
    assert_eq!(report.steps[5].outcome, Outcome::Fail);
}

#[test]
fn placeholders_bind_consistently_and_may_not_be_reused() {
    let mut b = Bindings::default();
    let rules = Rules::default();
    let first = json!({"metadata": {"uid": "<uid:1>", "resourceVersion": "<rv:1>"}});
    let f = compare(
        &first,
        &json!({"metadata": {"uid": "0b5c1c8e-6a55-4d3e-9d1f-6b1b9f1e2a3c", "resourceVersion": "7"}}),
        &mut b,
        &rules,
    );
    assert!(f.is_match(), "{:?}", f.diffs);
    // Same placeholder, other value: caught.
    let f = compare(
        &json!({"metadata": {"resourceVersion": "<rv:1>"}}),
        &json!({"metadata": {"resourceVersion": "8"}}),
        &mut b,
        &rules,
    );
    assert!(!f.is_match());
    // New placeholder, reused value: caught, except for a list's own resourceVersion.
    let f = compare(
        &json!({"metadata": {"resourceVersion": "<rv:2>"}}),
        &json!({"metadata": {"resourceVersion": "7"}}),
        &mut b.clone(),
        &rules,
    );
    assert!(!f.is_match());
    let list = json!({"kind": "ConfigMapList", "metadata": {"resourceVersion": "<rv:2>"}});
    let f = compare(
        &list,
        &json!({"kind": "ConfigMapList", "metadata": {"resourceVersion": "7"}}),
        &mut b,
        &rules,
    );
    assert!(f.is_match(), "{:?}", f.diffs);
    // Placeholders inside strings and keys.
    let msg = json!({"message": "too old resource version: <rv:1> (<rv:3>)", "k:{\"uid\":\"<uid:1>\"}": {}});
    let f = compare(
        &msg,
        &json!({"message": "too old resource version: 7 (40)", "k:{\"uid\":\"0b5c1c8e-6a55-4d3e-9d1f-6b1b9f1e2a3c\"}": {}}),
        &mut b,
        &rules,
    );
    assert!(f.is_match(), "{:?}", f.diffs);
    assert_eq!(
        b.get(support::transcript::placeholders::Family::Rv, 3),
        Some("40")
    );
}

#[test]
fn node_ports_and_times_are_checked_for_shape() {
    let mut b = Bindings::default();
    let rules = Rules::default();
    let e = json!({"nodePort": "<nodePort>", "t": "<time>", "cell": "80:<nodePort>/TCP"});
    assert!(
        compare(
            &e,
            &json!({"nodePort": 30001, "t": "2024-01-01T00:00:00Z", "cell": "80:30001/TCP"}),
            &mut b,
            &rules
        )
        .is_match()
    );
    assert!(
        !compare(
            &e,
            &json!({"nodePort": 80, "t": "2024-01-01T00:00:00Z", "cell": "80:30001/TCP"}),
            &mut b,
            &rules
        )
        .is_match()
    );
    assert!(
        !compare(
            &e,
            &json!({"nodePort": 30001, "t": "yesterday", "cell": "80:30001/TCP"}),
            &mut b,
            &rules
        )
        .is_match()
    );
}

#[test]
fn the_known_differences_list_parses_and_names_real_steps() {
    let all = model::load_all();
    let known = support::transcript::known::load(&all);
    for id in known.keys() {
        assert!(id.contains('/'), "{id}");
    }
    let bad = support::transcript::known::parse(
        "[[difference]]\nstep = \"07/999\"\nreason = \"x\"\n",
        &all,
    );
    assert!(bad.is_err(), "a step that does not exist must be rejected");
    let no_reason =
        support::transcript::known::parse("[[difference]]\nstep = \"07/1\"\nreason = \"\"\n", &all);
    assert!(no_reason.is_err(), "an entry needs a reason");
}

#[test]
fn a_token_is_checked_for_shape_and_sent_back_in_later_requests() {
    let mut b = Bindings::default();
    let rules = Rules::default();
    let issued = "eyJhbGciOiJSUzI1NiIsImtpZCI6IngifQ.eyJzdWIiOiJ4In0.c2lnbmF0dXJl";
    let e = json!({"status": {"token": "<token>"}});
    assert!(!compare(&e, &json!({"status": {"token": "opaque"}}), &mut b, &rules).is_match());
    assert!(compare(&e, &json!({"status": {"token": issued}}), &mut b, &rules).is_match());
    let review = b
        .instantiate_json(&json!({"spec": {"token": "<token>"}}))
        .expect("a token was issued");
    assert_eq!(review["spec"]["token"], issued);
    assert!(
        Bindings::default()
            .instantiate_json(&json!({"spec": {"token": "<token>"}}))
            .is_err(),
        "a request needing a token nobody issued must fail the step"
    );
}
