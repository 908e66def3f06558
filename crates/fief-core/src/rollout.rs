//! Progressive rollouts: fief.yaml `rollout.waves`, which tenant is in which wave, and when a
//! rollout moves on, waits or halts.
//!
//! In: the declared waves, the tenants (names and labels) and, per step, each tenant of the
//! current wave's state (synced at the target or not, healthy, waiting, failed). Out: the
//! waves of a rollout (only the tenants it changes, every tenant in exactly one wave) and the
//! next [`Step`]; a rollout's [`Record`] with its [`Phase`]. Pure: the agent (`fief::agent`)
//! does the syncing, the health watching and the status writing.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::Repo;
use crate::snapshot::same_entry;

mod record;

pub use crate::model::{RolloutConfig, WaveSpec};
pub use record::{Phase, Record};

/// The name of the wave that takes the tenants no declared wave took.
pub const REST: &str = "rest";

/// A wave of a planned rollout: its name and the tenants it changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wave {
    /// The declared name ([`REST`] for the implicit last wave).
    pub name: String,
    /// The tenants, sorted.
    pub tenants: Vec<String>,
}

fn stable_rank(tenant: &str) -> [u8; 32] {
    Sha256::digest(tenant.as_bytes()).into()
}

/// Put every tenant of `tenants` (name → labels) into a wave: each wave takes, of the tenants
/// no earlier wave took, those carrying all its selector labels, then `percent` of them
/// (rounded up, by a stable hash of the name). Tenants no wave took go into an implicit last
/// wave named [`REST`] (or a declared wave of that name). Empty waves are kept, so wave
/// numbers match fief.yaml.
pub fn assign(
    config: &RolloutConfig,
    tenants: &BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<Wave> {
    let mut left: BTreeSet<&String> = tenants.keys().collect();
    let mut waves = Vec::new();
    for spec in &config.waves {
        let mut matching: Vec<&String> = left
            .iter()
            .copied()
            .filter(|t| {
                spec.selector
                    .iter()
                    .all(|(k, v)| tenants.get(*t).and_then(|l| l.get(k)) == Some(v))
            })
            .collect();
        if let Some(p) = spec.percent {
            let take = (matching.len() * p as usize).div_ceil(100);
            matching.sort_by_key(|t| stable_rank(t));
            matching.truncate(take);
        }
        let mut chosen: Vec<String> = matching.into_iter().cloned().collect();
        chosen.sort();
        for t in &chosen {
            left.remove(t);
        }
        waves.push(Wave {
            name: spec.name.clone(),
            tenants: chosen,
        });
    }
    if !left.is_empty() {
        let rest: Vec<String> = left.into_iter().cloned().collect();
        match waves.iter_mut().find(|w| w.name == REST) {
            Some(w) => {
                w.tenants.extend(rest);
                w.tenants.sort();
            }
            None => waves.push(Wave {
                name: REST.to_string(),
                tenants: rest,
            }),
        }
    }
    waves
}

/// The waves of a rollout of `changed` tenants: [`assign`] over every tenant (so membership
/// does not depend on what a commit changes), then only the changed ones kept.
pub fn plan(
    config: &RolloutConfig,
    tenants: &BTreeMap<String, BTreeMap<String, String>>,
    changed: &BTreeSet<String>,
) -> Vec<Wave> {
    assign(config, tenants)
        .into_iter()
        .map(|w| Wave {
            name: w.name,
            tenants: w
                .tenants
                .into_iter()
                .filter(|t| changed.contains(t))
                .collect(),
        })
        .collect()
}

/// Whether `tenant`'s own files (its tenant file, wherever it is under `tenants/`, and its own
/// secret file) differ between two commits: such a change is the tenant's own and is never
/// held by a rollout.
pub fn own_change(from: &Repo, to: &Repo, tenant: &str) -> bool {
    let paths = |r: &Repo| r.tenant_files.get(tenant).cloned().unwrap_or_default();
    let tenant_files = paths(from);
    if tenant_files != paths(to) {
        return true;
    }
    tenant_files
        .into_iter()
        .chain(crate::secrets::tenant_paths(tenant))
        .any(|p| match (from.snapshot.get(&p), to.snapshot.get(&p)) {
            (None, None) => false,
            (Some(a), Some(b)) => !same_entry(a, b),
            _ => true,
        })
}

/// Where one tenant of the current wave is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TenantState {
    /// Not yet synced at the rollout's commit.
    Pending,
    /// Synced; its objects are not healthy yet.
    Waiting,
    /// Synced and healthy.
    Healthy,
    /// Its sync failed or its objects are unhealthy: why.
    Failed(String),
}

