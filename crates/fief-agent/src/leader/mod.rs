//! Leader election on the `fief-agent` Lease: only the leader applies and prunes.
//!
//! In: the shared state (shutdown token), the agent's options, a client for the Lease and the
//! Pod label, and the [`Fence`] of the agent's other client. Out: a [`Term`]
//! whose `lost` token is cancelled the moment this replica stops leading — a renewal fails
//! for longer than the renew deadline or finds another holder, a watch on the Lease sees
//! another holder, or SIGTERM — so the batch stops between tenants. While leading, the
//! replica's own Pod carries `fief.dev/leader: "true"` (when `POD_NAME`/`POD_NAMESPACE` are
//! set), which the Service selects so webhooks reach the leader; stepping down removes the
//! label and releases the Lease.
//!
//! Every write of the leader passes a [`Fence`]: each renewal extends the term to the moment
//! it was sent plus [`RENEW_DEADLINE`], and losing the Lease closes it, so a replica that was
//! stopped past its term (SIGSTOP, a paused VM) sends nothing when it resumes. The Lease and
//! the Pod label go through a client of their own, unfenced and not rate-limited, so renewals
//! never wait behind the syncs' requests.
//!
//! The protocol is client-go's: every write of the Lease (take, renew, release) is a
//! `replace` carrying the `resourceVersion` it read, so of two replicas racing for the same
//! Lease exactly one write lands and the other gets 409 and reads again. A holder's term is
//! measured on this replica's own clock from the moment it first saw the holder's latest
//! renewal, so clock skew between nodes does not matter. A release only ever clears a Lease
//! this replica still holds.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{AgentError, AgentOptions, Shared};
use fief_kube::fence::Fence;
use lease::{Attempt, Elector, RENEW_DEADLINE, RENEW_EVERY, holder_of};

pub(crate) mod lease;

/// The Pod label the leader carries.
pub const LEADER_LABEL: &str = "fief.dev/leader";
const LEASE: &str = "fief-agent";
/// The longest a standby waits without reading the Lease itself (the watch usually wakes
/// it sooner).
const STANDBY_POLL: Duration = Duration::from_secs(5);

/// One term of leadership.
pub(super) struct Term {
    /// Cancelled when this replica stops leading (or shuts down).
    pub(super) lost: CancellationToken,
    /// Admits this replica's writes while its term lasts.
    fence: Fence,
    renewals: JoinHandle<Elector>,
    pod: Option<Api<Pod>>,
    pod_name: String,
}

/// This replica's name: the Pod's, else the host's with the process id (two agents on one
/// host are two replicas), else one made from the process id.
pub(crate) fn identity() -> String {
    std::env::var("POD_NAME").unwrap_or_else(|_| {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "fief".to_string());
        format!("{host}-{}", std::process::id())
    })
}

/// Set or remove the leader label on this replica's own Pod (when `POD_NAME` and
/// `POD_NAMESPACE` say which): with shards every replica carries it, so the Service routes
/// webhooks to any of them.
pub(crate) async fn label_own_pod(client: kube::Client, leading: bool) {
    if let (Ok(name), Ok(ns)) = (std::env::var("POD_NAME"), std::env::var("POD_NAMESPACE")) {
        label(&Some(Api::namespaced(client, &ns)), &name, leading).await;
    }
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

/// Wait until this replica holds the Lease (`None`: shut down first), then label the Pod,
/// renew in the background and watch for the Lease being lost.
pub(super) async fn lead(
    shared: &Arc<Shared>,
    options: &AgentOptions,
    client: kube::Client,
    fence: Fence,
) -> Result<Option<Term>, AgentError> {
    let me = identity();
    let lease_api: Api<Lease> = Api::namespaced(client.clone(), &options.lease_namespace);
    let Some(elector) = campaign(shared, &lease_api, &me, &fence).await else {
        return Ok(None);
    };
    tracing::info!(identity = me, "leading");
    let lost = shared.cluster.shutdown().child_token();
    let renewals = tokio::spawn(renew(elector, lost.clone(), fence.clone()));
    // A write refused after the term ran out (the process was stopped past it) ends the term.
    let (l, f) = (lost.clone(), fence.clone());
    tokio::spawn(async move {
        tokio::select! {
            _ = f.closed() => {
                tracing::warn!("the Lease term ran out before a renewal; stopping every write");
                l.cancel();
            }
            _ = l.cancelled() => {}
        }
    });
    tokio::spawn(watch_takeover(lease_api, me, lost.clone(), fence.clone()));
    let (pod, pod_name) = match (std::env::var("POD_NAME"), std::env::var("POD_NAMESPACE")) {
        (Ok(name), Ok(ns)) => (Some(Api::namespaced(client, &ns)), name),
        _ => (None, String::new()),
    };
    label(&pod, &pod_name, true).await;
    Ok(Some(Term {
        lost,
        fence,
        renewals,
        pod,
        pod_name,
    }))
}

/// The watch on the Lease, from this replica's side.
fn lease_watch(
    api: Api<Lease>,
) -> futures::stream::BoxStream<'static, Result<Lease, watcher::Error>> {
    let config = watcher::Config::default().fields(&format!("metadata.name={LEASE}"));
    watcher(api, config)
        .default_backoff()
        .applied_objects()
        .boxed()
}

