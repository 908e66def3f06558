//! Values provenance: for one tenant, each component's values in each environment, key by
//! key, with the file and line of the layer that set it.
//!
//! In: the [`Repo`] and a tenant name. Out: one [`ValuesTrace`] per component and environment
//! (in the render's order), each leaf value with its origin: `varz.yaml`, the environment's
//! `values`, its `components.<c>`, the tenant's component `values`, or the tenant's
//! `overrides.<env>` — the layers `fief render` merges, last one winning. Nothing is
//! rendered. Pure.

use serde_json::Value;

use super::order::component_order;
use super::pinned::env_override;
use super::tenant::{LayerSources, OwnValues, value_layers};
use super::{environments, values};
use crate::diagnostic::Diagnostic;
use crate::model::Repo;
use crate::schema::locate::{Step, line_of_path};
use crate::schema::values::Layer;

/// One component's merged values in one environment, leaf by leaf.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ValuesTrace {
    /// The component.
    pub component: String,
    /// The environment.
    pub env: String,
    /// Each leaf (a scalar, a list, or an empty map), by dotted path, in key order.
    pub values: Vec<TracedValue>,
}

/// One leaf of the merged values and where it comes from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TracedValue {
    /// Dotted path (`image.tag`).
    pub key: String,
    /// The value the templates see.
    pub value: Value,
    /// The file of the layer that set it.
    pub file: String,
    /// Its line there, when found.
    pub line: Option<usize>,
}

/// Every component's values of `tenant` in each of its environments, with their origins; or
/// the diagnostics of the files that keep the tenant from being read.
pub fn trace(repo: &Repo, tenant_name: &str) -> Result<Vec<ValuesTrace>, Vec<Diagnostic>> {
    let config = repo.config.as_ref().map_err(Clone::clone)?;
    let tenant = match repo.tenants.get(tenant_name) {
        Some(Ok(t)) => t,
        Some(Err(ds)) => return Err(ds.clone()),
        None => return Ok(Vec::new()),
    };
    let file = repo.tenant_file(tenant_name);
    let order = component_order(repo, tenant, &file)?;
    let envs = environments(config, tenant);
    let mut out = Vec::new();
    for head in &order {
        for env in &envs {
            // At the environment's own `ref`, when its override sets one: its varz.yaml is
            // then `components/<c>@<ref>/varz.yaml`, which names the ref.
            let found = super::pinned::env_component(repo, tenant, head, env)?;
            let (cref, dir, component) = (found.entry, found.dir, found.component);
            let env_file = match repo.environments.get(env) {
                Some(Ok(e)) => Some(e),
                _ => None,
            };
            let over = env_override(tenant, env, &component.name);
            let sources = LayerSources {
                dir: &dir,
                component: &component.name,
                tenant_file: &file,
                env,
            };
            let own = OwnValues::of(cref, over);
            let layers = value_layers(&sources, component, env_file, &own);
            out.push(ValuesTrace {
                component: component.name.clone(),
                env: env.clone(),
                values: traced(repo, &layers),
            });
        }
    }
    Ok(out)
}

/// The merged values of `layers`, leaf by leaf, each with the last layer that holds it.
fn traced(repo: &Repo, layers: &[Layer<'_>]) -> Vec<TracedValue> {
    let merged = values::layered(layers.iter().map(|l| l.value));
    let mut leaves = Vec::new();
    collect_leaves(&merged, &mut Vec::new(), &mut leaves);
    leaves
        .into_iter()
        .map(|(path, value)| {
            let origin = layers
                .iter()
                .rev()
                .find(|l| l.value.is_some_and(|v| holds(v, &path)));
            let (file, line) = match origin {
                Some(layer) => {
                    let mut steps = layer.anchor.clone();
                    steps.extend(path.iter().map(|k| Step::Key(k.as_str())));
                    let line = repo
                        .snapshot
                        .get(&layer.file)
                        .and_then(|t| t.as_ref().ok())
                        .and_then(|t| line_of_path(t, &steps));
                    (layer.file.clone(), line)
                }
                None => (String::new(), None),
            };
            TracedValue {
                key: path.join("."),
                value,
                file,
                line,
            }
        })
        .collect()
}

/// Every leaf of `value` (non-map values and empty maps) with its path.
fn collect_leaves(value: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                path.push(k.clone());
                collect_leaves(v, path, out);
                path.pop();
            }
        }
        other => out.push((path.clone(), other.clone())),
    }
}

/// Whether `layer` sets `path`: the key exists there (a non-map on the way replaces whatever
/// lower layers held below it, so it counts as setting the leaf).
fn holds(layer: &Value, path: &[String]) -> bool {
    let mut at = layer;
    for key in path {
        match at {
            Value::Object(map) => match map.get(key) {
                Some(v) => at = v,
                None => return false,
            },
            _ => return true,
        }
    }
    true
}

#[cfg(test)]
#[path = "provenance_tests.rs"]
mod tests;