/// What the agent knows of one tenant of a rollout's current wave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Suspended (`fief suspend`): not waited for.
    pub suspended: bool,
    /// The rollout changes it (it is in one of the rollout's waves).
    pub changed: bool,
    /// It was last synced (or found invalid) at the rollout's input hash for it.
    pub at_target: bool,
    /// Its last sync attempt failed or was invalid: (at the rollout's commit, why).
    pub failure: Option<(bool, String)>,
    /// Its objects' health.
    pub health: TenantState,
}

/// Where one tenant of the current wave stands. Suspended: not waited for. Last attempt failed
/// at the rollout's commit or at its input hash: failed, changed by the rollout or not (a
/// tenant broken before halts every rollout at its wave until it is fixed). Not at that hash
/// yet, changed or failed before (its sync at the head is queued): pending. Else its health.
pub fn tenant_state(member: Member) -> TenantState {
    if member.suspended {
        return TenantState::Healthy;
    }
    if let Some((at_target_commit, why)) = member.failure {
        if at_target_commit || member.at_target {
            return TenantState::Failed(why);
        }
        return TenantState::Pending;
    }
    if member.changed && !member.at_target {
        return TenantState::Pending;
    }
    member.health
}

/// What a rollout does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The current wave is not done yet.
    Wait,
    /// The current wave is done: release wave `.0` (an index into the waves).
    Release(usize),
    /// Every wave is done.
    Complete,
    /// The current wave has a failed tenant: halt (tenant, why).
    Halt(String, String),
}

/// The next step of a rollout at wave `current` (an index): halt on the first failed tenant,
/// wait while any is pending or waiting, else move to the next wave that changes a tenant.
pub fn step(waves: &[Wave], current: usize, state: impl Fn(&str) -> TenantState) -> Step {
    let Some(wave) = waves.get(current) else {
        return Step::Complete;
    };
    let mut wait = false;
    for t in &wave.tenants {
        match state(t) {
            TenantState::Failed(why) => return Step::Halt(t.clone(), why),
            TenantState::Pending | TenantState::Waiting => wait = true,
            TenantState::Healthy => {}
        }
    }
    if wait {
        return Step::Wait;
    }
    match next_wave(waves, current + 1) {
        Some(i) => Step::Release(i),
        None => Step::Complete,
    }
}

