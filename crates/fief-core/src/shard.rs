//! Shards: which replica works on which tenants when the agent runs with `--shards N`.
//!
//! In: a tenant name and the shard count ([`shard_of`]); the live replicas and who holds each
//! shard now ([`assign`]). Out: the tenant's shard, and the shard each replica should hold.
//!
//! A tenant's shard is a stable hash of its name (SHA-256, the first eight bytes, modulo the
//! count): the same on every replica, every version and every platform, so a tenant never
//! changes shard while the count stays. The assignment is deterministic, so every replica
//! that sees the same replicas and holders computes the same answer and acts only on its own
//! part of it. It is fair (no replica holds more than `ceil(N / replicas)` shards) and sticky:
//! a replica keeps the shards it holds up to its fair share, so a replica added takes over
//! about `N / replicas` shards and a replica that stops loses only its own. Shards to place
//! go by rendezvous hashing (the replica with the highest hash of shard and replica name
//! among those below their share), which spreads them without any shared state.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest as _, Sha256};

/// A shard's number, `0..count`.
pub type Shard = u32;

fn hash64(parts: &[&[u8]]) -> u64 {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p);
    }
    let d = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&d[..8]);
    u64::from_be_bytes(first)
}

/// The shard `tenant` belongs to among `count` shards (a count of 0 or 1: shard 0).
pub fn shard_of(tenant: &str, count: u32) -> Shard {
    if count <= 1 {
        return 0;
    }
    (hash64(&[tenant.as_bytes()]) % u64::from(count)) as Shard
}

/// The rendezvous weight of `shard` for `replica`: the higher, the more the shard prefers it.
fn weight(shard: Shard, replica: &str) -> u64 {
    hash64(&[&shard.to_be_bytes(), replica.as_bytes()])
}

/// The most shards one replica holds when `count` shards are spread over `replicas`.
pub fn fair_share(count: u32, replicas: usize) -> usize {
    if replicas == 0 {
        return 0;
    }
    (count as usize).div_ceil(replicas)
}

/// The shard each of `replicas` (the live ones) should hold, given `holders` (shard → the
/// replica holding it now; holders that are not live are ignored). Every shard is assigned
/// when there is at least one replica.
pub fn assign(
    count: u32,
    replicas: &BTreeSet<String>,
    holders: &BTreeMap<Shard, String>,
) -> BTreeMap<Shard, String> {
    let share = fair_share(count, replicas.len());
    let mut out = BTreeMap::new();
    if share == 0 {
        return out;
    }
    let mut load: BTreeMap<&str, usize> = replicas.iter().map(|r| (r.as_str(), 0)).collect();
    // Each replica keeps what it holds, up to its share: the shards it prefers most first.
    let mut held: BTreeMap<&str, Vec<Shard>> = BTreeMap::new();
    for (shard, holder) in holders {
        if *shard < count && replicas.contains(holder) {
            held.entry(holder.as_str()).or_default().push(*shard);
        }
    }
    for (replica, mut shards) in held {
        shards.sort_by_key(|s| (std::cmp::Reverse(weight(*s, replica)), *s));
        for shard in shards.into_iter().take(share) {
            out.insert(shard, replica.to_string());
            if let Some(l) = load.get_mut(replica) {
                *l += 1;
            }
        }
    }
    // The rest go to the replica that prefers them most among those below their share.
    for shard in 0..count {
        if out.contains_key(&shard) {
            continue;
        }
        let best = load
            .iter()
            .filter(|(_, l)| **l < share)
            .max_by_key(|(r, _)| (weight(shard, r), std::cmp::Reverse(**r)))
            .map(|(r, _)| *r);
        if let Some(replica) = best {
            out.insert(shard, replica.to_string());
            if let Some(l) = load.get_mut(replica) {
                *l += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replicas(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    fn per_replica(a: &BTreeMap<Shard, String>) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for r in a.values() {
            *m.entry(r.clone()).or_insert(0) += 1;
        }
        m
    }

    #[test]
    fn a_tenants_shard_is_stable_and_spreads_the_fleet() {
        assert_eq!(shard_of("acme", 12), shard_of("acme", 12));
        assert_eq!(shard_of("acme", 1), 0);
        assert_eq!(shard_of("acme", 0), 0);
        let mut counts = [0usize; 12];
        for i in 0..12_000 {
            counts[shard_of(&format!("t{i}"), 12) as usize] += 1;
        }
        assert!(counts.iter().all(|c| (800..1200).contains(c)), "{counts:?}");
    }

    #[test]
    fn every_shard_is_assigned_and_no_replica_holds_more_than_its_fair_share() {
        for n in 1..=5 {
            let names: Vec<String> = (0..n).map(|i| format!("r{i}")).collect();
            let rs: BTreeSet<String> = names.iter().cloned().collect();
            let a = assign(12, &rs, &BTreeMap::new());
            assert_eq!(a.len(), 12);
            assert!(per_replica(&a).values().all(|c| *c <= fair_share(12, n)));
        }
        assert!(assign(12, &BTreeSet::new(), &BTreeMap::new()).is_empty());
    }

    #[test]
    fn a_replica_added_takes_a_fair_share_and_only_that_moves() {
        let three = replicas(&["a", "b", "c"]);
        let before = assign(12, &three, &BTreeMap::new());
        assert_eq!(
            per_replica(&before).values().copied().collect::<Vec<_>>(),
            [4, 4, 4]
        );
        let four = replicas(&["a", "b", "c", "d"]);
        let after = assign(12, &four, &before);
        let moved = (0..12).filter(|s| before.get(s) != after.get(s)).count();
        assert_eq!(moved, 3, "a quarter of the shards move");
        assert!(per_replica(&after).values().all(|c| *c == 3));
        assert_eq!(assign(12, &four, &after), after, "the assignment is stable");
    }

    #[test]
    fn a_replica_that_stops_loses_only_its_own_shards() {
        let three = replicas(&["a", "b", "c"]);
        let before = assign(12, &three, &BTreeMap::new());
        let two = replicas(&["a", "c"]);
        let after = assign(12, &two, &before);
        for (shard, holder) in &before {
            if holder != "b" {
                assert_eq!(after.get(shard), Some(holder), "shard {shard} stays");
            }
        }
        assert!(per_replica(&after).values().all(|c| *c == 6));
    }

    #[test]
    fn holders_that_are_not_live_or_beyond_the_count_are_ignored() {
        let holders: BTreeMap<Shard, String> =
            [(0, "gone".to_string()), (40, "a".to_string())].into();
        let a = assign(4, &replicas(&["a"]), &holders);
        assert_eq!(a.len(), 4);
        assert!(a.values().all(|r| r == "a"));
    }
}
