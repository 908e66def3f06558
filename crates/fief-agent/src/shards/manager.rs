//! The shard manager's loop: one look at the Leases every tick — renew, judge who is live,
//! compute the assignment, take and hand back shards.
//!
//! In: the membership and shard Leases (listed each tick), this replica's fetched commit and
//! rollout progress, the syncs in flight. Out: the shards taken and handed back (on
//! [`Ownership`]), the fence's term extended with each complete renewal, the other replicas'
//! rollout progress, a fetch asked for when another replica announces a newer commit, and
//! `lost` cancelled when a term ran out or a shard was found taken.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::super::Shared;
use super::super::leader::lease::{
    self, Attempt, Elector, LEASE_SECONDS, RENEW_DEADLINE, RENEW_EVERY, Seen,
};
use super::{
    COMMIT_ANNOTATION, DRAIN_MAX, JOIN_WINDOW, KIND_LABEL, MEMBER, Ownership, Progress,
    ROLLOUT_ANNOTATION, SHARD, TICK, member_lease, shard_lease,
};
use fief_core::shard::{Shard, assign, shard_of};
use fief_kube::fence::Fence;

/// Whether a Lease record seen unchanged for `seen_for` still holds (its duration not out).
fn live(lease: &Lease, seen_for: Duration) -> bool {
    let term = lease
        .spec
        .as_ref()
        .map_or(Duration::from_secs(LEASE_SECONDS as u64), lease::term_of);
    lease::holder_of(lease).is_some() && seen_for < term
}

/// A replica's view of the Leases and the writes it makes.
pub(super) struct Manager {
    pub(super) shared: Arc<Shared>,
    pub(super) own: Arc<Ownership>,
    pub(super) api: Api<Lease>,
    pub(super) member: Elector,
    pub(super) shards: BTreeMap<Shard, Elector>,
    /// The other replicas' membership Leases as last seen.
    pub(super) others: BTreeMap<String, Seen>,
    /// Commits other replicas announced that this one has asked a fetch for.
    pub(super) asked: HashSet<String>,
    pub(super) fence: Fence,
    pub(super) lost: CancellationToken,
    /// When every held Lease was last renewed.
    pub(super) renewed: Instant,
    /// When this replica joined.
    pub(super) joined: Instant,
    /// Shards being handed back: no new sync starts, the Lease is still renewed until the
    /// syncs in flight are done (or [`DRAIN_MAX`] passed).
    pub(super) draining: BTreeMap<Shard, Instant>,
    /// Cancelled by [`Sharding::finish`]: hand every shard back and stop.
    pub(super) finish: CancellationToken,
    /// A term ran out or a shard was found taken: nothing more is written.
    pub(super) fatal: bool,
}

impl Manager {
    pub(super) async fn run(mut self) {
        let mut next_renewal = Instant::now() + RENEW_EVERY;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(TICK) => {}
                _ = self.finish.cancelled() => break,
            }
            let renew = Instant::now() >= next_renewal || self.commit_changed();
            match self.tick(renew).await {
                // Counted from when the round was sent, as the fence's term is: a slow round
                // does not push the next one past the term.
                Ok(()) if renew => next_renewal = self.renewed + RENEW_EVERY,
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
        let commit = self.shared.report.last_fetch().0;
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

    /// Renew the membership Lease (with the last fetched commit) and every held shard, all at
    /// once, so a round takes one request's time however many shards are held; the fence's
    /// term is extended only when all of them were renewed.
    async fn renew(
        &mut self,
        members: &BTreeMap<String, Lease>,
        shards: &BTreeMap<Shard, Lease>,
        sent: Instant,
    ) -> Result<(), Failure> {
        if let Some(commit) = self.shared.report.last_fetch().0 {
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
        let held = self.own.held();
        let shard_rounds = self
            .shards
            .iter_mut()
            .filter(|(shard, _)| held.contains(shard))
            .map(
                |(shard, e)| async move { (*shard, e.hold_from(shards.get(shard).cloned()).await) },
            );
        let (member, shard_results) = tokio::join!(
            self.member.hold_from(mine),
            futures::future::join_all(shard_rounds)
        );
        match member {
            Ok(Attempt::Held) => {}
            Ok(Attempt::Conflict) => return Err(Failure::retry("membership Lease changed".into())),
            Ok(Attempt::Busy { holder, .. }) => {
                return Err(Failure::fatal(format!(
                    "another replica ({holder}) holds this replica's membership Lease"
                )));
            }
            Err(e) => return Err(Failure::retry(format!("cannot renew membership: {e}"))),
        }
        for (shard, result) in shard_results {
            match result {
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
        let fetched = self.shared.report.last_fetch().0;
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
                self.shared.source.request_fetch();
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
        let busy: BTreeSet<Shard> = self
            .shared
            .work
            .syncing()
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
pub(super) struct Failure {
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
