//! Replays the kube-apiserver v1.32 transcripts (tests/fixtures/transcripts)
//! against envtest and compares every answer (docs/envtest-conformance.md).
//!
//! Run one scenario with its report:
//!     TRANSCRIPT=07 cargo test -p opctl-envtest --test transcripts -- --nocapture
//! (`TRANSCRIPT` takes numbers or file names, comma-separated: `07,09`.)
//!
//! Steps where envtest knowingly differs are listed, each with its reason, in
//! tests/fixtures/known-differences.toml. Any other failing step fails this
//! test, and so does a listed step that passes.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
mod support;

use std::collections::BTreeMap;

use futures::StreamExt;
use opctl_envtest::Config;
use opctl_envtest::Controllers;
use support::transcript::known;
use support::transcript::model::{self, Transcript};
use support::transcript::replay::{FileReport, Outcome, render, replay};

/// The recording's watch cache evicted events after about 100 writes (07's
/// expired-watch scenario makes 100 updates); envtest keeps as many.
const WATCH_HISTORY: usize = 100;

fn selected(all: Vec<Transcript>) -> Vec<Transcript> {
    let Ok(filter) = std::env::var("TRANSCRIPT") else {
        return all;
    };
    let wanted: Vec<String> = filter
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let chosen: Vec<Transcript> = all
        .into_iter()
        .filter(|t| wanted.iter().any(|w| *w == t.number || *w == t.stem))
        .collect();
    assert!(
        !chosen.is_empty(),
        "TRANSCRIPT={filter} selects no transcript (use numbers such as 07 or names such as 07-watch)"
    );
    chosen
}

async fn run_one(transcript: &Transcript, known: &BTreeMap<String, String>) -> FileReport {
    // The recorded cluster ran five of kube-controller-manager's
    // controllers (the transcripts' README): `opctl envtest --simulate none
    // --controllers=garbage-collector-controller,namespace-controller,
    // serviceaccount-controller,serviceaccount-token-controller,
    // clusterrole-aggregation-controller`.
    let config = Config {
        watch_history: WATCH_HISTORY,
        controllers: Controllers::transcript_recording(),
        // The recording's namespace controller waited 5 s before emptying a
        // deleted namespace, and the steps taken meanwhile (11 #5-#7) expect
        // it untouched: wait as long, since a loaded machine can take over a
        // second for them.
        namespace_deletion_grace: std::time::Duration::from_secs(5),
        // The recorded cluster ran no Node, scheduler or kubelet.
        simulation: opctl_envtest::Simulation::off(),
        ..Config::default()
    };
    let server = server::start(config).await;
    let report = replay(&server.base_url(), transcript).await;
    server.shutdown().await;
    println!("{}", render(&report, &|id| known.contains_key(id)));
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envtest_answers_as_kube_apiserver_did() {
    let all = model::load_all();
    let known = known::load(&all);
    let transcripts = selected(all);
    // A few scenarios at a time: watches are open for their recorded
    // timeoutSeconds while the steps they cover run, and on a loaded machine
    // twenty scenarios at once can starve those steps past the timeout.
    let reports: Vec<FileReport> = futures::stream::iter(transcripts.iter())
        .map(|t| run_one(t, &known))
        .buffered(4)
        .collect()
        .await;

    let mut unexpected = Vec::new();
    let mut stale = Vec::new();
    let mut summary = String::new();
    for report in &reports {
        let count = |o: Outcome| report.steps.iter().filter(|s| s.outcome == o).count();
        summary.push_str(&format!(
            "{:<34} {:>3} pass {:>3} fail {:>3} timing-variable\n",
            report.stem,
            count(Outcome::Pass),
            count(Outcome::Fail),
            count(Outcome::Vary)
        ));
        for step in &report.steps {
            let id = step.id(&report.number);
            let listed = known.contains_key(&id);
            match step.outcome {
                Outcome::Fail if !listed => {
                    let first = step.findings.diffs.first().cloned().unwrap_or_default();
                    unexpected.push(format!("{id} {}: {first}", step.name));
                }
                Outcome::Pass | Outcome::Vary if listed => stale.push(format!(
                    "{id} passes but is listed in known-differences.toml ({})",
                    known.get(&id).map(String::as_str).unwrap_or_default()
                )),
                _ => {}
            }
        }
    }
    println!("{summary}");
    assert!(
        unexpected.is_empty() && stale.is_empty(),
        "envtest differs from the recorded kube-apiserver in {} step(s) not listed in \
         tests/fixtures/known-differences.toml, and {} listed step(s) now pass \
         (run with -- --nocapture for the per-step report):\n{}\n{}",
        unexpected.len(),
        stale.len(),
        unexpected.join("\n"),
        stale.join("\n")
    );
}
