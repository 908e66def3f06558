//! The `fief` template context: the settings of fief.yaml a template may read.
//!
//! In: the repo's [`Config`]. Out: the context as JSON. Pure.

use serde_json::{Value, json};

use crate::model::Config;

/// The `fief` template context: the settings of fief.yaml templates may read.
pub(super) fn fief_context(config: &Config) -> Value {
    json!({
        "baseDomain": config.base_domain,
        "agentNamespace": config.agent_namespace,
        "componentRules": component_rules(config),
    })
}

/// RBAC rules (`apiGroups`, `resources`) granting the kinds components may create, one per
/// API group in first-seen order: what the baseline `fief-deployer` Role renders.
fn component_rules(config: &Config) -> Vec<Value> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for k in config.component_kinds_shared().iter() {
        match groups.iter_mut().find(|(g, _)| *g == k.group) {
            Some((_, resources)) => resources.push(k.resource.clone()),
            None => groups.push((k.group.clone(), vec![k.resource.clone()])),
        }
    }
    groups
        .into_iter()
        .map(|(g, r)| json!({"apiGroups": [g], "resources": r}))
        .collect()
}
