//! What every step of one sync shares: how the sync runs ([`SyncOptions`], with its
//! [`Adopt`] mode), what it knows of the cluster before it starts ([`ClusterState`]), the
//! context each step gets ([`Ctx`]), and how a cluster request's error becomes the report's.
//!
//! In: the caller's options, the observed inventories and live objects, the client. Out: the
//! values the sync's steps (`apply`, `prune`, `phases`, `adoption`, `inventory_store`,
//! `moved`, `status_access`, …) take, apart from the sync that runs them, so that they depend
//! on what they share and not on each other's caller.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::hold::PruneRelease;
use crate::{ClusterError, Resources};
use fief_core::inventory::{Inventory, InventoryError};
use fief_core::model::PruneGuard;
use fief_core::objects::ObjectId;
use fief_core::status::{Failure, SyncError, TenantReport};

/// How a sync runs.
#[derive(Debug, Clone)]
pub struct SyncOptions {
    /// Namespace of the inventories.
    pub agent_namespace: String,
    /// Tenants synced at once.
    pub concurrency: usize,
    /// Requests in flight per tenant stage.
    pub object_concurrency: usize,
    /// Who released held mass prunes, for which tenants (`fief apply --allow-mass-prune`,
    /// `fief reconcile --allow-mass-prune`).
    pub release: PruneRelease,
    /// The guard from fief.yaml.
    pub guard: PruneGuard,
    /// Only tenants whose `spec.cluster` is this.
    pub cluster: String,
    /// The git commit being applied, recorded in the status of tenants it changes.
    pub commit: Option<String>,
    /// Each tenant's report as soon as it is done (for progress output); none: not sent.
    pub progress: Option<tokio::sync::mpsc::UnboundedSender<TenantReport>>,
    /// Whether objects that exist and no inventory records are taken (`fief apply --adopt`).
    pub adopt: Adopt,
}

/// Whether a sync takes objects that exist and no inventory records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Adopt {
    /// Never: a namespace fief did not create is refused (objects in the tenant's own
    /// namespaces are applied as usual).
    #[default]
    Never,
    /// Objects equal to the render are taken with no change; a tenant with one that differs
    /// is not applied at all.
    Equal,
    /// Every existing object is taken and set to the render.
    Force,
}

/// Current time, RFC 3339, for condition transitions.
pub fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// What every step of one sync shares.
pub(crate) struct Ctx<'a> {
    pub(crate) resources: &'a Resources,
    pub(crate) live: &'a HashMap<ObjectId, String>,
    pub(crate) options: &'a SyncOptions,
    pub(crate) now: String,
}

/// What a sync needs to know about the cluster before it starts.
#[derive(Debug, Default)]
pub struct ClusterState {
    /// Every inventory in the agent namespace, by tenant.
    pub inventories: BTreeMap<String, Result<Inventory, InventoryError>>,
    /// For each live object fief manages: the hash of its fields fief sets
    /// ([`fief_core::plan::live_hash`] against the desired object).
    pub live: HashMap<ObjectId, String>,
}

/// The failure of a cluster request made for `step`: a 403 is [`Failure::Forbidden`]
/// whatever the step.
pub(crate) fn step_failure(step: Failure, e: &ClusterError) -> Failure {
    if e.status_code() == Some(403) {
        Failure::Forbidden
    } else {
        step
    }
}

/// A cluster request's error, made for `step`, as the report records it ([`step_failure`]).
pub(crate) fn cluster_error(step: Failure, e: &ClusterError) -> SyncError {
    SyncError::new(step_failure(step, e), e.to_string())
}

/// The `apiVersion` of an object.
pub(crate) fn api_version(object: &Value) -> String {
    object["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}
