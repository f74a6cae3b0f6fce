//! The templates under templates/, embedded in the binary and rendered with
//! tera. A template's path mirrors the file it makes, with `.tera` appended;
//! `__name__` parts of the path are filled in by the plan. A template that
//! names a value its context lacks does not render.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

use anyhow::Context as _;
use include_dir::{Dir, include_dir};
use serde_json::Value;
use tera::ast::{Expr, ExprVal, FunctionCall, Node};

use super::lifted_text;

static TEMPLATES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/templates");

/// The templates parsed so far in this process. Every [`Renderer`] shares
/// them: a command renders through several plans (and replays its history
/// for the pristine copies), and parsing is most of what rendering costs.
static PARSED: Mutex<Option<Parsed>> = Mutex::new(None);

/// Parsed templates, with the text lifted out of each ([`lifted_text`]).
struct Parsed {
    tera: tera::Tera,
    texts: HashMap<String, Vec<String>>,
}

/// Renders embedded templates, parsing each one the first time the process
/// uses it.
#[derive(Default)]
pub struct Renderer;

impl Renderer {
    /// Renders `templates/<name>.tera` with `context`.
    pub fn render(&mut self, name: &str, context: &tera::Context) -> anyhow::Result<String> {
        let file = format!("{name}.tera");
        let source =
            source_of(&file).with_context(|| format!("opctl is missing its template {file}"))?;
        // A template without tera syntax renders as itself: parsing it would
        // cost most of a command's time (the parser goes character by
        // character) for nothing.
        if is_plain(source) {
            return Ok(source.to_owned());
        }
        let mut parsed = PARSED.lock().unwrap_or_else(PoisonError::into_inner);
        let parsed = parsed.get_or_insert_with(|| {
            let mut tera = tera::Tera::default();
            tera.autoescape_on(Vec::new());
            Parsed {
                tera,
                texts: HashMap::new(),
            }
        });
        if !parsed.texts.contains_key(&file) {
            let lifted = lifted_text::lift(source);
            parsed
                .tera
                .add_raw_template(&file, &lifted.source)
                .with_context(|| format!("opctl's template {file} is broken"))?;
            parsed.texts.insert(file.clone(), lifted.texts);
        }
        let mut context = context.clone();
        check_defined(
            &file,
            &parsed.tera.get_template(&file)?.ast,
            &context.clone().into_json(),
        )?;
        context.insert(lifted_text::KEY, &parsed.texts[&file]);
        parsed
            .tera
            .render(&file, &context)
            .map_err(|err| anyhow::anyhow!("cannot render {file}: {}", error_chain(&err)))
    }
}

/// Whether `source` holds nothing tera would read: no `{{`, `{%` or `{#`.
fn is_plain(source: &str) -> bool {
    !["{{", "{%", "{#"].iter().any(|tag| source.contains(tag))
}

/// Tera fails on an undefined variable printed with `{{ }}`, but takes one
/// in an `if` (or a loop) as false (or empty). This check makes both fail:
/// every variable a template names must be in its context. Loop variables
/// stand for each element of what they loop over; names bound by `set` and
/// `loop.*` are not checked further.
fn check_defined(file: &str, nodes: &[Node], context: &Value) -> anyhow::Result<()> {
    let mut scope = Scope {
        context,
        locals: Vec::new(),
    };
    scope
        .nodes(nodes)
        .map_err(|name| anyhow::anyhow!("cannot render {file}: `{name}` is not in its context"))
}

struct Scope<'a> {
    context: &'a Value,
    /// Local names and the values they may stand for (`None`: not checked).
    locals: Vec<(String, Option<Vec<&'a Value>>)>,
}

