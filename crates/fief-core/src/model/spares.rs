//! Spare tenants: fief.yaml `spares:` (how many, what each runs) and the two edits `fief
//! spares` and `fief allocate` make to tenant files.
//!
//! In: the [`Spares`] settings, random bytes from the caller (this crate does no I/O), an
//! [`Allocation`] (the customer's owner, labels and values). Out: a spare [`Tenant`] with a
//! random DNS-safe name, and the customer's tenant made from a spare. A spare is a tenant
//! like any other, in git, applied and kept ready by the agent; allocating one keeps its
//! name, namespaces, environments and components, so the agent's next sync is a small change
//! to objects that already run, not a cold start.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::tenant::{ComponentRef, Owner, Tenant, TenantMeta, TenantSpec};

/// fief.yaml `spares:`: the pool of ready tenants `fief allocate` hands out.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Spares {
    /// How many spare tenants to keep in `tenants/` (`fief spares` and `fief allocate` top
    /// the pool up to this).
    pub count: usize,
    /// The first part of a spare's name; a random id of 8 lowercase letters and digits
    /// follows. Tenant names are DNS labels, so at most 54 characters.
    #[serde(default = "default_prefix")]
    pub prefix: String,
    /// The cluster whose agent runs the spares (default: `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// Environments of a spare (empty: fief.yaml's default environments).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environments: Vec<String>,
    /// Labels a spare carries (a customer's labels are added at allocation).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The components a spare runs, with their values: what every new customer gets.
    #[serde(default)]
    pub components: Vec<ComponentRef>,
}

fn default_prefix() -> String {
    "t-".to_string()
}

/// The characters of a spare's random id.
const ID_ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// Length of a spare's random id.
pub const ID_LEN: usize = 8;

impl Spares {
    /// A spare's name: the prefix and an id made from `random` (one character per byte).
    pub fn name(&self, random: [u8; ID_LEN]) -> String {
        let id: String = random
            .iter()
            .map(|b| char::from(ID_ALPHABET[usize::from(*b) % ID_ALPHABET.len()]))
            .collect();
        format!("{}{id}", self.prefix)
    }

    /// The tenant file of a new spare named `name`.
    pub fn tenant(&self, name: &str) -> Tenant {
        let mut spec = TenantSpec {
            spare: true,
            environments: self.environments.clone().into(),
            components: self.components.iter().cloned().map(Arc::new).collect(),
            ..TenantSpec::default()
        };
        if let Some(cluster) = &self.cluster {
            spec.cluster = cluster.clone();
        }
        Tenant {
            api_version: super::API_VERSION.to_string(),
            kind: "Tenant".to_string(),
            metadata: TenantMeta {
                name: name.to_string(),
                labels: self.labels.clone(),
                annotations: BTreeMap::new(),
            },
            spec,
        }
    }
}

/// What a customer's tenant gets on top of a spare.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Allocation {
    /// Who owns it.
    pub owner: Owner,
    /// Labels added to the spare's.
    pub labels: BTreeMap<String, String>,
    /// Values per component, merged over the spare's (a key set here wins).
    pub values: BTreeMap<String, serde_json::Map<String, Value>>,
}

/// Why a spare cannot be allocated as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocationError {
    /// The tenant is not a spare.
    #[error("tenant `{0}` is not a spare (its file has no `spare: true`)")]
    NotASpare(String),
    /// Values for a component the spare does not run.
    #[error(
        "the spare runs no component `{component}` (it runs: {runs}); values can be set only for those"
    )]
    UnknownComponent {
        /// The component named.
        component: String,
        /// The spare's components.
        runs: String,
    },
}

/// The customer's tenant made from `spare`: no longer a spare, with the allocation's owner,
/// labels and values; its name, environments and components stay.
pub fn allocate(spare: &Tenant, allocation: &Allocation) -> Result<Tenant, AllocationError> {
    if !spare.spec.spare {
        return Err(AllocationError::NotASpare(spare.metadata.name.clone()));
    }
    let mut tenant = spare.clone();
    tenant.spec.spare = false;
    tenant.spec.owner = Arc::new(allocation.owner.clone());
    tenant.metadata.labels.extend(allocation.labels.clone());
    for (component, values) in &allocation.values {
        let Some(c) = tenant
            .spec
            .components
            .iter_mut()
            .find(|c| &c.name == component)
        else {
            let runs: Vec<&str> = spare
                .spec
                .components
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            return Err(AllocationError::UnknownComponent {
                component: component.clone(),
                runs: runs.join(", "),
            });
        };
        let c = Arc::make_mut(c);
        let mut merged = match c.values.take().map(|v| v.value()) {
            Some(Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        merged.extend(values.clone());
        c.values = Some(Value::Object(merged).into());
    }
    Ok(tenant)
}

/// The YAML of a tenant file fief writes: every field set, none left at its default (no
/// `state: active`, `cluster: default`, empty lists or maps), in the file's usual order.
pub fn tenant_yaml(tenant: &Tenant) -> Result<String, String> {
    let mut value = serde_json::to_value(tenant).map_err(|e| e.to_string())?;
    if let Some(spec) = value.get_mut("spec").and_then(Value::as_object_mut) {
        spec.retain(|key, v| match key.as_str() {
            "state" => v != "active",
            "cluster" => v != "default",
            "spare" => v == &Value::Bool(true),
            _ => true,
        });
    }
    prune_empty(&mut value);
    let body = serde_saphyr::to_string(&Ordered(&value)).map_err(|e| e.to_string())?;
    let head = if tenant.spec.spare {
        "# A spare tenant, kept ready for `fief allocate` (fief.yaml `spares:`).\n"
    } else {
        ""
    };
    Ok(format!("{head}{body}"))
}

/// The keys a tenant file lists first, in this order; others follow alphabetically.
const KEY_ORDER: [&str; 11] = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "labels",
    "spec",
    "spare",
    "owner",
    "cluster",
    "environments",
    "components",
];

/// A JSON value serialized with its object keys in [`KEY_ORDER`] (a tenant file reads as
/// people write it: `name` before `labels`, `spec` after `metadata`).
struct Ordered<'a>(&'a Value);

impl Serialize for Ordered<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self.0 {
            Value::Object(map) => {
                let rank = |k: &str| KEY_ORDER.iter().position(|o| *o == k).unwrap_or(usize::MAX);
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort_by_key(|k| (rank(k), (*k).clone()));
                let mut out = serializer.serialize_map(Some(keys.len()))?;
                for k in keys {
                    out.serialize_entry(k, &Ordered(&map[k]))?;
                }
                out.end()
            }
            Value::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&Ordered(item))?;
                }
                out.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// Remove nulls, empty strings, lists and maps from `value`, but inside component values
/// (which are the template's to read, empty or not).
fn prune_empty(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if key != "values" {
                    prune_empty(v);
                }
            }
            map.retain(|key, v| key == "values" && !v.is_null() || !is_empty(v));
        }
        Value::Array(items) => items.iter_mut().for_each(prune_empty),
        _ => {}
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
#[path = "spares_tests.rs"]
mod tests;
