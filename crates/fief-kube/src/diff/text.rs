//! The text of a diff: objects without server-maintained fields, as redacted YAML, as a
//! unified diff, coloured for terminals.
//!
//! In: objects as JSON. Out: [`ObjectDiff`] text and [`colourise`]d text.

use serde_json::Value;
use similar::TextDiff;

use super::ObjectDiff;
use fief_core::objects::ObjectId;
use fief_core::redact::redact;
use fief_core::render::TenantRender;

/// Metadata the server maintains; never part of a diff.
pub(crate) const SERVER_FIELDS: [&str; 6] = [
    "managedFields",
    "resourceVersion",
    "generation",
    "uid",
    "creationTimestamp",
    "selfLink",
];

/// The object without the fields the server maintains and without its status.
pub(super) fn normalise(mut object: Value) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in SERVER_FIELDS {
            meta.remove(f);
        }
    }
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
    }
    object
}

/// The object as YAML, Secret values redacted.
pub(super) fn to_yaml(object: &Value) -> String {
    fief_core::yaml::to_string(&redact(object)).unwrap_or_default()
}

/// The diff of a created or updated object, from its live form to `after`.
pub(super) fn text_diff(
    render: &TenantRender,
    o: &fief_core::render::RenderedObject,
    before: Option<&Value>,
    after: &Value,
) -> ObjectDiff {
    let old = before.map(to_yaml).unwrap_or_default();
    let new = to_yaml(after);
    let mut text = unified(&old, &new, &o.id);
    if old == new {
        text = format!("{} (Secret values differ; redacted)\n", o.id);
    }
    ObjectDiff {
        tenant: render.tenant.clone(),
        id: o.id.clone(),
        action: if before.is_some() { "update" } else { "create" },
        text,
    }
}

/// A unified diff of two texts, headed live/ and rendered/.
pub(super) fn unified(old: &str, new: &str, id: &ObjectId) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("live/{id}"), &format!("rendered/{id}"))
        .to_string()
}

/// ANSI colours for a unified diff (for terminals).
pub fn colourise(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let colour = if line.starts_with("+++") || line.starts_with("---") {
            "\x1b[1m"
        } else if line.starts_with('+') {
            "\x1b[32m"
        } else if line.starts_with('-') {
            "\x1b[31m"
        } else if line.starts_with("@@") {
            "\x1b[36m"
        } else {
            ""
        };
        if colour.is_empty() {
            out.push_str(line);
        } else {
            out.push_str(colour);
            out.push_str(line.trim_end_matches('\n'));
            out.push_str("\x1b[0m\n");
        }
    }
    out
}
