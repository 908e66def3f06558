//! When an object counts as current, without a cluster.

use super::*;

fn applied(live: Digest, version: u64) -> Applied {
    Applied {
        live,
        version,
        deadline: Instant::now(),
    }
}

/// A gate whose watched live hashes are none (tests that judge no tenant).
fn gate(max: usize, ids: crate::desired::Ids) -> Gate {
    Gate::new(max, Duration::from_secs(60), ids, Box::new(|_| None))
}

#[test]
fn a_seen_object_keeps_its_health_apart_only_when_it_is_not_current() {
    let ids = crate::desired::Ids::default();
    let gate = gate(1, ids.clone());
    let id = |name: &str| ObjectId {
        group: "apps".into(),
        kind: "Deployment".into(),
        namespace: "a-prod".into(),
        name: name.into(),
    };
    let converging = serde_json::json!({"kind": "Deployment", "metadata": {"generation": 2}, "status": {"observedGeneration": 1}});
    let current = serde_json::json!({"kind": "ConfigMap"});
    gate.observed("a", &ids.intern(&id("web")), false, &converging, || ());
    gate.observed("a", &ids.intern(&id("api")), false, &current, || ());
    let [web, api, other]: [Option<Health>; 3] = gate
        .health_of(&[id("web"), id("api"), id("other")])
        .try_into()
        .expect("one answer per id");
    assert!(matches!(web, Some(Health::InProgress(_))), "{web:?}");
    assert_eq!(api, Some(Health::Current));
    assert_eq!(other, None, "not seen");
    assert_eq!(
        lock(&gate.tracker).unhealthy.len(),
        1,
        "current: nothing held"
    );
    gate.observed("a", &ids.intern(&id("web")), false, &current, || ());
    assert!(lock(&gate.tracker).unhealthy.is_empty(), "healthy again");
    gate.observed("a", &ids.intern(&id("web")), false, &converging, || ());
    gate.gone("a", &id("web"));
    let t = lock(&gate.tracker);
    assert_eq!(t.unhashed.len(), 1, "gone: forgotten");
    assert!(t.unhealthy.is_empty(), "gone: forgotten");
}

#[test]
fn an_object_is_current_at_the_watched_hash_or_unhashed_at_the_applied_resource_version() {
    let live = Digest::from_hex(&"ab".repeat(32));
    let other = Digest::from_hex(&"cd".repeat(32));
    assert!(seen_at(None, Some(live), &applied(live, 7)), "same hash");
    assert!(
        !seen_at(None, Some(other), &applied(live, 7)),
        "an older hash, or a write no watch reported yet"
    );
    assert!(!seen_at(None, None, &applied(live, 7)), "not seen");
    assert!(
        seen_at(Some(7), None, &applied(live, 7)),
        "not hashed (its tenant not rendered when seen), same version"
    );
    assert!(!seen_at(Some(6), Some(live), &applied(live, 7)), "older");
    assert!(
        !seen_at(Some(0), None, &applied(live, 0)),
        "unknown versions never match"
    );
    let past = (1u64 << 32) + 7;
    assert!(seen_at(Some(past as u32), None, &applied(live, past)));
    assert!(!seen_at(Some(past as u32), None, &applied(live, past + 1)));
}

#[test]
fn resource_versions_that_are_not_numbers_are_unknown() {
    assert_eq!(version_number(Some("12345")), 12345);
    assert_eq!(version_number(Some("opaque-v1")), 0);
    assert_eq!(version_number(None), 0);
}

#[test]
fn the_gate_figures_are_exposed_and_a_tenant_no_longer_judged_leaves_them() {
    let gate = gate(3, crate::desired::Ids::default());
    let metrics = crate::metrics::Metrics::default();
    {
        let mut t = lock(&gate.tracker);
        t.verdicts.insert("a".into(), Verdict::Ready);
        t.verdicts.insert(
            "b".into(),
            Verdict::Stalled(vec![("Deployment b/web".into(), "timed out".into())]),
        );
    }
    let scrape = || {
        metrics.encode(fief_kube::counter::RequestStats::default(), |m| {
            gate.export(m)
        })
    };
    let text = scrape();
    for line in [
        "# HELP fief_tenants_in_flight Tenants of a rollout's current wave released and not yet healthy, stalled or failed (bounded by --max-in-flight; other syncs never wait).",
        "# TYPE fief_tenants_in_flight gauge",
        "fief_tenants_in_flight 0",
        "# HELP fief_tenants_in_flight_peak Highest fief_tenants_in_flight since start.",
        "# HELP fief_tenants_health Tenants by health verdict after their last apply.",
        "fief_tenants_health{state=\"ready\"} 1",
        "fief_tenants_health{state=\"reconciling\"} 0",
        "fief_tenants_health{state=\"stalled\"} 1",
        "# HELP fief_tenant_healthy 1 when the tenant's applied objects are healthy, 0 while waiting or stalled.",
        "fief_tenant_healthy{tenant=\"a\"} 1",
        "fief_tenant_healthy{tenant=\"b\"} 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in {text}");
    }
    let status = gate.status();
    assert_eq!(status.max_in_flight, 3);
    assert_eq!(
        status.tenants["b"].objects[0].object,
        "Deployment b/web".to_string()
    );
    lock(&gate.tracker).verdicts.remove("a");
    let text = scrape();
    assert!(!text.contains("tenant=\"a\""), "{text}");
    assert!(
        text.contains("fief_tenants_health{state=\"ready\"} 0"),
        "{text}"
    );
}
