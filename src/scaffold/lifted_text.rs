//! Long runs of plain text lifted out of a template before tera parses it.
//!
//! Tera's parser reads text character by character, trying every tag
//! opener at each one, so a template's plain text costs most of the time
//! a command takes. Each run of plain text between two tags long enough to
//! matter is replaced by `{{ __opctl_text.N }}` and handed to the render in
//! the context instead: the output is the same, the parse a fraction.
//!
//! The whitespace control of the tags around a run (`-%}` trims the start
//! of the text after it, `{%-` the end of the text before it) is applied
//! to the lifted text here, as tera would have applied it. A template with
//! `raw` blocks is left whole.

/// The context key holding the lifted texts.
pub const KEY: &str = "__opctl_text";

/// Runs shorter than this stay in the template (the reference costs about as much).
const SHORTEST: usize = 48;

/// A template with its long text runs lifted out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lifted {
    /// The template to parse.
    pub source: String,
    /// The texts `{{ __opctl_text.N }}` stands for.
    pub texts: Vec<String>,
}

/// Lifts the long text runs out of `source`.
pub fn lift(source: &str) -> Lifted {
    let whole = || Lifted {
        source: source.to_owned(),
        texts: Vec::new(),
    };
    if source.contains("{% raw") || source.contains("{%- raw") {
        return whole();
    }
    let mut out = String::with_capacity(source.len() / 2);
    let mut texts = Vec::new();
    let mut rest = source;
    // Whether the tag before the current text trims its start.
    let mut trim_start = false;
    // Whether the tag before is a comment with whitespace control, which
    // tera does not apply as it does for other tags: text beside one stays.
    let mut after_comment_control = false;
    loop {
        let opener = next_opener(rest);
        let text = &rest[..opener.unwrap_or(rest.len())];
        let trim_end = opener.is_some_and(|i| rest[i + 2..].starts_with('-'));
        let before_comment_control =
            trim_end && opener.is_some_and(|i| rest[i..].starts_with("{#"));
        let mut lifted = text;
        if trim_start {
            lifted = lifted.trim_start();
        }
        if trim_end {
            lifted = lifted.trim_end();
        }
        if lifted.len() >= SHORTEST && !after_comment_control && !before_comment_control {
            out.push_str(&format!("{{{{ {KEY}.{} }}}}", texts.len()));
            texts.push(lifted.to_owned());
        } else {
            out.push_str(text);
        }
        let Some(start) = opener else {
            break;
        };
        let closer = match &rest[start..start + 2] {
            "{{" => "}}",
            "{%" => "%}",
            _ => "#}",
        };
        // An unclosed tag: tera reports it, from the template as written.
        let Some(end) = rest[start + 2..].find(closer).map(|i| start + 2 + i + 2) else {
            return whole();
        };
        let tag = &rest[start..end];
        trim_start = tag[..tag.len() - 2].ends_with('-');
        after_comment_control = closer == "#}" && (trim_start || tag.starts_with("{#-"));
        out.push_str(tag);
        rest = &rest[end..];
    }
    Lifted { source: out, texts }
}

/// Where the next `{{`, `{%` or `{#` of `text` starts, in one pass.
fn next_opener(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(i) = text[from..].find('{').map(|i| from + i) {
        if matches!(bytes.get(i + 1), Some(b'{' | b'%' | b'#')) {
            return Some(i);
        }
        from = i + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(template: &str, context: &serde_json::Value) -> String {
        let mut tera = tera::Tera::default();
        tera.autoescape_on(Vec::new());
        tera.add_raw_template("t", template).expect("parses");
        let context = tera::Context::from_value(context.clone()).expect("context");
        tera.render("t", &context).expect("renders")
    }

    fn render_lifted(template: &str, context: &serde_json::Value) -> String {
        let lifted = lift(template);
        let mut context = context.clone();
        context[KEY] = serde_json::json!(lifted.texts);
        render(&lifted.source, &context)
    }

    const LONG: &str = "a line of plain text long enough to be lifted out of the template\n";

    #[test]
    fn lifted_templates_render_the_same() {
        let context = serde_json::json!({"x": "X", "items": ["a", "b"], "flag": true});
        let templates = [
            format!("{LONG}{{{{ x }}}}\n{LONG}"),
            format!("{{% if flag -%}}\n   {LONG}   \n{{%- endif %}}\n{LONG}"),
            format!("{{% for i in items %}}{{{{ i }}}}:{LONG}{{% endfor %}}"),
            format!("{{# a comment -#}}\n\n{LONG}{{{{- x -}}}}\n\n{LONG}"),
            format!("{LONG}\n  {{#- a comment #}}\n{LONG}"),
            format!(
                "short {{{{ x }}}} text {{% if not flag %}}{LONG}{{% else %}}{LONG}{{% endif %}}"
            ),
            format!("{{% raw %}}{{{{ .Values.x }}}}{{% endraw %}}{LONG}"),
            "  \n  {{- x }}".to_owned(),
        ];
        for template in &templates {
            assert_eq!(
                render_lifted(template, &context),
                render(template, &context),
                "{template}"
            );
        }
    }

    #[test]
    fn long_runs_are_lifted_and_short_ones_stay() {
        let lifted = lift(&format!("{LONG}{{{{ x }}}}short"));
        assert_eq!(lifted.source, "{{ __opctl_text.0 }}{{ x }}short");
        assert_eq!(lifted.texts, [LONG]);
        let raw = "{% raw %}{{ x }}{% endraw %}";
        assert_eq!(lift(raw).source, raw);
    }
}