/// The first wave at or after `from` that changes a tenant.
pub fn next_wave(waves: &[Wave], from: usize) -> Option<usize> {
    (from..waves.len()).find(|i| !waves[*i].tenants.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(n: usize, canary: &[usize]) -> BTreeMap<String, BTreeMap<String, String>> {
        (0..n)
            .map(|i| {
                let mut l = BTreeMap::new();
                if canary.contains(&i) {
                    l.insert("ring".to_string(), "canary".to_string());
                }
                (format!("t{i:03}"), l)
            })
            .collect()
    }

    fn config(yaml: &str) -> Result<RolloutConfig, String> {
        crate::yaml::parse_single::<RolloutConfig>(yaml)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "empty".to_string())
    }

    #[test]
    fn canary_then_ten_percent_then_the_rest_puts_every_tenant_in_exactly_one_wave() {
        let c = config(
            "waves:\n  - name: canary\n    selector: {ring: canary}\n  - name: early\n    percent: 10\n  - name: rest\n",
        )
        .expect("config");
        let tenants = labels(100, &[3, 50]);
        let waves = assign(&c, &tenants);
        let sizes: Vec<usize> = waves.iter().map(|w| w.tenants.len()).collect();
        assert_eq!(sizes, vec![2, 10, 88]);
        assert_eq!(waves[0].tenants, vec!["t003", "t050"]);
        let all: BTreeSet<&String> = waves.iter().flat_map(|w| &w.tenants).collect();
        assert_eq!(all.len(), 100);
        // The same tenants on every call, and a new tenant does not reshuffle the others much.
        assert_eq!(assign(&c, &tenants), waves);
    }

    #[test]
    fn tenants_no_wave_takes_go_into_an_implicit_last_wave() {
        let c = config("waves:\n  - name: canary\n    selector: {ring: canary}\n").expect("config");
        let waves = assign(&c, &labels(5, &[1]));
        assert_eq!(waves.len(), 2);
        assert_eq!(waves[1].name, REST);
        assert_eq!(waves[1].tenants.len(), 4);
    }

    #[test]
    fn a_plan_keeps_wave_membership_but_only_the_changed_tenants() {
        let c = config("waves:\n  - name: canary\n    selector: {ring: canary}\n  - name: rest\n")
            .expect("config");
        let changed: BTreeSet<String> = ["t001", "t002"].iter().map(|s| s.to_string()).collect();
        let waves = plan(&c, &labels(5, &[1]), &changed);
        assert_eq!(waves[0].tenants, vec!["t001"]);
        assert_eq!(waves[1].tenants, vec!["t002"]);
    }

    #[test]
    fn bad_waves_are_refused_with_what_to_do() {
        for (yaml, what) in [
            ("waves: []\n", "at least one wave"),
            ("waves:\n  - name: Canary\n", "DNS-1123"),
            ("waves:\n  - name: a\n  - name: a\n", "used twice"),
            ("waves:\n  - name: a\n    percent: 0\n", "from 1 to 100"),
            ("waves:\n  - name: a\n    pecent: 5\n", "pecent"),
        ] {
            let err = config(yaml).expect_err(yaml);
            assert!(err.contains(what), "{yaml}: {err}");
        }
    }

    #[test]
    fn a_wave_waits_for_pending_and_unhealthy_tenants_halts_on_a_failed_one_and_skips_empty_waves()
    {
        let waves = vec![
            Wave {
                name: "a".into(),
                tenants: vec!["x".into(), "y".into()],
            },
            Wave {
                name: "b".into(),
                tenants: vec![],
            },
            Wave {
                name: "c".into(),
                tenants: vec!["z".into()],
            },
        ];
        let healthy = |_: &str| TenantState::Healthy;
        assert_eq!(step(&waves, 0, healthy), Step::Release(2));
        assert_eq!(step(&waves, 2, healthy), Step::Complete);
        let waiting = |t: &str| {
            if t == "y" {
                TenantState::Waiting
            } else {
                TenantState::Healthy
            }
        };
        assert_eq!(step(&waves, 0, waiting), Step::Wait);
        let pending = |t: &str| {
            if t == "x" {
                TenantState::Pending
            } else {
                TenantState::Healthy
            }
        };
        assert_eq!(step(&waves, 0, pending), Step::Wait);
        let failed = |t: &str| match t {
            "y" => TenantState::Failed("Deployment web: timed out".into()),
            _ => TenantState::Waiting,
        };
        assert_eq!(
            step(&waves, 0, failed),
            Step::Halt("y".into(), "Deployment web: timed out".into())
        );
        assert_eq!(next_wave(&waves, 1), Some(2));
    }

    #[test]
    fn a_tenant_invalid_at_a_held_change_halts_a_later_rollout_that_does_not_change_it() {
        use TenantState::{Failed, Healthy, Pending, Waiting};
        let bad = |at_target_commit| Some((at_target_commit, "sync invalid: extra".to_string()));
        let failed = || Failed("sync invalid: extra".into());
        // (suspended, changed, at target hash, last attempt's failure, health) → state.
        let cases = [
            // Invalid at a halted commit that renders it as the new one: halts, unchanged.
            ((false, false, true, bad(false), Healthy), failed()),
            // Failed at the rollout's commit (an apply error leaves its hash behind).
            ((false, true, false, bad(true), Healthy), failed()),
            ((false, false, false, bad(true), Healthy), failed()),
            // Failed at an older hash, its sync at the head queued (e.g. its own fix).
            ((false, false, false, bad(false), Healthy), Pending),
            ((false, true, false, bad(false), Healthy), Pending),
            ((true, false, true, bad(false), Healthy), Healthy), // suspended: not waited for
            // No failure: changed and not synced yet, else its health.
            ((false, true, false, None, Healthy), Pending),
            ((false, true, true, None, Waiting), Waiting),
            ((false, false, false, None, Healthy), Healthy),
            ((false, false, true, None, failed()), failed()),
        ];
        for ((suspended, changed, at_target, failure, health), want) in cases {
            let member = Member {
                suspended,
                changed,
                at_target,
                failure,
                health,
            };
            assert_eq!(tenant_state(member.clone()), want, "{member:?}");
        }
    }

    #[test]
    fn only_the_tenant_file_or_its_secret_file_makes_a_change_its_own() {
        let snap = |files: &[(&str, &str)]| {
            Repo::load(std::sync::Arc::new(crate::snapshot::Snapshot::from_files(
                files.iter().copied(),
            )))
        };
        let before = snap(&[("tenants/a.yaml", "x"), ("components/web/t.yaml", "1")]);
        let shared = snap(&[("tenants/a.yaml", "x"), ("components/web/t.yaml", "2")]);
        let own = snap(&[("tenants/a.yaml", "y"), ("components/web/t.yaml", "1")]);
        let secret = snap(&[
            ("tenants/a.yaml", "x"),
            ("components/web/t.yaml", "1"),
            ("secrets/tenants/a.sops.yaml", "s"),
        ]);
        assert!(!own_change(&before, &shared, "a"));
        assert!(own_change(&before, &own, "a"));
        assert!(own_change(&before, &secret, "a"));
        assert!(!own_change(&before, &own, "b"));
        let moved = snap(&[("tenants/eu/a.yaml", "x"), ("components/web/t.yaml", "1")]);
        assert!(own_change(&before, &moved, "a"));
    }
}
