//! Unit tests of ordered phases: how objects are placed, and how far a sync goes.

use std::collections::HashMap;

use serde_json::json;

use super::phase::{Classified, Phase, PhaseError, PhaseHold, Placement, classify, gate};
use super::phase::{recreates, to_check};
use super::tests::{applied, object, render};
use super::*;
use crate::health::Health;

fn annotated(annotations: Value) -> Value {
    json!({"kind": "Job", "metadata": {"name": "m", "annotations": annotations}})
}

fn placed(phase: Phase, weight: i64) -> Result<Classified, PhaseError> {
    Ok(Classified::Placed(Placement { phase, weight }))
}

#[test]
fn phase_annotations_and_helm_hooks_place_objects() {
    let c = |a: Value| classify(&annotated(a));
    assert_eq!(c(json!({})), placed(Phase::Main, 0));
    assert_eq!(c(json!({"fief.dev/phase": "pre"})), placed(Phase::Pre, 0));
    assert_eq!(c(json!({"fief.dev/phase": "post"})), placed(Phase::Post, 0));
    assert_eq!(
        c(json!({"helm.sh/hook": "pre-install,pre-upgrade", "helm.sh/hook-weight": "-5"})),
        placed(Phase::Pre, -5),
        "a hook of install and upgrade is one object"
    );
    assert_eq!(
        c(json!({"helm.sh/hook": "pre-upgrade"})),
        placed(Phase::Pre, 0)
    );
    assert_eq!(
        c(json!({"helm.sh/hook": " post-install , post-upgrade", "helm.sh/hook-weight": "3"})),
        placed(Phase::Post, 3)
    );
    // fief's own annotation wins over Helm's; a weight that is not a number is 0, as in Helm.
    assert_eq!(
        c(json!({"helm.sh/hook": "pre-install", "fief.dev/phase": "main"})),
        placed(Phase::Main, 0)
    );
    assert_eq!(
        c(json!({"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "soon"})),
        placed(Phase::Pre, 0)
    );
}

#[test]
fn test_delete_and_rollback_hooks_are_skipped_and_nonsense_is_refused() {
    let c = |a: Value| classify(&annotated(a));
    for hook in [
        "test",
        "test-success",
        "pre-install,test",
        "pre-delete",
        "post-delete,pre-rollback",
        "post-rollback",
    ] {
        assert_eq!(
            c(json!({"helm.sh/hook": hook})),
            Ok(Classified::Skipped),
            "{hook}"
        );
    }
    let e = c(json!({"fief.dev/phase": "before"})).unwrap_err();
    assert_eq!(e.field(), "metadata.annotations.fief.dev/phase");
    assert!(e.to_string().contains("`before` is not a phase"), "{e}");
    let e = c(json!({"helm.sh/hook": "pre-instal"})).unwrap_err();
    assert_eq!(e, PhaseError::UnknownHook("pre-instal".into()));
    assert_eq!(e.field(), "metadata.annotations.helm.sh/hook");
    assert!(matches!(
        c(json!({"helm.sh/hook": "pre-install,post-install"})),
        Err(PhaseError::PreAndPost(_))
    ));
}

/// A Job of component `app` in `phase` (weight `weight`), and its content `data`.
pub(super) fn job(name: &str, phase: &str, weight: i64, data: &str) -> RenderedObject {
    let mut o = object("Job", name, data);
    o.id.group = "batch".into();
    o.object["metadata"]["annotations"] = json!({
        "fief.dev/phase": phase, "helm.sh/hook-weight": weight.to_string()});
    o
}

/// Tenant with a pre Job `migrate`, a main ConfigMap `site` and a post Job `notify`.
fn tenant(migrate: &str, site: &str, notify: &str) -> TenantRender {
    render(vec![
        job("migrate", "pre", 0, migrate),
        object("ConfigMap", "site", site),
        job("notify", "post", 0, notify),
    ])
}

pub(super) fn names(p: &Plan<'_>) -> Vec<String> {
    let mut out: Vec<String> = p
        .stages
        .iter()
        .flatten()
        .map(|a| a.object.id.name.clone())
        .collect();
    out.sort();
    out
}

pub(super) fn id(r: &TenantRender, name: &str) -> ObjectId {
    let found = r.objects.iter().find(|o| o.id.name == name);
    found
        .map(|o| o.id.clone())
        .unwrap_or_else(|| panic!("{name}"))
}

#[test]
fn the_first_sync_applies_only_the_pre_phase_and_reads_nothing() {
    let r = tenant("1", "1", "1");
    let mut p = plan(&r, None, &HashMap::new(), &PruneGuard::default(), false);
    assert!(to_check(&r, &p).is_empty(), "the pre phase itself changes");
    gate(&mut p, &r, &HashMap::new());
    assert_eq!(names(&p), ["migrate"]);
    let hold = p.phase_hold.expect("held");
    assert!(matches!(
        &hold,
        PhaseHold::Waiting {
            held: Some(Phase::Main),
            ..
        }
    ));
    assert!(
        hold.to_string().contains(
            "the main phase waits for Job.batch/t-prod/migrate (applied in this sync, not yet healthy)"
        ),
        "{hold}"
    );
}

#[test]
fn main_waits_while_the_pre_job_runs_then_goes_and_post_waits_for_main() {
    let before = render(vec![job("migrate", "pre", 0, "1")]);
    let (inv, live) = applied(&before);
    let r = tenant("1", "1", "1");
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    let checked: Vec<&str> = to_check(&r, &p)
        .iter()
        .map(|o| o.id.name.as_str())
        .collect();
    assert_eq!(checked, ["migrate"]);
    let running = HashMap::from([(id(&r, "migrate"), Health::InProgress("running".into()))]);
    gate(&mut p, &r, &running);
    assert!(names(&p).is_empty());
    assert!(
        p.phase_hold
            .unwrap()
            .to_string()
            .contains("migrate (running)")
    );

    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    let done = HashMap::from([(id(&r, "migrate"), Health::Current)]);
    gate(&mut p, &r, &done);
    assert_eq!(names(&p), ["site"], "main goes; post waits for it");
    let hold = p.phase_hold.unwrap();
    assert!(
        matches!(hold, PhaseHold::Waiting { held: Some(Phase::Post), after, .. } if after == Placement::MAIN)
    );
}

#[test]
fn a_failed_pre_job_holds_main_post_and_the_prune() {
    let before = render(vec![
        job("migrate", "pre", 0, "1"),
        object("ConfigMap", "old", "1"),
    ]);
    let (inv, live) = applied(&before);
    let r = tenant("1", "1", "1");
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    assert_eq!(p.prune.len(), 1);
    let failed = HashMap::from([(
        id(&r, "migrate"),
        Health::Failed("job failed: BackoffLimitExceeded: too many".into()),
    )]);
    gate(&mut p, &r, &failed);
    assert!(names(&p).is_empty() && p.prune.is_empty());
    let hold = p.phase_hold.unwrap();
    assert!(
        matches!(&hold, PhaseHold::Failed { object, .. } if object == "Job.batch/t-prod/migrate")
    );
    assert!(hold.to_string().contains("BackoffLimitExceeded"), "{hold}");
}

#[test]
fn pre_weights_go_one_after_another_and_an_unchanged_tenant_reads_nothing() {
    let r = render(vec![
        job("schema", "pre", -1, "1"),
        job("migrate", "pre", 5, "1"),
        object("ConfigMap", "site", "1"),
    ]);
    let mut p = plan(&r, None, &HashMap::new(), &PruneGuard::default(), false);
    gate(&mut p, &r, &HashMap::new());
    assert_eq!(names(&p), ["schema"], "the lower weight first");
    let (inv, live) = applied(&r);
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    assert!(to_check(&r, &p).is_empty());
    gate(&mut p, &r, &HashMap::new());
    assert!(p.phase_hold.is_none() && p.apply_count() == 0);
}

#[test]
fn a_tenant_without_phases_is_not_gated_and_main_of_an_unwaited_component_is_done() {
    let r = render(vec![object("ConfigMap", "a", "1")]);
    let mut p = plan(&r, None, &HashMap::new(), &PruneGuard::default(), false);
    assert!(to_check(&r, &p).is_empty());
    gate(&mut p, &r, &HashMap::new());
    assert_eq!(names(&p), ["a"]);
    assert!(p.phase_hold.is_none());

    let before = render(vec![object("ConfigMap", "site", "1")]);
    let (inv, live) = applied(&before);
    let mut r = render(vec![
        object("ConfigMap", "site", "1"),
        job("notify", "post", 0, "1"),
    ]);
    r.dependencies.unwaited.insert("app".into());
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    gate(&mut p, &r, &HashMap::new());
    assert_eq!(names(&p), ["notify"]);
}

#[test]
fn only_a_changed_pre_or_post_job_the_inventory_has_is_recreated() {
    let r = tenant("2", "2", "2");
    let p = plan(&r, None, &HashMap::new(), &PruneGuard::default(), false);
    let by = |name: &str, existed: bool| {
        let a = p.stages.iter().flatten().find(|a| a.object.id.name == name);
        Apply {
            existed,
            ..a.expect("planned").clone()
        }
    };
    assert!(recreates(&by("migrate", true), Some("old")));
    assert!(recreates(&by("notify", true), Some("old")));
    assert!(
        recreates(&by("migrate", true), Some("")),
        "recorded by a sync that stopped: it may be there"
    );
    assert!(!recreates(&by("migrate", true), None));
    assert!(!recreates(&by("migrate", false), Some("")), "new: created");
    let same = by("migrate", true).hash.clone();
    assert!(!recreates(&by("migrate", true), Some(&same)), "unchanged");
    assert!(
        !recreates(&by("site", true), Some("old")),
        "main objects are applied"
    );
}

#[test]
fn a_migration_that_depends_on_its_database_waits_for_it_and_does_not_hold_it() {
    let mut migrate = job("migrate", "pre", 0, "1");
    migrate.component = "app".into();
    let mut db = object("ConfigMap", "db", "1");
    db.component = "postgres".into();
    let mut r = render(vec![migrate, db]);
    r.dependencies.needs = [("app".to_string(), vec!["postgres".to_string()])].into();
    let mut p = plan(&r, None, &HashMap::new(), &PruneGuard::default(), false);
    super::depends::defer(&mut p, &r, &HashMap::new());
    assert!(to_check(&r, &p).is_empty());
    gate(&mut p, &r, &HashMap::new());
    assert_eq!(
        names(&p),
        ["db"],
        "the database goes out; app (its Job too) waits for it"
    );
    assert!(p.phase_hold.is_none());
}
