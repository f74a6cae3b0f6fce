//! The fault spec: what `--faults SPEC` (or [`crate::Config::faults`])
//! asks envtest to inject.
//!
//! ```text
//! SPEC    = ITEM ("," ITEM)*
//! ITEM    = PROFILE | "seed=" N | RULE
//! RULE    = VERBS ["@" RESOURCES] ":" FAULT "=" AMOUNT
//! VERBS   = VERB ("+" VERB)*    VERB: * reads writes get list watch create
//!                                      update patch apply delete deletecollection
//! RESOURCES = RES ("+" RES)*    RES: * | plural[.group][/subresource]
//! FAULT   = 500 | 429 | 409 | 504   AMOUNT: percent of the matching requests ("10%")
//!         | cut                     AMOUNT: watch lifetime ("5s", "500ms") or events ("20events")
//!         | compact                 AMOUNT: period ("30s")
//! ```
//!
//! For example `writes:500=10%,get@pods:429=5%,watch:cut=5s,seed=42`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The faults of one server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultSpec {
    /// Seeds the draws deciding which requests fail; `None` picks one at
    /// start (and logs it, so a run can be repeated).
    pub seed: Option<u64>,
    /// The faults, each with its matching requests and rate.
    pub rules: Vec<FaultRule>,
    /// `user=PATTERN` items: only requests of a matching user are faulted
    /// (every request when empty). A pattern ending in `*` matches the
    /// names it starts; envtest's administrator has the empty name.
    pub users: Vec<String>,
}

impl FaultSpec {
    /// Whether requests made as `user` may be faulted.
    pub fn targets_user(&self, user: &str) -> bool {
        targets_user(&self.users, user)
    }
}

/// Whether `user` matches one of the `user=` patterns (or there are none).
pub(super) fn targets_user(patterns: &[String], user: &str) -> bool {
    patterns.is_empty()
        || patterns
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => user.starts_with(prefix) && !user.is_empty(),
                None => user == pattern,
            })
}

/// One `TARGET:FAULT=AMOUNT` item.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRule {
    pub verbs: Vec<Verb>,
    /// Empty: every resource.
    pub resources: Vec<ResourceMatch>,
    pub fault: Fault,
    /// The item as written, for logs.
    pub text: String,
}

/// A request verb as RBAC names it, plus `apply` (server-side apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Apply,
    Delete,
    DeleteCollection,
}

/// Every verb: the reads, watch, then the writes.
const ALL: &[Verb] = &[
    Verb::Get,
    Verb::List,
    Verb::Watch,
    Verb::Create,
    Verb::Update,
    Verb::Patch,
    Verb::Apply,
    Verb::Delete,
    Verb::DeleteCollection,
];
const READS: &[Verb] = ALL.split_at(2).0;
const WRITES: &[Verb] = ALL.split_at(3).1;

impl Verb {
    pub fn name(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Apply => "apply",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }

    fn parse_set(word: &str) -> Option<&'static [Verb]> {
        Some(match word {
            "*" => ALL,
            "reads" => READS,
            "writes" => WRITES,
            other => {
                let i = ALL.iter().position(|v| v.name() == other)?;
                &ALL[i..=i]
            }
        })
    }
}

/// `plural[.group][/subresource]`: a plural without a group matches it in
/// any group; a resource without a subresource also matches its subresources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceMatch {
    pub plural: String,
    pub group: Option<String>,
    pub subresource: Option<String>,
}

impl ResourceMatch {
    pub fn matches(&self, group: &str, plural: &str, subresource: &str) -> bool {
        self.plural == plural
            && self.group.as_deref().is_none_or(|g| g == group)
            && self.subresource.as_deref().is_none_or(|s| s == subresource)
    }
}

/// What happens to a matching request or watch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// Answered with this status instead of being served, for `fraction`
    /// (0 < f ≤ 1) of the matching requests.
    Status { code: FaultCode, fraction: f64 },
    /// Each matching watch is cut after this long or this many events.
    Cut(CutAfter),
    /// The watch history is dropped this often: resuming from before gets 410.
    Compact(Duration),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultCode {
    InternalError,
    TooManyRequests,
    Conflict,
    Timeout,
}

