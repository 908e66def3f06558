//! The hooks' filter: which sync reports, verdicts and rollout records become facts.

use std::collections::BTreeMap;

use super::*;
use fief_core::plan::PruneHold;
use fief_core::status::PruneHeld;

/// A notifier whose queue the test reads (no sender task).
fn notifier() -> (Notifier, mpsc::Receiver<Input>) {
    let (tx, rx) = mpsc::channel(16);
    let n = Notifier {
        tx,
        noted: Arc::default(),
        stalled: Arc::default(),
        full: Arc::default(),
    };
    (n, rx)
}

fn facts(rx: &mut mpsc::Receiver<Input>) -> Vec<Fact> {
    let mut out = Vec::new();
    while let Ok(Input::Fact(f)) = rx.try_recv() {
        out.push(f);
    }
    out
}

fn tenants(fs: &[Fact]) -> Vec<String> {
    fs.iter()
        .map(|f| match f {
            Fact::Synced { tenant, .. } | Fact::Health { tenant, .. } => tenant.clone(),
            Fact::Rollout { commit, .. } => format!("rollout {commit}"),
        })
        .collect()
}

#[test]
fn fine_reports_are_sent_only_after_a_failure_and_skipped_ones_never() {
    let (n, mut rx) = notifier();
    let ok = |t: &str| TenantReport::new(t, Outcome::Applied);
    let mut failed = TenantReport::new("acme", Outcome::Invalid);
    failed.fail(fief_core::status::Failure::Render, "a.yaml:3: bad");
    n.synced(&[ok("acme"), ok("beta")], "c1");
    assert!(facts(&mut rx).is_empty(), "a fine fleet is not news");
    n.synced(&[failed, ok("beta")], "c1");
    assert_eq!(tenants(&facts(&mut rx)), ["acme"]);
    n.synced(&[TenantReport::new("acme", Outcome::Suspended)], "c2");
    assert!(facts(&mut rx).is_empty());
    n.synced(&[ok("acme")], "c2");
    assert_eq!(tenants(&facts(&mut rx)), ["acme"], "its recovery");
    n.synced(&[ok("acme")], "c3");
    assert!(facts(&mut rx).is_empty());
    let mut held = ok("beta");
    held.prune_held = Some(PruneHeld::Hold(PruneHold::MassPrune {
        count: 90,
        total: 100,
    }));
    n.synced(&[held], "c3");
    match facts(&mut rx).as_slice() {
        [Fact::Synced { prune_held, .. }] => assert!(prune_held.is_some()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_stall_is_sent_and_the_next_ready_after_it_but_no_other_verdict() {
    let (n, mut rx) = notifier();
    n.verdict("acme", &Verdict::Ready);
    n.verdict("acme", &Verdict::Reconciling(vec![]));
    assert!(facts(&mut rx).is_empty());
    let objects = vec![(
        "apps/Deployment/acme-prod/web".to_string(),
        "timed out".to_string(),
    )];
    n.verdict("acme", &Verdict::Stalled(objects));
    n.verdict("acme", &Verdict::Ready);
    n.verdict("acme", &Verdict::Ready);
    let fs = facts(&mut rx);
    assert!(matches!(
        fs.as_slice(),
        [
            Fact::Health {
                stalled: Some(_),
                ..
            },
            Fact::Health { stalled: None, .. }
        ]
    ));
}

#[test]
fn a_rollout_record_is_news_when_it_halts_anew_or_completes() {
    let (n, mut rx) = notifier();
    let record = |phase, reason: Option<&str>| Record {
        commit: "c1".to_string(),
        phase,
        wave: 0,
        waves: Vec::new(),
        reason: reason.map(str::to_string),
        held: BTreeMap::new(),
        started_at: String::new(),
        updated_at: String::new(),
    };
    let going = record(Phase::Progressing, None);
    let halted = record(Phase::Halted, Some("wave 1: tenant a failed"));
    let done = record(Phase::Complete, None);
    n.rollout(None, Some(&going));
    n.rollout(Some(&going), Some(&halted));
    n.rollout(Some(&halted), Some(&halted));
    n.rollout(Some(&halted), Some(&done));
    n.rollout(Some(&done), None);
    let fs = facts(&mut rx);
    assert!(
        matches!(
            fs.as_slice(),
            [
                Fact::Rollout {
                    halted: Some(_),
                    ..
                },
                Fact::Rollout { halted: None, .. }
            ]
        ),
        "{fs:?}"
    );
}
