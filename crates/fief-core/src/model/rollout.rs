//! fief.yaml `rollout:`: the declared waves a change that reaches many tenants goes through.
//!
//! In: the deserialized block. Out: [`RolloutConfig`], checked (at least one wave, each name a
//! DNS-1123 label used once, percentages from 1 to 100). `crate::rollout` plans and steps
//! rollouts over it. Pure.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// fief.yaml `rollout:`: the waves a change that reaches many tenants goes through.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, try_from = "RawRollout")]
pub struct RolloutConfig {
    /// The waves, in order.
    pub waves: Vec<WaveSpec>,
}

/// One declared wave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaveSpec {
    /// The wave's name (status, metrics, logs).
    pub name: String,
    /// Tenant labels a tenant must all carry to be in this wave (none: any tenant).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub selector: BTreeMap<String, String>,
    /// Take only this share (1–100) of the tenants the selector leaves, rounded up, chosen by
    /// a stable hash of the tenant name (the same tenants on every commit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub percent: Option<u32>,
}

/// `rollout:` as written, checked by `TryFrom` into [`RolloutConfig`].
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawRollout {
    /// The waves, in order: at least one, each name a DNS-1123 label used once.
    #[schemars(length(min = 1))]
    waves: Vec<WaveSpec>,
}

impl TryFrom<RawRollout> for RolloutConfig {
    type Error = String;

    fn try_from(raw: RawRollout) -> Result<Self, String> {
        if raw.waves.is_empty() {
            return Err("rollout.waves: declare at least one wave (or remove `rollout:`)".into());
        }
        let mut seen = BTreeSet::new();
        for w in &raw.waves {
            if !crate::objects::is_dns_label(&w.name) {
                return Err(format!(
                    "rollout.waves: name `{}` is not a DNS-1123 label (lower-case letters, digits, `-`)",
                    w.name
                ));
            }
            if !seen.insert(w.name.clone()) {
                return Err(format!(
                    "rollout.waves: the name `{}` is used twice; give each wave its own name",
                    w.name
                ));
            }
            if let Some(p) = w.percent
                && !(1..=100).contains(&p)
            {
                return Err(format!(
                    "rollout.waves: wave `{}` has percent {p}; use a number from 1 to 100",
                    w.name
                ));
            }
        }
        Ok(RolloutConfig { waves: raw.waves })
    }
}
