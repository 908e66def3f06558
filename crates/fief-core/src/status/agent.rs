//! The agent's view as `GET /status` serves it: the last fetch, each tenant's last sync
//! attempt, the health gate's figures and verdicts, and the rollout.
//!
//! In: what the agent knows when asked (it builds an [`AgentStatus`] and serializes it), or
//! the JSON text of an agent's answer (`fief status` reads it with [`AgentStatus::parse`]).
//! Out: one camelCase JSON document. Reading is lenient, so `fief status` works against an
//! agent of another version: unknown fields are ignored, missing ones take their default, a
//! field of an unexpected shape is read as its default, and a tenant whose entry cannot be
//! read (an outcome this version does not know) is left out rather than failing the rest.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

use super::Outcome;
use crate::health::Verdict;
use crate::rollout::Record;

/// The whole `/status` document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    /// This replica holds the Lease (always true without leader election).
    #[serde(default, deserialize_with = "lenient")]
    pub leading: bool,
    /// The last commit fetched from git (none before the first fetch).
    #[serde(default, deserialize_with = "lenient")]
    pub fetched_commit: Option<String>,
    /// Unix time of the last successful fetch (0: none yet).
    #[serde(default, deserialize_with = "lenient")]
    pub fetched_at: i64,
    /// Why the last fetch failed, if it did.
    #[serde(default, deserialize_with = "lenient")]
    pub fetch_error: Option<String>,
    /// Each tenant's last sync attempt: tenant → attempt.
    #[serde(default, deserialize_with = "lenient_map")]
    pub tenants: BTreeMap<String, Attempt>,
    /// The health gate: the in-flight bound and each judged tenant's verdict.
    #[serde(default, deserialize_with = "lenient")]
    pub health: HealthStatus,
    /// The rollout as last published (none: no rollout since the agent started).
    #[serde(default, deserialize_with = "lenient")]
    pub rollout: Option<Record>,
    /// With shards: this replica's part (none: the agent runs without shards).
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub shards: Option<ShardStatus>,
}

/// A sharded replica's part of the fleet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardStatus {
    /// This replica's identity (its membership Lease names it).
    #[serde(default)]
    pub replica: String,
    /// How many shards the tenants are split into.
    #[serde(default)]
    pub count: u32,
    /// The shards whose Leases this replica holds.
    #[serde(default)]
    pub held: Vec<u32>,
    /// The held shards whose tenants it syncs (a shard just taken waits for a fresh fetch).
    #[serde(default)]
    pub ready: Vec<u32>,
}

impl AgentStatus {
    /// Read an agent's answer. Fails only when the text is not a JSON object.
    pub fn parse(text: &str) -> Result<AgentStatus, serde_json::Error> {
        match serde_json::from_str(text)? {
            value @ serde_json::Value::Object(_) => serde_json::from_value(value),
            _ => Err(serde::de::Error::custom("not a JSON object")),
        }
    }
}

/// A tenant's last sync attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// The commit attempted.
    pub commit: String,
    /// What the sync did: `applied`, `failed`, `invalid`, `skipped`, `purged`, ...
    pub outcome: Outcome,
    /// Unix time of the attempt.
    #[serde(default)]
    pub at: i64,
    /// The first error, if it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The health gate's figures and each judged tenant's verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HealthStatus {
    /// Tenants that may be applied but not yet healthy at once (`--max-in-flight`).
    pub max_in_flight: usize,
    /// Tenants applied and not yet judged healthy or stalled.
    pub in_flight: usize,
    /// The highest `in_flight` since the agent started.
    pub in_flight_peak: usize,
    /// Each judged tenant's verdict: tenant → verdict.
    #[serde(deserialize_with = "lenient_map")]
    pub tenants: BTreeMap<String, TenantHealth>,
}

/// A health verdict's name, as `/status` and the `fief_tenants_health` metric write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthState {
    /// Every waited-on object is current.
    Ready,
    /// Some objects are still converging.
    Reconciling,
    /// An object failed, or is still not healthy after its timeout.
    Stalled,
}

impl HealthState {
    /// Every state, in the order metrics list them.
    pub const ALL: [HealthState; 3] = [
        HealthState::Ready,
        HealthState::Reconciling,
        HealthState::Stalled,
    ];

    /// `ready`, `reconciling` or `stalled`.
    pub const fn as_str(self) -> &'static str {
        match self {
            HealthState::Ready => "ready",
            HealthState::Reconciling => "reconciling",
            HealthState::Stalled => "stalled",
        }
    }
}