impl<'a> Scope<'a> {
    fn nodes(&mut self, nodes: &[Node]) -> Result<(), String> {
        for node in nodes {
            match node {
                Node::VariableBlock(_, expr) => self.expr(expr)?,
                Node::Set(_, set) => {
                    self.expr(&set.value)?;
                    self.locals.push((set.key.clone(), None));
                }
                Node::FilterSection(_, section, _) => {
                    self.call(&section.filter)?;
                    self.nodes(&section.body)?;
                }
                Node::Block(_, block, _) => self.nodes(&block.body)?,
                Node::Forloop(_, forloop, _) => {
                    self.expr(&forloop.container)?;
                    let elements = match &forloop.container.val {
                        ExprVal::Ident(name) if forloop.key.is_none() => {
                            self.resolve(name)?.map(|values| {
                                values
                                    .into_iter()
                                    .filter_map(Value::as_array)
                                    .flatten()
                                    .collect()
                            })
                        }
                        _ => None,
                    };
                    let depth = self.locals.len();
                    if let Some(key) = &forloop.key {
                        self.locals.push((key.clone(), None));
                    }
                    self.locals.push((forloop.value.clone(), elements));
                    self.nodes(&forloop.body)?;
                    self.locals.truncate(depth);
                    if let Some(body) = &forloop.empty_body {
                        self.nodes(body)?;
                    }
                }
                Node::If(branches, _) => {
                    for (_, condition, body) in &branches.conditions {
                        self.expr(condition)?;
                        self.nodes(body)?;
                    }
                    if let Some((_, body)) = &branches.otherwise {
                        self.nodes(body)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn expr(&self, expr: &Expr) -> Result<(), String> {
        for filter in &expr.filters {
            self.call(filter)?;
        }
        match &expr.val {
            ExprVal::Ident(name) if !expr.has_default_filter() => self.resolve(name).map(drop),
            ExprVal::Math(math) => self.expr(&math.lhs).and(self.expr(&math.rhs)),
            ExprVal::Logic(logic) => self.expr(&logic.lhs).and(self.expr(&logic.rhs)),
            ExprVal::In(inside) => self.expr(&inside.lhs).and(self.expr(&inside.rhs)),
            ExprVal::Test(test) => {
                if !matches!(test.name.as_str(), "defined" | "undefined") {
                    self.resolve(&test.ident)?;
                }
                test.args.iter().try_for_each(|arg| self.expr(arg))
            }
            ExprVal::FunctionCall(call) => self.call(call),
            ExprVal::Array(items) => items.iter().try_for_each(|item| self.expr(item)),
            ExprVal::StringConcat(concat) => {
                concat.values.iter().try_for_each(|value| match value {
                    ExprVal::Ident(name) => self.resolve(name).map(drop),
                    _ => Ok(()),
                })
            }
            _ => Ok(()),
        }
    }

    fn call(&self, call: &FunctionCall) -> Result<(), String> {
        call.args.values().try_for_each(|arg| self.expr(arg))
    }

    /// The values `name` (`r.kind`, `crd.versions[0].gvk`) may stand for,
    /// `None` when they are not known; `Err` when it is not defined.
    fn resolve(&self, name: &str) -> Result<Option<Vec<&'a Value>>, String> {
        let Some(mut steps) = steps(name) else {
            // An index by a variable (`a[key]`): not followed.
            return Ok(None);
        };
        let first = match steps.first() {
            Some(Step::Key(first)) => *first,
            _ => return Err(name.to_owned()),
        };
        steps.remove(0);
        let mut values = match self.locals.iter().rev().find(|(local, _)| *local == first) {
            Some((_, None)) => return Ok(None),
            Some((_, Some(values))) => values.clone(),
            None if ["loop", "__tera_context", lifted_text::KEY].contains(&first) => {
                return Ok(None);
            }
            None => vec![self.context.get(first).ok_or_else(|| name.to_owned())?],
        };
        for step in steps {
            let mut next = Vec::with_capacity(values.len());
            for value in values {
                let found = match (value, &step) {
                    // An absent optional value: nothing below it to check.
                    (Value::Null, _) => continue,
                    (_, Step::Key(key)) => value.get(key),
                    (_, Step::Index(i)) => value.get(i),
                };
                next.push(found.ok_or_else(|| name.to_owned())?);
            }
            values = next;
        }
        Ok(Some(values))
    }
}

/// One step of a variable's path: `.key`, `["key"]` or `[0]`.
enum Step<'n> {
    Key(&'n str),
    Index(usize),
}

/// The steps of `name`; `None` when an index is itself a variable.
fn steps(name: &str) -> Option<Vec<Step<'_>>> {
    let mut out = Vec::new();
    for part in name.split('.') {
        let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !key.is_empty() {
            out.push(Step::Key(key));
        }
        while let Some(inner) = rest.strip_prefix('[') {
            let end = inner.find(']')?;
            let index = inner[..end].trim();
            out.push(match index.parse() {
                Ok(i) => Step::Index(i),
                Err(_) => Step::Key(index.strip_prefix('"')?.strip_suffix('"')?),
            });
            rest = &inner[end + 1..];
        }
    }
    Some(out)
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// A file of templates/ used as it is, not rendered (the tested
/// `Cargo.lock`).
pub fn data(file: &str) -> Option<&'static str> {
    source_of(file)
}

/// The text of `templates/<file>`. Looked up in an index made once:
/// include_dir's own lookup walks the tree comparing paths component by
/// component, which a command doing it for every file it writes noticed.
fn source_of(file: &str) -> Option<&'static str> {
    index().get(file).copied()
}

/// Every embedded template's text by its path under templates/.
fn index() -> &'static HashMap<String, &'static str> {
    static INDEX: OnceLock<HashMap<String, &'static str>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index = HashMap::new();
        let mut dirs = vec![&TEMPLATES];
        while let Some(dir) = dirs.pop() {
            for f in dir.files() {
                if let Some(text) = f.contents_utf8() {
                    index.insert(f.path().to_string_lossy().replace('\\', "/"), text);
                }
            }
            dirs.extend(dir.dirs());
        }
        index
    })
}

