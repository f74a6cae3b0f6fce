//! Insertion at `+opctl:scaffold:NAME` markers in user-owned files.
//!
//! A marker is a comment line (`// +opctl:scaffold:controllers` in Rust,
//! `# +opctl:scaffold:...` elsewhere). A fragment goes right before the marker
//! line, indented like it, unless the file already contains it: inserting
//! twice changes nothing.

/// The marker text for `name`, without the comment leader.
pub fn marker(name: &str) -> String {
    format!("+opctl:scaffold:{name}")
}

/// Why an insertion cannot be made.
#[derive(Debug, PartialEq, Eq)]
pub enum InsertError {
    /// No line holds the marker.
    MissingMarker,
}

/// `text` with `fragment` inserted before the marker line of `name`, or `text`
/// unchanged when it already holds the fragment.
pub fn insert(text: &str, name: &str, fragment: &str) -> Result<String, InsertError> {
    let marker = marker(name);
    let mut offset = 0;
    let mut found = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if (trimmed.starts_with("//") || trimmed.starts_with('#')) && holds_marker(trimmed, &marker)
        {
            found = Some((offset, &line[..line.len() - trimmed.len()]));
            break;
        }
        offset += line.len();
    }
    let (at, indent) = found.ok_or(InsertError::MissingMarker)?;
    let indented = indent_fragment(fragment, indent);
    if contains_fragment(text, &indented) {
        return Ok(text.to_owned());
    }
    let mut out = String::with_capacity(text.len() + indented.len());
    out.push_str(&text[..at]);
    out.push_str(&indented);
    out.push_str(&text[at..]);
    Ok(out)
}

/// Whether `line` holds `marker` as a whole word.
fn holds_marker(line: &str, marker: &str) -> bool {
    line.match_indices(marker).any(|(at, _)| {
        line[at + marker.len()..]
            .chars()
            .next()
            .is_none_or(char::is_whitespace)
    })
}

fn indent_fragment(fragment: &str, indent: &str) -> String {
    let mut out = String::new();
    for line in fragment.split_inclusive('\n') {
        if line.trim().is_empty() {
            out.push_str(line.trim_start_matches([' ', '\t']));
        } else {
            out.push_str(indent);
            out.push_str(line);
        }
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// Whether `text` already holds `fragment`, ignoring blank lines around it.
fn contains_fragment(text: &str, fragment: &str) -> bool {
    let trimmed = fragment.trim_matches('\n');
    !trimmed.is_empty() && text.contains(trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAIN: &str =
        "fn main() {\n    let a = 1;\n    // +opctl:scaffold:things\n    run(a);\n}\n";

    #[test]
    fn a_fragment_lands_before_the_marker_with_its_indentation() {
        let out = insert(MAIN, "things", "let b = 2;\n").expect("marker found");
        assert_eq!(
            out,
            "fn main() {\n    let a = 1;\n    let b = 2;\n    // +opctl:scaffold:things\n    run(a);\n}\n"
        );
    }

    #[test]
    fn inserting_twice_changes_nothing() {
        let once = insert(MAIN, "things", "let b = 2;\n").expect("marker found");
        let twice = insert(&once, "things", "let b = 2;\n").expect("marker found");
        assert_eq!(once, twice);
    }

    #[test]
    fn blank_lines_stay_unindented() {
        let out = insert(MAIN, "things", "\nlet b = 2;\n").expect("marker found");
        assert!(out.contains("    let a = 1;\n\n    let b = 2;\n"), "{out}");
    }

    #[test]
    fn a_missing_marker_is_reported() {
        assert_eq!(
            insert("fn main() {}\n", "things", "x\n"),
            Err(InsertError::MissingMarker)
        );
        // A marker name that merely starts like another does not count as it.
        assert_eq!(
            insert("// +opctl:scaffold:things\n", "thing", "x\n"),
            Err(InsertError::MissingMarker)
        );
    }

    #[test]
    fn yaml_markers_work_too() {
        let out = insert(
            "resources:\n# +opctl:scaffold:resources\n",
            "resources",
            "- a.yaml\n",
        )
        .expect("marker found");
        assert_eq!(out, "resources:\n- a.yaml\n# +opctl:scaffold:resources\n");
    }
}
