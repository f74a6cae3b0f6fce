//! Replays one transcript against a running server and compares every step.

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use regex::Regex;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::matcher::{self, Findings, Rules, object_name};
use super::model::{self, Step, Transcript};
use super::placeholders::Bindings;
use crate::support::http::{Http, HttpRequest, HttpResponse, encode_query, truncate};

/// Header marking the harness's own, unrecorded requests (set-up, the churn
/// before the expired watch). Servers ignore it; the self-test's fake uses it.
pub const SETUP_HEADER: &str = "X-Transcript-Setup";

/// Scenarios that use the widgets CRD created in 08 (README).
const USES_WIDGETS_CRD: &[&str] = &["04", "05", "09", "10", "11", "14"];

/// Steps that caught a transitional state whose duration is timing-dependent
/// (README: timing of controller effects is legitimately variable). A
/// mismatch here is reported as VARY, not as a failure, and binds nothing;
/// the polling steps that follow check the final state.
const TRANSITIONAL: &[(&str, usize, &str)] = &[
    (
        "08",
        1,
        "CRD conditions right after create (kube-apiserver had not yet set Established)",
    ),
    (
        "10",
        12,
        "foreground-deleted owner right after DELETE (may already be gone)",
    ),
    (
        "10",
        24,
        "background dependent right after its owner's DELETE (may still exist)",
    ),
];

/// How long a step that the recording took "after polling" may take to reach
/// the recorded state.
const POLL_DEADLINE: Duration = Duration::from_secs(15);
const POLL_INTERVAL: Duration = Duration::from_millis(100);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    /// A transitional step that differed (allowed, see `TRANSITIONAL`).
    Vary,
}

#[derive(Debug, Clone)]
pub struct StepReport {
    pub index: usize,
    pub name: String,
    pub outcome: Outcome,
    pub findings: Findings,
}

#[derive(Debug, Clone)]
pub struct FileReport {
    pub number: String,
    pub stem: String,
    pub steps: Vec<StepReport>,
}

impl StepReport {
    /// `07/24`: the id used by the known-differences list.
    pub fn id(&self, number: &str) -> String {
        format!("{number}/{}", self.index)
    }
}

/// Replays `transcript` against the (fresh) server at `base_url`.
pub async fn replay(base_url: &str, transcript: &Transcript) -> FileReport {
    let mut run = Replay {
        http: Http::new(base_url),
        transcript,
        bindings: Bindings::default(),
    };
    let steps = match run.setup().await {
        Ok(()) => run.steps().await,
        Err(e) => transcript
            .steps
            .iter()
            .enumerate()
            .map(|(index, step)| StepReport {
                index,
                name: step.name.clone(),
                outcome: Outcome::Fail,
                findings: Findings {
                    diffs: vec![format!("set-up failed: {e}")],
                    notes: vec![],
                },
            })
            .collect(),
    };
    FileReport {
        number: transcript.number.clone(),
        stem: transcript.stem.clone(),
        steps,
    }
}

struct Replay<'a> {
    http: Http,
    transcript: &'a Transcript,
    bindings: Bindings,
}

/// A watch reading in the background while the steps it covers run.
struct OpenWatch {
    task: JoinHandle<Result<HttpResponse, String>>,
    /// Ends the reading (see `finish_watch`).
    stop: oneshot::Sender<()>,
    /// When the recorded server would have closed it.
    recorded_end: Instant,
}

/// Extra server-side time a watch covering steps is given, so that slow
/// steps on a loaded machine still run while it is open; the harness stops
/// reading it at the recorded timeout once those steps are done.
const COVERING_WATCH_SLACK: u64 = 30;

static CREATED_BEFOREHAND: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Namespace (t\d+) was created beforehand").expect("regex"));
static SECONDS_LATER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\d+(?:\.\d+)?) s later").expect("regex"));
static CHURN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"last of the (\d+) ConfigMap updates").expect("regex"));

fn setup_request(method: &str, target: &str) -> HttpRequest {
    HttpRequest::new(method, target)
        .header("User-Agent", "transcripts/v1")
        .header(SETUP_HEADER, "unrecorded")
}

fn is_polling(step: &Step) -> bool {
    let name = step.name.to_lowercase();
    name.contains("after polling") || name.contains("once polling")
}

