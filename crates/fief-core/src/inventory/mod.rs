//! Inventory: what fief applied for a tenant, kept in the tenant's ApplySet parent ConfigMap.
//!
//! In: a tenant's entries (identity, apiVersion, content hashes) and status. Out: the
//! ConfigMap (KEP-3659 labels and annotations so `kubectl` can read it, plus fief's own data
//! keys), and back. Pure: the cluster module reads and writes it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use crate::condition::Condition;
use crate::condition::{ConditionStatus, ConditionType, Reason};
pub use crate::digest::AppliedVersion;
use crate::objects::{self, ObjectId};
pub use held::{HeldPrune, HoldKind, MAX_LISTED};

mod held;

/// Label on the parent: the ApplySet id.
pub const LABEL_APPLYSET_ID: &str = "applyset.kubernetes.io/id";
/// Annotation on the parent: which tool manages the set.
pub const ANNOTATION_TOOLING: &str = "applyset.kubernetes.io/tooling";
/// Annotation on the parent: `Kind.group` of every member.
pub const ANNOTATION_GROUP_KINDS: &str = "applyset.kubernetes.io/contains-group-kinds";
/// Annotation on the parent: member namespaces other than the parent's.
pub const ANNOTATION_NAMESPACES: &str = "applyset.kubernetes.io/additional-namespaces";
/// Data key holding the entries.
pub const DATA_ENTRIES: &str = "entries";
/// Data key holding the status.
pub const DATA_STATUS: &str = "status";

/// One applied object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Identity.
    #[serde(flatten)]
    pub id: ObjectId,
    /// Component that rendered it (`baseline` for the baseline).
    #[serde(default)]
    pub component: String,
    /// apiVersion it was applied with (to resolve the resource when pruning).
    pub api_version: String,
    /// Hash of the rendered object fief applied.
    pub hash: String,
    /// Hash of the live object's fields that fief sets, as the server returned them (empty
    /// while the object is recorded but not yet applied).
    pub live: String,
    /// `metadata.resourceVersion` of the object the server returned when fief last applied
    /// it: while the live object still has it, `live` stands without reading the object
    /// (empty in entries of older versions, and while not yet applied).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// `metadata.uid` of that object (empty as `resource_version`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// [`crate::plan::managed_fingerprint`] of that object: fief's own `managedFields`
    /// entry. A write by anyone else that leaves it unchanged (a controller's status update)
    /// touched no field fief sets, so `live` stands without reading the object (empty in
    /// entries of older versions, and while not yet applied).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub managed: String,
    /// Namespaces only: `true` when fief created it (it did not exist before the tenant's
    /// first apply), `false` when it existed and was handed over (labelled as the tenant's).
    /// Purge deletes only created namespaces. Absent in entries of older versions: then purge
    /// deletes the namespace only if fief is its only field manager.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<bool>,
    /// Recorded by a sync that has not completed: one whose prune is held (or failed an
    /// apply, or stopped) added it. The mass-prune guard neither counts it as a deletion nor
    /// towards the total ([`crate::plan::plan`]); a sync that completes clears it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
    /// A pre or post object with a delete policy (`helm.sh/hook-delete-policy`) that ran to
    /// its end at the content [`Entry::hash`] records, and how: while the render still has that
    /// content, it is neither applied nor read again, and its absence is not drift. Absent:
    /// not done (and in entries of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<Done>,
}

/// How a pre or post object with a delete policy ended ([`Entry::done`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Done {
    /// It was healthy (a Job: complete) with the rest of its phase; deleted when its policy
    /// says `hook-succeeded`.
    Succeeded,
    /// It failed, and why (a Job: its `Failed` condition's reason and message); deleted by
    /// its policy's `hook-failed`. Its tenant stays failed until its content changes.
    Failed(String),
}

impl std::fmt::Display for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Done::Succeeded => f.write_str("succeeded"),
            Done::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

impl Entry {
    /// [`Entry::applied_version`] as the compact [`crate::digest::Version`], read without
    /// copying its fields.
    pub fn version(&self) -> crate::digest::Version {
        crate::digest::Version::of(&self.uid, &self.resource_version, &self.managed)
    }

    /// The version of the live object fief last applied, as recorded here.
    pub fn applied_version(&self) -> AppliedVersion {
        AppliedVersion {
            uid: self.uid.clone(),
            resource_version: self.resource_version.clone(),
            managed: self.managed.clone(),
        }
    }
}

