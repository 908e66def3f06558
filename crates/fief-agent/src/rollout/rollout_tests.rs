//! The rollout's decisions ([`super`]), through the agent's loop against the mock API server:
//! a shared change goes wave by wave, each released once the one before is healthy; a failed
//! tenant halts it with the later waves held at the commit they were synced at (drift repair
//! included); a tenant's own change is not held; the in-flight bound releases a wave a few
//! tenants at a time; the record is published to the cluster.

use fief_core::rollout::Phase;
use fief_kube::fixtures::Scenario;
use http::Method;

use crate::kit::{AGENT_NS, Kit, WAVES, configmap_path, fleet, shared_greeting, tenant};

/// Tenants `c` (wave canary), `e` (wave early) and `l` (last), with `own` values for `e`.
fn rings(own: &str) -> Vec<(String, String)> {
    fleet(
        WAVES,
        &[
            tenant("c", "{ring: canary}", "", ""),
            tenant("e", "{ring: early}", "", own),
            tenant("l", "", "", ""),
        ],
    )
}

/// An agent that synced [`rings`] at greeting `hello`, before any rollout.
async fn synced(scenario: Scenario) -> Kit {
    let mut kit = Kit::start(&rings(""), scenario).await;
    assert_eq!(kit.turn().await, ["c", "e", "l"]);
    assert!(kit.rollout().is_none(), "the first commit is no rollout");
    kit
}

fn greetings(kit: &Kit) -> Vec<String> {
    ["c", "e", "l"].iter().map(|t| kit.greeting(t)).collect()
}

/// The phase and wave of the rollout.
fn at(kit: &Kit) -> (Phase, usize) {
    let r = kit.rollout().expect("a rollout");
    (r.phase, r.wave)
}

#[tokio::test]
async fn a_shared_change_goes_to_the_first_wave_first_and_holds_the_others_at_their_commit() {
    let mut kit = synced(Scenario::new()).await;
    let old = kit.repo.head();
    kit.push(&[shared_greeting("g2")], &[]).await;
    assert_eq!(kit.turn().await, ["c"]);
    assert_eq!(greetings(&kit), ["g2", "hello", "hello"]);
    // c is healthy at once (ConfigMaps): the next wave may be released already, the last
    // is held at the commit it was synced at.
    let record = kit.rollout().expect("a rollout");
    assert_eq!(record.phase, Phase::Progressing);
    assert_eq!(record.held.get("l"), Some(&old));
    let l = crate::rollout::revision_for(&kit.state, "l").expect("a revision");
    assert_eq!(l.commit, old, "a held tenant renders at its commit");
    assert!(!kit.due("l"));
}

#[tokio::test]
async fn each_wave_is_released_once_the_one_before_is_healthy_until_the_rollout_completes() {
    let mut kit = synced(Scenario::new()).await;
    kit.push(&[shared_greeting("g2")], &[]).await;
    kit.turn().await;
    let mut seen = vec![(greetings(&kit), at(&kit))];
    kit.until("the rollout completes", |k| {
        seen.push((greetings(k), at(k)));
        at(k).0 == Phase::Complete
    })
    .await;
    seen.dedup();
    // Each wave's tenants change only once the wave before them was released and done.
    for (greetings, (phase, wave)) in &seen {
        match (phase, wave) {
            (Phase::Progressing, 0) => assert_eq!(greetings[1..], ["hello", "hello"]),
            (Phase::Progressing, 1) => assert_eq!(greetings[0], "g2"),
            _ => {}
        }
    }
    assert!(
        seen.iter().any(|(_, at)| *at == (Phase::Progressing, 1)),
        "{seen:?}"
    );
    assert_eq!(greetings(&kit), ["g2", "g2", "g2"]);
    assert!(kit.rollout().is_some_and(|r| r.held.is_empty()));
}

