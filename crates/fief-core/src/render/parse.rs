//! Rendered template output → objects, each with the template line it most likely came from.
//!
//! In: a template's source and its rendered text. Out: [`RenderedObject`]s with namespaces
//! defaulted, and a diagnostic for every document that is not a Kubernetes object. Pure.

use serde_json::Value;

use super::{RenderedObject, Source};
use crate::diagnostic::{Diagnostic, Problem};
use crate::objects::{self, ObjectId, Scope, scope_of};
use crate::plan::phase::{self, Classified};
use crate::yaml::{self, Document};

/// The first content line of each document of a template's source (the same for every
/// render of it, so callers keep it per template).
pub(super) fn document_starts(template: &str) -> Vec<usize> {
    yaml::split_documents(template)
        .iter()
        .map(|c| {
            let skip = c
                .text
                .lines()
                .take_while(|l| is_non_content_line(l))
                .count();
            c.first_line + skip
        })
        .collect()
}

/// Template lines where each rendered document most likely starts; `starts` is
/// [`document_starts`] of `template`.
fn source_lines(
    template: &str,
    starts: &[usize],
    docs: &[Document<'_>],
    kinds: &[Option<String>],
) -> Vec<usize> {
    if starts.len() == docs.len() {
        return starts.to_vec();
    }
    let lines: Vec<&str> = template.lines().collect();
    let mut from = 0usize;
    kinds
        .iter()
        .map(|kind| {
            let Some(kind) = kind else { return 1 };
            let find = |start: usize| {
                lines[start.min(lines.len())..]
                    .iter()
                    .position(|l| {
                        l.trim_start()
                            .strip_prefix("kind:")
                            .map(|v| v.trim() == kind)
                            .unwrap_or(false)
                    })
                    .map(|i| i + start)
            };
            match find(from).or_else(|| find(0)) {
                Some(i) => {
                    from = i;
                    i + 1
                }
                None => 1,
            }
        })
        .collect()
}

/// A template line that renders no YAML of its own: blank, a comment, or only a tag.
fn is_non_content_line(line: &str) -> bool {
    let t = line.trim();
    t.is_empty()
        || t.starts_with('#')
        || (t.starts_with("{%") && t.ends_with("%}"))
        || (t.starts_with("{#") && t.ends_with("#}"))
}

/// A `v1` `List` document (as `kubectl get -o yaml` writes and public manifests ship) stands
/// for its items: each is checked and applied as if it were its own document, at the List's
/// line. Other documents pass through.
fn expand_lists<'d, I>(docs: I) -> impl Iterator<Item = ParsedDoc<'d>>
where
    I: Iterator<Item = ParsedDoc<'d>>,
{
    docs.flat_map(|((doc, result), line)| {
        let items = match &result {
            Ok(Some(Value::Object(map)))
                if map.get("apiVersion").and_then(Value::as_str) == Some("v1")
                    && map.get("kind").and_then(Value::as_str) == Some("List")
                    && map.get("items").is_some_and(Value::is_array) =>
            {
                match result {
                    Ok(Some(Value::Object(mut map))) => match map.remove("items") {
                        Some(Value::Array(items)) => items,
                        _ => Vec::new(),
                    },
                    _ => Vec::new(),
                }
            }
            _ => return vec![((doc, result), line)],
        };
        items
            .into_iter()
            .map(|item| ((doc, Ok(Some(item))), line))
            .collect()
    })
}

/// A rendered document, its parse, and the template line it most likely came from.
type ParsedDoc<'d> = (
    (&'d Document<'d>, Result<Option<Value>, yaml::YamlError>),
    usize,
);

