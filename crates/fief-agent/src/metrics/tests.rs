//! The registry's exposition: sent in chunks of a bound, and the rollout's figures with their
//! help.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exposition_is_sent_in_chunks_of_a_bound_whatever_the_fleet() {
    let metrics = std::sync::Arc::new(Metrics::default());
    for n in 0..200 {
        let tenant = format!("tenant-{n:04}");
        metrics.observe_tenant(&tenant, 0.02 * f64::from(n));
        metrics.tenant_ready(&tenant, n % 3 != 0);
    }
    let text = metrics.encode(RequestStats::default(), |_| {});
    assert!(text.len() > 200 * 1000, "a histogram per tenant");
    assert!(text.contains("fief_tenant_reconcile_duration_seconds_bucket{"));
    assert!(text.contains("fief_tenant_ready{tenant=\"tenant-0003\"} 0"));
    assert!(text.ends_with("# EOF\n"));
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    let handle = tokio::runtime::Handle::current();
    let sent = metrics.clone();
    let writer = tokio::task::spawn_blocking(move || {
        let mut out = streamed::Chunks::new(tx, handle, streamed::SCRAPE_WAIT);
        sent.encode_to(RequestStats::default(), |_| {}, &mut out)?;
        out.flush()?;
        Ok::<usize, std::fmt::Error>(out.largest)
    });
    let mut chunks = 0;
    let mut got = Vec::new();
    while let Some(chunk) = rx.recv().await {
        chunks += 1;
        got.extend_from_slice(&chunk);
    }
    let largest = writer.await.ok().and_then(Result::ok).unwrap_or(usize::MAX);
    assert_eq!(String::from_utf8(got).ok(), Some(text.clone()));
    assert!(
        chunks >= text.len() / streamed::CHUNK_BYTES,
        "{chunks} chunks"
    );
    assert!(
        largest < streamed::CHUNK_BYTES + 1024,
        "a chunk held {largest} bytes of {}",
        text.len()
    );
}

#[test]
fn fleet_sync_durations_are_one_histogram_without_the_tenant_label() {
    let metrics = Metrics::new(SyncDurations::Fleet);
    for n in 0..200 {
        metrics.observe_tenant(&format!("tenant-{n:04}"), 0.001);
        metrics.tenant_ready(&format!("tenant-{n:04}"), true);
    }
    let text = metrics.encode(RequestStats::default(), |_| {});
    let durations: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("fief_tenant_reconcile_duration_seconds"))
        .collect();
    assert!(
        durations.iter().all(|l| !l.contains("tenant=")),
        "{durations:?}"
    );
    assert!(
        durations.contains(&"fief_tenant_reconcile_duration_seconds_count 200"),
        "every tenant's sync counted once: {durations:?}"
    );
    assert!(
        durations.contains(&"fief_tenant_reconcile_duration_seconds_bucket{le=\"0.005\"} 200"),
        "{durations:?}"
    );
    assert!(
        text.contains("fief_tenant_ready{tenant=\"tenant-0003\"} 1"),
        "the per-tenant gauges stay"
    );
    let per_tenant = Metrics::default();
    per_tenant.observe_tenant("tenant-0001", 0.001);
    let text = per_tenant.encode(RequestStats::default(), |_| {});
    assert!(
        text.contains("fief_tenant_reconcile_duration_seconds_count{tenant=\"tenant-0001\"} 1")
    );
}

#[test]
fn the_rollout_figures_are_exposed_with_their_help() {
    use fief_core::rollout::{Phase, Record, Wave};
    let wave = |name: &str, tenants: &[&str]| Wave {
        name: name.into(),
        tenants: tenants.iter().map(|t| t.to_string()).collect(),
    };
    let mut record = Record {
        commit: "c".into(),
        phase: Phase::Halted,
        wave: 1,
        waves: vec![
            wave("canary", &["a"]),
            wave("early", &["b", "c"]),
            wave("rest", &["d"]),
        ],
        reason: Some("tenant b: stalled".into()),
        held: [("d".to_string(), "old".to_string())].into(),
        started_at: "t0".into(),
        updated_at: "t1".into(),
    };
    let metrics = Metrics::default();
    let scrape = |r: Option<&Record>| {
        metrics.encode(RequestStats::default(), |m| crate::rollout::export(m, r))
    };
    let text = scrape(Some(&record));
    for line in [
        "# HELP fief_rollout_wave The rollout's current wave (1-based; 0: no rollout).",
        "# TYPE fief_rollout_wave gauge",
        "fief_rollout_wave 2",
        "# HELP fief_rollout_waves Waves of the current rollout.",
        "fief_rollout_waves 3",
        "# HELP fief_rollout_halted 1 while the rollout is halted by an unhealthy or failed tenant.",
        "fief_rollout_halted 1",
        "# HELP fief_rollout_tenants Tenants of the current rollout: updated (earlier waves), pending (current wave), held (later waves).",
        "fief_rollout_tenants{state=\"updated\"} 1",
        "fief_rollout_tenants{state=\"pending\"} 2",
        "fief_rollout_tenants{state=\"held\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in {text}");
    }
    record.phase = Phase::Complete;
    record.held.clear();
    let text = scrape(Some(&record));
    assert!(text.contains("fief_rollout_halted 0"), "{text}");
    assert!(
        text.contains("fief_rollout_tenants{state=\"updated\"} 4"),
        "{text}"
    );
    let text = scrape(None);
    assert!(text.contains("fief_rollout_wave 0\n"), "{text}");
    assert!(
        text.contains("fief_rollout_tenants{state=\"pending\"} 0"),
        "{text}"
    );
}