#[tokio::test]
async fn a_failed_tenant_halts_the_rollout_and_the_later_waves_stay_until_it_is_fixed() {
    let c = configmap_path("c-prod", "app");
    let mut kit = synced(Scenario::new()).await;
    kit.server.fail(Method::PATCH, &c, 500);
    kit.push(&[shared_greeting("g2")], &[]).await;
    kit.until("the rollout halts", |k| at(k).0 == Phase::Halted)
        .await;
    let reason = kit.rollout().and_then(|r| r.reason).unwrap_or_default();
    assert!(
        reason.starts_with("wave 1 \"canary\": tenant c: "),
        "{reason}"
    );
    for _ in 0..3 {
        kit.turn().await;
    }
    assert_eq!(
        greetings(&kit)[1..],
        ["hello", "hello"],
        "the later waves wait"
    );
    kit.server.heal(&Method::PATCH, &c);
    kit.until("the rollout completes", |k| at(k).0 == Phase::Complete)
        .await;
    assert_eq!(greetings(&kit), ["g2", "g2", "g2"]);
}

#[tokio::test]
async fn a_drift_repair_of_a_held_tenant_applies_the_commit_it_is_held_at() {
    let mut kit = synced(Scenario::new()).await;
    kit.server
        .fail(Method::PATCH, &configmap_path("c-prod", "app"), 500);
    kit.push(&[shared_greeting("g2")], &[]).await;
    kit.until("the rollout halts", |k| at(k).0 == Phase::Halted)
        .await;
    let e = configmap_path("e-prod", "app");
    kit.server
        .edit(&e, |o| o["data"]["greeting"] = "edited".into());
    kit.wait("e is queued by drift", |k| k.due("e")).await;
    kit.until("e is repaired", |k| k.greeting("e") != "edited")
        .await;
    assert_eq!(
        kit.greeting("e"),
        "hello",
        "repaired at its held commit, not the rollout's"
    );
}

#[tokio::test]
async fn a_tenants_own_change_during_a_rollout_is_applied_at_once() {
    let mut kit = synced(Scenario::new()).await;
    kit.server
        .fail(Method::PATCH, &configmap_path("c-prod", "app"), 500);
    kit.push(&[shared_greeting("g2")], &[]).await;
    kit.until("the rollout halts", |k| at(k).0 == Phase::Halted)
        .await;
    let own = rings("{greeting: mine}");
    kit.push(&[own[own.len() - 2].clone()], &[]).await;
    kit.until("e's own change is applied", |k| k.greeting("e") == "mine")
        .await;
    assert_eq!(kit.greeting("l"), "hello", "l is still held");
}

#[tokio::test]
async fn the_in_flight_bound_releases_a_waves_tenants_a_few_at_a_time() {
    let canaries: Vec<(String, String)> = ["c1", "c2", "c3"]
        .iter()
        .map(|t| tenant(t, "{ring: canary}", "", ""))
        .collect();
    let files = fleet(WAVES, &canaries);
    let mut kit = Kit::with(&files, Scenario::new(), |o| o.max_in_flight = 1).await;
    kit.turn().await;
    kit.push(&[shared_greeting("g2")], &[]).await;
    assert_eq!(kit.turn().await.len(), 1, "one of the wave at first");
    let changed = ["c1", "c2", "c3"]
        .iter()
        .filter(|t| kit.greeting(t) == "g2")
        .count();
    assert_eq!(changed, 1);
    kit.until("the rollout completes", |k| at(k).0 == Phase::Complete)
        .await;
    assert!(kit.shared.gate.in_flight() == 0);
}

#[tokio::test]
async fn the_rollout_record_is_published_to_the_cluster() {
    let mut kit = synced(Scenario::new()).await;
    kit.server
        .fail(Method::PATCH, &configmap_path("c-prod", "app"), 500);
    let target = kit.push(&[shared_greeting("g2")], &[]).await;
    kit.until("the rollout halts", |k| at(k).0 == Phase::Halted)
        .await;
    let path = configmap_path(AGENT_NS, fief_kube::rollout_store::NAME);
    kit.wait("the record is written", |k| {
        k.server.object(&path).is_some_and(|cm| {
            let text = cm["data"]["rollout.json"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            text.contains("\"Halted\"") && text.contains(&target)
        })
    })
    .await;
}
