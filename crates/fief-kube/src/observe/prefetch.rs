//! The metadata pass of a pass over many tenants ([`Prefetch`]): the version of every object
//! of a kind, listed once for all the tenants, then compared with each recorded entry.
//!
//! In: the kinds of the entries a batch of tenants recorded, as the batches come. Out: per
//! recorded entry, whether its object is live as fief left it, and whether it exists.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::stream::{self, StreamExt};
use tokio::sync::OnceCell;

use super::meta::{KINDS_AT_ONCE, each_metadata, is_own_apply};
use crate::{ClusterError, FIELD_MANAGER, Resources};
use fief_core::digest::{AppliedVersion, Version};
use fief_core::inventory::Entry;
use fief_core::objects::ObjectId;
use fief_core::plan;

/// The metadata pass of a pass over many tenants: per kind, one metadata-only LIST (paged)
/// with the pass's selector, made once, the first time a tenant recorded an object of that
/// kind, instead of once per batch of tenants. Keeps each object's version, not the pages, so
/// no inventory needs to be at hand beforehand: a batch's inventories are compared with it as
/// the batch comes.
#[derive(Debug)]
pub struct Prefetch {
    selector: String,
    /// By (group, kind).
    kinds: Mutex<HashMap<GroupKind, Listed>>,
}

/// What the metadata pass found of one kind: each object's [`Version`] (a few dozen bytes,
/// no allocation), by its [`key`]. Every object of the pass's tenants is held until the pass
/// ends, so each costs what a 64-bit key and a version take, with no allocation of its own.
type Versions = HashMap<u64, Version>;

/// An object's key within its kind: a 64-bit hash of its namespace and name. Two objects
/// whose keys collide share one slot, which keeps the version listed last; the other object
/// then finds a version whose uid is not its own and is read in full, as a moved object is
/// (and an object that is gone but collides with a listed one is read, and found gone). A
/// collision costs a read, never a wrong answer.
fn key(id: &ObjectId) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    (&id.namespace, &id.name).hash(&mut hasher);
    hasher.finish()
}

/// A kind by its group and name.
type GroupKind = (String, String);

/// One kind's [`Versions`], once listed.
type Listed = Arc<OnceCell<Versions>>;

impl Prefetch {
    /// A metadata pass over the objects `selector` selects; nothing listed yet.
    pub fn new(selector: &str) -> Prefetch {
        Prefetch {
            selector: selector.to_string(),
            kinds: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the object of a recorded entry is live exactly as fief left it (so its
    /// recorded live hash stands). `false` for a kind not listed ([`Prefetch::ensure`]).
    pub fn unchanged(&self, entry: &Entry) -> bool {
        self.version(entry, |v| v.is_some_and(|live| entry.version().still(live)))
    }

    /// Whether the object of a recorded entry exists (listed by the metadata pass).
    pub(super) fn found(&self, entry: &Entry) -> bool {
        self.version(entry, |v| v.is_some())
    }

    /// `f` of what the pass found of the entry's object.
    fn version<T>(&self, entry: &Entry, f: impl FnOnce(Option<&Version>) -> T) -> T {
        let kind = (entry.id.group.clone(), entry.id.kind.clone());
        let cell = self.kinds.lock().ok().and_then(|k| k.get(&kind).cloned());
        f(cell
            .as_ref()
            .and_then(|c| c.get())
            .and_then(|v| v.get(&key(&entry.id))))
    }

    /// List, once each, the kinds of these entries' objects not listed yet (a few at once):
    /// only entries with a live hash count (those not yet applied need none).
    pub async fn ensure<'e>(
        &self,
        resources: &Resources,
        entries: impl Iterator<Item = &'e Entry>,
    ) -> Result<(), ClusterError> {
        let mut wanted: HashMap<GroupKind, (&str, Listed)> = HashMap::new();
        {
            let Ok(mut kinds) = self.kinds.lock() else {
                return Ok(());
            };
            for e in entries.filter(|e| !e.live.is_empty()) {
                let key = (e.id.group.clone(), e.id.kind.clone());
                let cell = kinds.entry(key.clone()).or_default();
                if cell.initialized() || wanted.contains_key(&key) {
                    continue;
                }
                wanted.insert(key, (e.api_version.as_str(), Arc::clone(cell)));
            }
        }
        let lists: Vec<Result<(), ClusterError>> = stream::iter(wanted)
            .map(|((_, kind), (api_version, cell))| async move {
                cell.get_or_try_init(|| self.list_kind(resources, api_version, &kind))
                    .await
                    .map(drop)
            })
            .buffer_unordered(KINDS_AT_ONCE)
            .collect()
            .await;
        lists.into_iter().collect()
    }

    /// Every object of a kind the selector selects, by its version.
    async fn list_kind(
        &self,
        resources: &Resources,
        api_version: &str,
        kind: &str,
    ) -> Result<Versions, ClusterError> {
        let mut out = Versions::new();
        let Some(resource) = resources.resolve(api_version, kind).await else {
            return Ok(out);
        };
        let selector = &self.selector;
        let failed = |source| {
            ClusterError::request(
                format!("list {kind} ({api_version}) where {selector}"),
                source,
            )
        };
        each_metadata(resources, &resource, selector, PREFETCH_PAGE, |id, m| {
            let others = m
                .managed_fields
                .as_array()
                .is_some_and(|all| all.iter().any(|f| !is_own_apply(f)));
            // Without another writer's entry, a moved resourceVersion can only be fief's own
            // write: no fingerprint is taken, so the version stands only at the recorded one.
            let managed = if others {
                plan::managed_fingerprint(&m.managed_fields, FIELD_MANAGER)
            } else {
                String::new()
            };
            let live = AppliedVersion {
                uid: m.uid,
                resource_version: m.resource_version,
                managed,
            };
            out.insert(key(&id), Version::from(&live));
        })
        .await
        .map_err(failed)?;
        Ok(out)
    }
}

/// Objects per page of a [`Prefetch`] LIST (metadata only, about 1 KiB each; a few kinds are
/// read at once, so this bounds the memory pages take).
const PREFETCH_PAGE: u32 = 500;
