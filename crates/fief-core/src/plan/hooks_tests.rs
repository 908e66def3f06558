//! Unit tests of hook delete policies: which pre and post objects end in a sync, what becomes
//! of a done one in later syncs, and what the sync waits for meanwhile.

use std::collections::HashMap;

use serde_json::json;

use super::hooks::{DeletePolicy, Ended, delete_policy, policy_of};
use super::phase::{Classified, Phase, PhaseError, PhaseHold, Placement, classify, gate};
use super::phase::{recreates, to_check};
use super::phase_tests::{id, job, names};
use super::tests::{applied, object, render};
use super::*;
use crate::health::Health;
use crate::inventory::Done;

/// A Job placed in `phase` at `weight` with delete policy `policy`, and its content `data`.
fn hook(name: &str, phase: &str, weight: i64, policy: &str, data: &str) -> RenderedObject {
    let mut o = job(name, phase, weight, data);
    o.object["metadata"]["annotations"]["helm.sh/hook-delete-policy"] = json!(policy);
    o
}

/// Tenant with a pre Job `migrate` (delete policy `policy`, content `migrate`) and a main
/// ConfigMap `site`.
fn tenant(policy: &str, migrate: &str, site: &str) -> TenantRender {
    render(vec![
        hook("migrate", "pre", 0, policy, migrate),
        object("ConfigMap", "site", site),
    ])
}

/// The inventory after `before` was applied, with `done` recorded on `name`, which is gone.
fn applied_done(
    before: &TenantRender,
    name: &str,
    done: Done,
) -> (Inventory, HashMap<ObjectId, String>) {
    let (mut inv, mut live) = applied(before);
    let gone = id(before, name);
    live.remove(&gone);
    if let Some(e) = inv.entries.get_mut(&gone) {
        e.done = Some(done);
    }
    (inv, live)
}

fn checked(r: &TenantRender, p: &Plan<'_>) -> Vec<String> {
    to_check(r, p).iter().map(|o| o.id.name.clone()).collect()
}

fn ended(r: &TenantRender, name: &str, done: Done, delete: bool) -> Ended {
    Ended {
        id: id(r, name),
        done,
        delete,
    }
}

#[test]
fn delete_policies_are_read_on_pre_and_post_objects_and_an_unknown_one_is_refused() {
    let policy = |p: &str| {
        delete_policy(&json!({"metadata": {"annotations": {"helm.sh/hook-delete-policy": p}}}))
    };
    assert_eq!(
        policy("before-hook-creation, hook-succeeded"),
        Ok(DeletePolicy {
            succeeded: true,
            failed: false
        })
    );
    assert_eq!(policy("hook-failed").map(DeletePolicy::any), Ok(true));
    assert_eq!(
        policy("before-hook-creation").map(DeletePolicy::any),
        Ok(false)
    );
    let refused = classify(&json!({"metadata": {"annotations": {
        "helm.sh/hook": "pre-install", "helm.sh/hook-delete-policy": "hook-succeded"}}}));
    let e = refused.unwrap_err();
    assert_eq!(e, PhaseError::UnknownDeletePolicy("hook-succeded".into()));
    assert_eq!(e.field(), "metadata.annotations.helm.sh/hook-delete-policy");
    let fine = classify(&json!({"metadata": {"annotations": {
        "helm.sh/hook": "post-install", "helm.sh/hook-delete-policy": "hook-succeeded"}}}));
    assert!(matches!(fine, Ok(Classified::Placed(p)) if p.phase == Phase::Post));
    // `fief.dev/phase: main` makes an object no hook: it has no policy.
    let mut main = hook("m", "main", 0, "hook-succeeded", "1");
    assert!(!policy_of(&main).any());
    main.object["metadata"]["annotations"]["fief.dev/phase"] = json!("pre");
    assert!(policy_of(&main).succeeded);
}

#[test]
fn a_healthy_hook_succeeded_job_ends_and_the_main_phase_goes() {
    let r = tenant("hook-succeeded", "1", "1");
    let (inv, live) = applied(&render(vec![hook(
        "migrate",
        "pre",
        0,
        "hook-succeeded",
        "1",
    )]));
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    assert_eq!(checked(&r, &p), ["migrate"]);
    gate(
        &mut p,
        &r,
        &HashMap::from([(id(&r, "migrate"), Health::Current)]),
    );
    assert_eq!(names(&p), ["site"]);
    assert_eq!(p.ended, [ended(&r, "migrate", Done::Succeeded, true)]);
    assert!(p.phase_hold.is_none(), "{:?}", p.phase_hold);
}

