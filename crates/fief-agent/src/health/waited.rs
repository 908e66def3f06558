//! Which of a tenant's objects the health gate waits for after a sync, and until when.
//!
//! In: the tenant's render, the inventory its sync recorded, each component's limit and the
//! tenant's previous wait. Out: each waited-on object at the version its sync applied, with its
//! deadline (kept from the previous wait when the object did not change). Pure.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use fief_core::digest::Digest;
use fief_core::objects::ObjectId;
use fief_core::render::TenantRender;

use super::{Applied, Waiting, version_number};

/// The objects of `render` to wait for (components whose wait has a limit), each at the live
/// hash and version its sync recorded in `inv`, with its deadline; the deadlines; and whether
/// every object kept its deadline from `previous`. An object the sync left as it was keeps
/// its deadline: a resync or drift repair of a stalled tenant does not restart its wait.
pub(super) fn waited_objects(
    render: &TenantRender,
    inv: &fief_core::inventory::Inventory,
    limits: &BTreeMap<String, Option<std::time::Duration>>,
    previous: Option<&Waiting>,
    now: Instant,
) -> (BTreeMap<ObjectId, Applied>, BTreeSet<Instant>, bool) {
    let kept = |id: &ObjectId, live: Digest| {
        previous
            .and_then(|w| w.objects.get(id))
            .filter(|a| a.live == live)
            .map(|a| a.deadline)
    };
    let mut objects = BTreeMap::new();
    let mut deadlines = BTreeSet::new();
    let mut all_kept = previous.is_some();
    for o in &render.objects {
        let Some(Some(limit)) = limits.get(&o.component) else {
            continue;
        };
        // A done object (its delete policy deleted it once it ended) is not waited for.
        let Some(entry) = inv.entries.get(&o.id).filter(|e| e.done.is_none()) else {
            continue;
        };
        let live = Digest::from_hex(&entry.live);
        let deadline = match kept(&o.id, live) {
            Some(d) => d,
            None => {
                all_kept = false;
                now + *limit
            }
        };
        let version = version_number(Some(&entry.resource_version));
        objects.insert(
            o.id.clone(),
            Applied {
                live,
                version,
                deadline,
            },
        );
        deadlines.insert(deadline.max(now));
    }
    (objects, deadlines, all_kept)
}
