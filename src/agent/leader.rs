//! Leader election on the `fief-agent` Lease: only the leader applies and prunes.
//!
//! In: the shared state (client, shutdown token) and the agent's options. Out: a [`Term`]
//! whose `lost` token is cancelled the moment this replica stops leading — the Lease manager
//! says so, a watch on the Lease sees another holder, or SIGTERM — so the batch stops between
//! tenants. While leading, the replica's own Pod carries `fief.dev/leader: "true"` (when
//! `POD_NAME`/`POD_NAMESPACE` are set), which the Service selects so webhooks reach the
//! leader; stepping down removes the label and releases the Lease.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{AgentError, AgentOptions, Shared};

/// The Pod label the leader carries.
pub const LEADER_LABEL: &str = "fief.dev/leader";
const LEASE: &str = "fief-agent";

/// One term of leadership.
pub(super) struct Term {
    /// Cancelled when this replica stops leading (or shuts down).
    pub(super) lost: CancellationToken,
    rx: tokio::sync::watch::Receiver<bool>,
    task: JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>,
    pod: Option<Api<Pod>>,
    pod_name: String,
}

fn identity() -> String {
    std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| format!("fief-{}", std::process::id()))
}

/// Set or remove the leader label on this replica's Pod (nothing outside a pod).
async fn label(pod: &Option<Api<Pod>>, name: &str, leading: bool) {
    let Some(api) = pod else { return };
    let value = if leading { json!("true") } else { json!(null) };
    let patch = json!({"metadata": {"labels": {LEADER_LABEL: value}}});
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => tracing::info!(pod = name, leading, "leader label updated"),
        Err(e) => {
            tracing::warn!(pod = name, error = %e, "cannot update the leader label on this Pod")
        }
    }
}

/// Wait until this replica holds the Lease (`None`: shut down first), then label the Pod
/// and watch for the Lease being lost.
pub(super) async fn lead(
    shared: &Arc<Shared>,
    options: &AgentOptions,
) -> Result<Option<Term>, AgentError> {
    let identity = identity();
    let client = shared.client.clone();
    let lease_api: Api<Lease> = Api::namespaced(client.clone(), &options.lease_namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={LEASE}"));
    // A standby also watches the Lease: when the leader releases it (SIGTERM), the standby
    // starts a fresh campaign at once instead of waiting out the old term.
    let mut released = watcher(lease_api.clone(), config.clone())
        .default_backoff()
        .applied_objects()
        .boxed();
    tracing::info!(identity, "standby: waiting to become the leader");
    let (mut rx, task) = 'campaign: loop {
        let manager = kube_lease_manager::LeaseManagerBuilder::new(client.clone(), LEASE)
            .with_namespace(options.lease_namespace.clone())
            .with_identity(identity.clone())
            .with_duration(15)
            .with_grace(5)
            .build()
            .await
            .map_err(|e| AgentError::Leadership(e.to_string()))?;
        let (mut rx, task) = manager.watch().await;
        loop {
            if *rx.borrow_and_update() {
                break 'campaign (rx, task);
            }
            tokio::select! {
                changed = rx.changed() => changed.map_err(|e| AgentError::Leadership(e.to_string()))?,
                next = released.next() => {
                    let free = matches!(&next, Some(Ok(lease)) if lease
                        .spec
                        .as_ref()
                        .is_none_or(|s| s.holder_identity.as_deref().unwrap_or("").is_empty()));
                    if free {
                        tracing::info!(identity, "the Lease was released; campaigning now");
                        drop(rx);
                        let _ = tokio::time::timeout(Duration::from_secs(3), task).await;
                        continue 'campaign;
                    }
                }
                _ = shared.shutdown.cancelled() => {
                    drop(rx);
                    let _ = tokio::time::timeout(Duration::from_secs(3), task).await;
                    return Ok(None);
                }
            }
        }
    };
    drop(released);
    tracing::info!(identity, "leading");
    let lost = shared.shutdown.child_token();
    // The manager notices a takeover only at its next renewal; a watch on the Lease sees it
    // at once.
    let (l, me) = (lost.clone(), identity.clone());
    let mut manager_rx = rx.clone();
    tokio::spawn(async move {
        let mut leases = watcher(lease_api, config)
            .default_backoff()
            .applied_objects()
            .boxed();
        loop {
            tokio::select! {
                _ = l.cancelled() => return,
                changed = manager_rx.changed() => {
                    if changed.is_err() || !*manager_rx.borrow() {
                        tracing::warn!(identity = me, "the Lease manager says the Lease is lost");
                        l.cancel();
                        return;
                    }
                }
                next = leases.next() => match next {
                    Some(Ok(lease)) => {
                        let holder = lease.spec.and_then(|s| s.holder_identity).unwrap_or_default();
                        if holder != me {
                            tracing::warn!(identity = me, holder, "the Lease is held by another replica");
                            l.cancel();
                            return;
                        }
                    }
                    Some(Err(e)) => tracing::warn!(error = %e, "Lease watch error; retrying"),
                    None => return,
                }
            }
        }
    });
    let (pod, pod_name) = match (std::env::var("POD_NAME"), std::env::var("POD_NAMESPACE")) {
        (Ok(name), Ok(ns)) => (Some(Api::namespaced(client, &ns)), name),
        _ => (None, String::new()),
    };
    label(&pod, &pod_name, true).await;
    rx.mark_unchanged();
    Ok(Some(Term {
        lost,
        rx,
        task,
        pod,
        pod_name,
    }))
}

impl Term {
    /// Stop leading: remove the Pod label, then release the Lease (dropping the channel makes
    /// the manager release it) so a standby takes over at once.
    pub(super) async fn step_down(self) {
        self.lost.cancel();
        label(&self.pod, &self.pod_name, false).await;
        drop(self.rx);
        match tokio::time::timeout(Duration::from_secs(5), self.task).await {
            Ok(Ok(Ok(_))) => tracing::info!("Lease released"),
            Ok(Ok(Err(e))) => tracing::warn!(error = %e, "cannot release the Lease"),
            _ => tracing::warn!("the Lease was not released in time"),
        }
    }
}
