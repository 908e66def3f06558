//! Better template error messages: which variable is undefined and what is defined beside
//! it, and a pointer to the Jinja equivalent when a template uses Helm (Go template) syntax.
//!
//! In: the template's source line where minijinja stopped, and the render context as JSON.
//! Out: extra text for the diagnostic (never a value: only names of keys). Pure.

use serde_json::Value;

use crate::suggest::suggest;

/// Words of the Jinja language and of fief's template context that are not variables.
const NOT_VARIABLES: &[&str] = &[
    "if",
    "elif",
    "else",
    "endif",
    "for",
    "endfor",
    "in",
    "not",
    "and",
    "or",
    "is",
    "true",
    "false",
    "none",
    "True",
    "False",
    "None",
    "set",
    "endset",
    "loop",
    "include",
    "import",
    "from",
    "as",
    "with",
    "endwith",
    "macro",
    "endmacro",
    "call",
    "endcall",
    "filter",
    "endfilter",
    "block",
    "endblock",
    "extends",
    "raw",
    "endraw",
    "recursive",
    "defined",
    "undefined",
    "caller",
    "range",
    "dict",
    "namespace",
    "debug",
    "lipsum",
    "cycler",
    "joiner",
    "self",
    "super",
    "ignore",
    "missing",
    "context",
];

/// Whether the line holds Prometheus/Alertmanager template text (`{{ $labels.x }}`,
/// `{{ $value | humanize }}`, `{{ .Labels.x }}`), which is meant literally, not Helm.
pub fn foreign_template(line: &str) -> bool {
    [
        "$labels",
        "$value",
        "$externalLabels",
        ".Labels.",
        ".Annotations.",
        "humanize",
    ]
    .iter()
    .any(|m| line.contains(m))
}

/// A Helm construct found on the line, with what to write instead.
pub fn helm_hint(line: &str) -> Option<&'static str> {
    if line.contains("include \"") && line.contains(" .") || line.contains("template \"") {
        Some(
            "fief templates are Jinja (minijinja), not Helm's Go templates: instead of `{{ include \"name\" . }}` write `{% include \"_name.yaml\" %}` (a `_`-prefixed file in templates/ is a partial and sees the same context) or define a `{% macro %}`",
        )
    } else if line.contains("toYaml") || line.contains("nindent") || line.contains("{{ $") {
        Some(
            "fief templates are Jinja (minijinja), not Helm's Go templates: instead of `{{- toYaml .Values.x | nindent 4 }}` write `{{ values.x | to_yaml | indent(4) }}`",
        )
    } else if line.contains(".Values") || line.contains(".Release") || line.contains(".Chart") {
        Some(
            "fief templates are Jinja (minijinja), not Helm's Go templates: write `{{ values.replicas }}` for `{{ .Values.replicas }}` (the context is `values`, `tenant`, `env`, `namespace`, `component`, `fief`, `secrets`)",
        )
    } else {
        None
    }
}

/// `values.image.tagg` → what is undefined and what is defined beside it, for the first
/// dotted name on `line` that does not resolve in `context`. `template` is the whole
/// template, to skip names it defines itself (`for x in`, `set x =`, macros).
pub fn undefined_detail(line: &str, template: &str, context: &Value) -> Option<String> {
    let locals = locals(template);
    for path in dotted_names(line) {
        let parts: Vec<&str> = path.split('.').collect();
        let first = parts[0];
        if NOT_VARIABLES.contains(&first) || locals.iter().any(|l| l == first) {
            continue;
        }
        let mut cur = context;
        for (i, part) in parts.iter().enumerate() {
            match cur.get(part) {
                Some(next) => cur = next,
                None => {
                    let missing = parts[..=i].join(".");
                    let parent = parts[..i].join(".");
                    let Some(map) = cur.as_object() else {
                        return Some(format!(
                            "`{missing}`: `{parent}` is not a map, it has no `{part}`"
                        ));
                    };
                    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
                    let owner = if parent.is_empty() {
                        "the template context".to_string()
                    } else {
                        format!("`{parent}`")
                    };
                    let mut out = format!("`{missing}` is not defined");
                    if keys.is_empty() {
                        out.push_str(&format!("; {owner} is empty"));
                    } else {
                        out.push_str(&format!("; {owner} has: {}", list(&keys)));
                    }
                    if let Some(s) = suggest(part, keys.iter().copied()) {
                        let near = if parent.is_empty() {
                            s.to_string()
                        } else {
                            format!("{parent}.{s}")
                        };
                        out.push_str(&format!(" (did you mean `{near}`?)"));
                    }
                    return Some(out);
                }
            }
        }
    }
    None
}