impl Replay<'_> {
    async fn setup(&mut self) -> Result<(), String> {
        if let Some(caps) = CREATED_BEFOREHAND.captures(&self.transcript.notes) {
            let ns = caps.get(1).map(|m| m.as_str()).unwrap_or_default();
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            self.expect_status(setup_request("POST", "/api/v1/namespaces").json(&body), 201)
                .await
                .map_err(|e| format!("creating namespace {ns}: {e}"))?;
        }
        if USES_WIDGETS_CRD.contains(&self.transcript.number.as_str()) {
            self.create_widgets_crd().await?;
        }
        if let Some(caps) = CREATED_BEFOREHAND.captures(&self.transcript.notes) {
            // The namespace was created well before the recording, so the
            // serviceaccount controller had made its `default` account
            // (some notes say so): wait for that write, which would
            // otherwise land between recorded steps.
            let ns = caps.get(1).map(|m| m.as_str()).unwrap_or_default();
            let target = format!("/api/v1/namespaces/{ns}/serviceaccounts/default");
            let _ = self
                .poll_until(setup_request("GET", &target), Duration::from_secs(5), |r| {
                    r.status == 200
                })
                .await;
        }
        Ok(())
    }

    async fn create_widgets_crd(&self) -> Result<(), String> {
        let crd_file = model::load(&model::transcripts_dir().join("08-crd-lifecycle.json"));
        let yaml = crd_file
            .steps
            .first()
            .and_then(|s| s.request.body.as_str())
            .ok_or("08-crd-lifecycle.json step 0 has no YAML body")?;
        let mut create = setup_request(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        )
        .header("Content-Type", "application/yaml");
        create.body = Some(yaml.as_bytes().to_vec());
        self.expect_status(create, 201)
            .await
            .map_err(|e| format!("creating the widgets CRD: {e}"))?;
        let get = setup_request(
            "GET",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
        );
        self.poll_until(get, Duration::from_secs(10), |r| {
            r.json()
                .ok()
                .is_some_and(|crd| condition_true(&crd, "Established"))
        })
        .await
        .map_err(|e| format!("waiting for the widgets CRD to be Established: {e}"))
    }

    async fn expect_status(
        &self,
        request: HttpRequest,
        status: u16,
    ) -> Result<HttpResponse, String> {
        let response = self.http.send(&request, REQUEST_TIMEOUT).await?;
        if response.status != status {
            return Err(format!(
                "{} {} answered {} (expected {status}): {}",
                request.method,
                request.target,
                response.status,
                truncate(&response.text(), 300)
            ));
        }
        Ok(response)
    }

    async fn poll_until(
        &self,
        request: HttpRequest,
        deadline: Duration,
        done: impl Fn(&HttpResponse) -> bool,
    ) -> Result<(), String> {
        let start = Instant::now();
        loop {
            let response = self.http.send(&request, REQUEST_TIMEOUT).await?;
            if done(&response) {
                return Ok(());
            }
            if start.elapsed() > deadline {
                return Err(format!(
                    "still not there after {deadline:?}; last answer {}: {}",
                    response.status,
                    truncate(&response.text(), 300)
                ));
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    async fn steps(&mut self) -> Vec<StepReport> {
        let transcript = self.transcript;
        let steps = &transcript.steps;
        // Watches that must be open before the steps they cover.
        let mut openings: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (index, step) in steps.iter().enumerate() {
            if let Some(before) = step.opened_before.filter(|_| step.is_watch()) {
                openings
                    .entry(index.saturating_sub(before))
                    .or_default()
                    .push(index);
            }
        }
        let mut open: HashMap<usize, Result<OpenWatch, String>> = HashMap::new();
        let mut reports = Vec::new();
        for (index, step) in steps.iter().enumerate() {
            for &watch in openings.get(&index).into_iter().flatten() {
                let task = self.open_watch(watch).await;
                open.insert(watch, task);
            }
            let report = match open.remove(&index) {
                Some(task) => self.finish_watch(index, task).await,
                None => self.run_step(index, step).await,
            };
            reports.push(report);
        }
        reports
    }

    fn recorded_timeout(step: &Step) -> u64 {
        step.request
            .query_value("timeoutSeconds")
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(5)
    }

    fn watch_timeout(step: &Step) -> Duration {
        Duration::from_secs(Self::recorded_timeout(step) + COVERING_WATCH_SLACK + 15)
    }

    /// Sends a watch request and keeps reading it in the background; returns
    /// once the server has answered with headers (the watch is established).
    /// The server is asked for a longer timeout than recorded; events the
    /// covered steps cause all arrive at once, so stopping at the recorded
    /// timeout after those steps sees what the recording saw (BOOKMARK
    /// counts aside, which are not compared).
    async fn open_watch(&mut self, index: usize) -> Result<OpenWatch, String> {
        let transcript = self.transcript;
        let mut step = transcript.steps[index].clone();
        let recorded = Self::recorded_timeout(&step);
        step.request.query.insert(
            "timeoutSeconds".into(),
            Value::String((recorded + COVERING_WATCH_SLACK).to_string()),
        );
        let request = self.build_request(&step)?;
        let http = self.http.clone();
        let timeout = Self::watch_timeout(&step);
        let (headers_tx, headers_rx) = oneshot::channel();
        let (stop, stop_rx) = oneshot::channel();
        let recorded_end = Instant::now() + Duration::from_secs(recorded);
        let task = tokio::spawn(async move {
            http.send_notifying(&request, timeout, headers_tx, Some(stop_rx))
                .await
        });
        // Real servers send headers as soon as the watch is registered; allow
        // a server that only flushes them with the first event.
        let _ = tokio::time::timeout(Duration::from_secs(2), headers_rx).await;
        Ok(OpenWatch {
            task,
            stop,
            recorded_end,
        })
    }

    async fn finish_watch(&mut self, index: usize, watch: Result<OpenWatch, String>) -> StepReport {
        let transcript = self.transcript;
        let step = &transcript.steps[index];
        let result = match watch {
            Ok(watch) => {
                // Events of the last covered step need a moment to arrive.
                let settle = Instant::now() + Duration::from_millis(500);
                tokio::time::sleep_until(watch.recorded_end.max(settle).into()).await;
                let _ = watch.stop.send(());
                watch
                    .task
                    .await
                    .unwrap_or_else(|e| Err(format!("watch task failed: {e}")))
            }
            Err(e) => Err(e),
        };
        self.conclude(index, step, result, Mode::Once)
    }

    async fn run_step(&mut self, index: usize, step: &Step) -> StepReport {
        if let Some(caps) = SECONDS_LATER.captures(&step.name) {
            let secs: f64 = caps
                .get(1)
                .and_then(|m| m.as_str().parse().ok())
                .unwrap_or(0.0);
            tokio::time::sleep(Duration::from_secs_f64(secs)).await;
        }
        if let Some(caps) = CHURN.captures(&step.name) {
            let count: usize = caps
                .get(1)
                .and_then(|m| m.as_str().parse().ok())
                .unwrap_or(0);
            if let Err(e) = self.churn(step, count).await {
                return self.fail(
                    index,
                    step,
                    format!("unrecorded updates before this step: {e}"),
                );
            }
        }
        let request = match self.build_request(step) {
            Ok(r) => r,
            Err(e) => return self.fail(index, step, e),
        };
        let timeout = if step.is_watch() {
            Self::watch_timeout(step)
        } else {
            REQUEST_TIMEOUT
        };
        let transitional = TRANSITIONAL
            .iter()
            .find(|(n, i, _)| *n == self.transcript.number && *i == index);
        if let Some((_, _, why)) = transitional {
            let result = self.http.send(&request, timeout).await;
            let mut report = self.conclude(index, step, result, Mode::Transitional);
            if report.outcome == Outcome::Vary {
                report
                    .findings
                    .notes
                    .push(format!("timing-dependent: {why}"));
            }
            return report;
        }
        if !is_polling(step) {
            let result = self.http.send(&request, timeout).await;
            return self.conclude(index, step, result, Mode::Once);
        }
        let start = Instant::now();
        loop {
            let result = self.http.send(&request, timeout).await;
            let last_try = start.elapsed() > POLL_DEADLINE;
            let mode = if last_try { Mode::Once } else { Mode::Trial };
            let report = self.conclude(index, step, result, mode);
            if report.outcome == Outcome::Pass || last_try {
                return report;
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// The unrecorded updates before "the last of the N updates" (07): create
    /// the object if needed, then N-1 merge patches like the recorded one.
    async fn churn(&self, step: &Step, count: usize) -> Result<(), String> {
        let path = &step.request.path;
        let (collection, name) = path.rsplit_once('/').ok_or("no object name in the path")?;
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"n": "0"}});
        self.expect_status(setup_request("POST", collection).json(&body), 201)
            .await?;
        for i in 1..count {
            let mut patch =
                setup_request("PATCH", path).header("Content-Type", "application/merge-patch+json");
            patch.body = Some(
                json!({"data": {"n": i.to_string()}})
                    .to_string()
                    .into_bytes(),
            );
            self.expect_status(patch, 200).await?;
        }
        Ok(())
    }

    fn fail(&self, index: usize, step: &Step, message: String) -> StepReport {
        StepReport {
            index,
            name: step.name.clone(),
            outcome: Outcome::Fail,
            findings: Findings {
                diffs: vec![message],
                notes: vec![],
            },
        }
    }

    /// Compares a response; binds placeholders only when `mode` says so.
    fn conclude(
        &mut self,
        index: usize,
        step: &Step,
        result: Result<HttpResponse, String>,
        mode: Mode,
    ) -> StepReport {
        let response = match result {
            Ok(r) => r,
            Err(e) => return self.fail(index, step, e),
        };
        let mut trial = self.bindings.clone();
        let findings = compare_response(step, &response, &mut trial);
        let outcome = match (findings.is_match(), mode) {
            (true, _) => {
                self.bindings = trial;
                Outcome::Pass
            }
            (false, Mode::Transitional) => Outcome::Vary,
            (false, Mode::Once) => {
                // Keep what did match so later steps can still refer to it.
                self.bindings = trial;
                Outcome::Fail
            }
            (false, Mode::Trial) => Outcome::Fail,
        };
        StepReport {
            index,
            name: step.name.clone(),
            outcome,
            findings,
        }
    }

    /// The recorded request with this server's values in place of placeholders.
    fn build_request(&mut self, step: &Step) -> Result<HttpRequest, String> {
        let recorded = &step.request;
        let path = self.bindings.instantiate_str(&recorded.path, false)?;
        let mut pairs = Vec::new();
        for (k, v) in recorded.query_pairs() {
            pairs.push((k, self.bindings.instantiate_str(&v, false)?));
        }
        let target = if pairs.is_empty() {
            path
        } else {
            format!("{path}?{}", encode_query(&pairs))
        };
        let headers = recorded
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        let body = match &recorded.body {
            Value::Null => None,
            Value::String(s) if s.starts_with("<omitted:") => Some(omitted_body(s)?),
            Value::String(s) => Some(self.bindings.instantiate_str(s, false)?.into_bytes()),
            other => Some(
                self.bindings
                    .instantiate_json(other)?
                    .to_string()
                    .into_bytes(),
            ),
        };
        Ok(HttpRequest {
            method: recorded.method.clone(),
            target,
            headers,
            body,
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum Mode {
    /// Compare and bind (also on failure).
    Once,
    /// A polling attempt: bind only on success.
    Trial,
    /// A timing-dependent step: a mismatch is `Vary` and binds nothing.
    Transitional,
}

fn condition_true(object: &Value, kind: &str) -> bool {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conds| {
            conds.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(kind)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

static OMITTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"^<omitted: (\d+)-byte JSON (\w+) named (\S+) whose data\.(\w+) is a string of (\d+) "(.)">$"#,
    )
    .expect("regex")
});

/// Rebuilds a body the recording was too large to store (03, 20): a core/v1
/// object whose `data.KEY` is one character repeated COUNT times, serialised
/// with the recording client's separators so that its size is the recorded N.
fn omitted_body(description: &str) -> Result<Vec<u8>, String> {
    let cannot = || format!("cannot rebuild the omitted body {description:?}");
    let caps = OMITTED.captures(description).ok_or_else(cannot)?;
    let group = |i: usize| caps.get(i).map(|m| m.as_str()).unwrap_or_default();
    let size: usize = group(1).parse().map_err(|_| cannot())?;
    let count: usize = group(5).parse().map_err(|_| cannot())?;
    let body = format!(
        r#"{{"apiVersion": "v1", "kind": {}, "metadata": {{"name": {}}}, "data": {{{}: "{}"}}}}"#,
        json!(group(2)),
        json!(group(3)),
        json!(group(4)),
        group(6).repeat(count)
    );
    if body.len() != size {
        return Err(format!(
            "{}: rebuilt {} bytes, the recording says {size}",
            cannot(),
            body.len()
        ));
    }
    Ok(body.into_bytes())
}

/// Compares status, content type, warnings and body or events.
pub fn compare_response(step: &Step, actual: &HttpResponse, bindings: &mut Bindings) -> Findings {
    let recorded = &step.response;
    let mut findings = Findings::default();
    if actual.status != recorded.status {
        findings.diffs.push(format!(
            "status: expected {}, got {}",
            recorded.status, actual.status
        ));
    }
    if actual.content_type != recorded.content_type {
        findings.diffs.push(format!(
            "content_type: expected {:?}, got {:?}",
            recorded.content_type, actual.content_type
        ));
    }
    let expected_warnings = recorded.warnings.clone().unwrap_or_default();
    for (i, (e, a)) in expected_warnings.iter().zip(&actual.warnings).enumerate() {
        findings.absorb(matcher::compare_str(
            e,
            a,
            bindings,
            &format!("warnings[{i}]"),
        ));
    }
    if expected_warnings.len() != actual.warnings.len() {
        findings.diffs.push(format!(
            "warnings: expected {:?}, got {:?}",
            expected_warnings, actual.warnings
        ));
    }
    let rules = Rules {
        request_path: step.request.path.clone(),
        unordered_items: step.request.query_value("resourceVersion") == Some("0"),
    };
    if let Some(events) = &recorded.events {
        findings.absorb(compare_events(step, events, actual, bindings, &rules));
        return findings;
    }
    match &recorded.body {
        None => {}
        Some(Value::String(text)) => {
            findings.absorb(matcher::compare_str(text, &actual.text(), bindings, "body"));
        }
        Some(expected) => match actual.json() {
            Ok(body) => findings.absorb(matcher::compare(expected, &body, bindings, &rules)),
            Err(e) => findings.diffs.push(e),
        },
    }
    findings
}

fn is_bookmark(event: &Value) -> bool {
    event.get("type").and_then(Value::as_str) == Some("BOOKMARK")
}

/// Watch events: in order, BOOKMARKs counted freely, and the synthetic ADDED
/// events of a watch without resourceVersion in any order.
fn compare_events(
    step: &Step,
    expected: &[Value],
    actual: &HttpResponse,
    bindings: &mut Bindings,
    rules: &Rules,
) -> Findings {
    let mut findings = Findings::default();
    if actual.status != 200 {
        findings.diffs.push(format!(
            "watch answered {} instead of streaming: {}",
            actual.status,
            truncate(&actual.text(), 300)
        ));
        return findings;
    }
    let mut events = Vec::new();
    for item in serde_json::Deserializer::from_slice(&actual.body).into_iter::<Value>() {
        match item {
            Ok(v) => events.push(v),
            Err(e) => {
                findings.diffs.push(format!(
                    "stream is not a sequence of JSON events ({e}): {}",
                    truncate(&actual.text(), 300)
                ));
                return findings;
            }
        }
    }
    let (expected_bookmarks, mut expected_rest): (Vec<&Value>, Vec<&Value>) =
        expected.iter().partition(|e| is_bookmark(e));
    let (actual_bookmarks, mut actual_rest): (Vec<&Value>, Vec<&Value>) =
        events.iter().partition(|e| is_bookmark(e));
    let rv = step.request.query_value("resourceVersion");
    if rv.is_none() || rv == Some("0") {
        sort_leading_added(&mut expected_rest);
        sort_leading_added(&mut actual_rest);
    }
    for (i, (e, a)) in expected_rest.iter().zip(&actual_rest).enumerate() {
        let mut f = matcher::compare(e, a, bindings, rules);
        for d in &mut f.diffs {
            *d = format!("events[{i}]{d}");
        }
        findings.absorb(f);
    }
    if expected_rest.len() != actual_rest.len() {
        let summary = |list: &[&Value]| {
            list.iter()
                .map(|e| {
                    format!(
                        "{} {}",
                        e.get("type").and_then(Value::as_str).unwrap_or("?"),
                        object_name(e)
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        findings.diffs.push(format!(
            "events: expected {} ({}), got {} ({})",
            expected_rest.len(),
            summary(&expected_rest),
            actual_rest.len(),
            summary(&actual_rest)
        ));
    }
    let bookmarks_allowed = step.request.query_value("allowWatchBookmarks") == Some("true");
    if !actual_bookmarks.is_empty() && !bookmarks_allowed {
        findings
            .diffs
            .push("BOOKMARK events sent although allowWatchBookmarks was not set".to_string());
    }
    // A streaming list's initial-events-end BOOKMARK is compared with the
    // recorded one; any other BOOKMARK with a recorded plain one (or, when
    // none was recorded, with the recorded one stripped of its annotations).
    if let Some(first) = expected_bookmarks.first() {
        let ends_initial = |e: &Value| {
            e.pointer("/object/metadata/annotations/k8s.io~1initial-events-end")
                .is_some()
        };
        let recorded_end = expected_bookmarks.iter().find(|e| ends_initial(e));
        let plain = expected_bookmarks
            .iter()
            .find(|e| !ends_initial(e))
            .map(|e| (*e).clone())
            .unwrap_or_else(|| {
                let mut plain = (*first).clone();
                if let Some(meta) = plain
                    .pointer_mut("/object/metadata")
                    .and_then(Value::as_object_mut)
                {
                    meta.remove("annotations");
                }
                plain
            });
        for (i, bookmark) in actual_bookmarks.iter().enumerate() {
            let template = match recorded_end {
                Some(end) if ends_initial(bookmark) => end,
                _ => &plain,
            };
            findings.absorb(bookmark_shape(template, bookmark, i));
        }
        if recorded_end.is_some() && !actual_bookmarks.iter().any(|b| ends_initial(b)) {
            findings
                .diffs
                .push("no BOOKMARK marks the end of the initial events".to_string());
        }
    }
    if actual_bookmarks.len() != expected_bookmarks.len() {
        findings.notes.push(format!(
            "{} BOOKMARK events (recorded {}; the count is timing-dependent)",
            actual_bookmarks.len(),
            expected_bookmarks.len()
        ));
    }
    findings
}

/// A BOOKMARK carries only the kind, apiVersion and a resourceVersion.
fn bookmark_shape(template: &Value, actual: &Value, i: usize) -> Findings {
    let mut expected = template.clone();
    let rv = actual
        .pointer("/object/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut findings = Findings::default();
    if rv.is_empty() || !rv.bytes().all(|b| b.is_ascii_digit()) {
        findings.diffs.push(format!(
            "bookmark[{i}]: resourceVersion {rv:?} is not a resourceVersion"
        ));
    }
    if let Some(slot) = expected.pointer_mut("/object/metadata/resourceVersion") {
        *slot = Value::String(rv.to_string());
    }
    let mut scratch = Bindings::default();
    let mut f = matcher::compare(&expected, actual, &mut scratch, &Rules::default());
    for d in &mut f.diffs {
        *d = format!("bookmark[{i}]{d}");
    }
    findings.absorb(f);
    findings
}

/// Synthetic ADDED events come from the cache in no defined order.
fn sort_leading_added(events: &mut [&Value]) {
    let leading = events
        .iter()
        .take_while(|e| e.get("type").and_then(Value::as_str) == Some("ADDED"))
        .count();
    events[..leading].sort_by_key(|e| object_name(e));
}

/// The per-step report, one line per step plus indented differences.
pub fn render(report: &FileReport, known: &dyn Fn(&str) -> bool) -> String {
    const MAX_DIFFS: usize = 8;
    let mut out = String::new();
    for step in &report.steps {
        let id = step.id(&report.number);
        let label = match (step.outcome, known(&id)) {
            (Outcome::Pass, false) => "PASS",
            (Outcome::Pass, true) => "PASS (listed as a known difference: remove it)",
            (Outcome::Vary, _) => "VARY",
            (Outcome::Fail, true) => "KNOWN",
            (Outcome::Fail, false) => "FAIL",
        };
        out.push_str(&format!(
            "{:<34} {:>5}  {label:<5} {}\n",
            report.stem,
            format!("#{}", step.index),
            truncate(&step.name, 90)
        ));
        if step.outcome != Outcome::Pass {
            for d in step.findings.diffs.iter().take(MAX_DIFFS) {
                out.push_str(&format!("        - {}\n", truncate(d, 400)));
            }
            if step.findings.diffs.len() > MAX_DIFFS {
                out.push_str(&format!(
                    "        - ... {} more differences\n",
                    step.findings.diffs.len() - MAX_DIFFS
                ));
            }
        }
        for n in step.findings.notes.iter().take(4) {
            out.push_str(&format!("        note: {}\n", truncate(n, 200)));
        }
        if step.findings.notes.len() > 4 {
            out.push_str(&format!(
                "        note: ... {} more notes\n",
                step.findings.notes.len() - 4
            ));
        }
    }
    out
}