/// Every embedded template's name (without `.tera`), sorted.
#[cfg(test)]
pub fn names() -> Vec<String> {
    let mut names: Vec<String> = index()
        .keys()
        .filter_map(|path| path.strip_suffix(".tera").map(str::to_owned))
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_missing_from_the_context_fails_even_in_a_condition() {
        let context = serde_json::json!({
            "r": {"kind": "Pod", "shortname": null},
            "g": {"versions": [{"version": "v1"}, {"version": "v2"}]},
        });
        let check = |source: &str| {
            let mut tera = tera::Tera::default();
            tera.add_raw_template("t", source).expect("parses");
            let ast = &tera.get_template("t").expect("added").ast;
            check_defined("t", ast, &context)
        };
        let good = "{% if r.kind %}{{ r.kind }}{% endif %}{% if r.shortname %}{{ r.shortname.x }}{% endif %}\
                    {% for v in g.versions %}{{ v.version }}{% if loop.last %}.{% endif %}{% endfor %}\
                    {{ g.versions[1].version }}";
        assert!(check(good).is_ok(), "{:?}", check(good));
        for (bad, name) in [
            ("{% if r.knd %}x{% endif %}", "r.knd"),
            ("{{ p.name }}", "p.name"),
            (
                "{% for v in g.versions %}{% if v.kinds %}x{% endif %}{% endfor %}",
                "v.kinds",
            ),
            ("{% for x in nothing %}{% endfor %}", "nothing"),
            ("{{ g.versions[2].version }}", "g.versions[2].version"),
            ("{{ g.versions[0].kinds }}", "g.versions[0].kinds"),
        ] {
            let err = check(bad).expect_err(bad).to_string();
            assert!(
                err.contains(&format!("`{name}` is not in its context")),
                "{err}"
            );
        }
    }

    #[test]
    fn plain_templates_render_as_tera_would_render_them() {
        let mut plain = 0;
        for name in names() {
            let file = format!("{name}.tera");
            let source = TEMPLATES
                .get_file(&file)
                .and_then(|f| f.contents_utf8())
                .unwrap();
            if !is_plain(source) {
                continue;
            }
            plain += 1;
            let mut tera = tera::Tera::default();
            tera.autoescape_on(Vec::new());
            tera.add_raw_template(&file, source).unwrap();
            let by_tera = tera.render(&file, &tera::Context::new()).unwrap();
            let by_us = Renderer.render(&name, &tera::Context::new()).unwrap();
            assert_eq!(by_us, by_tera, "{name}");
        }
        assert!(plain >= 5, "{plain} plain templates");
        assert!(
            !is_plain("a {{ b }}") && !is_plain("{% if x %}{% endif %}") && !is_plain("{# c #}")
        );
    }

    #[test]
    fn every_template_parses_and_is_used_by_a_plan() {
        let plans = [
            include_str!("plans.rs"),
            include_str!("webhooks.rs"),
            include_str!("chart.rs"),
        ]
        .concat();
        let names = names();
        assert!(names.len() > 30, "{names:?}");
        for name in names {
            let source = TEMPLATES
                .get_file(format!("{name}.tera"))
                .and_then(|f| f.contents_utf8())
                .expect("utf-8 template");
            let mut tera = tera::Tera::default();
            tera.add_raw_template(&name, source)
                .unwrap_or_else(|err| panic!("{name}: {}", error_chain(&err)));
            assert!(
                plans.contains(&format!("\"{name}\"")),
                "templates/{name}.tera is not used by any plan"
            );
        }
    }
}
