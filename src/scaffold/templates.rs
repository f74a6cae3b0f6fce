//! The templates under templates/, embedded in the binary and rendered with
//! tera. A template's path mirrors the file it makes, with `.tera` appended;
//! `__name__` parts of the path are filled in by the plan.

use anyhow::Context as _;
use include_dir::{Dir, include_dir};

static TEMPLATES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/templates");

/// Renders embedded templates, parsing each one the first time it is used.
pub struct Renderer {
    tera: tera::Tera,
}

impl Default for Renderer {
    fn default() -> Self {
        let mut tera = tera::Tera::default();
        tera.autoescape_on(Vec::new());
        Self { tera }
    }
}

impl Renderer {
    /// Renders `templates/<name>.tera` with `context`.
    pub fn render(&mut self, name: &str, context: &tera::Context) -> anyhow::Result<String> {
        let file = format!("{name}.tera");
        if !self.tera.get_template_names().any(|n| n == file) {
            let source = TEMPLATES
                .get_file(&file)
                .and_then(|f| f.contents_utf8())
                .with_context(|| format!("opctl is missing its template {file}"))?;
            self.tera
                .add_raw_template(&file, source)
                .with_context(|| format!("opctl's template {file} is broken"))?;
        }
        self.tera
            .render(&file, context)
            .map_err(|err| anyhow::anyhow!("cannot render {file}: {}", error_chain(&err)))
    }
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

/// Every embedded template's name (without `.tera`), sorted.
#[cfg(test)]
pub fn names() -> Vec<String> {
    let mut names = Vec::new();
    let mut dirs = vec![&TEMPLATES];
    while let Some(dir) = dirs.pop() {
        for file in dir.files() {
            let path = file.path().to_string_lossy().replace('\\', "/");
            if let Some(name) = path.strip_suffix(".tera") {
                names.push(name.to_owned());
            }
        }
        dirs.extend(dir.dirs());
    }
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses_and_is_used_by_a_plan() {
        let plans = [include_str!("plans.rs"), include_str!("webhooks.rs")].concat();
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
