//! Placeholders of the normalised transcripts and what they stand for.
//!
//! Instead of renumbering the server's values and comparing strings, the
//! harness *unifies*: a recorded `<rv:N>` binds to the value the server sent
//! the first time N is met, and every later `<rv:N>` must be that same value,
//! while a value already bound to another placeholder may not be bound to a
//! new one (a write that should have produced a new resourceVersion but did
//! not). This is what the README's numbering "in order of first appearance"
//! expresses, but one unexpected value does not shift every later number.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

/// Any placeholder of the README's normalisation table.
pub static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<(rv|uid):(\d+)>|<(time|clusterIP|nodePort|continue|suffix|age|ptr|token)>")
        .expect("placeholder regex")
});

const UUID: &str = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
const RFC3339: &str = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})";

/// Numbered placeholder families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    Rv,
    Uid,
}

impl Family {
    fn label(self) -> &'static str {
        match self {
            Family::Rv => "rv",
            Family::Uid => "uid",
        }
    }
}

/// Unnumbered placeholders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Plain {
    Time,
    ClusterIp,
    NodePort,
    Continue,
    Suffix,
    Age,
    Ptr,
    /// A JSON Web Token the server issued (a TokenRequest's `status.token`);
    /// a request carrying it sends the last one issued.
    Token,
}

impl Plain {
    fn parse(name: &str) -> Option<Plain> {
        Some(match name {
            "time" => Plain::Time,
            "clusterIP" => Plain::ClusterIp,
            "nodePort" => Plain::NodePort,
            "continue" => Plain::Continue,
            "suffix" => Plain::Suffix,
            "age" => Plain::Age,
            "ptr" => Plain::Ptr,
            "token" => Plain::Token,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Plain::Time => "time",
            Plain::ClusterIp => "clusterIP",
            Plain::NodePort => "nodePort",
            Plain::Continue => "continue",
            Plain::Suffix => "suffix",
            Plain::Age => "age",
            Plain::Ptr => "ptr",
            Plain::Token => "token",
        }
    }

    /// What a server value must look like to stand for this placeholder.
    fn pattern(self) -> &'static str {
        match self {
            Plain::Time => RFC3339,
            Plain::ClusterIp => r"\d{1,3}(?:\.\d{1,3}){3}",
            Plain::NodePort => r"\d{1,5}",
            Plain::Continue => r".+?",
            Plain::Suffix => r"[a-z0-9]{5}",
            Plain::Age => r"\d+[smhdy](?:\d+[smhd])?",
            Plain::Ptr => r"0x[0-9a-f]+",
            Plain::Token => r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+",
        }
    }
}

/// One placeholder occurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholder {
    Numbered(Family, u32),
    Plain(Plain),
}

impl std::fmt::Display for Placeholder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Placeholder::Numbered(fam, n) => write!(f, "<{}:{n}>", fam.label()),
            Placeholder::Plain(p) => write!(f, "<{}>", p.name()),
        }
    }
}

fn parse_capture(caps: &regex::Captures<'_>) -> Option<Placeholder> {
    if let (Some(fam), Some(n)) = (caps.get(1), caps.get(2)) {
        let family = if fam.as_str() == "rv" {
            Family::Rv
        } else {
            Family::Uid
        };
        return Some(Placeholder::Numbered(family, n.as_str().parse().ok()?));
    }
    caps.get(3)
        .and_then(|p| Plain::parse(p.as_str()))
        .map(Placeholder::Plain)
}

pub fn has_placeholder(s: &str) -> bool {
    s.contains('<') && PLACEHOLDER.is_match(s)
}

/// A recorded string with placeholders turned into an anchored regex.
pub struct Template {
    regex: Regex,
    slots: Vec<Placeholder>,
}

impl Template {
    pub fn compile(recorded: &str) -> Template {
        let mut pattern = String::from("^");
        let mut slots = Vec::new();
        let mut last = 0;
        for caps in PLACEHOLDER.captures_iter(recorded) {
            let Some(whole) = caps.get(0) else { continue };
            let Some(placeholder) = parse_capture(&caps) else {
                continue;
            };
            pattern.push_str(&regex::escape(&recorded[last..whole.start()]));
            let group = match placeholder {
                Placeholder::Numbered(Family::Rv, _) => r"\d+",
                Placeholder::Numbered(Family::Uid, _) => UUID,
                Placeholder::Plain(p) => p.pattern(),
            };
            pattern.push_str(&format!("({group})"));
            slots.push(placeholder);
            last = whole.end();
        }
        pattern.push_str(&regex::escape(&recorded[last..]));
        pattern.push('$');
        Template {
            regex: Regex::new(&pattern).expect("escaped template regex"),
            slots,
        }
    }

    /// Matches `actual` and binds the placeholders; `alias_ok` lets a fresh
    /// resourceVersion placeholder take a value that is already bound.
    pub fn unify(
        &self,
        actual: &str,
        bindings: &mut Bindings,
        alias_ok: bool,
    ) -> Result<(), String> {
        let Some(caps) = self.regex.captures(actual) else {
            return Err("does not match the recorded shape".to_string());
        };
        for (i, slot) in self.slots.iter().enumerate() {
            let value = caps.get(i + 1).map(|m| m.as_str()).unwrap_or_default();
            bindings.unify(*slot, value, alias_ok)?;
        }
        Ok(())
    }
}

/// What the placeholders of one file stand for on the server under test.
#[derive(Debug, Clone, Default)]
pub struct Bindings {
    numbered: BTreeMap<(Family, u32), String>,
    reverse: HashMap<(Family, String), BTreeSet<u32>>,
    aliased: HashSet<(Family, u32)>,
    /// The last value seen for each unnumbered placeholder (requests reuse it).
    latest: HashMap<Plain, String>,
}

