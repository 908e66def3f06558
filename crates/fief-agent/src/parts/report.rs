//! What the agent says about itself and to whom: the read model `/status`, `/readyz`,
//! `/metrics` and the web view serve, the status Events, the notifications, and the web
//! view's own state.
//!
//! In: the cluster reachable or not at start; the source task's fetches and reads; leading
//! won or lost; the first full pass done; each tenant's last sync attempt and whether a kind
//! it uses cannot be watched. Out: readiness and its reason, the agent's part of
//! [`AgentStatus`], and the [`Events`], [`Notifier`] and [`Web`] handles the loop reports
//! through.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::events::Events;
use crate::lock;
use crate::notify::Notifier;
use crate::web::Web;
use fief_core::status::agent::{AgentStatus, Attempt};

/// What the agent knows of its own standing (readiness, `/readyz`, status).
#[derive(Debug, Default)]
struct Standing {
    /// Why the cluster cannot be used yet (its API resources cannot be read at start), if so.
    cluster_problem: Option<String>,
    /// Why there is no revision to serve yet (git unreachable at start), if so.
    source_problem: Option<String>,
    /// A revision was read from git.
    has_revision: bool,
    /// This replica holds the Lease (always true without leader election).
    leading: bool,
    /// The leader finished its first full pass over every tenant.
    first_pass_done: bool,
    /// Last fetched commit and last fetch error.
    last_commit: Option<String>,
    last_fetch_error: Option<String>,
    /// Tenants not synced because a kind they use cannot be watched: tenant → reason.
    degraded: BTreeMap<String, String>,
    /// Each tenant's last sync attempt.
    attempts: BTreeMap<String, Held>,
    /// The commits the attempts name, each held once (the latest few, newest first).
    commits: Vec<Arc<str>>,
}

/// A tenant's last sync attempt as the report holds it: an [`Attempt`] whose commit is shared
/// by every tenant attempted at it, not a copy per tenant.
#[derive(Debug)]
struct Held {
    commit: Arc<str>,
    outcome: fief_core::status::Outcome,
    at: i64,
    error: Option<Box<str>>,
}

impl Held {
    /// `attempt` as held, its commit the shared copy of `standing`'s.
    fn new(standing: &mut Standing, attempt: Attempt) -> Held {
        Held {
            commit: standing.commit(&attempt.commit),
            outcome: attempt.outcome,
            at: attempt.at,
            error: attempt.error.map(String::into_boxed_str),
        }
    }

    /// The attempt it holds.
    fn attempt(&self) -> Attempt {
        Attempt {
            commit: self.commit.to_string(),
            outcome: self.outcome,
            at: self.at,
            error: self.error.as_deref().map(str::to_string),
        }
    }
}

/// Commits [`Standing::commits`] keeps: the head and the revisions a rollout holds tenants
/// at, as a rule.
const COMMITS: usize = 4;

impl Standing {
    /// The shared copy of `commit`.
    fn commit(&mut self, commit: &str) -> Arc<str> {
        if let Some(i) = self.commits.iter().position(|c| c.as_ref() == commit) {
            let held = self.commits.remove(i);
            self.commits.insert(0, held.clone());
            return held;
        }
        let held: Arc<str> = commit.into();
        self.commits.insert(0, held.clone());
        self.commits.truncate(COMMITS);
        held
    }
}

/// What the agent reports (see the module docs).
pub(crate) struct Report {
    standing: Mutex<Standing>,
    /// Status Events, sent behind the syncs.
    events: Events,
    /// Notifications to the platform's and the tenants' channels.
    notify: Notifier,
    /// The read-only web view, when it is on (see [`crate::web`]).
    web: Option<Web>,
}

impl Report {
    /// A report with nothing known yet, sent through `events`, `notify` and `web`.
    pub(crate) fn new(events: Events, notify: Notifier, web: Option<Web>) -> Report {
        Report {
            standing: Mutex::default(),
            events,
            notify,
            web,
        }
    }

    /// The status Events sender.
    pub(crate) fn events(&self) -> &Events {
        &self.events
    }

    /// The notifications sender.
    pub(crate) fn notifier(&self) -> &Notifier {
        &self.notify
    }

    /// The web view, when it is on.
    pub(crate) fn web(&self) -> Option<&Web> {
        self.web.as_ref()
    }

    /// Drop what is kept per tenant (attempts, degraded kinds), for the heap harness to
    /// measure what it held.
    #[cfg(test)]
    pub(crate) fn drop_tenants(&self) {
        let mut s = lock(&self.standing);
        drop(std::mem::take(&mut s.attempts));
        drop(std::mem::take(&mut s.commits));
        drop(std::mem::take(&mut s.degraded));
    }

    /// Why the cluster cannot be used yet (none: it can).
    pub(crate) fn set_cluster_problem(&self, problem: Option<String>) {
        lock(&self.standing).cluster_problem = problem;
    }

    /// This replica leads (or stopped leading).
    pub(crate) fn set_leading(&self, leading: bool) {
        lock(&self.standing).leading = leading;
    }

    /// Whether this replica leads.
    pub(crate) fn leading(&self) -> bool {
        lock(&self.standing).leading
    }

