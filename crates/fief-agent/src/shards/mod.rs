//! Shards across replicas (`--shards N`): every replica works, each on the tenants of the
//! shards it holds.
//!
//! In: the agent's options, a client for the Leases (unfenced, not rate-limited), the
//! [`Fence`] of the syncs' client, and the replica's last fetched commit. Out: the shards this
//! replica holds and may write ([`Ownership`]), a fence open only while every Lease this
//! replica holds was renewed in time, a fetch asked for when another replica has fetched a
//! commit this one has not, and `lost` cancelled when a term ran out (the process was paused
//! or cut off past its Leases): the agent then exits so it starts afresh.
//!
//! Kubernetes is the coordinator: each replica renews a membership Lease
//! (`fief-member-<identity>`, labelled `fief.dev/lease=member`) and each shard is a Lease
//! (`fief-shard-<i>-of-<N>`, labelled `fief.dev/lease=shard`). Every tick a replica lists
//! both, judges which replicas are live (a membership Lease renewed within its duration, as
//! this replica's clock saw it), computes the assignment ([`fief_core::shard::assign`]: fair,
//! sticky, the same on every replica that sees the same Leases) and acts on its own part:
//! takes a shard assigned to it once the Lease is free or expired, renews what it holds, and
//! hands back a shard assigned to another replica — first stopping new syncs of its tenants,
//! then waiting for the ones in flight, then releasing the Lease. The membership Lease carries
//! the replica's last fetched commit (`fief.dev/commit`), so a push that reached one replica's
//! webhook is fetched by all.

mod follow;
mod manager;
mod ownership;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::leader::lease::{Attempt, Elector, RENEW_DEADLINE};
use fief_core::shard::Shard;
use fief_kube::fence::Fence;
pub(crate) use follow::{Follow, follow};
use manager::Manager;
pub(crate) use ownership::{Ownership, Progress};

/// The label that tells fief's Leases apart, and its values.
const KIND_LABEL: &str = "fief.dev/lease";
const MEMBER: &str = "member";
const SHARD: &str = "shard";
/// The annotation on a membership Lease: the commit its replica fetched last.
const COMMIT_ANNOTATION: &str = "fief.dev/commit";
/// The annotation on a membership Lease: its replica's rollout progress ([`Progress`]).
const ROLLOUT_ANNOTATION: &str = "fief.dev/rollout";
/// How often a replica looks at the Leases (takes freed shards, sees replicas come and go).
const TICK: Duration = Duration::from_secs(1);
/// How long a replica that just joined waits before it takes a shard, so replicas started
/// together see each other first and do not take everything and hand it back.
const JOIN_WINDOW: Duration = Duration::from_secs(3);
/// The longest a hand-back waits for the shard's syncs in flight.
const DRAIN_MAX: Duration = Duration::from_secs(60);

/// The Lease of shard `shard` of `count`.
fn shard_lease(shard: Shard, count: u32) -> String {
    format!("fief-shard-{shard}-of-{count}")
}

/// The membership Lease of `identity` (a Pod name is already a valid Lease name).
fn member_lease(identity: &str) -> String {
    let safe: String = identity
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("fief-member-{}", safe.trim_matches('-'))
}

fn labels(kind: &str, count: u32) -> BTreeMap<String, String> {
    [
        (KIND_LABEL.to_string(), kind.to_string()),
        ("fief.dev/shards".to_string(), count.to_string()),
    ]
    .into()
}

/// A running shard manager.
pub(super) struct Sharding {
    /// Cancelled when this replica must stop syncing (shutdown, or a Lease term ran out).
    pub(super) lost: CancellationToken,
    finish: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Sharding {
    /// Once no sync runs any more: hand the shards back (unless a term ran out) and stop.
    pub(super) async fn finish(self) {
        self.finish.cancel();
        if let Err(e) = self.task.await {
            tracing::warn!(error = %e, "the shard manager failed; its Leases expire on their own");
        }
    }
}

/// Start the shard manager; returns once this replica is a member (or shuts down first).
pub(super) async fn start(
    shared: &Arc<Shared>,
    own: Arc<Ownership>,
    namespace: &str,
    client: kube::Client,
    fence: Fence,
) -> Option<Sharding> {
    let me = super::leader::identity();
    let api: Api<Lease> = Api::namespaced(client, namespace);
    let count = own.count();
    let member = Elector::new(api.clone(), &member_lease(&me), &me).labelled(labels(MEMBER, count));
    let shards = (0..count)
        .map(|s| {
            let e = Elector::new(api.clone(), &shard_lease(s, count), &me)
                .labelled(labels(SHARD, count));
            (s, e)
        })
        .collect();
    let lost = shared.cluster.shutdown().child_token();
    let mut m = Manager {
        shared: shared.clone(),
        own,
        api,
        member,
        shards,
        others: BTreeMap::new(),
        asked: HashSet::new(),
        fence,
        lost: lost.clone(),
        renewed: Instant::now(),
        joined: Instant::now(),
        draining: BTreeMap::new(),
        finish: CancellationToken::new(),
        fatal: false,
    };
    // Membership first: the fence opens with the first renewal.
    loop {
        let sent = Instant::now();
        match m.member.try_hold().await {
            Ok(Attempt::Held) => {
                m.fence.extend((sent + RENEW_DEADLINE).into_std());
                m.renewed = sent;
                break;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot write this replica's membership Lease; retrying")
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = shared.cluster.shutdown().cancelled() => return None,
        }
    }
    tracing::info!(identity = me, shards = count, "member of the shard set");
    let f = m.fence.clone();
    let l = lost.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = f.closed() => {
                tracing::warn!("a Lease term ran out before its renewal; stopping every write");
                l.cancel();
            }
            _ = l.cancelled() => {}
        }
    });
    super::leader::label_own_pod(m.api.clone().into_client(), true).await;
    let finish = m.finish.clone();
    let task = tokio::spawn(m.run());
    Some(Sharding { lost, finish, task })
}

#[cfg(test)]
#[path = "renew_tests.rs"]
mod renew_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_names_are_valid_kubernetes_names() {
        assert_eq!(shard_lease(3, 12), "fief-shard-3-of-12");
        assert_eq!(
            member_lease("fief-agent-7d9f-x2"),
            "fief-member-fief-agent-7d9f-x2"
        );
        assert_eq!(member_lease("Host_Name"), "fief-member-host-name");
    }
}
