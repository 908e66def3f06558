//! The health gate's decisions ([`super::Gate`]), through the agent's watches on the mock API
//! server with the test playing the Deployment controller: a tenant waits until its objects
//! are seen healthy at the version its sync applied, stalls when one fails or its wait runs
//! out, recovers when healthy, and after a restart is judged at the version the watch saw.

use std::time::Duration;

use fief_core::rollout::TenantState;
use fief_core::status::Outcome;
use fief_core::status::agent::HealthState;
use fief_kube::fixtures::Scenario;

use crate::kit::{Kit, deployment_path, fleet, tenant_of, web};

/// Tenants (each running components `app` and `web` with the `web` values `values`) and the
/// component `web`.
fn deployed(tenants: &[(&str, &str)]) -> Vec<(String, String)> {
    let files: Vec<(String, String)> = tenants
        .iter()
        .map(|(t, values)| tenant_of(t, "", "", &[("app", ""), ("web", values)]))
        .collect();
    let mut files = fleet("", &files);
    files.extend(web());
    files
}

fn state(kit: &Kit, tenant: &str) -> TenantState {
    kit.shared.gate.rollout_state(tenant)
}

fn verdict(kit: &Kit, tenant: &str) -> Option<HealthState> {
    kit.shared
        .gate
        .status()
        .tenants
        .get(tenant)
        .map(|h| h.health)
}

/// Let the watches take the events of the last changes.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn a_tenant_waits_until_its_deployment_is_seen_available_then_is_ready() {
    let mut kit = Kit::start(&deployed(&[("acme", "")]), Scenario::new()).await;
    kit.turn().await;
    settle().await;
    assert_eq!(state(&kit, "acme"), TenantState::Waiting, "no status yet");
    assert_eq!(verdict(&kit, "acme"), Some(HealthState::Reconciling));
    kit.available("acme");
    kit.wait("acme is healthy", |k| {
        state(k, "acme") == TenantState::Healthy
    })
    .await;
    assert_eq!(verdict(&kit, "acme"), Some(HealthState::Ready));
}

#[tokio::test]
async fn a_deployment_past_its_progress_deadline_stalls_its_tenant_until_it_is_available() {
    let mut kit = Kit::start(&deployed(&[("acme", "")]), Scenario::new()).await;
    kit.turn().await;
    kit.server.edit(&deployment_path("acme"), |d| {
        d["status"] = serde_json::json!({"conditions": [{"type": "Progressing", "status": "False",
            "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet web-1 has timed out"}]});
    });
    kit.wait("acme stalls", |k| {
        verdict(k, "acme") == Some(HealthState::Stalled)
    })
    .await;
    let TenantState::Failed(why) = state(&kit, "acme") else {
        panic!("a stalled tenant fails its rollout wave");
    };
    assert!(why.contains("progress deadline exceeded"), "{why}");
    kit.available("acme");
    kit.wait("acme recovers", |k| {
        state(k, "acme") == TenantState::Healthy
    })
    .await;
}

#[tokio::test]
async fn a_tenant_whose_wait_runs_out_is_stalled_and_its_status_says_so() {
    let files = deployed(&[("acme", "")]);
    let short = |o: &mut crate::AgentOptions| o.health_timeout = Duration::from_millis(300);
    let mut kit = Kit::with(&files, Scenario::new(), short).await;
    kit.turn().await;
    kit.wait("acme stalls", |k| {
        verdict(k, "acme") == Some(HealthState::Stalled)
    })
    .await;
    kit.wait("the verdict is written on its inventory", |k| {
        k.inventory("acme").is_some_and(|i| !i.status.is_settled())
    })
    .await;
}

#[tokio::test]
async fn a_status_from_before_the_apply_is_not_taken_for_the_new_version() {
    let mut kit = Kit::start(&deployed(&[("acme", "")]), Scenario::new()).await;
    kit.turn().await;
    kit.available("acme");
    kit.wait("acme is healthy", |k| {
        state(k, "acme") == TenantState::Healthy
    })
    .await;
    // A new image: the Deployment's status is the old generation's until the controller
    // catches up.
    kit.push(&deployed(&[("acme", "{image: nginx:2}")]), &[])
        .await;
    kit.turn().await;
    settle().await;
    assert_eq!(state(&kit, "acme"), TenantState::Waiting);
    kit.available("acme");
    kit.wait("acme is healthy again", |k| {
        state(k, "acme") == TenantState::Healthy
    })
    .await;
}

/// Push `broken` (acme's render fails) and restart the agent on the same cluster: acme is
/// invalid before the restart and after it; then the watches settle.
async fn restarted_with_acme_invalid(mut kit: Kit, broken: &[(String, String)]) -> Kit {
    kit.push(broken, &[]).await;
    kit.turn().await;
    assert_eq!(
        kit.attempt("acme").map(|a| a.outcome),
        Some(Outcome::Invalid)
    );
    let mut kit = kit.restart().await;
    kit.turn().await;
    assert_eq!(
        kit.attempt("acme").map(|a| a.outcome),
        Some(Outcome::Invalid)
    );
    settle().await;
    kit
}

