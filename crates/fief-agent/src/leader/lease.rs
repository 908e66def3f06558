//! One Lease in coordination.k8s.io, taken, renewed and released by client-go's rule: the
//! leader's `fief-agent` Lease, and with `--shards` each shard's Lease and each replica's
//! membership Lease.
//!
//! In: a Lease API, the Lease's name, this replica's identity, and the labels and annotations
//! it writes. Out: the outcome of each attempt to take or renew it ([`Attempt`]), and a
//! release that clears only a Lease this replica still holds.
//!
//! Every write (take, renew, release) is a `replace` carrying the `resourceVersion` it read,
//! so of two replicas racing for the same Lease exactly one write lands and the other gets 409
//! and reads again. A holder's term is measured on this replica's own clock from the moment it
//! first saw the holder's latest renewal ([`Seen`]), so clock skew between nodes does not
//! matter.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use tokio::time::Instant;

/// How long a holder's claim lasts without a renewal.
pub(crate) const LEASE_SECONDS: i32 = 15;
/// How often the leader renews.
pub(crate) const RENEW_EVERY: Duration = Duration::from_secs(5);
/// A leader that has not renewed for this long stops leading (before the term runs out, so
/// it has stopped before a standby may take over).
pub(crate) const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// One request's limit, so a hung API server cannot hold a renewal past the deadline.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(4);

/// What a replica may do with the Lease record it has read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Write it: it is free, expired, or already ours.
    Write,
    /// Another holder's term runs this much longer.
    Wait(Duration),
}

/// Decide from the holder, the holder's term, and how long ago this replica first saw the
/// holder's latest renewal. Pure, so the rule is unit-tested.
pub(crate) fn decide(holder: Option<&str>, me: &str, term: Duration, seen_for: Duration) -> Claim {
    match holder {
        None => Claim::Write,
        Some(h) if h == me => Claim::Write,
        Some(_) if seen_for >= term => Claim::Write,
        Some(_) => Claim::Wait(term - seen_for),
    }
}

/// The holder a Lease names (an empty name is none).
pub(crate) fn holder_of(lease: &Lease) -> Option<&str> {
    lease.spec.as_ref().and_then(holder_of_spec)
}

/// The outcome of one attempt to take or renew the Lease.
#[derive(Debug)]
pub(crate) enum Attempt {
    /// This replica holds the Lease now.
    Held,
    /// Another replica holds it for this much longer (as far as this replica can tell).
    Busy {
        /// The holder.
        holder: String,
        /// How much longer its term runs.
        wait: Duration,
    },
    /// Someone wrote the Lease between the read and the write: read again.
    Conflict,
}

/// The last (holder, renewTime) record this replica saw and when it first saw it.
#[derive(Default)]
pub(crate) struct Seen(Option<(Option<String>, Option<MicroTime>, Instant)>);

impl Seen {
    /// Note a record read or watched; returns how long it has been unchanged.
    pub(crate) fn observe(&mut self, lease: &Lease) -> Duration {
        let holder = holder_of(lease).map(str::to_string);
        let renewed = lease.spec.as_ref().and_then(|s| s.renew_time.clone());
        let now = Instant::now();
        match &self.0 {
            Some((h, r, at)) if *h == holder && *r == renewed => now.duration_since(*at),
            _ => {
                self.0 = Some((holder, renewed, now));
                Duration::ZERO
            }
        }
    }
}

/// This replica's view of the Lease and the writes it makes.
pub(crate) struct Elector {
    api: Api<Lease>,
    name: String,
    me: String,
    /// The last record of this Lease this replica saw.
    pub(crate) seen: Seen,
    /// Labels a Lease this replica creates carries.
    labels: BTreeMap<String, String>,
    /// Annotations written with every take and renewal.
    pub(crate) annotations: BTreeMap<String, String>,
}

impl Elector {
    /// An elector for the Lease `name`, as the replica `me`.
    pub(crate) fn new(api: Api<Lease>, name: &str, me: &str) -> Elector {
        Elector {
            api,
            name: name.to_string(),
            me: me.to_string(),
            seen: Seen::default(),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
        }
    }

    /// The same, creating the Lease with `labels` when it does not exist.
    pub(crate) fn labelled(mut self, labels: BTreeMap<String, String>) -> Elector {
        self.labels = labels;
        self
    }

    /// This replica's identity.
    pub(crate) fn me(&self) -> &str {
        &self.me
    }

