//! Transitions: which facts the agent learns are news. A tenant that keeps failing with the
//! same error, stays stalled on the same objects or keeps its prune held says so once; a
//! change of state (failed → recovered, a new first error) says so again.
//!
//! In: [`Fact`]s — a tenant's sync result, its health verdict, the rollout's phase. Out: the
//! [`Message`]s those facts are news for. Holds one entry per tenant that is not fine (a
//! tenant back to fine is forgotten), so its memory follows the troubled tenants, not the
//! fleet. Pure.

use std::collections::HashMap;

use fief_core::status::Outcome;

use super::message::{Kind, Message};

/// What the agent learned.
#[derive(Debug, Clone, PartialEq)]
pub enum Fact {
    /// A tenant's sync (or orphan report) finished.
    Synced {
        /// The tenant.
        tenant: String,
        /// What the sync did.
        outcome: Outcome,
        /// The first error, when it failed.
        error: Option<String>,
        /// Why a prune git asks for is held, when it is.
        prune_held: Option<String>,
        /// The commit synced.
        commit: String,
    },
    /// A tenant's health verdict changed to stalled (the objects and why) or ready (`None`).
    Health {
        /// The tenant.
        tenant: String,
        /// `(object, why)` of each unhealthy object; `None`: healthy.
        stalled: Option<Vec<(String, String)>>,
    },
    /// The rollout of `commit` halted (why) or, with `None`, completed.
    Rollout {
        /// The commit rolled out.
        commit: String,
        /// Why it halted; `None`: complete.
        halted: Option<String>,
    },
}

/// Where a tenant stands, as last told.
#[derive(Debug, Clone, Default, PartialEq)]
enum Trouble {
    #[default]
    None,
    Failed(String),
    Stalled(String),
}

#[derive(Debug, Clone, Default, PartialEq)]
struct TenantState {
    trouble: Trouble,
    held: Option<String>,
    orphaned: bool,
}

/// The state behind the transitions.
#[derive(Debug, Default)]
pub struct Tracker {
    tenants: HashMap<String, TenantState>,
    /// The last rollout message's commit and reason (`None`: complete).
    rollout: Option<(String, Option<String>)>,
}

impl Tracker {
    /// The messages `fact` is news for (most often none).
    pub fn take(&mut self, fact: Fact) -> Vec<Message> {
        match fact {
            Fact::Synced {
                tenant,
                outcome,
                error,
                prune_held,
                commit,
            } => self.synced(&tenant, outcome, error, prune_held, &commit),
            Fact::Health { tenant, stalled } => self.health(&tenant, stalled),
            Fact::Rollout { commit, halted } => {
                let key = Some((commit.clone(), halted.clone()));
                if self.rollout == key {
                    return Vec::new();
                }
                self.rollout = key;
                let m = match halted {
                    Some(why) => Message::new(None, Kind::RolloutHalted, &why, &commit),
                    None => {
                        let text = format!("commit {}: every wave is done", short(&commit));
                        Message::new(None, Kind::RolloutComplete, &text, &commit)
                    }
                };
                vec![m]
            }
        }
    }

    fn synced(
        &mut self,
        tenant: &str,
        outcome: Outcome,
        error: Option<String>,
        prune_held: Option<String>,
        commit: &str,
    ) -> Vec<Message> {
        let mut out = Vec::new();
        let s = self.tenants.entry(tenant.to_string()).or_default();
        let msg = |kind, text: &str| Message::new(Some(tenant), kind, text, commit);
        match outcome {
            Outcome::Skipped | Outcome::Moved | Outcome::Suspended => {}
            Outcome::Orphaned => {
                if !s.orphaned {
                    s.orphaned = true;
                    out.push(msg(Kind::Orphaned, &orphaned_text(tenant)));
                }
            }
            _ => {
                s.orphaned = false;
                let failed =
                    error.is_some() || matches!(outcome, Outcome::Failed | Outcome::Invalid);
                if failed {
                    // A failed sync holds its prune too: the failure says it all.
                    let error = error.unwrap_or_else(|| format!("sync {outcome}"));
                    if s.trouble != Trouble::Failed(error.clone()) {
                        out.push(msg(Kind::SyncFailed, &error));
                        s.trouble = Trouble::Failed(error);
                    }
                    self.forget_if_fine(tenant);
                    return out;
                }
                if matches!(s.trouble, Trouble::Failed(_)) {
                    s.trouble = Trouble::None;
                    let mut m = msg(Kind::Recovered, "synced without errors again");
                    m.resolves = Some(Kind::SyncFailed);
                    out.push(m);
                }
                match prune_held {
                    Some(why) if s.held.as_ref() != Some(&why) => {
                        out.push(msg(Kind::PruneHeld, &why));
                        s.held = Some(why);
                    }
                    Some(_) => {}
                    None => s.held = None,
                }
            }
        }
        self.forget_if_fine(tenant);
        out
    }

    fn health(&mut self, tenant: &str, stalled: Option<Vec<(String, String)>>) -> Vec<Message> {
        let s = self.tenants.entry(tenant.to_string()).or_default();
        let mut out = Vec::new();
        match stalled {
            Some(objects) if !matches!(s.trouble, Trouble::Failed(_)) => {
                let text = objects
                    .iter()
                    .map(|(o, why)| format!("{o}: {why}"))
                    .collect::<Vec<_>>()
                    .join("; ");
                if s.trouble != Trouble::Stalled(text.clone()) {
                    let mut m = Message::new(Some(tenant), Kind::Stalled, &text, "");
                    m.objects = objects.into_iter().map(|(o, _)| o).collect();
                    out.push(m);
                    s.trouble = Trouble::Stalled(text);
                }
            }
            Some(_) => {}
            None => {
                if matches!(s.trouble, Trouble::Stalled(_)) {
                    s.trouble = Trouble::None;
                    let mut m = Message::new(
                        Some(tenant),
                        Kind::Recovered,
                        "its objects are healthy again",
                        "",
                    );
                    m.resolves = Some(Kind::Stalled);
                    out.push(m);
                }
            }
        }
        self.forget_if_fine(tenant);
        out
    }