    /// A fetch or read failed (`what`: which): the last fetch error, and before any revision
    /// was read, why there is none.
    pub(crate) fn fetch_failed(&self, what: &str, error: String) {
        let mut s = lock(&self.standing);
        if !s.has_revision {
            s.source_problem = Some(format!("{what}: {error}"));
        }
        s.last_fetch_error = Some(error);
    }

    /// A fetch succeeded at `commit`.
    pub(crate) fn fetched(&self, commit: &str) {
        let mut s = lock(&self.standing);
        s.last_fetch_error = None;
        s.last_commit = Some(commit.to_string());
    }

    /// A revision was read from git.
    pub(crate) fn revision_read(&self) {
        let mut s = lock(&self.standing);
        s.has_revision = true;
        s.source_problem = None;
    }

    /// Whether this replica leads, the last fetched commit and the last fetch error, read
    /// together.
    pub(crate) fn leading_and_fetch(&self) -> (bool, Option<String>, Option<String>) {
        let s = lock(&self.standing);
        (s.leading, s.last_commit.clone(), s.last_fetch_error.clone())
    }

    /// The last fetched commit and the last fetch error, read together.
    pub(crate) fn last_fetch(&self) -> (Option<String>, Option<String>) {
        let s = lock(&self.standing);
        (s.last_commit.clone(), s.last_fetch_error.clone())
    }

    /// Whether the first full pass is done.
    pub(crate) fn first_pass_done(&self) -> bool {
        lock(&self.standing).first_pass_done
    }

    /// Mark the first full pass done; returns whether it was not done before.
    pub(crate) fn finish_first_pass(&self) -> bool {
        let mut s = lock(&self.standing);
        !std::mem::replace(&mut s.first_pass_done, true)
    }

    /// Record why `tenants` are degraded now (those not in `degraded` are not).
    pub(crate) fn set_degraded(&self, tenants: &[String], degraded: &BTreeMap<String, String>) {
        let mut s = lock(&self.standing);
        for t in tenants {
            s.degraded.remove(t);
        }
        s.degraded.extend(degraded.clone());
    }

    /// The tenants degraded now: tenant → reason.
    #[cfg(test)]
    pub(crate) fn degraded(&self) -> BTreeMap<String, String> {
        lock(&self.standing).degraded.clone()
    }

    /// Record `tenant`'s last sync attempt.
    pub(crate) fn attempted(&self, tenant: &str, attempt: Attempt) {
        let mut s = lock(&self.standing);
        let held = Held::new(&mut s, attempt);
        match s.attempts.get_mut(tenant) {
            Some(last) => *last = held,
            None => {
                s.attempts.insert(tenant.to_string(), held);
            }
        }
    }

    /// `tenant`'s last sync attempt.
    pub(crate) fn attempt(&self, tenant: &str) -> Option<Attempt> {
        lock(&self.standing).attempts.get(tenant).map(Held::attempt)
    }

    /// The agent's part of `/status` it knows of itself: leading, the last fetch and each
    /// tenant's last attempt (the other fields default).
    pub(crate) fn status(&self) -> AgentStatus {
        let s = lock(&self.standing);
        AgentStatus {
            leading: s.leading,
            fetched_commit: s.last_commit.clone(),
            fetch_error: s.last_fetch_error.clone(),
            tenants: s
                .attempts
                .iter()
                .map(|(t, held)| (t.clone(), held.attempt()))
                .collect(),
            ..AgentStatus::default()
        }
    }

    /// Readiness and its reason: ready once a revision is loaded and, on the leader, the first
    /// full pass is done. A standby with a revision is ready (it serves health and follows).
    pub(crate) fn readiness(&self) -> (bool, String) {
        let s = lock(&self.standing);
        let degraded = if s.degraded.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = s
                .degraded
                .iter()
                .map(|(t, why)| format!("  {t}: {why}"))
                .collect();
            format!(
                "\n{} tenant(s) degraded (not synced):\n{}",
                s.degraded.len(),
                list.join("\n")
            )
        };
        if let Some(why) = &s.cluster_problem {
            return (false, format!("not ready: {why}"));
        }
        if !s.has_revision {
            let why = s
                .source_problem
                .clone()
                .unwrap_or_else(|| "waiting for the first git fetch".to_string());
            return (false, format!("not ready: {why}"));
        }
        if s.leading && !s.first_pass_done {
            return (false, "not ready: first full sync in progress".to_string());
        }
        let role = if s.leading { "leader" } else { "standby" };
        let fetch = match &s.last_fetch_error {
            Some(e) => format!("\nlast fetch failed: {e}"),
            None => String::new(),
        };
        (true, format!("ready ({role}){fetch}{degraded}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fief_core::status::Outcome;

    #[test]
    fn attempts_at_one_commit_share_it_and_read_back_as_recorded() {
        let mut s = Standing::default();
        let a = s.commit("c1");
        let b = s.commit("c1");
        assert!(Arc::ptr_eq(&a, &b), "one copy of a commit");
        for i in 0..COMMITS + 2 {
            s.commit(&format!("other{i}"));
        }
        assert_eq!(s.commits.len(), COMMITS, "the latest few are kept");
        let attempt = Attempt {
            commit: "c2".into(),
            outcome: Outcome::Failed,
            at: 7,
            error: Some("boom".into()),
        };
        let held = Held::new(&mut s, attempt.clone());
        assert_eq!(held.attempt(), attempt);
        assert!(Arc::ptr_eq(&held.commit, &s.commit("c2")));
    }
}