    /// Read the Lease and take or renew it if the rule allows.
    pub(crate) async fn try_hold(&mut self) -> Result<Attempt, kube::Error> {
        let current = timed(self.api.get_opt(&self.name)).await?;
        self.hold_from(current).await
    }

    /// Take or renew the Lease from the record just read (`None`: it does not exist).
    pub(crate) async fn hold_from(
        &mut self,
        current: Option<Lease>,
    ) -> Result<Attempt, kube::Error> {
        let now = MicroTime(Timestamp::now());
        let Some(mut lease) = current else {
            return self.create(now).await;
        };
        let seen_for = self.seen.observe(&lease);
        let spec = lease.spec.take().unwrap_or_default();
        let holder = holder_of_spec(&spec).map(str::to_string);
        let term = term_of(&spec);
        if let Claim::Wait(wait) = decide(holder.as_deref(), &self.me, term, seen_for) {
            return Ok(Attempt::Busy {
                holder: holder.unwrap_or_default(),
                wait,
            });
        }
        let renewing = holder.as_deref() == Some(self.me.as_str());
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(self.me.clone()),
            acquire_time: if renewing {
                spec.acquire_time.clone()
            } else {
                Some(now.clone())
            },
            renew_time: Some(now),
            lease_duration_seconds: Some(LEASE_SECONDS),
            lease_transitions: if renewing {
                spec.lease_transitions
            } else {
                Some(spec.lease_transitions.unwrap_or(0).saturating_add(1))
            },
            ..spec
        });
        if !self.annotations.is_empty() {
            let a = lease.metadata.annotations.get_or_insert_with(BTreeMap::new);
            a.extend(self.annotations.clone());
        }
        // `replace` sends the resourceVersion read above: a concurrent write makes it 409.
        match timed(self.api.replace(&self.name, &PostParams::default(), &lease)).await {
            Ok(written) => {
                self.seen.observe(&written);
                Ok(Attempt::Held)
            }
            Err(e) if is_conflict(&e) => Ok(Attempt::Conflict),
            Err(e) => Err(e),
        }
    }

    /// Create the Lease, held by this replica.
    async fn create(&mut self, now: MicroTime) -> Result<Attempt, kube::Error> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                labels: (!self.labels.is_empty()).then(|| self.labels.clone()),
                annotations: (!self.annotations.is_empty()).then(|| self.annotations.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.me.clone()),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_duration_seconds: Some(LEASE_SECONDS),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        };
        match timed(self.api.create(&PostParams::default(), &lease)).await {
            Ok(created) => {
                self.seen.observe(&created);
                Ok(Attempt::Held)
            }
            Err(e) if is_conflict(&e) => Ok(Attempt::Conflict),
            Err(e) => Err(e),
        }
    }

    /// Clear the Lease if this replica still holds it, so a standby takes over at once.
    pub(crate) async fn release(&mut self) -> Result<bool, kube::Error> {
        for _ in 0..3 {
            let Some(mut lease) = timed(self.api.get_opt(&self.name)).await? else {
                return Ok(false);
            };
            if holder_of(&lease) != Some(self.me.as_str()) {
                return Ok(false);
            }
            if let Some(spec) = lease.spec.as_mut() {
                spec.holder_identity = None;
                spec.lease_duration_seconds = Some(1);
                spec.renew_time = Some(MicroTime(Timestamp::now()));
            }
            match timed(self.api.replace(&self.name, &PostParams::default(), &lease)).await {
                Ok(_) => return Ok(true),
                Err(e) if is_conflict(&e) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }
}

/// How long a holder's claim in `spec` lasts without a renewal (ours when it names none).
pub(crate) fn term_of(spec: &LeaseSpec) -> Duration {
    spec.lease_duration_seconds
        .and_then(|s| u64::try_from(s.max(1)).ok())
        .map_or(
            Duration::from_secs(LEASE_SECONDS as u64),
            Duration::from_secs,
        )
}

/// The holder a Lease spec names (an empty name is none).
pub(crate) fn holder_of_spec(spec: &LeaseSpec) -> Option<&str> {
    spec.holder_identity.as_deref().filter(|h| !h.is_empty())
}

pub(crate) fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

/// Run one API call with [`REQUEST_TIMEOUT`].
pub(crate) async fn timed<T>(
    call: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, kube::Error> {
    match tokio::time::timeout(REQUEST_TIMEOUT, call).await {
        Ok(result) => result,
        Err(_) => Err(kube::Error::Service(
            format!("no answer from the API server in {REQUEST_TIMEOUT:?}").into(),
        )),
    }
}

#[cfg(test)]
#[path = "lease_tests.rs"]
mod tests;
