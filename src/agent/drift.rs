//! Drift: watches on the kinds fief manages, keeping the live hashes the planner needs and
//! queueing a tenant when a field fief owns is changed by hand (or an object is deleted).
//!
//! In: watch events of objects labelled `fief.dev/tenant`, the desired objects and the
//! inventories' recorded live hashes. Out: the live-hash map and tenants pushed to the queue.
//! Status-only changes hash the same (fief sets no status) and cause nothing.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use serde_json::Value;

use super::Shared;
use crate::core::objects;
use crate::core::plan;
use crate::kube::{Resource, live_id};

/// Start a watch per resource not watched yet.
pub fn ensure_watches(shared: &Arc<Shared>, resources: Vec<Resource>) {
    let mut watched = shared.watched.lock().unwrap_or_else(|e| e.into_inner());
    for resource in resources {
        let key = format!(
            "{}/{}/{}",
            resource.api.group, resource.api.version, resource.api.kind
        );
        if !watched.insert(key) {
            continue;
        }
        shared
            .watches_pending
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let shared = shared.clone();
        tokio::spawn(async move { watch(shared, resource).await });
    }
}

async fn watch(shared: Arc<Shared>, resource: Resource) {
    let api: Api<DynamicObject> = Api::all_with(shared.client.clone(), &resource.api);
    let config = watcher::Config::default().labels(objects::LABEL_TENANT);
    let mut stream = watcher(api, config).boxed();
    let mut initialised = false;
    let mut seen_in_init: HashSet<crate::core::objects::ObjectId> = HashSet::new();
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::Init) => seen_in_init.clear(),
            Ok(watcher::Event::InitApply(obj)) => {
                let value = serde_json::to_value(&obj).unwrap_or(Value::Null);
                seen_in_init.insert(live_id(&resource, &value));
                observe(&shared, &resource, &value, false);
            }
            Ok(watcher::Event::InitDone) => {
                if !initialised {
                    initialised = true;
                    shared
                        .watches_pending
                        .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    shared.wake.notify_one();
                }
            }
            Ok(watcher::Event::Apply(obj)) => {
                let value = serde_json::to_value(&obj).unwrap_or(Value::Null);
                observe(&shared, &resource, &value, true);
            }
            Ok(watcher::Event::Delete(obj)) => {
                let value = serde_json::to_value(&obj).unwrap_or(Value::Null);
                let id = live_id(&resource, &value);
                shared.write_live().remove(&id);
                if let Some(tenant) = shared.tenant_of(&id) {
                    tracing::info!(tenant, object = %id, "managed object deleted; queueing a sync");
                    shared.enqueue(&tenant);
                }
            }
            Err(e) => {
                tracing::warn!(kind = %resource.api.kind, error = %e, "watch error; the watcher retries");
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        }
    }
}

/// Record the live hash of an object; queue its tenant when it drifted from what was applied.
fn observe(shared: &Shared, resource: &Resource, value: &Value, live_event: bool) {
    let id = live_id(resource, value);
    let Some((tenant, desired)) = shared.desired_of(&id) else {
        return;
    };
    let hash = plan::live_hash(&desired, value);
    let recorded = shared.recorded_live(&id);
    shared.write_live().insert(id.clone(), hash.clone());
    if live_event && recorded.is_some_and(|r| r != hash) {
        tracing::info!(tenant, object = %id, "drift: a field fief owns changed; queueing a sync");
        shared.metrics.drift.inc();
        shared.enqueue_at(&tenant, Instant::now());
    }
}
