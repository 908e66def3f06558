//! Leader election on the `fief-agent` Lease: only the leader applies and prunes.
//!
//! In: a client and the agent's options. Out: a channel that says whether this replica still
//! holds the Lease.

use super::*;

/// Wait until this replica holds the Lease; returns the channel that says if it still does.
pub(super) async fn lead(
    client: &kube::Client,
    options: &AgentOptions,
) -> Result<tokio::sync::watch::Receiver<bool>, AgentError> {
    let identity = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| format!("fief-{}", std::process::id()));
    let manager = kube_lease_manager::LeaseManagerBuilder::new(client.clone(), "fief-agent")
        .with_namespace(options.lease_namespace.clone())
        .with_identity(identity.clone())
        .with_duration(15)
        .with_grace(5)
        .build()
        .await
        .map_err(|e| AgentError::Leadership(e.to_string()))?;
    let (mut rx, _task) = manager.watch().await;
    tracing::info!(identity, "waiting to become the leader");
    while !*rx.borrow_and_update() {
        rx.changed()
            .await
            .map_err(|e| AgentError::Leadership(e.to_string()))?;
    }
    tracing::info!(identity, "leading");
    Ok(rx)
}