/// Split rendered output into objects, checking each is a Kubernetes object, and default
/// namespaced objects into the environment's namespace. `starts` is [`document_starts`] of
/// `template_src`.
pub(super) fn parse_rendered(
    template: &str,
    template_src: &str,
    starts: &[usize],
    rendered: &str,
    component: &str,
    env: &str,
    namespace: &str,
) -> (Vec<RenderedObject>, Vec<Diagnostic>) {
    #[cfg(test)]
    tests::CAPTURED.with(|c| {
        if let Some(texts) = c.borrow_mut().as_mut() {
            texts.push(rendered.to_string());
        }
    });
    let docs = yaml::split_documents(rendered);
    let parsed: Vec<Result<Option<Value>, yaml::YamlError>> =
        docs.iter().map(yaml::parse_value).collect();
    let kinds: Vec<Option<String>> = parsed
        .iter()
        .map(|p| match p {
            Ok(Some(v)) => v.get("kind").and_then(Value::as_str).map(str::to_string),
            _ => None,
        })
        .collect();
    let lines = source_lines(template_src, starts, &docs, &kinds);
    let mut objects = Vec::new();
    let mut errors = Vec::new();
    let at = Place {
        template,
        component,
        env,
        namespace,
    };
    for ((doc, result), line) in expand_lists(docs.iter().zip(parsed).zip(lines)) {
        match result {
            Ok(Some(value)) => match at.object(value, line) {
                Ok(object) => match phase::classify(&object.object) {
                    Ok(Classified::Placed(_)) => objects.push(object),
                    // A Helm test, delete or rollback hook: fief never runs those.
                    Ok(Classified::Skipped) => {}
                    Err(e) => errors.push(Diagnostic::new(
                        template,
                        Some(line),
                        Problem::InvalidField {
                            field: e.field(),
                            detail: e.to_string(),
                        },
                    )),
                },
                Err(detail) => errors.push(Diagnostic::new(
                    template,
                    Some(line),
                    Problem::NotAnObject { detail },
                )),
            },
            Ok(None) => {}
            Err(e) => errors.push(yaml_error(template, line, doc, &e)),
        }
    }
    (objects, errors)
}

/// A rendered document that is not YAML, at its line in the template: `line` is the
/// template's first content line; the rendered document's line is counted from its first
/// content line too (leading comments and blank lines are skipped on both sides).
fn yaml_error(template: &str, line: usize, doc: &Document<'_>, e: &yaml::YamlError) -> Diagnostic {
    let rendered_line = e.line.unwrap_or(doc.first_line);
    let rendered_start = doc.first_line
        + doc
            .text
            .lines()
            .take_while(|l| is_non_content_line(l))
            .count();
    Diagnostic::new(
        template,
        Some(line + rendered_line.saturating_sub(rendered_start)),
        Problem::Yaml {
            detail: format!(
                "{} (line {rendered_line} of the rendered output)",
                e.message
            ),
        },
    )
}

/// Where rendered documents come from and which namespace they default to.
struct Place<'a> {
    template: &'a str,
    component: &'a str,
    env: &'a str,
    namespace: &'a str,
}

impl Place<'_> {
    /// A parsed document as a Kubernetes object (namespace defaulted or removed by its
    /// scope), or why it is not one.
    fn object(&self, mut object: Value, line: usize) -> Result<RenderedObject, String> {
        let Some(map) = object.as_object_mut() else {
            return Err("the document is not a mapping".to_string());
        };
        let (Some(api_version), Some(kind)) =
            (text_field(map, "apiVersion"), text_field(map, "kind"))
        else {
            return Err("apiVersion and kind must be non-empty strings".to_string());
        };
        let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) else {
            return Err("metadata must be a mapping".to_string());
        };
        let Some(name) = text_field(metadata, "name") else {
            return Err("metadata.name must be a non-empty string".to_string());
        };
        let group = objects::group_of(&api_version).to_string();
        let ns = self.namespace_of(metadata, &group, &kind)?;
        Ok(RenderedObject {
            hash: Default::default(),
            component: self.component.to_string(),
            env: self.env.to_string(),
            id: ObjectId {
                group,
                kind,
                namespace: ns,
                name,
            },
            source: Source {
                file: self.template.to_string(),
                line,
            },
            object,
        })
    }

    /// The object's namespace: none for a cluster-scoped kind (removed), else as written or
    /// the environment's when unset or empty (then set).
    fn namespace_of(
        &self,
        metadata: &mut serde_json::Map<String, Value>,
        group: &str,
        kind: &str,
    ) -> Result<String, String> {
        let default = Value::String(self.namespace.to_string());
        match scope_of(group, kind) {
            Scope::Cluster => {
                metadata.remove("namespace");
                Ok(String::new())
            }
            Scope::Namespaced => match metadata.get("namespace") {
                None | Some(Value::Null) => {
                    metadata.insert("namespace".into(), default);
                    Ok(self.namespace.to_string())
                }
                Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
                Some(Value::String(_)) => {
                    metadata.insert("namespace".into(), default);
                    Ok(self.namespace.to_string())
                }
                Some(_) => Err("metadata.namespace must be a string".to_string()),
            },
        }
    }
}

/// A non-empty string field of a map.
fn text_field(map: &serde_json::Map<String, Value>, key: &str) -> Option<String> {
    map.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests;
