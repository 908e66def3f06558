//! Deserializer messages about repo files, in the user's terms.
//!
//! In: a YAML parser's or serde's message. Out: the [`Problem`] it describes (an unknown
//! field with a did-you-mean, or invalid YAML, whose text names no parser option or Rust
//! type: `Problem`'s own `readable_yaml`).

use super::Problem;

impl Problem {
    /// The problem of a repo file that did not deserialize: [`Problem::UnknownField`] (with
    /// a did-you-mean) for a field the format does not have, else [`Problem::Yaml`].
    pub fn from_yaml_error(message: &str) -> Problem {
        let unknown = message
            .strip_prefix("unknown field `")
            .and_then(|rest| rest.split_once('`'));
        let Some((field, rest)) = unknown else {
            return Problem::Yaml {
                detail: message.to_string(),
            };
        };
        let list = rest
            .trim_start_matches(',')
            .trim()
            .trim_start_matches("expected one of")
            .trim_start_matches("expected")
            .trim();
        let allowed: Vec<String> = list
            .split([',', ' '])
            .map(|w| w.trim().trim_matches('`'))
            .filter(|w| !w.is_empty() && *w != "or")
            .map(str::to_string)
            .collect();
        let suggestion = crate::suggest::suggest(field, allowed.iter().map(String::as_str))
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        Problem::UnknownField {
            field: field.to_string(),
            suggestion,
            allowed: if allowed.is_empty() {
                "none".to_string()
            } else {
                allowed.join(", ")
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_field_names_the_nearest_allowed_one() {
        let p = Problem::from_yaml_error(
            "unknown field `enviroments`, expected one of `state`, `environments`, `quota`",
        );
        assert_eq!(
            p.to_string(),
            "unknown field `enviroments` (did you mean `environments`?); the fields here are: \
             state, environments, quota"
        );
        let p = Problem::from_yaml_error("unknown field `zzzzzz`, expected `alpha` or `beta`");
        assert_eq!(
            p.to_string(),
            "unknown field `zzzzzz`; the fields here are: alpha, beta"
        );
        assert!(matches!(
            Problem::from_yaml_error("mapping values are not allowed"),
            Problem::Yaml { .. }
        ));
    }

    #[test]
    fn yaml_messages_name_no_parser_internals() {
        let p = |d: &str| {
            Problem::Yaml {
                detail: d.to_string(),
            }
            .to_string()
        };
        assert_eq!(
            p("duplicate mapping key: name, set DuplicateKeyPolicy in Options if acceptable"),
            "invalid YAML: duplicate key `name` (a key may appear once in a map)"
        );
        let q = p("data did not match any variant of untagged enum Quantity");
        assert!(q.contains("not a quantity"), "{q}");
        assert!(p("expected sequence start").contains("expected a list"));
    }
}