impl From<&Verdict> for HealthState {
    fn from(v: &Verdict) -> HealthState {
        match v {
            Verdict::Ready => HealthState::Ready,
            Verdict::Reconciling(_) => HealthState::Reconciling,
            Verdict::Stalled(_) => HealthState::Stalled,
        }
    }
}

/// One tenant's verdict with the objects that keep it from `ready`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantHealth {
    /// The verdict.
    pub health: HealthState,
    /// The objects not healthy yet, with why (empty when ready).
    #[serde(default)]
    pub objects: Vec<UnhealthyObject>,
}

impl From<&Verdict> for TenantHealth {
    fn from(v: &Verdict) -> TenantHealth {
        let objects = match v {
            Verdict::Ready => Vec::new(),
            Verdict::Reconciling(l) | Verdict::Stalled(l) => l
                .iter()
                .map(|(object, reason)| UnhealthyObject {
                    object: object.clone(),
                    reason: reason.clone(),
                })
                .collect(),
        };
        TenantHealth {
            health: HealthState::from(v),
            objects,
        }
    }
}

/// An object a verdict waits on or found failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnhealthyObject {
    /// The object (`Kind namespace/name`).
    pub object: String,
    /// Why it is not healthy.
    pub reason: String,
}

/// A field read as `T`, or `T`'s default when it has another shape.
fn lenient<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let value = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(value).unwrap_or_default())
}

/// A map read entry by entry, leaving out the entries that cannot be read as `T`.
fn lenient_map<'de, D, T>(d: D) -> Result<BTreeMap<String, T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = serde_json::Value::deserialize(d)?;
    let serde_json::Value::Object(entries) = value else {
        return Ok(BTreeMap::new());
    };
    Ok(entries
        .into_iter()
        .filter_map(|(k, v)| Some((k, serde_json::from_value(v).ok()?)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_keeps_the_field_names_fief_status_reads() {
        let mut status = AgentStatus {
            leading: true,
            fetched_commit: Some("abc".into()),
            fetched_at: 7,
            ..AgentStatus::default()
        };
        status.tenants.insert(
            "acme".into(),
            Attempt {
                commit: "abc".into(),
                outcome: Outcome::Applied,
                at: 5,
                error: None,
            },
        );
        let stalled = Verdict::Stalled(vec![("Deployment acme/web".into(), "timed out".into())]);
        status
            .health
            .tenants
            .insert("acme".into(), TenantHealth::from(&stalled));
        let json = serde_json::to_value(&status).expect("serialize");
        let want = serde_json::json!({
            "leading": true,
            "fetchedCommit": "abc",
            "fetchedAt": 7,
            "fetchError": null,
            "tenants": {"acme": {"commit": "abc", "outcome": "applied", "at": 5}},
            "health": {
                "maxInFlight": 0,
                "inFlight": 0,
                "inFlightPeak": 0,
                "tenants": {"acme": {"health": "stalled", "objects": [
                    {"object": "Deployment acme/web", "reason": "timed out"}
                ]}}
            },
            "rollout": null,
        });
        assert_eq!(json, want);
        let back = AgentStatus::parse(&json.to_string()).expect("parse");
        assert_eq!(back, status);
    }

    #[test]
    fn an_answer_of_another_version_is_read_as_far_as_it_goes() {
        let text = r#"{
            "leading": "maybe",
            "fetchedCommit": "abc",
            "somethingNew": {"x": 1},
            "tenants": {
                "acme": {"commit": "abc", "outcome": "applied", "at": 5, "extra": true},
                "beta": {"commit": "abc", "outcome": "teleported", "at": 6}
            },
            "health": {"inFlight": 2, "tenants": {"acme": {"health": "ready"}}},
            "rollout": {"commit": "abc", "phase": "Paused"}
        }"#;
        let status = AgentStatus::parse(text).expect("parse");
        assert!(
            !status.leading,
            "a field of another shape takes its default"
        );
        assert_eq!(status.fetched_commit.as_deref(), Some("abc"));
        assert_eq!(status.fetched_at, 0, "missing");
        assert_eq!(
            status.tenants.keys().collect::<Vec<_>>(),
            ["acme"],
            "an unknown outcome leaves out that tenant only"
        );
        assert_eq!(status.health.in_flight, 2);
        assert_eq!(status.health.tenants["acme"].health, HealthState::Ready);
        assert_eq!(status.rollout, None);
        assert!(AgentStatus::parse("[]").is_err());
        assert!(AgentStatus::parse("not json").is_err());
    }
}