#[test]
fn a_done_hook_with_unchanged_content_is_neither_applied_nor_read_and_satisfies_its_phase() {
    let r = tenant("hook-succeeded", "1", "2");
    let (inv, live) = applied_done(
        &tenant("hook-succeeded", "1", "1"),
        "migrate",
        Done::Succeeded,
    );
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    assert!(
        p.unchanged.iter().any(|e| e.id.name == "migrate"),
        "not applied though gone"
    );
    assert!(checked(&r, &p).is_empty(), "a done object is never read");
    gate(&mut p, &r, &HashMap::new());
    assert_eq!(names(&p), ["site"], "the main phase goes");
    assert!(p.phase_hold.is_none() && p.ended.is_empty());
    // Nothing of the tenant changes: nothing applied, nothing read, nothing held.
    let r = tenant("hook-succeeded", "1", "1");
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    assert!(checked(&r, &p).is_empty());
    gate(&mut p, &r, &HashMap::new());
    assert!(p.apply_count() == 0 && p.phase_hold.is_none());
}

#[test]
fn a_done_hook_whose_content_changed_is_applied_again_first() {
    let r = tenant("hook-succeeded", "2", "2");
    let (inv, live) = applied_done(
        &tenant("hook-succeeded", "1", "1"),
        "migrate",
        Done::Succeeded,
    );
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    gate(&mut p, &r, &HashMap::new());
    assert_eq!(names(&p), ["migrate"], "the main phase waits for it");
    let a = p
        .stages
        .iter()
        .flatten()
        .find(|a| a.object.id.name == "migrate");
    let a = a.expect("applied");
    let before = inv.entries.get(&a.object.id).map(|e| e.hash.as_str());
    assert!(
        a.existed && recreates(a, before),
        "deleted (if there) and created again"
    );
}

#[test]
fn a_hook_that_is_not_done_and_absent_is_applied_again() {
    let r = tenant("hook-succeeded", "1", "1");
    let (inv, mut live) = applied(&r);
    live.remove(&id(&r, "migrate"));
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    gate(&mut p, &r, &HashMap::new());
    assert_eq!(names(&p), ["migrate"]);
}

#[test]
fn a_hook_failed_job_that_failed_ends_and_its_failure_holds_every_later_sync() {
    let reason = "job failed: BackoffLimitExceeded: too many";
    let before = render(vec![
        hook("migrate", "pre", 0, "hook-failed", "1"),
        object("ConfigMap", "old", "1"),
    ]);
    let (inv, live) = applied(&before);
    let r = tenant("hook-failed", "1", "1");
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    gate(
        &mut p,
        &r,
        &HashMap::from([(id(&r, "migrate"), Health::Failed(reason.into()))]),
    );
    assert_eq!(
        p.ended,
        [ended(&r, "migrate", Done::Failed(reason.into()), true)]
    );
    assert!(names(&p).is_empty() && p.prune.is_empty());
    assert!(matches!(p.phase_hold, Some(PhaseHold::Failed { .. })));

    // The Job is gone; its failure is recorded: the next syncs fail the same way, main
    // changed or not, and nothing is read.
    let (inv, live) = applied_done(&before, "migrate", Done::Failed(reason.into()));
    let unchanged = before.clone();
    for r in [unchanged, tenant("hook-failed", "1", "1")] {
        let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
        assert!(checked(&r, &p).is_empty());
        gate(&mut p, &r, &HashMap::new());
        let hold = p.phase_hold.clone().expect("still failed");
        assert!(
            matches!(&hold, PhaseHold::Failed { object, reason: why, .. }
                if object == "Job.batch/t-prod/migrate" && why == reason),
            "{hold}"
        );
        assert!(names(&p).is_empty() && p.prune.is_empty() && p.ended.is_empty());
    }
}

#[test]
fn a_hook_succeeded_object_ends_only_with_the_rest_of_its_phase() {
    let r = render(vec![
        hook(
            "account",
            "pre",
            -5,
            "before-hook-creation,hook-succeeded",
            "1",
        ),
        hook("migrate", "pre", 0, "hook-succeeded", "1"),
        object("ConfigMap", "site", "1"),
    ]);
    let (inv, live) = applied(&render(r.objects[..2].to_vec()));
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    assert_eq!(checked(&r, &p), ["account", "migrate"]);
    let running = HashMap::from([
        (id(&r, "account"), Health::Current),
        (id(&r, "migrate"), Health::InProgress("running".into())),
    ]);
    gate(&mut p, &r, &running);
    assert!(p.ended.is_empty(), "the Job still runs as the account");
    assert!(names(&p).is_empty());

    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    let healthy = HashMap::from([
        (id(&r, "account"), Health::Current),
        (id(&r, "migrate"), Health::Current),
    ]);
    gate(&mut p, &r, &healthy);
    assert_eq!(
        p.ended,
        [
            ended(&r, "account", Done::Succeeded, true),
            ended(&r, "migrate", Done::Succeeded, true)
        ]
    );
    assert_eq!(names(&p), ["site"]);
}