/// Stand by until this replica takes the Lease (`None`: shut down first). A standby watches
/// the Lease: each renewal restarts the holder's term as this replica sees it, and a release
/// (SIGTERM on the leader) starts a campaign at once.
async fn campaign(
    shared: &Shared,
    lease_api: &Api<Lease>,
    me: &str,
    fence: &Fence,
) -> Option<Elector> {
    let mut leases = lease_watch(lease_api.clone());
    let mut elector = Elector::new(lease_api.clone(), LEASE, me);
    tracing::info!(identity = me, "standby: waiting to become the leader");
    let mut reported = String::new();
    loop {
        let sent = Instant::now();
        let wait = match elector.try_hold().await {
            Ok(Attempt::Held) => {
                fence.extend((sent + RENEW_DEADLINE).into_std());
                return Some(elector);
            }
            Ok(Attempt::Busy { holder, wait }) => {
                if holder != reported {
                    tracing::info!(
                        identity = me,
                        holder,
                        "the Lease is held by another replica; standing by"
                    );
                    reported = holder;
                }
                wait.min(STANDBY_POLL)
            }
            Ok(Attempt::Conflict) => Duration::from_millis(100) + super::jitter(RENEW_EVERY),
            Err(e) => {
                tracing::warn!(identity = me, error = %e, "cannot read or write the Lease; retrying");
                Duration::from_secs(2)
            }
        };
        let deadline = Instant::now() + wait;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => break,
                next = leases.next() => match next {
                    Some(Ok(lease)) => {
                        elector.seen.observe(&lease);
                        if holder_of(&lease).is_none() {
                            tracing::info!(identity = me, "the Lease was released; campaigning now");
                            break;
                        }
                    }
                    Some(Err(e)) => tracing::debug!(error = %e, "Lease watch error; retrying"),
                    None => break,
                },
                _ = shared.cluster.shutdown().cancelled() => return None,
            }
        }
    }
}

/// Renewals notice a takeover only every few seconds; a watch on the Lease sees it at once:
/// another holder closes the fence and ends the term.
async fn watch_takeover(lease_api: Api<Lease>, me: String, lost: CancellationToken, fence: Fence) {
    let mut leases = lease_watch(lease_api);
    loop {
        tokio::select! {
            _ = lost.cancelled() => return,
            next = leases.next() => match next {
                Some(Ok(lease)) => {
                    let holder = holder_of(&lease).unwrap_or("");
                    if holder != me {
                        tracing::warn!(identity = me, holder, "the Lease is held by another replica");
                        fence.close();
                        lost.cancel();
                        return;
                    }
                }
                Some(Err(e)) => tracing::warn!(error = %e, "Lease watch error; retrying"),
                None => return,
            }
        }
    }
}

/// Renew every [`RENEW_EVERY`] until `lost` is cancelled, extending the fence's term with
/// each renewal; cancel `lost` and close the fence when another replica holds the Lease or no
/// renewal succeeded for [`RENEW_DEADLINE`].
async fn renew(mut elector: Elector, lost: CancellationToken, fence: Fence) -> Elector {
    let mut renewed = Instant::now();
    let me = elector.me().to_string();
    let step_down = |why: &str| {
        tracing::warn!(identity = me, "{why}; stepping down");
        fence.close();
        lost.cancel();
    };
    loop {
        // Counted from when the last renewal was sent, as the fence's term is: a slow renewal
        // does not push the next one past the term.
        tokio::select! {
            _ = tokio::time::sleep_until(renewed + RENEW_EVERY) => {}
            _ = lost.cancelled() => return elector,
        }
        loop {
            let sent = Instant::now();
            match elector.try_hold().await {
                Ok(Attempt::Held) => {
                    renewed = sent;
                    fence.extend((sent + RENEW_DEADLINE).into_std());
                    break;
                }
                Ok(Attempt::Busy { holder, .. }) => {
                    step_down(&format!("the Lease is held by another replica ({holder})"));
                    return elector;
                }
                // Someone wrote the Lease between the read and the write: read again, but
                // a renewal that keeps losing counts toward the deadline like an error.
                Ok(Attempt::Conflict) if renewed.elapsed() < RENEW_DEADLINE => continue,
                Ok(Attempt::Conflict) => {
                    step_down("the Lease kept changing under every renewal");
                    return elector;
                }
                Err(e) => {
                    if renewed.elapsed() >= RENEW_DEADLINE {
                        step_down(&format!("the Lease could not be renewed in time ({e})"));
                        return elector;
                    }
                    tracing::warn!(error = %e, "cannot renew the Lease; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                        _ = lost.cancelled() => return elector,
                    }
                }
            }
        }
    }
}

impl Term {
    /// Stop leading: stop renewing, remove the Pod label, then release the Lease (only if
    /// this replica still holds it) so a standby takes over at once.
    pub(super) async fn step_down(self) {
        // No write of this replica may land once a standby can take over.
        self.fence.close();
        self.lost.cancel();
        label(&self.pod, &self.pod_name, false).await;
        let Ok(mut elector) = self.renewals.await else {
            tracing::warn!("the Lease renewal task failed; the Lease expires on its own");
            return;
        };
        match elector.release().await {
            Ok(true) => tracing::info!("Lease released"),
            Ok(false) => tracing::info!("the Lease was no longer held by this replica"),
            Err(e) => tracing::warn!(error = %e, "cannot release the Lease"),
        }
    }
}
