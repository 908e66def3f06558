//! Diff: what `fief apply` would change, from a server-side dry-run, without changing anything.
//!
//! In: rendered tenants, inventories and live objects. Out: per object a unified diff of the
//! live object against the dry-run result (Secrets redacted), and the objects that would be
//! pruned. Read-only: dry-run requests persist nothing.

use std::collections::BTreeSet;

use kube::api::{Patch, PatchParams};
use serde_json::Value;
use similar::TextDiff;

use super::inventory_store::load_inventories;
use super::observe::load_live;
use super::{ClusterError, FIELD_MANAGER, Resources};
use crate::core::inventory::Inventory;
use crate::core::model::PruneGuard;
use crate::core::objects::{self, ObjectId};
use crate::core::plan;
use crate::core::redact::redact;
use crate::core::render::TenantRender;

/// One object's difference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectDiff {
    /// Tenant.
    pub tenant: String,
    /// The object.
    pub id: ObjectId,
    /// `create`, `update` or `delete`.
    pub action: &'static str,
    /// Unified diff text (redacted).
    pub text: String,
}

/// Metadata the server maintains; never part of a diff.
const SERVER_FIELDS: [&str; 6] = [
    "managedFields",
    "resourceVersion",
    "generation",
    "uid",
    "creationTimestamp",
    "selfLink",
];

fn normalise(mut object: Value) -> Value {
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

fn to_yaml(object: &Value) -> String {
    crate::core::yaml::to_string(&redact(object)).unwrap_or_default()
}

/// Compute the differences for every tenant that rendered cleanly.
pub async fn diff(
    resources: &Resources,
    renders: &[TenantRender],
    agent_namespace: &str,
) -> Result<(Vec<ObjectDiff>, Vec<String>), ClusterError> {
    let client = resources.client().clone();
    let inventories = match load_inventories(&client, agent_namespace).await {
        Ok(i) => i,
        Err(e) if e.status_code() == Some(404) => Default::default(),
        Err(e) => return Err(e),
    };
    let mut kinds = BTreeSet::new();
    for r in renders {
        for o in &r.objects {
            kinds.insert((
                o.object["apiVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                o.id.kind.clone(),
            ));
        }
    }
    let selector = super::observe::tenant_selector(renders);
    let live = load_live(resources, &kinds, &selector).await?;
    let mut diffs = Vec::new();
    let mut errors = Vec::new();
    for r in renders.iter().filter(|r| r.is_ok()) {
        let prev: Option<&Inventory> = inventories.get(&r.tenant).and_then(|i| i.as_ref().ok());
        let live_hashes = r
            .objects
            .iter()
            .filter_map(|o| {
                live.get(&o.id)
                    .map(|l| (o.id.clone(), plan::live_hash(&o.object, l)))
            })
            .collect();
        let p = plan::plan(r, prev, &live_hashes, &PruneGuard::default(), true);
        for a in p.stages.iter().flatten() {
            match object_diff(resources, r, a.object, live.get(&a.object.id)).await {
                Ok(Some(d)) => diffs.push(d),
                Ok(None) => {}
                Err(e) => errors.push(format!("tenant `{}`: {e}", r.tenant)),
            }
        }
        for entry in &p.prune {
            let Some(current) = live.get(&entry.id) else {
                continue;
            };
            let keep = current["metadata"]["annotations"][objects::ANNOTATION_PRUNE] == "disabled";
            if keep {
                continue;
            }
            let old = to_yaml(&normalise(current.clone()));
            diffs.push(ObjectDiff {
                tenant: r.tenant.clone(),
                id: entry.id.clone(),
                action: "delete",
                text: unified(&old, "", &entry.id),
            });
        }
    }
    Ok((diffs, errors))
}

async fn object_diff(
    resources: &Resources,
    render: &TenantRender,
    o: &crate::core::render::RenderedObject,
    live: Option<&Value>,
) -> Result<Option<ObjectDiff>, ClusterError> {
    let version = o.object["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let resource = resources.require(&o.id, &version).await?;
    let api = resources.api(&resource, &o.id.namespace);
    let params = PatchParams::apply(FIELD_MANAGER).force().dry_run();
    let after = match api
        .patch(&o.id.name, &params, &Patch::Apply(&o.object))
        .await
    {
        Ok(obj) => normalise(serde_json::to_value(obj).unwrap_or(Value::Null)),
        // The namespace does not exist yet (a new tenant): the object will be created as is.
        Err(kube::Error::Api(s)) if s.code == 404 && live.is_none() => normalise(o.object.clone()),
        Err(source) => {
            return Err(ClusterError::request(
                format!("dry-run apply {}", o.id),
                source,
            ));
        }
    };
    // List items carry no apiVersion/kind; take them from the rendered object.
    let before = live.cloned().map(|mut l| {
        if let Some(map) = l.as_object_mut() {
            map.insert("apiVersion".into(), Value::String(version.clone()));
            map.insert("kind".into(), Value::String(o.id.kind.clone()));
        }
        normalise(l)
    });
    if before.as_ref() == Some(&after) {
        return Ok(None);
    }
    let old = before.as_ref().map(to_yaml).unwrap_or_default();
    let new = to_yaml(&after);
    let mut text = unified(&old, &new, &o.id);
    if old == new {
        text = format!("{} (Secret values differ; redacted)\n", o.id);
    }
    Ok(Some(ObjectDiff {
        tenant: render.tenant.clone(),
        id: o.id.clone(),
        action: if before.is_some() { "update" } else { "create" },
        text,
    }))
}

fn unified(old: &str, new: &str, id: &ObjectId) -> String {
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