impl FaultCode {
    pub fn code(self) -> u16 {
        match self {
            FaultCode::InternalError => 500,
            FaultCode::TooManyRequests => 429,
            FaultCode::Conflict => 409,
            FaultCode::Timeout => 504,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutAfter {
    Time(Duration),
    Events(u64),
}

/// The faults `--faults default` injects: about one write in ten fails
/// (500, 429 with Retry-After, 409 on updates, patches and deletes), every
/// watch is cut after 5 s and the watch history is dropped every 20 s.
pub(crate) const DEFAULT_PROFILE: &str =
    "writes:500=4%,writes:429=3%,writes:409=3%,watch:cut=5s,watch:compact=20s";

const PROFILES: &[(&str, &str)] = &[("default", DEFAULT_PROFILE)];

/// Why a spec was refused: one line naming the item and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

fn refuse<T>(item: &str, why: impl fmt::Display) -> Result<T, SpecError> {
    Err(SpecError(format!("{item:?}: {why}")))
}

impl FromStr for FaultSpec {
    type Err = SpecError;

    fn from_str(spec: &str) -> Result<FaultSpec, SpecError> {
        let mut out = FaultSpec::default();
        if spec.trim().is_empty() {
            return Err(SpecError(format!(
                "the fault spec is empty: name a profile ({}) or rules such as writes:500=10%",
                profile_names()
            )));
        }
        for item in spec.split(',').map(str::trim) {
            if let Some(seed) = item.strip_prefix("seed=") {
                if out.seed.is_some() {
                    return refuse(item, "the seed is given twice");
                }
                match seed.parse::<u64>() {
                    Ok(n) => out.seed = Some(n),
                    Err(_) => return refuse(item, "the seed must be a whole number, e.g. seed=42"),
                }
            } else if let Some(user) = item.strip_prefix("user=") {
                if user.is_empty() || user == "*" {
                    return refuse(
                        item,
                        "name a user, or a prefix ending in *, e.g. user=system:serviceaccount:*",
                    );
                }
                out.users.push(user.to_string());
            } else if let Some((_, rules)) = PROFILES.iter().find(|(name, _)| *name == item) {
                for rule in rules.split(',') {
                    out.rules.push(parse_rule(rule)?);
                }
            } else if item.contains(':') {
                out.rules.push(parse_rule(item)?);
            } else {
                return refuse(
                    item,
                    format!(
                        "not a profile ({}), a seed=N, a user=PATTERN or a rule VERBS[@RESOURCES]:FAULT=AMOUNT",
                        profile_names()
                    ),
                );
            }
        }
        Ok(out)
    }
}

fn profile_names() -> String {
    PROFILES
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn parse_rule(item: &str) -> Result<FaultRule, SpecError> {
    let Some((target, action)) = item.split_once(':') else {
        return refuse(item, "expected VERBS[@RESOURCES]:FAULT=AMOUNT");
    };
    let (verbs_text, resources_text) = match target.split_once('@') {
        Some((v, r)) => (v, Some(r)),
        None => (target, None),
    };
    let mut verbs: Vec<Verb> = Vec::new();
    for word in verbs_text.split('+') {
        let Some(set) = Verb::parse_set(word) else {
            return refuse(
                item,
                format!(
                    "unknown verb {word:?} (verbs: *, reads, writes, {})",
                    ALL.iter().map(|v| v.name()).collect::<Vec<_>>().join(", ")
                ),
            );
        };
        for v in set {
            if !verbs.contains(v) {
                verbs.push(*v);
            }
        }
    }
    let resources = match resources_text {
        None | Some("*") => Vec::new(),
        Some(text) => text
            .split('+')
            .map(|r| parse_resource(item, r))
            .collect::<Result<_, _>>()?,
    };
    let Some((fault_text, amount)) = action.split_once('=') else {
        return refuse(item, "expected FAULT=AMOUNT after the colon, e.g. 500=10%");
    };
    let fault = match fault_text {
        "500" | "429" | "409" | "504" => {
            let code = match fault_text {
                "500" => FaultCode::InternalError,
                "429" => FaultCode::TooManyRequests,
                "409" => FaultCode::Conflict,
                _ => FaultCode::Timeout,
            };
            if code == FaultCode::Conflict {
                // A 409 to a create would claim the object exists.
                verbs.retain(|v| !matches!(v, Verb::Create | Verb::Get | Verb::List | Verb::Watch));
                if verbs.is_empty() {
                    return refuse(
                        item,
                        "409 is only injected into update, patch, apply, delete and deletecollection",
                    );
                }
            }
            Fault::Status {
                code,
                fraction: parse_percent(item, amount)?,
            }
        }
        "cut" | "compact" => {
            if verbs != [Verb::Watch] {
                return refuse(
                    item,
                    format!("{fault_text} applies to watches: write watch:{fault_text}={amount}"),
                );
            }
            if fault_text == "cut" {
                Fault::Cut(match amount.strip_suffix("events") {
                    Some(n) => CutAfter::Events(match n.parse::<u64>() {
                        Ok(n) if n > 0 => n,
                        _ => {
                            return refuse(
                                item,
                                "expected a positive number of events, e.g. 20events",
                            );
                        }
                    }),
                    None => CutAfter::Time(parse_duration(item, amount)?),
                })
            } else {
                if !resources.is_empty() {
                    return refuse(
                        item,
                        "compact drops the history of every resource: write watch:compact=30s",
                    );
                }
                Fault::Compact(parse_duration(item, amount)?)
            }
        }
        other => {
            return refuse(
                item,
                format!("unknown fault {other:?} (faults: 500, 429, 409, 504, cut, compact)"),
            );
        }
    };
    Ok(FaultRule {
        verbs,
        resources,
        fault,
        text: item.to_string(),
    })
}

fn parse_resource(item: &str, text: &str) -> Result<ResourceMatch, SpecError> {
    let (resource, subresource) = match text.split_once('/') {
        Some((r, s)) => (r, Some(s.to_string())),
        None => (text, None),
    };
    let (plural, group) = match resource.split_once('.') {
        Some((p, g)) => (p, Some(g.to_string())),
        None => (resource, None),
    };
    let word_ok = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
    };
    if !word_ok(plural)
        || !group.as_deref().is_none_or(word_ok)
        || !subresource.as_deref().is_none_or(word_ok)
    {
        return refuse(
            item,
            format!(
                "{text:?} is not a resource: expected plural[.group][/subresource], e.g. deployments.apps or pods/status"
            ),
        );
    }
    Ok(ResourceMatch {
        plural: plural.to_string(),
        group,
        subresource,
    })
}

fn parse_percent(item: &str, amount: &str) -> Result<f64, SpecError> {
    let bad = || {
        refuse(
            item,
            format!("{amount:?} is not a percentage above 0 and at most 100, e.g. 10%"),
        )
    };
    let Some(number) = amount.strip_suffix('%') else {
        return bad();
    };
    match number.parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p / 100.0),
        _ => bad(),
    }
}

fn parse_duration(item: &str, amount: &str) -> Result<Duration, SpecError> {
    let (number, unit) = if let Some(n) = amount.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = amount.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = amount.strip_suffix('m') {
        (n, 60.0)
    } else {
        (amount, 0.0)
    };
    match number.parse::<f64>() {
        Ok(n) if unit > 0.0 && n > 0.0 && n * unit >= 0.01 => Ok(Duration::from_secs_f64(n * unit)),
        _ => refuse(
            item,
            format!("{amount:?} is not a duration of at least 10ms, e.g. 500ms, 5s or 1m"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_profiles_and_seeds_parse() {
        let spec: FaultSpec = "writes@pods+deployments.apps/status:500=12.5%,get+list:429=1%,watch@configmaps:cut=20events,watch:cut=500ms,watch:compact=1m,seed=7"
            .parse()
            .expect("parses");
        assert_eq!(spec.seed, Some(7));
        assert_eq!(spec.rules.len(), 5);
        let first = &spec.rules[0];
        assert_eq!(first.verbs, WRITES);
        assert_eq!(
            first.resources,
            [
                ResourceMatch {
                    plural: "pods".into(),
                    group: None,
                    subresource: None
                },
                ResourceMatch {
                    plural: "deployments".into(),
                    group: Some("apps".into()),
                    subresource: Some("status".into())
                },
            ]
        );
        assert_eq!(
            first.fault,
            Fault::Status {
                code: FaultCode::InternalError,
                fraction: 0.125
            }
        );
        assert_eq!(spec.rules[1].verbs, [Verb::Get, Verb::List]);
        assert_eq!(spec.rules[2].fault, Fault::Cut(CutAfter::Events(20)));
        assert_eq!(
            spec.rules[3].fault,
            Fault::Cut(CutAfter::Time(Duration::from_millis(500)))
        );
        assert_eq!(spec.rules[4].fault, Fault::Compact(Duration::from_secs(60)));

        let default: FaultSpec = "default".parse().expect("the default profile parses");
        assert_eq!(default.seed, None);
        assert_eq!(default.rules.len(), 5);
        let conflicts = &default.rules[2];
        assert!(!conflicts.verbs.contains(&Verb::Create), "no 409 on create");
        assert!(conflicts.verbs.contains(&Verb::Patch));
    }

    #[test]
    fn malformed_specs_are_refused_with_the_item_and_the_fix() {
        for (spec, message) in [
            (
                "",
                "the fault spec is empty: name a profile (default) or rules such as writes:500=10%",
            ),
            (
                "chaos",
                "\"chaos\": not a profile (default), a seed=N, a user=PATTERN or a rule VERBS[@RESOURCES]:FAULT=AMOUNT",
            ),
            (
                "writes:500=110%",
                "\"writes:500=110%\": \"110%\" is not a percentage above 0 and at most 100, e.g. 10%",
            ),
            (
                "writes:500=10",
                "\"writes:500=10\": \"10\" is not a percentage above 0 and at most 100, e.g. 10%",
            ),
            (
                "writes:418=10%",
                "\"writes:418=10%\": unknown fault \"418\" (faults: 500, 429, 409, 504, cut, compact)",
            ),
            (
                "posts:500=1%",
                "\"posts:500=1%\": unknown verb \"posts\" (verbs: *, reads, writes, get, list, watch, create, update, patch, apply, delete, deletecollection)",
            ),
            (
                "create:409=5%",
                "\"create:409=5%\": 409 is only injected into update, patch, apply, delete and deletecollection",
            ),
            (
                "writes:cut=5s",
                "\"writes:cut=5s\": cut applies to watches: write watch:cut=5s",
            ),
            (
                "watch:cut=5",
                "\"watch:cut=5\": \"5\" is not a duration of at least 10ms, e.g. 500ms, 5s or 1m",
            ),
            (
                "watch:cut=0events",
                "\"watch:cut=0events\": expected a positive number of events, e.g. 20events",
            ),
            (
                "watch@pods:compact=5s",
                "\"watch@pods:compact=5s\": compact drops the history of every resource: write watch:compact=30s",
            ),
            (
                "writes@Pods:500=1%",
                "\"writes@Pods:500=1%\": \"Pods\" is not a resource: expected plural[.group][/subresource], e.g. deployments.apps or pods/status",
            ),
            (
                "writes:500",
                "\"writes:500\": expected FAULT=AMOUNT after the colon, e.g. 500=10%",
            ),
            (
                "seed=x",
                "\"seed=x\": the seed must be a whole number, e.g. seed=42",
            ),
            (
                "seed=1,default,seed=2",
                "\"seed=2\": the seed is given twice",
            ),
            (
                "default,user=",
                "\"user=\": name a user, or a prefix ending in *, e.g. user=system:serviceaccount:*",
            ),
        ] {
            assert_eq!(
                spec.parse::<FaultSpec>().map(|_| ()),
                Err(SpecError(message.to_string())),
                "{spec}"
            );
        }
    }
}
