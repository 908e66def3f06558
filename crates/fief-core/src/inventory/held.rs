//! A held prune as the inventory's status records it: which guard holds it, its message,
//! since when, and the objects it would delete.
//!
//! In: a hold as `status/hold.rs` records it from a sync's plan. Out: [`HeldPrune`] and
//! [`HoldKind`], the form [`super::Status::prune_hold`] is stored and read back in. Pure.

use serde::{Deserialize, Serialize};

/// Objects a [`HeldPrune`] lists by name; past this it gives their count only.
pub const MAX_LISTED: usize = 100;

/// Which guard holds a prune.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HoldKind {
    /// The mass-prune guard (fief.yaml `pruneGuard`): released by a person.
    MassPrune,
    /// The render is empty and the tenant is not `purged`.
    EmptyRender,
    /// An apply failed: the objects the new ones replace stay until an apply succeeds.
    ApplyFailed,
    /// A purge left objects it may not delete.
    PurgeIncomplete,
}

/// A prune held now, on the tenant's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldPrune {
    /// Which guard holds it.
    pub kind: HoldKind,
    /// Why, and what to do (as the `Stalled` condition says it).
    pub message: String,
    /// When this hold began (RFC 3339).
    pub since: String,
    /// Objects it would delete.
    pub count: usize,
    /// The first [`MAX_LISTED`] of them, `Kind[.group]/namespace/name`.
    pub objects: Vec<String>,
}