    fn forget_if_fine(&mut self, tenant: &str) {
        if self
            .tenants
            .get(tenant)
            .is_some_and(|s| *s == TenantState::default())
        {
            self.tenants.remove(tenant);
        }
    }

    /// Tenants held in memory (those not fine).
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.tenants.len()
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

fn orphaned_text(tenant: &str) -> String {
    format!(
        "the tenant file of {tenant} (tenants/{tenant}.yaml, or under a directory of tenants/) left git; its objects are left running and nothing of it is pruned (to delete them, restore the file with `spec.state: purged`)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synced(tenant: &str, outcome: Outcome, error: Option<&str>) -> Fact {
        Fact::Synced {
            tenant: tenant.to_string(),
            outcome,
            error: error.map(str::to_string),
            prune_held: None,
            commit: "c1".to_string(),
        }
    }

    fn kinds(ms: &[Message]) -> Vec<Kind> {
        ms.iter().map(|m| m.kind).collect()
    }

    #[test]
    fn a_failure_is_told_once_while_it_persists_and_its_end_is_told_as_recovered() {
        let mut t = Tracker::default();
        let e = "components/app/templates/a.yaml:3: template error";
        let first = t.take(synced("acme", Outcome::Invalid, Some(e)));
        assert_eq!(kinds(&first), [Kind::SyncFailed]);
        assert_eq!(first[0].text, e);
        assert!(t.take(synced("acme", Outcome::Invalid, Some(e))).is_empty());
        let other = t.take(synced("acme", Outcome::Failed, Some("apply refused")));
        assert_eq!(kinds(&other), [Kind::SyncFailed]);
        let back = t.take(synced("acme", Outcome::Applied, None));
        assert_eq!(kinds(&back), [Kind::Recovered]);
        assert_eq!(back[0].resolves, Some(Kind::SyncFailed));
        assert!(t.take(synced("acme", Outcome::Applied, None)).is_empty());
        assert_eq!(t.held(), 0, "a fine tenant is forgotten");
    }

    #[test]
    fn a_stall_names_its_objects_and_ends_with_recovered_when_healthy() {
        let mut t = Tracker::default();
        let stalled = |objs: &[(&str, &str)]| Fact::Health {
            tenant: "acme".to_string(),
            stalled: Some(
                objs.iter()
                    .map(|(o, w)| (o.to_string(), w.to_string()))
                    .collect(),
            ),
        };
        let ready = Fact::Health {
            tenant: "acme".to_string(),
            stalled: None,
        };
        assert!(t.take(ready.clone()).is_empty(), "healthy was never news");
        let s = t.take(stalled(&[("apps/Deployment/acme-prod/web", "timed out")]));
        assert_eq!(kinds(&s), [Kind::Stalled]);
        assert_eq!(s[0].objects, ["apps/Deployment/acme-prod/web"]);
        assert!(
            s[0].text
                .contains("apps/Deployment/acme-prod/web: timed out")
        );
        assert!(
            t.take(stalled(&[("apps/Deployment/acme-prod/web", "timed out")]))
                .is_empty()
        );
        let r = t.take(ready);
        assert_eq!(kinds(&r), [Kind::Recovered]);
        assert_eq!(r[0].resolves, Some(Kind::Stalled));
    }

    #[test]
    fn prune_holds_orphans_and_rollouts_are_told_once_each() {
        let mut t = Tracker::default();
        let held = Fact::Synced {
            tenant: "acme".to_string(),
            outcome: Outcome::Applied,
            error: None,
            prune_held: Some("mass-prune guard".to_string()),
            commit: "c1".to_string(),
        };
        assert_eq!(kinds(&t.take(held.clone())), [Kind::PruneHeld]);
        assert!(t.take(held).is_empty());
        assert!(t.take(synced("acme", Outcome::Applied, None)).is_empty());
        assert_eq!(t.held(), 0);
        let failed_apply = Fact::Synced {
            tenant: "beta".to_string(),
            outcome: Outcome::Failed,
            error: Some("apply refused".to_string()),
            prune_held: Some("an apply failed; nothing pruned".to_string()),
            commit: "c1".to_string(),
        };
        assert_eq!(
            kinds(&t.take(failed_apply)),
            [Kind::SyncFailed],
            "the failure says it"
        );
        let orphan = synced("gone", Outcome::Orphaned, None);
        assert_eq!(kinds(&t.take(orphan.clone())), [Kind::Orphaned]);
        assert!(t.take(orphan).is_empty());
        let halt = Fact::Rollout {
            commit: "c2".to_string(),
            halted: Some("wave 1: tenant a failed".to_string()),
        };
        assert_eq!(kinds(&t.take(halt.clone())), [Kind::RolloutHalted]);
        assert!(t.take(halt).is_empty());
        let done = Fact::Rollout {
            commit: "c2".to_string(),
            halted: None,
        };
        let m = t.take(done);
        assert_eq!(kinds(&m), [Kind::RolloutComplete]);
        assert!(m[0].tenant.is_none() && m[0].kind.platform_only());
    }
}