/// Object counts of the last sync.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Objects in the inventory.
    pub objects: usize,
    /// Created by the last sync.
    pub created: usize,
    /// Changed by the last sync.
    pub configured: usize,
    /// Left alone by the last sync.
    pub unchanged: usize,
    /// Deleted by the last sync.
    pub pruned: usize,
    /// Failed in the last sync.
    pub failed: usize,
}

/// The tenant's status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Content hash of the objects last applied successfully.
    pub revision: String,
    /// The git commit that last changed this tenant's objects (agent only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// [`crate::inputs`] hash of the files the last successful sync rendered (with
    /// fief's version): while it is the current one and the live objects are as recorded, a
    /// render would give the same objects. Empty after a failed sync, and in older inventories.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub inputs: String,
    /// Conditions.
    pub conditions: Vec<Condition>,
    /// The last error, if the last sync failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Counts.
    pub counts: Counts,
    /// Who may read this status without rights in the agent namespace, as granted by the
    /// Role and RoleBinding `fief-status-<tenant>` next to it (empty: nobody is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status_readers: Vec<String>,
    /// The tenant is a spare, kept ready for `fief allocate`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spare: bool,
    /// The cluster the tenant file now names, while `Moved=True` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<String>,
    /// The prune held now: why, since when and what it would delete. It stays until a
    /// person releases it or git stops asking for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune_hold: Option<HeldPrune>,
    /// The last release of a held mass prune by a person: who and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune_released: Option<String>,
    /// Components the last sync did not apply because what they depend on was not applied
    /// and healthy yet: component → what it waits for.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub waiting: BTreeMap<String, Vec<String>>,
    /// What the phase the last sync set aside waits for (an ordered phase before it that is
    /// not done yet), if it set one aside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_waiting: Option<String>,
}

impl Status {
    /// Whether the last sync left something to apply once what it waits for is healthy
    /// ([`Status::waiting`], [`Status::phase_waiting`]).
    pub fn holds_back(&self) -> bool {
        !self.waiting.is_empty() || self.phase_waiting.is_some()
    }

    /// One line for people: what waits, for what.
    pub fn held_back(&self) -> String {
        let mut parts = Vec::new();
        if let Some(phase) = &self.phase_waiting {
            parts.push(phase.clone());
        }
        if !self.waiting.is_empty() {
            parts.push(describe_waiting(&self.waiting));
        }
        parts.join("; ")
    }

    /// Set a condition; `last_transition_time` changes only when its status flips.
    pub fn set_condition(
        &mut self,
        type_: ConditionType,
        status: bool,
        reason: Reason,
        message: &str,
        now: &str,
    ) {
        let status = ConditionStatus::from(status);
        match self
            .conditions
            .iter_mut()
            .find(|c| c.type_ == type_.as_str())
        {
            Some(c) => {
                if c.status != status {
                    c.last_transition_time = now.to_string();
                }
                c.status = status;
                c.reason = reason.to_string();
                c.message = message.to_string();
            }
            None => {
                self.conditions.push(Condition {
                    type_: type_.to_string(),
                    status,
                    reason: reason.to_string(),
                    message: message.to_string(),
                    last_transition_time: now.to_string(),
                });
                self.conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
            }
        }
    }

    /// The condition of a type, if set.
    pub fn condition(&self, type_: ConditionType) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_.as_str())
    }

    /// Remove the condition of a type, if set.
    pub fn remove_condition(&mut self, type_: ConditionType) {
        self.conditions.retain(|c| c.type_ != type_.as_str());
    }

    /// Whether the last sync finished and succeeded: `Ready=True`, neither `Reconciling` nor
    /// `Stalled` true, no last error, and not marked `Orphaned` (a tenant file that came back
    /// is synced, which clears it).
    pub fn is_settled(&self) -> bool {
        let is = |type_| self.condition(type_).is_some_and(Condition::is_true);
        is(ConditionType::Ready)
            && !is(ConditionType::Reconciling)
            && !is(ConditionType::Stalled)
            && self.condition(ConditionType::Orphaned).is_none()
            && self.last_error.is_none()
    }
}