/// The component `static`: one ConfigMap whose content never changes.
fn static_component() -> (String, String) {
    (
        "components/static/templates/static.yaml".to_string(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: static\ndata:\n  k: v\n".to_string(),
    )
}

/// Guards the health gate after a restart. The restarted agent's watch lists the objects of a
/// tenant it has not rendered (its render fails), so it cannot hash them; the fix's sync then
/// leaves the tenant's `static` ConfigMap as it is, at the version the watch saw, and no event
/// follows. The gate must count it as current at the resourceVersion the sync recorded:
/// judging by live hash alone, or not telling the gate of objects of tenants not rendered,
/// leaves the tenant waiting until its timeout, then stalled, halting any rollout it is in.
#[tokio::test]
async fn after_a_restart_a_fix_that_leaves_an_object_as_it_was_is_ready_at_once() {
    let tenants = |acme: &[(&str, &str)]| {
        let bob = tenant_of("bob", "", "", &[("app", ""), ("static", "")]);
        let mut files = fleet("", &[tenant_of("acme", "", "", acme), bob]);
        files.push(static_component());
        files
    };
    let mut kit = Kit::start(&tenants(&[("app", ""), ("static", "")]), Scenario::new()).await;
    kit.turn().await;
    kit.wait("both healthy", |k| {
        verdict(k, "acme") == Some(HealthState::Ready)
            && verdict(k, "bob") == Some(HealthState::Ready)
    })
    .await;
    // acme's file names a component that does not exist: its render fails.
    let broken = tenants(&[("app", ""), ("static", ""), ("nope", "")]);
    let mut kit = restarted_with_acme_invalid(kit, &broken).await;
    // The fix changes acme's ConfigMap `app` only.
    kit.push(
        &tenants(&[("app", "{greeting: fixed}"), ("static", "")]),
        &[],
    )
    .await;
    kit.turn().await;
    assert_eq!(
        kit.attempt("acme").map(|a| a.outcome),
        Some(Outcome::Applied)
    );
    settle().await;
    assert_eq!(state(&kit, "acme"), TenantState::Healthy);
    assert_eq!(verdict(&kit, "acme"), Some(HealthState::Ready));
}

/// Guards the health gate after a restart for a Deployment whose controller wrote its status
/// after fief last applied it (its resourceVersion moved past the one the inventory records).
/// The restarted agent's tenant is invalid (its render fails); the fix leaves the Deployment
/// as it is. The fix's sync must either apply it (recording the version the watch saw) or
/// skip it with a live hash the watch reported: a sync that took the inventory's recorded
/// hash as live would skip it, and the gate would wait for a version it never sees, until
/// the tenant's timeout stalls it.
#[tokio::test]
async fn after_a_restart_a_fix_that_leaves_a_deployment_as_it_was_is_ready() {
    // acme's ConfigMap `app` greets `greeting`; a broken file names a component that does
    // not exist. bob's Deployment has the restarted agent watch Deployments from its start.
    let deployed_acme = |greeting: &str, broken: bool| {
        let mut components = vec![("app", greeting), ("web", "")];
        if broken {
            components.push(("nope", ""));
        }
        let bob = tenant_of("bob", "", "", &[("app", ""), ("web", "")]);
        let mut files = fleet("", &[tenant_of("acme", "", "", &components), bob]);
        files.extend(web());
        files
    };
    let mut kit = Kit::start(&deployed_acme("", false), Scenario::new()).await;
    kit.turn().await;
    kit.available("acme");
    kit.wait("acme is healthy", |k| {
        state(k, "acme") == TenantState::Healthy
    })
    .await;
    let mut kit = restarted_with_acme_invalid(kit, &deployed_acme("", true)).await;
    // The fix changes acme's ConfigMap `app` only.
    kit.push(&deployed_acme("{greeting: fixed}", false), &[])
        .await;
    kit.until("the fix is synced", |k| {
        k.attempt("acme")
            .is_some_and(|a| a.outcome == Outcome::Applied)
    })
    .await;
    kit.wait("acme is healthy", |k| {
        state(k, "acme") == TenantState::Healthy
    })
    .await;
    assert_eq!(verdict(&kit, "acme"), Some(HealthState::Ready));
}

/// Whether `tenant`'s inventory says `Ready=True`.
fn written_ready(kit: &Kit, tenant: &str) -> bool {
    kit.inventory(tenant).is_some_and(|i| {
        i.status
            .condition(fief_core::condition::ConditionType::Ready)
            .is_some_and(|c| c.is_true())
    })
}

/// A verdict the writer is still writing when its tenant turns healthy (a `Reconciling` that
/// lands after the `Ready` was judged) is followed by the `Ready`: the inventory does not stay
/// behind the verdict.
#[tokio::test]
async fn a_ready_judged_while_a_waiting_verdict_is_being_written_is_written_after_it() {
    let mut kit = Kit::start(&deployed(&[("acme", "")]), Scenario::new()).await;
    kit.turn().await;
    let held = kit
        .server
        .hold(http::Method::PATCH, &crate::kit::inventory_path("acme"));
    kit.wait("the writer writes acme's Reconciling", |_| {
        held.waiting() > 0
    })
    .await;
    kit.available("acme");
    kit.wait("acme is healthy", |k| {
        state(k, "acme") == TenantState::Healthy
    })
    .await;
    held.release();
    settle().await;
    kit.wait("the inventory says Ready again", |k| {
        written_ready(k, "acme")
    })
    .await;
    settle().await;
    assert!(written_ready(&kit, "acme"), "a later write took it back");
}
