//! Taking a rollout up again after a restart ([`super`]), through two agents in turn on the same
//! mock API server and repository: the restarted one holds the tenants the record holds, at
//! their commit, and goes on from the recorded wave.

use fief_core::rollout::Phase;
use fief_kube::fixtures::Scenario;
use http::Method;

use crate::kit::{AGENT_NS, Kit, WAVES, configmap_path, fleet, shared_greeting, tenant_of, web};

/// Tenants `c` (wave canary), `e` (wave early) and `l` (last), each running `components`.
fn rings(components: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut files = fleet(
        WAVES,
        &[
            tenant_of("c", "{ring: canary}", "", components),
            tenant_of("e", "{ring: early}", "", components),
            tenant_of("l", "", "", components),
        ],
    );
    files.extend(web());
    files
}

fn phase(kit: &Kit) -> Option<Phase> {
    kit.rollout().map(|r| r.phase)
}

/// Wait until the cluster's rollout record says `phase`.
async fn recorded(kit: &Kit, phase: Phase) {
    let path = configmap_path(AGENT_NS, fief_kube::rollout_store::NAME);
    let text = format!("\"{}\"", phase.as_str());
    kit.wait("the rollout record is written", |k| {
        k.server.object(&path).is_some_and(|cm| {
            cm["data"]["rollout.json"]
                .as_str()
                .is_some_and(|t| t.contains(&text))
        })
    })
    .await;
}

/// Guards the restart of an agent during a halted rollout: the restarted agent reads the
/// `fief-rollout` record and keeps the held tenants at the commit they were synced at. A
/// restart that forgot the record (or took the held tenants as synced at the head) would
/// apply the halted change to every later wave at its first sync, as if nothing had halted.
#[tokio::test]
async fn a_halted_rollout_survives_a_restart_with_its_held_tenants_at_their_commit() {
    let mut kit = Kit::start(&rings(&[("app", "")]), Scenario::new()).await;
    kit.turn().await;
    let old = kit.repo.head();
    let c = configmap_path("c-prod", "app");
    kit.server.fail(Method::PATCH, &c, 500);
    kit.push(&[shared_greeting("g2")], &[]).await;
    kit.until("the rollout halts", |k| phase(k) == Some(Phase::Halted))
        .await;
    recorded(&kit, Phase::Halted).await;

    let mut kit = kit.restart().await;
    for _ in 0..3 {
        kit.turn().await;
    }
    let record = kit.rollout().expect("the rollout is taken up again");
    assert_eq!(record.phase, Phase::Halted);
    assert_eq!(record.held.get("e"), Some(&old));
    assert_eq!(record.held.get("l"), Some(&old));
    assert_eq!(
        (kit.greeting("e"), kit.greeting("l")),
        ("hello".into(), "hello".into())
    );
    let e = crate::rollout::revision_for(&kit.state, "e").expect("a revision");
    assert_eq!(e.commit, old);

    kit.server.heal(&Method::PATCH, &c);
    kit.until("the rollout completes", |k| {
        phase(k) == Some(Phase::Complete)
    })
    .await;
    assert_eq!(
        (kit.greeting("e"), kit.greeting("l")),
        ("g2".into(), "g2".into())
    );
}

/// Guards the restart of an agent while a wave waits for health: the restarted agent goes on
/// from the recorded wave, with its tenants released before the restart, and releases the
/// next wave only once they are healthy.
#[tokio::test]
async fn a_restart_while_a_wave_waits_for_health_goes_on_from_that_wave() {
    let mut kit = Kit::start(&rings(&[("app", ""), ("web", "")]), Scenario::new()).await;
    kit.turn().await;
    kit.push(&[shared_greeting("g2")], &[]).await;
    kit.turn().await;
    // c's Deployment has no status yet (no controller): the first wave waits for it.
    kit.wait("c's wait is written on its status", |k| {
        k.inventory("c").is_some_and(|i| !i.status.is_settled())
    })
    .await;
    kit.turn().await;
    assert_eq!(
        kit.rollout().map(|r| (r.phase, r.wave)),
        Some((Phase::Progressing, 0))
    );
    recorded(&kit, Phase::Progressing).await;

    let mut kit = kit.restart().await;
    for _ in 0..3 {
        kit.turn().await;
    }
    assert_eq!(
        kit.rollout().map(|r| (r.phase, r.wave)),
        Some((Phase::Progressing, 0))
    );
    assert_eq!(
        kit.greeting("e"),
        "hello",
        "the next wave waits for c's health"
    );

    for t in ["c", "e", "l"] {
        kit.available(t);
    }
    kit.until("the rollout completes", |k| {
        phase(k) == Some(Phase::Complete)
    })
    .await;
    assert_eq!(
        (kit.greeting("e"), kit.greeting("l")),
        ("g2".into(), "g2".into())
    );
}
