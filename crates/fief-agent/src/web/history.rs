//! Each tenant's recent syncs, for the web view's tenant page.
//!
//! In: every sync report the agent takes in (with the commit it synced at) and every tenant
//! found as last applied at start. Out: per tenant, its last [`KEEP`] entries, newest first;
//! and the tenants whose last entry says their file left git (orphaned). Bounded: a tenant
//! holds at most [`KEEP`] entries, and a sync that repeats the one before it (same outcome,
//! commit and error, nothing changed) bumps that entry's count instead of taking a slot, so a
//! tenant retried with backoff or resynced for days keeps its history readable.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use fief_core::inventory::Counts;
use fief_core::status::{Outcome, TenantReport};

/// Entries kept per tenant.
pub const KEEP: usize = 10;

/// Longest error text kept per entry (the first error; the tenant page shows it).
const ERROR_MAX: usize = 4096;

/// What one entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A sync ran with this outcome.
    Synced(Outcome),
    /// Found as last applied at start (inputs and live objects unchanged): not synced.
    Verified,
}

/// One sync (or verification) of a tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The commit it ran at.
    pub commit: Arc<str>,
    /// Unix time of its last occurrence.
    pub at: i64,
    /// What it was.
    pub kind: Kind,
    /// Objects created, changed, left alone, pruned, failed.
    pub counts: Counts,
    /// The first error, if it failed (bounded).
    pub error: Option<Box<str>>,
    /// How many times it ran in a row (1: once).
    pub repeats: u32,
}

impl Entry {
    /// Whether it changed anything in the cluster.
    fn changed(&self) -> bool {
        let c = &self.counts;
        c.created + c.configured + c.pruned > 0
    }

    /// Whether `next` repeats this entry (same kind, commit and error; neither changed a thing).
    fn repeated_by(&self, next: &Entry) -> bool {
        self.kind == next.kind
            && self.commit == next.commit
            && self.error == next.error
            && !self.changed()
            && !next.changed()
    }
}

/// Every tenant's recent entries.
#[derive(Debug, Default)]
pub struct History {
    tenants: HashMap<String, VecDeque<Entry>>,
    /// The commit last recorded: entries of one commit share one allocation.
    commit: Option<Arc<str>>,
}

impl History {
    /// Record a sync report made at `commit` (Unix time `at`).
    pub fn record(&mut self, report: &TenantReport, commit: &str, at: i64) {
        let error = report.first_error().map(bounded);
        let entry = Entry {
            commit: self.intern(commit),
            at,
            kind: Kind::Synced(report.outcome),
            counts: report.counts.clone(),
            error,
            repeats: 1,
        };
        self.push(&report.tenant, entry);
    }

    /// Record a tenant found as last applied at `commit`.
    pub fn verified(&mut self, tenant: &str, commit: &str, at: i64) {
        let entry = Entry {
            commit: self.intern(commit),
            at,
            kind: Kind::Verified,
            counts: Counts::default(),
            error: None,
            repeats: 1,
        };
        self.push(tenant, entry);
    }

    /// A tenant's entries, newest first.
    pub fn of(&self, tenant: &str) -> Vec<Entry> {
        self.tenants
            .get(tenant)
            .map(|d| d.iter().rev().cloned().collect())
            .unwrap_or_default()
    }

    /// A tenant's last entry.
    pub fn last(&self, tenant: &str) -> Option<&Entry> {
        self.tenants.get(tenant).and_then(VecDeque::back)
    }

    /// Tenants whose last entry is `orphaned` (their file left git; objects left running).
    pub fn orphaned(&self) -> Vec<String> {
        self.tenants
            .iter()
            .filter(|(_, d)| {
                d.back()
                    .is_some_and(|e| e.kind == Kind::Synced(Outcome::Orphaned))
            })
            .map(|(t, _)| t.clone())
            .collect()
    }

    fn intern(&mut self, commit: &str) -> Arc<str> {
        match &self.commit {
            Some(c) if c.as_ref() == commit => c.clone(),
            _ => {
                let c: Arc<str> = commit.into();
                self.commit = Some(c.clone());
                c
            }
        }
    }

    fn push(&mut self, tenant: &str, entry: Entry) {
        let entries = match self.tenants.get_mut(tenant) {
            Some(d) => d,
            None => self.tenants.entry(tenant.to_string()).or_default(),
        };
        if let Some(last) = entries.back_mut()
            && last.repeated_by(&entry)
        {
            last.at = entry.at;
            last.repeats = last.repeats.saturating_add(1);
            return;
        }
        if entries.len() == KEEP {
            entries.pop_front();
        }
        entries.push_back(entry);
    }
}

/// `text` cut to [`ERROR_MAX`] bytes (at a character boundary).
fn bounded(text: &str) -> Box<str> {
    if text.len() <= ERROR_MAX {
        return text.into();
    }
    let mut end = ERROR_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end]).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(outcome: Outcome, created: usize, error: Option<&str>) -> TenantReport {
        let mut r = TenantReport::new("acme", outcome);
        r.counts.created = created;
        if let Some(e) = error {
            r.fail(fief_core::status::Failure::Apply, e);
        }
        r
    }

    #[test]
    fn a_tenant_keeps_its_last_ten_entries_newest_first() {
        let mut h = History::default();
        for i in 0..15 {
            h.record(&report(Outcome::Applied, 1, None), &format!("c{i}"), i);
        }
        let entries = h.of("acme");
        assert_eq!(entries.len(), KEEP);
        assert_eq!(entries[0].commit.as_ref(), "c14");
        assert_eq!(entries[KEEP - 1].commit.as_ref(), "c5");
        assert!(h.of("other").is_empty());
    }

    #[test]
    fn a_repeated_failure_takes_one_slot_with_its_count() {
        let mut h = History::default();
        h.record(&report(Outcome::Applied, 3, None), "c1", 1);
        for at in 2..30 {
            h.record(&report(Outcome::Failed, 0, Some("boom")), "c1", at);
        }
        let entries = h.of("acme");
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].repeats, 28);
        assert_eq!(entries[0].at, 29);
        assert_eq!(entries[0].error.as_deref(), Some("boom"));
        assert_eq!(entries[1].counts.created, 3);
    }

    #[test]
    fn changes_are_never_folded_together() {
        let mut h = History::default();
        h.record(&report(Outcome::Applied, 2, None), "c1", 1);
        h.record(&report(Outcome::Applied, 2, None), "c1", 2);
        assert_eq!(h.of("acme").len(), 2);
    }

    #[test]
    fn an_orphaned_tenant_is_listed_until_it_syncs_again() {
        let mut h = History::default();
        h.record(&report(Outcome::Orphaned, 0, None), "c1", 1);
        assert_eq!(h.orphaned(), ["acme"]);
        h.record(&report(Outcome::Applied, 1, None), "c2", 2);
        assert!(h.orphaned().is_empty());
    }

    #[test]
    fn a_long_error_is_cut() {
        let long = "é".repeat(ERROR_MAX);
        let cut = bounded(&long);
        assert!(cut.len() <= ERROR_MAX + '…'.len_utf8());
        assert!(cut.ends_with('…'));
    }
}