#[test]
fn a_post_hook_with_a_policy_holds_nothing_back_but_is_waited_for_until_it_ended() {
    let r = render(vec![
        object("ConfigMap", "site", "1"),
        hook("notify", "post", 0, "hook-succeeded", "1"),
    ]);
    let (inv, live) = applied(&r);
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    assert_eq!(checked(&r, &p), ["notify"], "read though nothing changes");
    gate(
        &mut p,
        &r,
        &HashMap::from([(id(&r, "notify"), Health::InProgress("running".into()))]),
    );
    let hold = p.phase_hold.clone().expect("waits");
    assert!(
        matches!(&hold, PhaseHold::Waiting { held: None, after, .. } if *after == Placement::LAST)
    );
    assert!(
        hold.to_string()
            .contains("waits for Job.batch/t-prod/notify (running) to end"),
        "{hold}"
    );
    assert!(!hold.holds(&r.objects[1]), "sets nothing aside");

    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    gate(
        &mut p,
        &r,
        &HashMap::from([(id(&r, "notify"), Health::Current)]),
    );
    assert_eq!(p.ended, [ended(&r, "notify", Done::Succeeded, true)]);
    assert!(p.phase_hold.is_none());

    // Applied in this sync (its content changed): waited for as well.
    let changed = render(vec![
        object("ConfigMap", "site", "1"),
        hook("notify", "post", 0, "hook-succeeded", "2"),
    ]);
    let mut p = plan(&changed, Some(&inv), &live, &PruneGuard::default(), false);
    assert_eq!(checked(&changed, &p), ["site"]);
    gate(
        &mut p,
        &changed,
        &HashMap::from([(id(&r, "site"), Health::Current)]),
    );
    assert_eq!(names(&p), ["notify"]);
    assert!(
        p.phase_hold
            .is_some_and(|h| h.to_string().contains("applied in this sync"))
    );
}

#[test]
fn a_succeeded_hook_failed_job_is_done_and_kept_and_a_failed_hook_succeeded_job_is_kept_failing() {
    let r = tenant("hook-failed", "1", "1");
    let (inv, live) = applied(&render(vec![hook("migrate", "pre", 0, "hook-failed", "1")]));
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    gate(
        &mut p,
        &r,
        &HashMap::from([(id(&r, "migrate"), Health::Current)]),
    );
    assert_eq!(p.ended, [ended(&r, "migrate", Done::Succeeded, false)]);
    assert_eq!(names(&p), ["site"]);

    let r = tenant("hook-succeeded", "1", "1");
    let (inv, live) = applied(&render(vec![hook(
        "migrate",
        "pre",
        0,
        "hook-succeeded",
        "1",
    )]));
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    gate(
        &mut p,
        &r,
        &HashMap::from([(id(&r, "migrate"), Health::Failed("failed".into()))]),
    );
    assert!(p.ended.is_empty(), "kept, failed, to be looked at");
    assert!(matches!(
        p.phase_hold,
        Some(PhaseHold::Failed {
            held: Phase::Main,
            ..
        })
    ));
}

#[test]
fn done_hooks_that_leave_git_are_pruned_without_counting_towards_the_mass_prune_guard() {
    // Six pre hooks, each already run and deleted by its policy, and one main ConfigMap.
    let hooks: Vec<_> = (0..6)
        .map(|i| hook(&format!("migrate-{i}"), "pre", i, "hook-succeeded", "1"))
        .collect();
    let before = render([hooks, vec![object("ConfigMap", "site", "1")]].concat());
    let (mut inv, mut live) = applied(&before);
    for e in inv.entries.values_mut().filter(|e| e.id.kind == "Job") {
        e.done = Some(Done::Succeeded);
        live.remove(&e.id);
    }
    // The chart drops its hooks: six of seven entries leave git, none of them a live object.
    let after = render(vec![object("ConfigMap", "site", "1")]);
    let guard = PruneGuard {
        max_objects: 100,
        max_percent: 50,
        min_objects: 2,
    };
    let p = plan(&after, Some(&inv), &live, &guard, false);
    assert_eq!(p.hold, None, "done hooks tripped the guard");
    assert_eq!(p.prune.len(), 6);
    assert!(!p.released, "no guard was passed over");
    // A live object still counts, against the live objects alone.
    let strict = PruneGuard {
        min_objects: 0,
        ..guard
    };
    let replaced = render(vec![object("ConfigMap", "other", "1")]);
    let p = plan(&replaced, Some(&inv), &live, &strict, false);
    assert_eq!(p.hold, Some(PruneHold::MassPrune { count: 1, total: 1 }));
}
