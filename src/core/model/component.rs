//! A component (`components/<c>/`) and an environment file (`environments/<env>.yaml`).
//!
//! In: the deserialized files. Out: [`Component`], [`ComponentMeta`], [`Environment`]. Pure.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `components/<name>/component.yaml`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
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

/// When a component counts as healthy.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Health {
    /// Wait for workloads to become ready after apply.
    #[serde(default)]
    pub wait: bool,
    /// How long to wait, e.g. `5m`.
    #[serde(default)]
    pub timeout: Option<String>,
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
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// Merged into every component's values.
    #[serde(default)]
    pub values: Option<Value>,
    /// Merged into one component's values.
    #[serde(default)]
    pub components: BTreeMap<String, Value>,
}
