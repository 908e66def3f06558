//! Unit tests of `dependsOn` in a plan: which components wait, and for what.

use std::collections::HashMap;

use super::depends::{Dependencies, defer, describe, to_check};
use super::tests::{applied, object, render};
use super::*;
use crate::health::Health;

/// An object of `component`.
fn of(component: &str, kind: &str, name: &str, data: &str) -> RenderedObject {
    let mut o = object(kind, name, data);
    o.component = component.into();
    o
}

/// Tenant `t` with postgres (a StatefulSet) and web (a ConfigMap) that depends on it.
fn web_on_postgres(web_data: &str) -> TenantRender {
    let mut r = render(vec![
        of("postgres", "StatefulSet", "db", "1"),
        of("web", "ConfigMap", "site", web_data),
    ]);
    r.dependencies = Dependencies {
        needs: [("web".to_string(), vec!["postgres".to_string()])].into(),
        unwaited: Default::default(),
    };
    r
}

fn db() -> ObjectId {
    object("StatefulSet", "db", "1").id
}

#[test]
fn a_dependent_waits_while_its_dependency_is_applied_in_the_same_sync() {
    let r = web_on_postgres("1");
    let mut p = plan(&r, None, &HashMap::new(), &PruneGuard::default(), false);
    assert!(to_check(&r, &p).contains("postgres"));
    defer(&mut p, &r, &HashMap::new());
    let names: Vec<&str> = p
        .stages
        .iter()
        .flatten()
        .map(|a| a.object.id.name.as_str())
        .collect();
    assert_eq!(names, ["db"], "postgres goes out, web waits");
    assert!(
        describe(&p.waiting)
            .contains("web waits for postgres (applied in this sync, not yet healthy)")
    );
}

#[test]
fn a_dependent_goes_out_once_its_dependency_is_applied_and_healthy() {
    let before = web_on_postgres("1");
    let (inv, live) = applied(&before);
    let r = web_on_postgres("2");
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    let not_ready = HashMap::from([(db(), Health::InProgress("0/1 replicas ready".into()))]);
    defer(&mut p, &r, &not_ready);
    assert_eq!(p.apply_count(), 0);
    assert!(describe(&p.waiting).contains("0/1 replicas ready"));
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    defer(&mut p, &r, &HashMap::from([(db(), Health::Current)]));
    assert_eq!(p.apply_count(), 1);
    assert!(p.waiting.is_empty());
}

#[test]
fn an_unchanged_dependent_reads_nothing_and_independent_components_never_wait() {
    let before = web_on_postgres("1");
    let (inv, live) = applied(&before);
    let p = plan(&before, Some(&inv), &live, &PruneGuard::default(), false);
    assert!(to_check(&before, &p).is_empty(), "nothing changes: no read");
    let mut r = web_on_postgres("1");
    r.objects.push(of("worker", "ConfigMap", "jobs", "1"));
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    assert!(
        to_check(&r, &p).is_empty(),
        "only an independent component changes"
    );
    defer(&mut p, &r, &HashMap::new());
    assert_eq!(p.apply_count(), 1);
}

#[test]
fn a_waiting_dependent_keeps_what_left_git_until_it_goes_out() {
    let mut before = web_on_postgres("1");
    before.objects.push(of("web", "ConfigMap", "old", "1"));
    let (inv, live) = applied(&before);
    let mut r = web_on_postgres("2");
    r.objects[0] = of("postgres", "StatefulSet", "db", "2");
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    defer(&mut p, &r, &HashMap::new());
    assert!(p.prune.is_empty(), "web's old object stays while web waits");
    assert!(p.waiting.contains_key("web"));
}

#[test]
fn a_dependency_that_does_not_wait_for_health_goes_out_with_its_dependents() {
    let mut r = web_on_postgres("1");
    r.dependencies.unwaited.insert("postgres".into());
    let mut p = plan(&r, None, &HashMap::new(), &PruneGuard::default(), false);
    defer(&mut p, &r, &HashMap::new());
    assert_eq!(p.apply_count(), 2);
    assert!(p.waiting.is_empty());
}

#[test]
fn a_dependency_that_does_not_wait_for_health_is_ready_once_applied() {
    let before = web_on_postgres("1");
    let (inv, live) = applied(&before);
    let mut r = web_on_postgres("2");
    r.dependencies.unwaited.insert("postgres".into());
    let mut p = plan(&r, Some(&inv), &live, &PruneGuard::default(), false);
    defer(&mut p, &r, &HashMap::new());
    assert_eq!(p.apply_count(), 1);
}
