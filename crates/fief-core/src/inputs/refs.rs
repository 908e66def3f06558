//! Template references: which files a template names in `{% include/import/extends/from %}`.
//!
//! In: a template's path and text (or a folder of a [`Snapshot`]). Out: the paths it names by
//! a literal (resolved as the renderer does), followed transitively, and whether any of them
//! names a template by a computed expression (`{% include "x/" ~ values.name %}`), whose
//! target no hash can know before the render. Pure.

use std::collections::BTreeSet;

use crate::snapshot::Snapshot;

/// What the templates of a folder reach outside it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Reach {
    /// Files outside the folder named by literal references, transitively.
    pub(super) outside: BTreeSet<String>,
    /// Some template reached names another by a computed expression.
    pub(super) computed: bool,
}

/// The template-referencing statements of a text: (keyword, the rest of the statement).
fn statements(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.split("{%").skip(1).filter_map(|block| {
        let body = block.split("%}").next().unwrap_or("");
        let body = body.trim_start_matches(['-', '+']).trim_start();
        let body = body.trim_end().trim_end_matches(['-', '+']);
        let word = body.split_whitespace().next().unwrap_or("");
        matches!(word, "include" | "import" | "extends" | "from")
            .then(|| (word, &body[word.len()..]))
    })
}

/// Template names a file names by a literal in `{% include/import/extends/from ... %}`,
/// resolved as the renderer does (a name without `/` is next to the including file).
pub(super) fn template_refs(path: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let dir = path.rsplit_once('/').map(|(d, _)| d);
    for (_, mut rest) in statements(text) {
        while let Some(start) = rest.find(['"', '\'']) {
            let quote = &rest[start..start + 1];
            let after = &rest[start + 1..];
            let Some(end) = after.find(quote) else { break };
            let name = &after[..end];
            out.push(match (name.contains('/'), dir) {
                (false, Some(d)) => format!("{d}/{name}"),
                _ => name.to_string(),
            });
            rest = &after[end + 1..];
        }
    }
    out
}

/// Words that may follow the template name(s) of a reference.
const TRAILERS: [&str; 7] = [
    "ignore", "missing", "as", "import", "with", "without", "context",
];

/// Whether a text names a template by anything but string literals (one, or a list of them),
/// so what it reads is only known when it renders.
pub(super) fn names_computed(text: &str) -> bool {
    statements(text).any(|(_, rest)| !literal_target(rest))
}

/// Whether a statement's target is a string literal or a list of them, followed only by the
/// statement's own words (`ignore missing`, `as x`, `import a, b`, `with context`).
fn literal_target(rest: &str) -> bool {
    let mut s = rest.trim_start();
    let list = s.starts_with('[');
    if list {
        s = &s[1..];
    }
    loop {
        s = s.trim_start();
        let Some(quote) = s.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            return false;
        };
        let after = &s[1..];
        let Some(end) = after.find(quote) else {
            return false;
        };
        if after[..end].contains('\\') {
            return false;
        }
        s = after[end + 1..].trim_start();
        if !list {
            break;
        }
        if let Some(more) = s.strip_prefix(',') {
            s = more;
            if s.trim_start().starts_with(']') {
                s = s.trim_start();
            } else {
                continue;
            }
        }
        let Some(closed) = s.strip_prefix(']') else {
            return false;
        };
        s = closed;
        break;
    }
    match s.split_whitespace().next() {
        None => true,
        Some(word) => TRAILERS.contains(&word),
    }
}

/// What the templates under `dir` reach outside it (see [`Reach`]).
pub(super) fn reach(snapshot: &Snapshot, dir: &str) -> Reach {
    let prefix = format!("{dir}/");
    let mut computed = false;
    let mut todo: Vec<String> = Vec::new();
    for (path, entry) in snapshot.under(dir) {
        if let Ok(text) = entry {
            computed |= names_computed(text);
            todo.extend(template_refs(path, text));
        }
    }
    let mut outside = BTreeSet::new();
    while let Some(path) = todo.pop() {
        if path.starts_with(&prefix) || !outside.insert(path.clone()) {
            continue;
        }
        if let Some(Ok(text)) = snapshot.get(&path) {
            computed |= names_computed(text);
            todo.extend(template_refs(&path, text));
        }
    }
    Reach { outside, computed }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_names_are_not_computed() {
        for text in [
            "{% include \"shared/a.yaml\" %}",
            "{%- include 'a.tpl' -%}",
            "{% include ['a.yaml', \"b.yaml\"] ignore missing %}",
            "{% include [\"a.yaml\",] %}",
            "{% import \"macros.j2\" as m %}",
            "{% from 'macros.j2' import box, line with context %}",
            "{% extends \"base.yaml\" %}",
            "no statements at all {{ values.x }}",
            "{% if x %}{% endif %}",
        ] {
            assert!(!names_computed(text), "{text}");
        }
    }

    #[test]
    fn expressions_as_template_names_are_computed() {
        for text in [
            "{% include \"components/\" ~ values.name ~ \"/x.yaml\" %}",
            "{% include values.template %}",
            "{% include ['a.yaml', name] %}",
            "{% import name as m %}",
            "{% from \"a\" ~ b import c %}",
            "{% extends parent %}",
            "{% include \"a\\\"b\" %}",
        ] {
            assert!(names_computed(text), "{text}");
        }
    }

    #[test]
    fn a_computed_name_in_a_file_reached_from_the_folder_marks_the_folder() {
        let snapshot = Snapshot::from_files(vec![
            (
                "components/web/templates/a.yaml".to_string(),
                "{% include 'shared/s.txt' %}".to_string(),
            ),
            (
                "shared/s.txt".to_string(),
                "{% include 'components/' ~ x %}".to_string(),
            ),
        ]);
        let r = reach(&snapshot, "components/web");
        assert!(r.computed);
        assert!(r.outside.contains("shared/s.txt"));
        let plain = Snapshot::from_files(vec![(
            "components/web/templates/a.yaml".to_string(),
            "{% include 'shared/s.txt' %}".to_string(),
        )]);
        assert!(!reach(&plain, "components/web").computed);
    }
}