/// One line for people: what each held component waits for.
pub fn describe_waiting(waiting: &BTreeMap<String, Vec<String>>) -> String {
    waiting
        .iter()
        .map(|(c, blockers)| format!("{c} waits for {}", blockers.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A tenant's inventory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    /// Tenant name.
    pub tenant: String,
    /// Applied objects.
    pub entries: BTreeMap<ObjectId, Entry>,
    /// Status.
    pub status: Status,
}

/// An inventory ConfigMap fief cannot read.
#[derive(Debug, thiserror::Error)]
#[error("inventory {namespace}/{name}: {detail}")]
pub struct InventoryError {
    /// Namespace of the ConfigMap.
    pub namespace: String,
    /// Name of the ConfigMap.
    pub name: String,
    /// What is wrong.
    pub detail: String,
}

impl Inventory {
    /// An empty inventory for a tenant.
    pub fn new(tenant: &str) -> Inventory {
        Inventory {
            tenant: tenant.to_string(),
            ..Default::default()
        }
    }

    /// The status as the ConfigMap's [`DATA_STATUS`] key holds it.
    pub fn status_data(&self) -> String {
        serde_json::to_string_pretty(&self.status).unwrap_or_default()
    }

    /// The ApplySet parent ConfigMap for this inventory.
    pub fn to_configmap(&self, agent_namespace: &str) -> Value {
        let name = objects::inventory_name(&self.tenant);
        let id = objects::tenant_applyset_id(&self.tenant, agent_namespace);
        let group_kinds: BTreeSet<String> = self
            .entries
            .keys()
            .map(|k| {
                if k.group.is_empty() {
                    k.kind.clone()
                } else {
                    format!("{}.{}", k.kind, k.group)
                }
            })
            .collect();
        let namespaces: BTreeSet<&str> = self
            .entries
            .keys()
            .map(|k| k.namespace.as_str())
            .filter(|n| !n.is_empty() && *n != agent_namespace)
            .collect();
        let mut entries = String::from("[");
        for (i, e) in self.entries.values().enumerate() {
            entries.push_str(if i == 0 { "\n" } else { ",\n" });
            entries.push_str(&serde_json::to_string(e).unwrap_or_default());
        }
        entries.push_str("\n]");
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": agent_namespace,
                "labels": {
                    LABEL_APPLYSET_ID: id,
                    objects::LABEL_MANAGED_BY: "fief",
                    objects::LABEL_TENANT: self.tenant,
                },
                "annotations": {
                    ANNOTATION_TOOLING: format!("fief/v{}", env!("CARGO_PKG_VERSION")),
                    ANNOTATION_GROUP_KINDS: group_kinds.into_iter().collect::<Vec<_>>().join(","),
                    ANNOTATION_NAMESPACES: namespaces.into_iter().collect::<Vec<_>>().join(","),
                },
            },
            "data": {
                DATA_ENTRIES: entries,
                DATA_STATUS: self.status_data(),
            },
        })
    }

    /// Whether this inventory can stand for a render of the tenant at input hash `inputs`
    /// (see [`Status::inputs`]): its last sync is settled at those inputs, and every entry
    /// records the version of the object fief applied ([`AppliedVersion`]), so whether the
    /// live objects are still as recorded can be told from their metadata alone.
    pub fn stands_for(&self, inputs: &str) -> bool {
        crate::inputs::reusable(inputs)
            && self.status.inputs == inputs
            && self.status.is_settled()
            && !self.entries.is_empty()
            && self.entries.values().all(|e| {
                // A done object needs no live version: it may be gone (see [`Entry::done`]).
                e.done.is_some()
                    || !e.hash.is_empty()
                        && !e.live.is_empty()
                        && !e.resource_version.is_empty()
                        && !e.uid.is_empty()
            })
    }

    /// Read an inventory back from its ConfigMap.
    pub fn from_configmap(cm: &Value) -> Result<Inventory, InventoryError> {
        let meta = &cm["metadata"];
        let name = meta["name"].as_str().unwrap_or_default().to_string();
        let namespace = meta["namespace"].as_str().unwrap_or_default().to_string();
        let err = |detail: String| InventoryError {
            namespace: namespace.clone(),
            name: name.clone(),
            detail,
        };
        let tenant = meta["labels"][objects::LABEL_TENANT]
            .as_str()
            .ok_or_else(|| err(format!("label {} is missing", objects::LABEL_TENANT)))?
            .to_string();
        let entries: Vec<Entry> = match cm["data"][DATA_ENTRIES].as_str() {
            None => Vec::new(),
            Some(text) => serde_json::from_str(text)
                .map_err(|e| err(format!("data.{DATA_ENTRIES} is not valid: {e}")))?,
        };
        let status: Status = match cm["data"][DATA_STATUS].as_str() {
            None => Status::default(),
            Some(text) => serde_json::from_str(text)
                .map_err(|e| err(format!("data.{DATA_STATUS} is not valid: {e}")))?,
        };
        Ok(Inventory {
            tenant,
            entries: entries.into_iter().map(|e| (e.id.clone(), e)).collect(),
            status,
        })
    }
}

#[cfg(test)]
mod tests;