fn list(keys: &[&str]) -> String {
    const SHOWN: usize = 12;
    let mut out = keys
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if keys.len() > SHOWN {
        out.push_str(&format!(" and {} more", keys.len() - SHOWN));
    }
    out
}

/// Names the template binds itself: `for a, b in`, `set x =`, `macro m(p, q)`, `with x =`.
fn locals(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let words: Vec<&str> = template
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ','))
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        if matches!(*w, "for" | "set" | "with" | "macro" | "as" | "import") {
            for name in words.get(i + 1).into_iter().flat_map(|n| n.split(',')) {
                if !name.is_empty() {
                    out.push(name.to_string());
                }
            }
        }
    }
    // Macro parameters: `macro name(a, b=1)`.
    for part in template.split("macro ").skip(1) {
        if let Some(args) = part.split_once('(').and_then(|(_, r)| r.split_once(')')) {
            for a in args.0.split(',') {
                let name = a.split('=').next().unwrap_or("").trim();
                if !name.is_empty() {
                    out.push(name.to_string());
                }
            }
        }
    }
    out
}

/// Dotted names inside `{{ }}` and `{% %}` on the line, skipping filter and test names and
/// attributes of calls.
fn dotted_names(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut code = String::new();
    let mut rest = line;
    while let Some(start) = rest.find(['{']) {
        let after = &rest[start + 1..];
        let close = match after.chars().next() {
            Some('{') => "}}",
            Some('%') => "%}",
            _ => {
                rest = after;
                continue;
            }
        };
        let body = &after[1..];
        let end = body.find(close).unwrap_or(body.len());
        code.push(' ');
        code.push_str(&body[..end]);
        rest = &body[end..];
    }
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    let mut prev_sig = ' ';
    let mut in_string: Option<char> = None;
    while i < bytes.len() {
        let c = bytes[i];
        if let Some(q) = in_string {
            if c == q {
                in_string = None;
            }
            i += 1;
            continue;
        }
        if c == '"' || c == '\'' {
            in_string = Some(c);
            i += 1;
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_alphanumeric() || bytes[i] == '_' || bytes[i] == '.')
            {
                i += 1;
            }
            let word: String = bytes[start..i].iter().collect::<String>();
            let word = word.trim_end_matches('.').to_string();
            let is_filter = prev_sig == '|';
            let is_attr = prev_sig == '.' || prev_sig == ')' || prev_sig == ']';
            let preceding_is = {
                let before: String = bytes[..start].iter().collect();
                before.trim_end().ends_with(" is")
            };
            if !is_filter && !is_attr && !preceding_is {
                out.push(word);
            }
            prev_sig = 'a';
            continue;
        }
        if !c.is_whitespace() {
            prev_sig = c;
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> Value {
        json!({"values": {"greeting": "hi", "image": {"repo": "web", "tag": "1"}}, "env": "prod"})
    }

    #[test]
    fn names_the_undefined_value_and_its_neighbours() {
        let d = undefined_detail("  b: {{ values.image.tagg | quote }}", "", &ctx()).unwrap();
        assert_eq!(
            d,
            "`values.image.tagg` is not defined; `values.image` has: repo, tag (did you mean `values.image.tag`?)"
        );
        let d = undefined_detail("{{ valuez.greeting }}", "", &ctx()).unwrap();
        assert!(d.contains("the template context has: env, values"), "{d}");
        assert!(d.contains("did you mean `values`"), "{d}");
    }

    #[test]
    fn skips_filters_loop_variables_and_strings() {
        let tpl = "{% for h in values.hosts %}\n{{ h.name | upper }}\n{% endfor %}";
        assert_eq!(undefined_detail("{{ h.name | upper }}", tpl, &ctx()), None);
        assert_eq!(undefined_detail("{{ \"values.nope\" }}", "", &ctx()), None);
        assert_eq!(undefined_detail("{{ values.greeting }}", "", &ctx()), None);
    }

    #[test]
    fn recognises_helm_syntax() {
        assert!(helm_hint("  replicas: {{ .Values.replicas }}").is_some());
        assert!(
            helm_hint("{{ include \"app.labels\" . | nindent 4 }}")
                .unwrap()
                .contains("include")
        );
        assert!(
            helm_hint("{{- toYaml values.x | nindent 2 }}")
                .unwrap()
                .contains("to_yaml")
        );
        assert_eq!(helm_hint("{{ values.x | to_yaml }}"), None);
    }
}
