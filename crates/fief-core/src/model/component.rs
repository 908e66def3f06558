//! A component (`components/<c>/`) and an environment file (`environments/<env>.yaml`).
//!
//! In: the deserialized files. Out: [`Component`], [`ComponentMeta`], [`Environment`]. Pure.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `components/<name>/component.yaml`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ComponentMeta {
    /// What the component is.
    #[serde(default)]
    pub description: String,
    /// Default version.
    #[serde(default)]
    pub version: Option<String>,
    /// Components applied before this one.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Health settings.
    #[serde(default)]
    pub health: Health,
}

/// When a component counts as healthy (`health:` in component.yaml).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Health {
    /// Whether a sync that waits for health (`fief apply --wait`) waits for this component's
    /// objects; default true.
    #[serde(default)]
    pub wait: Option<bool>,
    /// How long to wait, e.g. `5m` (default: the command's `--timeout`).
    #[serde(default)]
    pub timeout: Option<String>,
}

impl Health {
    /// Whether to wait for this component (unset means yes).
    pub fn waits(&self) -> bool {
        self.wait.unwrap_or(true)
    }
}

/// A duration written as `30s`, `5m`, `1h` or `250ms` (a bare number is seconds).
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration like 30s, 5m or 1h"))?;
    match unit {
        "ms" => Ok(std::time::Duration::from_millis(n)),
        "s" => Ok(std::time::Duration::from_secs(n)),
        "m" => Ok(std::time::Duration::from_secs(n * 60)),
        "h" => Ok(std::time::Duration::from_secs(n * 3600)),
        _ => Err(format!(
            "`{text}`: unknown unit `{unit}` (use ms, s, m or h)"
        )),
    }
}

/// A parsed component.
#[derive(Debug, Clone)]
pub struct Component {
    /// Directory name (for a pinned component, the name without `@<ref>`).
    pub name: String,
    /// The git ref it was read at, for a pinned component.
    pub pinned: Option<String>,
    /// component.yaml.
    pub meta: ComponentMeta,
    /// varz.yaml.
    pub values: Value,
    /// Repo-relative paths of the templates that render objects (not `_` partials).
    pub templates: Vec<String>,
}

/// `environments/<env>.yaml`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// Merged into every component's values.
    #[serde(default)]
    pub values: Option<Value>,
    /// Merged into one component's values.
    #[serde(default)]
    pub components: BTreeMap<String, Value>,
}
