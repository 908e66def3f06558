//! Tests of reading a tenant's standing and of the exit code of a request.

use super::*;
use crate::core::inventory::Status;
use ConditionType::{Ready, Reconciling, Stalled};

fn inv(conditions: &[(ConditionType, bool, Reason, &str)]) -> Inventory {
    let mut status = Status::default();
    for (t, on, r, m) in conditions {
        status.set_condition(*t, *on, *r, m, "t0");
    }
    Inventory {
        tenant: "acme".to_string(),
        status,
        ..Default::default()
    }
}

#[test]
fn each_status_the_agent_writes_is_read_as_its_standing() {
    let applied = inv(&[(Ready, true, Reason::Applied, "applied revision r")]);
    assert_eq!(
        Standing::of(&applied, None),
        Standing::Ready {
            message: "applied revision r".to_string(),
            judged: false
        }
    );
    let healthy = inv(&[(Ready, true, Reason::Healthy, "applied and healthy")]);
    assert!(matches!(
        Standing::of(&healthy, None),
        Standing::Ready { judged: true, .. }
    ));
    let held = inv(&[
        (Ready, false, Reason::PruneHeld, "refusing to prune 3 of 3"),
        (Stalled, true, Reason::PruneHeld, "refusing to prune 3 of 3"),
    ]);
    assert_eq!(
        Standing::of(&held, None),
        Standing::PruneHeld("refusing to prune 3 of 3".to_string())
    );
    let waiting = inv(&[
        (Ready, false, Reason::WaitingForHealth, "waiting for 1"),
        (Reconciling, true, Reason::WaitingForHealth, "waiting for 1"),
        (Stalled, false, Reason::WaitingForHealth, ""),
    ]);
    assert_eq!(
        Standing::of(&waiting, None),
        Standing::WaitingForHealth("waiting for 1".to_string())
    );
    let broken = inv(&[
        (Ready, false, Reason::RenderFailed, "1 error(s)"),
        (Stalled, true, Reason::RenderFailed, "1 error(s)"),
    ]);
    assert!(matches!(
        Standing::of(&broken, None),
        Standing::Failed { reason, .. } if reason == "RenderFailed"
    ));
    let syncing = inv(&[(
        Reconciling,
        true,
        Reason::Progressing,
        "applying and pruning",
    )]);
    let s = Standing::of(&syncing, None);
    assert!(
        s.pending(true) && s.words().0 == "Reconciling (Progressing)",
        "{s:?}"
    );
    let unhealthy = inv(&[(Stalled, true, Reason::Unhealthy, "1 not healthy")]);
    assert!(matches!(
        Standing::of(&unhealthy, None),
        Standing::Unhealthy(_)
    ));
    assert!(matches!(
        Standing::of(&held, Some("by alice at t")),
        Standing::LeftAlone(LeftAlone::Suspended, _)
    ));
}

#[test]
fn only_a_waiting_tenant_or_an_unjudged_ready_one_is_read_again() {
    let ready = |judged| Standing::Ready {
        message: String::new(),
        judged,
    };
    assert!(ready(false).pending(false) && !ready(false).pending(true));
    assert!(!ready(true).pending(false));
    assert!(Standing::WaitingForHealth(String::new()).pending(true));
    assert!(!Standing::PruneHeld(String::new()).pending(false));
}

#[test]
fn exit_codes_rank_failed_then_held_then_not_healthy_then_ready() {
    let of = |list: &[Standing]| -> BTreeMap<String, Standing> {
        list.iter()
            .enumerate()
            .map(|(i, s)| (format!("t{i}"), s.clone()))
            .collect()
    };
    let ready = Standing::Ready {
        message: String::new(),
        judged: true,
    };
    let held = Standing::PruneHeld(String::new());
    let waiting = Standing::WaitingForHealth(String::new());
    let failed = Standing::Failed {
        reason: "ApplyFailed".to_string(),
        message: String::new(),
    };
    let alone = Standing::LeftAlone(LeftAlone::Suspended, String::new());
    let code = |a, l: &[Standing], single| exit_code(a, &of(l), single);
    assert_eq!(
        code(Answer::Ready, &[ready.clone(), alone.clone()], false),
        EXIT_OK
    );
    assert_eq!(
        code(Answer::Ready, std::slice::from_ref(&alone), true),
        EXIT_INVALID
    );
    assert_eq!(
        code(Answer::Ready, &[ready.clone(), waiting.clone()], false),
        EXIT_UNHEALTHY
    );
    assert_eq!(
        code(Answer::Ready, &[waiting.clone(), held.clone()], false),
        EXIT_PRUNE_HELD
    );
    assert_eq!(
        code(Answer::Ready, &[held.clone(), failed], false),
        EXIT_INVALID
    );
    // The agent failed (git) while the inventories still say Ready: a failure.
    assert_eq!(
        code(Answer::Failed, std::slice::from_ref(&ready), true),
        EXIT_INVALID
    );
    assert_eq!(code(Answer::Failed, &[waiting], true), EXIT_INVALID);
    // An answer that counts a held prune as a failure: still the held prune's code.
    assert_eq!(code(Answer::Failed, &[held], true), EXIT_PRUNE_HELD);
    assert_eq!(code(Answer::Suspended, &[alone], false), EXIT_INVALID);
    assert_eq!(Answer::of("Ready: 3 tenant(s) synced"), Answer::Ready);
    assert_eq!(Answer::of("Failed: git fetch failed: x"), Answer::Failed);
    assert_eq!(Answer::of("Later: something new"), Answer::Other);
}
