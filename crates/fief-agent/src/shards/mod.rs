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
mod ownership;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::leader::lease::{
    self, Attempt, Elector, LEASE_SECONDS, RENEW_DEADLINE, RENEW_EVERY, Seen,
};
use super::{Shared, lock};
use fief_core::shard::{Shard, assign, shard_of};
use fief_kube::fence::Fence;
pub(crate) use follow::{Follow, follow};
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

/// Whether a Lease record seen unchanged for `seen_for` still holds (its duration not out).
fn live(lease: &Lease, seen_for: Duration) -> bool {
    let term = lease
        .spec
        .as_ref()
        .and_then(|s| s.lease_duration_seconds)
        .and_then(|s| u64::try_from(s.max(1)).ok())
        .unwrap_or(LEASE_SECONDS as u64);
    lease::holder_of(lease).is_some() && seen_for < Duration::from_secs(term)
}

/// A replica's view of the Leases and the writes it makes.
struct Manager {
    shared: Arc<Shared>,
    own: Arc<Ownership>,
    api: Api<Lease>,
    member: Elector,
    shards: BTreeMap<Shard, Elector>,
    /// The other replicas' membership Leases as last seen.
    others: BTreeMap<String, Seen>,
    /// Commits other replicas announced that this one has asked a fetch for.
    asked: HashSet<String>,
    fence: Fence,
    lost: CancellationToken,
    /// When every held Lease was last renewed.
    renewed: Instant,
    /// When this replica joined.
    joined: Instant,
    /// Shards being handed back: no new sync starts, the Lease is still renewed until the
    /// syncs in flight are done (or [`DRAIN_MAX`] passed).
    draining: BTreeMap<Shard, Instant>,
    /// Cancelled by [`Sharding::finish`]: hand every shard back and stop.
    finish: CancellationToken,
    /// A term ran out or a shard was found taken: nothing more is written.
    fatal: bool,
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
    let lost = shared.shutdown.child_token();
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
            _ = shared.shutdown.cancelled() => return None,
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

impl Manager {
    async fn run(mut self) {
        let mut next_renewal = Instant::now() + RENEW_EVERY;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(TICK) => {}
                _ = self.finish.cancelled() => break,
            }
            let renew = Instant::now() >= next_renewal || self.commit_changed();
            match self.tick(renew).await {
                Ok(()) if renew => next_renewal = Instant::now() + RENEW_EVERY,
                Ok(()) => {}
                Err(why) => {
                    if self.renewed.elapsed() >= RENEW_DEADLINE || why.fatal {
                        tracing::warn!(reason = why.text, "stepping down from every shard");
                        self.fatal = true;
                        self.fence.close();
                        self.lost.cancel();
                        break;
                    }
                    tracing::warn!(
                        reason = why.text,
                        "cannot read or renew the Leases; retrying"
                    );
                }
            }
        }
        self.hand_back_all().await;
    }

    /// Whether the commit this replica fetched, or its rollout progress, differs from what
    /// its Lease announces.
    fn commit_changed(&self) -> bool {
        let commit = lock(&self.shared.health).last_commit.clone();
        let progress = self.own.announced().map(|p| p.encode());
        (commit.is_some() && self.member.annotations.get(COMMIT_ANNOTATION) != commit.as_ref())
            || (progress.is_some()
                && self.member.annotations.get(ROLLOUT_ANNOTATION) != progress.as_ref())
    }

    /// One look at the Leases: renew (when `renew`), follow other replicas' commits, take and
    /// hand back shards.
    async fn tick(&mut self, renew: bool) -> Result<(), Failure> {
        if self.renewed.elapsed() >= RENEW_DEADLINE {
            // Paused or cut off past the terms: another replica may hold these shards now,
            // so not even a Lease is written.
            return Err(Failure::fatal(
                "the Lease terms ran out before they were renewed".into(),
            ));
        }
        let sent = Instant::now();
        let listed = lease::timed(self.api.list(&ListParams::default().labels(KIND_LABEL)))
            .await
            .map_err(|e| Failure::retry(format!("cannot list the Leases: {e}")))?;
        let mut members: BTreeMap<String, Lease> = BTreeMap::new();
        let mut shard_leases: BTreeMap<Shard, Lease> = BTreeMap::new();
        let names: BTreeMap<String, Shard> = self
            .shards
            .keys()
            .map(|s| (shard_lease(*s, self.own.count()), *s))
            .collect();
        for l in listed.items {
            let name = l.metadata.name.clone().unwrap_or_default();
            let kind = l.metadata.labels.as_ref().and_then(|m| m.get(KIND_LABEL));
            match kind.map(String::as_str) {
                Some(MEMBER) => {
                    members.insert(name, l);
                }
                Some(SHARD) => {
                    if let Some(s) = names.get(&name) {
                        shard_leases.insert(*s, l);
                    }
                }
                _ => {}
            }
        }
        if renew {
            self.renew(&members, &shard_leases, sent).await?;
        }
        let live = self.live_members(&members);
        let holders = self.holders(&shard_leases, &live);
        let target = assign(self.own.count(), &live, &holders);
        self.act(&target, &holders, shard_leases).await
    }

    /// Renew the membership Lease (with the last fetched commit) and every held shard; the
    /// fence's term is extended only when all of them were renewed.
    async fn renew(
        &mut self,
        members: &BTreeMap<String, Lease>,
        shards: &BTreeMap<Shard, Lease>,
        sent: Instant,
    ) -> Result<(), Failure> {
        if let Some(commit) = lock(&self.shared.health).last_commit.clone() {
            self.member
                .annotations
                .insert(COMMIT_ANNOTATION.to_string(), commit);
        }
        if let Some(progress) = self.own.announced() {
            self.member
                .annotations
                .insert(ROLLOUT_ANNOTATION.to_string(), progress.encode());
        }
        let mine = members.get(&member_lease(self.member.me())).cloned();
        match self.member.hold_from(mine).await {
            Ok(Attempt::Held) => {}
            Ok(Attempt::Conflict) => return Err(Failure::retry("membership Lease changed".into())),
            Ok(Attempt::Busy { holder, .. }) => {
                return Err(Failure::fatal(format!(
                    "another replica ({holder}) holds this replica's membership Lease"
                )));
            }
            Err(e) => return Err(Failure::retry(format!("cannot renew membership: {e}"))),
        }
        for shard in self.own.held() {
            let Some(e) = self.shards.get_mut(&shard) else {
                continue;
            };
            match e.hold_from(shards.get(&shard).cloned()).await {
                Ok(Attempt::Held) => {}
                Ok(Attempt::Conflict) => {
                    return Err(Failure::retry(format!("shard {shard}'s Lease changed")));
                }
                Ok(Attempt::Busy { holder, .. }) => {
                    return Err(Failure::fatal(format!(
                        "shard {shard} is held by another replica ({holder})"
                    )));
                }
                Err(e) => return Err(Failure::retry(format!("cannot renew shard {shard}: {e}"))),
            }
        }
        self.fence.extend((sent + RENEW_DEADLINE).into_std());
        self.renewed = sent;
        Ok(())
    }

    /// The live replicas (this one included), and a fetch asked for when one of them
    /// announces a commit this replica has not fetched.
    fn live_members(&mut self, members: &BTreeMap<String, Lease>) -> BTreeSet<String> {
        let me = self.member.me().to_string();
        let mut live_set = BTreeSet::from([me.clone()]);
        let mut peers = BTreeMap::new();
        let fetched = lock(&self.shared.health).last_commit.clone();
        self.others.retain(|name, _| members.contains_key(name));
        for (name, l) in members {
            let Some(holder) = lease::holder_of(l).map(str::to_string) else {
                continue;
            };
            if holder == me {
                continue;
            }
            let seen_for = self.others.entry(name.clone()).or_default().observe(l);
            if !live(l, seen_for) {
                continue;
            }
            live_set.insert(holder.clone());
            let progress = l
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(ROLLOUT_ANNOTATION))
                .and_then(|p| Progress::decode(p));
            peers.insert(holder.clone(), progress);
            let announced = l
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(COMMIT_ANNOTATION));
            if let Some(c) = announced
                && fetched.as_ref() != Some(c)
                && self.asked.insert(c.clone())
            {
                tracing::info!(
                    commit = c,
                    replica = holder,
                    "another replica fetched a new commit; fetching"
                );
                self.shared.fetch_now.notify_one();
            }
        }
        self.own.set_peers(peers);
        live_set
    }

    /// Who holds each shard now, as far as this replica can tell (expired holders left out).
    fn holders(
        &mut self,
        shards: &BTreeMap<Shard, Lease>,
        live_set: &BTreeSet<String>,
    ) -> BTreeMap<Shard, String> {
        let mut out = BTreeMap::new();
        for (shard, l) in shards {
            let Some(e) = self.shards.get_mut(shard) else {
                continue;
            };
            let seen_for = e.seen.observe(l);
            let Some(holder) = lease::holder_of(l) else {
                continue;
            };
            if holder == e.me() || (live(l, seen_for) && live_set.contains(holder)) {
                out.insert(*shard, holder.to_string());
            }
        }
        out
    }

    /// Take the shards assigned to this replica that are free; hand back the ones assigned
    /// to another.
    async fn act(
        &mut self,
        target: &BTreeMap<Shard, String>,
        holders: &BTreeMap<Shard, String>,
        mut leases: BTreeMap<Shard, Lease>,
    ) -> Result<(), Failure> {
        let me = self.member.me().to_string();
        for (shard, replica) in target {
            let held = self.own.held().contains(shard);
            let settled = self.joined.elapsed() >= JOIN_WINDOW;
            if *replica == me && !held && settled && holders.get(shard).is_none_or(|h| *h == me) {
                let Some(e) = self.shards.get_mut(shard) else {
                    continue;
                };
                let sent = Instant::now();
                if let Ok(Attempt::Held) = e.hold_from(leases.remove(shard)).await {
                    if sent.duration_since(self.renewed) < RENEW_DEADLINE {
                        tracing::info!(shard, "took the shard");
                        self.draining.remove(shard);
                        self.own.gain(*shard);
                    } else {
                        // Taken but not inside a valid term: give it back at once.
                        let _ = e.release().await;
                    }
                }
            } else if *replica != me && held {
                self.hand_back(*shard);
            }
        }
        self.drain().await;
        Ok(())
    }

    /// Stop new syncs of the shard's tenants; its Lease is released once those in flight
    /// are done ([`Manager::drain`]).
    fn hand_back(&mut self, shard: Shard) {
        self.own.lose(shard);
        self.draining.entry(shard).or_insert_with(Instant::now);
    }

    /// Release the Leases of the shards handed back whose syncs in flight are done (or that
    /// waited [`DRAIN_MAX`]).
    async fn drain(&mut self) {
        let count = self.own.count();
        let busy: BTreeSet<Shard> = lock(&self.shared.in_flight)
            .iter()
            .map(|t| shard_of(t, count))
            .collect();
        let done: Vec<Shard> = self
            .draining
            .iter()
            .filter(|(s, since)| !busy.contains(*s) || since.elapsed() >= DRAIN_MAX)
            .map(|(s, _)| *s)
            .collect();
        for shard in done {
            self.draining.remove(&shard);
            if let Some(e) = self.shards.get_mut(&shard) {
                match e.release().await {
                    Ok(_) => tracing::info!(shard, "handed the shard back"),
                    Err(e) => {
                        tracing::warn!(shard, error = %e, "cannot release the shard's Lease; it expires on its own")
                    }
                }
            }
        }
    }

    /// On shutdown (no sync runs any more): hand every shard back and leave the set. After a
    /// term ran out, nothing is written: another replica may hold the shards already.
    async fn hand_back_all(&mut self) {
        for shard in self.own.held() {
            self.own.lose(shard);
            if !self.fatal {
                self.draining.insert(shard, Instant::now());
            }
        }
        if self.fatal {
            return;
        }
        self.drain().await;
        let _ = self.member.release().await;
    }
}

/// Why a tick failed, and whether this replica must stop writing at once.
struct Failure {
    text: String,
    fatal: bool,
}

impl Failure {
    fn retry(text: String) -> Failure {
        Failure { text, fatal: false }
    }
    fn fatal(text: String) -> Failure {
        Failure { text, fatal: true }
    }
}

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