impl Bindings {
    pub fn get(&self, family: Family, n: u32) -> Option<&str> {
        self.numbered.get(&(family, n)).map(String::as_str)
    }

    fn names_of(&self, family: Family, value: &str) -> Vec<String> {
        self.reverse
            .get(&(family, value.to_string()))
            .map(|set| {
                set.iter()
                    .map(|n| format!("<{}:{n}>", family.label()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Binds (or checks) one placeholder against a server value.
    pub fn unify(
        &mut self,
        placeholder: Placeholder,
        value: &str,
        alias_ok: bool,
    ) -> Result<(), String> {
        match placeholder {
            Placeholder::Numbered(family, n) => self.unify_numbered(family, n, value, alias_ok),
            Placeholder::Plain(Plain::NodePort) => {
                let port: u32 = value
                    .parse()
                    .map_err(|_| format!("{value:?} is not a port"))?;
                if !(30000..=32767).contains(&port) {
                    return Err(format!("nodePort {port} is outside 30000-32767"));
                }
                self.latest.insert(Plain::NodePort, value.to_string());
                Ok(())
            }
            Placeholder::Plain(plain) => {
                self.latest.insert(plain, value.to_string());
                Ok(())
            }
        }
    }

    fn unify_numbered(
        &mut self,
        family: Family,
        n: u32,
        value: &str,
        alias_ok: bool,
    ) -> Result<(), String> {
        let label = format!("<{}:{n}>", family.label());
        if let Some(bound) = self.numbered.get(&(family, n)) {
            if bound == value {
                return Ok(());
            }
            let also = self.names_of(family, value);
            let also = if also.is_empty() {
                String::new()
            } else {
                format!(" (the value of {})", also.join(", "))
            };
            return Err(format!(
                "expected {label} = {bound:?} (bound earlier), got {value:?}{also}"
            ));
        }
        let others = self.names_of(family, value);
        let all_aliased = self
            .reverse
            .get(&(family, value.to_string()))
            .is_none_or(|set| set.iter().all(|m| self.aliased.contains(&(family, *m))));
        if !others.is_empty() && !alias_ok && !all_aliased {
            return Err(format!(
                "expected a new value for {label}, got {value:?}, which is already {}",
                others.join(", ")
            ));
        }
        self.numbered.insert((family, n), value.to_string());
        self.reverse
            .entry((family, value.to_string()))
            .or_default()
            .insert(n);
        if alias_ok {
            self.aliased.insert((family, n));
        }
        Ok(())
    }

    /// Replaces the placeholders of a recorded request string with this
    /// server's values. Client-invented uids get a fresh UUID; `<time>` is now.
    pub fn instantiate_str(&mut self, recorded: &str, micro_time: bool) -> Result<String, String> {
        if !has_placeholder(recorded) {
            return Ok(recorded.to_string());
        }
        let mut out = String::new();
        let mut last = 0;
        for caps in PLACEHOLDER.captures_iter(recorded) {
            let Some(whole) = caps.get(0) else { continue };
            let Some(placeholder) = parse_capture(&caps) else {
                continue;
            };
            out.push_str(&recorded[last..whole.start()]);
            out.push_str(&self.value_for_request(placeholder, micro_time)?);
            last = whole.end();
        }
        out.push_str(&recorded[last..]);
        Ok(out)
    }

    fn value_for_request(
        &mut self,
        placeholder: Placeholder,
        micro: bool,
    ) -> Result<String, String> {
        match placeholder {
            Placeholder::Numbered(family, n) => {
                if let Some(v) = self.get(family, n) {
                    return Ok(v.to_string());
                }
                match family {
                    Family::Uid => {
                        // A uid the client made up (e.g. a wrong precondition).
                        let fresh = uuid::Uuid::new_v4().to_string();
                        self.unify_numbered(family, n, &fresh, false)?;
                        Ok(fresh)
                    }
                    Family::Rv => Err(format!(
                        "the request needs <rv:{n}>, which no earlier response provided"
                    )),
                }
            }
            Placeholder::Plain(Plain::Time) => Ok(now_rfc3339(micro)),
            Placeholder::Plain(plain) => self.latest.get(&plain).cloned().ok_or_else(|| {
                format!("the request needs {placeholder}, which no earlier response provided")
            }),
        }
    }

    /// Instantiates a whole recorded JSON request body (keys included).
    pub fn instantiate_json(&mut self, recorded: &Value) -> Result<Value, String> {
        self.instantiate_json_at(recorded, "")
    }

    fn instantiate_json_at(&mut self, recorded: &Value, key: &str) -> Result<Value, String> {
        Ok(match recorded {
            Value::String(s) => Value::String(self.instantiate_str(s, is_micro_time_key(key))?),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| self.instantiate_json_at(v, key))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => {
                let mut out = Map::new();
                for (k, v) in map {
                    let new_key = self.instantiate_str(k, false)?;
                    out.insert(new_key, self.instantiate_json_at(v, k)?);
                }
                Value::Object(out)
            }
            other => other.clone(),
        })
    }
}

/// MicroTime fields need six fractional digits on a real server.
fn is_micro_time_key(key: &str) -> bool {
    matches!(
        key,
        "eventTime" | "renewTime" | "acquireTime" | "lastObservedTime"
    )
}

fn now_rfc3339(micro: bool) -> String {
    let now = jiff::Timestamp::now();
    if micro {
        now.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
    } else {
        now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    }
}
