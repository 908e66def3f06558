//! The source loop's decisions: which tenants a new head looks at, and when a tenant synced at
//! a held revision counts as settled.

use super::*;
use fief_core::model::Repo;
use fief_core::snapshot::Snapshot;

/// The input hash named `label` (hex digits), for a test's revisions.
fn hash(label: &str) -> fief_core::inputs::InputHash {
    fief_core::inputs::InputHash::parse(&format!("{label:0>64}")).expect("hex digits")
}

fn revision(commit: &str, hashes: &[(&str, &str)]) -> Arc<Revision> {
    Arc::new(Revision {
        commit: commit.to_string(),
        repo: Arc::new(Repo::load(Arc::new(Snapshot::from_files(Vec::<(
            String,
            String,
        )>::new(
        ))))),
        hashes: hashes
            .iter()
            .map(|(t, h)| (t.to_string(), hash(h)))
            .collect(),
        pins: Default::default(),
        charts_missing: false,
    })
}

#[test]
fn a_new_head_looks_at_the_tenants_it_changed_and_the_unsettled_only() {
    let old = revision("1", &[("a", "1"), ("b", "1"), ("c", "1"), ("e", "1")]);
    let mut state = LoopState::default();
    // The first head: every tenant.
    let (all, removed) = moved_tenants(&mut state, &old);
    assert_eq!(all.len(), 4);
    assert!(removed.is_empty());
    state.rev = Some(old.clone());
    for t in ["a", "b", "e"] {
        state.record_synced(t, hash("1"), old.clone());
    }
    state.unsettled.insert("c".into()); // queued, not synced yet
    assert!(
        state.synced_rev.is_empty(),
        "settled tenants keep no revision"
    );
    // b is unchanged and settled: not looked at. c is unsettled, a changed, d is new.
    let new = revision("2", &[("a", "2"), ("b", "1"), ("c", "1"), ("d", "1")]);
    let (candidates, removed) = moved_tenants(&mut state, &new);
    assert_eq!(
        candidates.into_iter().collect::<Vec<_>>(),
        ["a", "c", "d"],
        "b is neither changed nor unsettled"
    );
    assert_eq!(removed, ["e"]);
}

#[test]
fn a_tenant_synced_at_a_held_revision_stays_unsettled_until_synced_at_the_head() {
    let old = revision("1", &[("a", "1")]);
    let head = revision("2", &[("a", "2")]);
    let mut state = LoopState {
        rev: Some(head.clone()),
        ..Default::default()
    };
    state.record_synced("a", hash("1"), old.clone());
    assert!(state.unsettled.contains("a"));
    assert_eq!(
        state.synced_rev.get("a").map(|r| r.commit.as_str()),
        Some("1")
    );
    state.record_synced("a", hash("2"), head);
    assert!(!state.unsettled.contains("a"));
    assert!(state.synced_rev.is_empty());
}
