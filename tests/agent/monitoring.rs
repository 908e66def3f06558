//! The agent's alerts and dashboard against the series a real agent exports: an agent on the
//! real control plane syncs a repo where one tenant's template is broken and another's prune is
//! held by the mass-prune guard, its `/metrics` is scraped, and
//! - every metric name in every alert and every dashboard query is in that scrape;
//! - `promtool check rules` accepts the rule file and the dashboard's queries;
//! - `promtool test rules`, on input series built from the scrape, proves which alert fires in
//!   each scenario (the broken tenant, a healthy fleet, no leader, no agent, a halted rollout,
//!   a held prune, stalled tenants, failing or stale fetches) and that no other one does, and
//!   that every dashboard query returns data.
//!
//! One source of truth: `deploy/monitoring/prometheus-rules.yaml` is the groups of `fief
//! install --export --prometheus-rule` (`FIEF_BLESS=1 cargo test --test agent monitoring::` rewrites
//! it), and the chart's and the binary's dashboards are `deploy/monitoring/grafana-dashboard.json`.
//!
//! Needs the pinned promtool in `$FIEF_PROMTOOL_BIN` (tools/test.sh sets it from
//! tools/build-promtool.sh); without it these tests fail and say so.

use crate::common;
mod kit;
mod promql;
mod units;

use std::collections::BTreeSet;
use std::sync::OnceLock;
use std::time::Duration;

use common::agent::*;
use kit::*;
use serde_json::Value;
use units::{Case, Firing, constant, growing};

#[test]
fn the_plain_rule_file_is_the_groups_fief_install_exports_and_promtool_accepts_it() {
    let groups = exported_groups();
    let generated = rule_file(&groups);
    let path = repo_path(RULE_FILE);
    if std::env::var_os("FIEF_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).expect("write the rule file");
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == generated,
        "{RULE_FILE} is not what `fief install --export --prometheus-rule` gives: run \
         `FIEF_BLESS=1 cargo test --test agent monitoring::` and commit the result"
    );
    let doc = fief::core::yaml::split_documents(&current);
    let parsed = fief::core::yaml::parse_value(&doc[0]).expect("YAML");
    assert_eq!(parsed.map(|v| v["groups"].clone()), Some(groups));
    let out = promtool(&["check", "rules", path.to_str().expect("utf-8")]);
    assert!(out.contains("SUCCESS: 8 rules found"), "{out}");
}

#[test]
fn the_chart_and_fief_install_hold_the_plain_dashboard() {
    let plain = std::fs::read_to_string(repo_path(DASHBOARD)).expect("read the dashboard");
    let chart = std::fs::read_to_string(repo_path(CHART_DASHBOARD)).expect("read the copy");
    assert!(
        plain == chart,
        "{CHART_DASHBOARD} differs from {DASHBOARD}: copy it over"
    );
    let exported = export(&["--grafana-dashboard"]);
    let configmap = of_kind(&exported, "ConfigMap");
    assert_eq!(configmap["metadata"]["labels"]["grafana_dashboard"], "1");
    assert_eq!(
        configmap["data"]["fief-agent.json"].as_str(),
        Some(plain.as_str())
    );
    let dashboard: Value = serde_json::from_str(&plain).expect("the dashboard is JSON");
    assert_eq!(dashboard["uid"], "fief-agent");
    assert!(dashboard_queries(&dashboard).len() >= 20);
}

/// The broken tenant, and the series of one scrape of an agent that synced it, a good one and
/// one whose prune the mass-prune guard holds (with the target labels Prometheus adds).
struct Scrape {
    bad: String,
    series: Vec<Series>,
}

/// The labels a Prometheus scrape of the agent's Pod adds.
const TARGET: [(&str, &str); 3] = [
    ("namespace", NAMESPACE),
    ("pod", "fief-agent-5d9c8-x2x7q"),
    ("job", "fief-agent"),
];

/// The component's template: `app-extra` left out for `held` once it greets `bye` (a prune the
/// guard of `maxObjects: 0` holds), and a template error for `bad`.
fn template(bad: &str, held: &str) -> String {
    let config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  greeting: {{ values.greeting | quote }}\n";
    let extra =
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-extra\ndata:\n  k: v\n";
    format!(
        "{config}{{% if tenant.name != '{held}' or values.greeting != 'bye' %}}{extra}{{% endif %}}\
         {{% if tenant.name == '{bad}' %}}---\nbroken: {{{{ values.missing.field }}}}\n{{% endif %}}"
    )
}

/// One agent, scraped once for every test here, once every tenant has been judged.
fn scrape() -> &'static Scrape {
    static SCRAPE: OnceLock<Scrape> = OnceLock::new();
    SCRAPE.get_or_init(|| {
        let agent_ns = common::unique("fief-mon");
        let (good, bad) = (common::unique("good"), common::unique("bad"));
        let held = common::unique("held");
        let mut files = small_repo(&agent_ns, &[(&good, "hi"), (&bad, "hi"), (&held, "hi")]);
        for (path, text) in &mut files {
            match path.as_str() {
                "fief.yaml" => text.push_str("pruneGuard: {maxObjects: 0}\n"),
                "components/app/templates/app.yaml" => *text = template(&bad, &held),
                _ => {}
            }
        }
        let server = GitServer::new(&files);
        common::cluster_cli::kubectl_ok(&["create", "namespace", &agent_ns]);
        let agent = Agent::start(
            &server.url(),
            &["--lease-namespace", &agent_ns, "--interval", "300s"],
        );
        server.commit(&[tenant(&held, "bye")], "held drops app-extra");
        assert_eq!(agent.signed_push(), 202);
        let ready = |t: &str, v: u8| format!("fief_tenant_ready{{tenant=\"{t}\"}} {v}\n");
        let mut text = String::new();
        wait_until("every tenant judged", Duration::from_secs(60), || {
            text = agent.get("/metrics").map(|(_, t)| t).unwrap_or_default();
            text.contains(&ready(&good, 1))
                && text.contains(&ready(&bad, 0))
                && text.contains("fief_tenants_prune_held{reason=\"mass_prune\"} 1\n")
                && text.contains("fief_leader 1\n")
        });
        Scrape {
            bad,
            series: parse_scrape(&text, &TARGET),
        }
    })
}

/// The one series of `name` with these labels.
fn find<'a>(series: &'a [Series], name: &str, labels: &[(&str, &str)]) -> &'a Series {
    series
        .iter()
        .find(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .unwrap_or_else(|| panic!("no {name}{labels:?} in the scrape"))
}

#[test]
fn every_alert_and_dashboard_query_reads_only_metrics_the_agent_exports() {
    let exported: BTreeSet<&str> = scrape().series.iter().map(|s| s.name.as_str()).collect();
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(repo_path(DASHBOARD)).expect("read"))
            .expect("JSON");
    let alerts = rules(&exported_groups());
    let mut queries: Vec<(String, String)> = alerts
        .iter()
        .map(|r| {
            (
                r["alert"].to_string(),
                r["expr"].as_str().unwrap_or_default().into(),
            )
        })
        .collect();
    queries.extend(dashboard_queries(&dashboard));
    for (what, expr) in &queries {
        let names = promql::metric_names(expr);
        assert!(!names.is_empty(), "{what}: no metric in {expr}");
        for name in names {
            assert!(
                exported.contains(name.as_str()),
                "{what} reads {name}, which the agent does not export: {expr}\nexported: {exported:?}"
            );
        }
    }
}

/// A series to change: its name, labels and new value text.
type Change<'a> = (&'a str, &'a [(&'a str, &'a str)], String);

/// The scraped series, each held at its value, but the `changed` ones.
fn fleet(changed: &[Change]) -> Vec<(Series, String)> {
    let series = &scrape().series;
    let mut out: Vec<(Series, String)> = series
        .iter()
        .map(|s| (s.clone(), constant(s.value)))
        .collect();
    for (name, labels, values) in changed {
        let target = find(series, name, labels);
        let slot = out
            .iter_mut()
            .find(|(s, _)| s.selector() == target.selector())
            .expect("the series is in the fleet");
        slot.1 = values.clone();
    }
    out
}

/// The scraped fleet made healthy (every tenant ready, no prune held), with the `changed`
/// series and the `added` one.
fn healthy(changed: &[Change], added: Option<(Series, String)>) -> Vec<(Series, String)> {
    let mut out = fleet(changed);
    for (series, values) in &mut out {
        let healthy_value = match series.name.as_str() {
            "fief_tenant_ready" => 1.0,
            "fief_tenants_prune_held" => 0.0,
            _ => series.value,
        };
        let changed_here = changed.iter().any(|(name, labels, _)| {
            *name == series.name
                && labels
                    .iter()
                    .all(|(k, v)| series.labels.get(*k).map(String::as_str) == Some(*v))
        });
        if healthy_value != series.value && !changed_here {
            *values = constant(healthy_value);
        }
    }
    out.extend(added);
    out
}

/// What the scraped fleet fires: FiefTenantNotReady for each tenant not ready, FiefPruneHeld
/// for each reason a prune is held for.
fn scraped_firing(series: &[Series]) -> Vec<(&'static str, Firing)> {
    let mut firing = Vec::new();
    for s in series {
        if s.name == "fief_tenant_ready" && s.value == 0.0 {
            firing.push(("FiefTenantNotReady", Firing::of(s, 0.0)));
        }
        if s.name == "fief_tenants_prune_held" && s.value > 0.0 {
            let reason = s
                .labels
                .get("reason")
                .map(String::as_str)
                .unwrap_or_default();
            let labels = [("namespace", NAMESPACE), ("reason", reason)];
            firing.push(("FiefPruneHeld", Firing::new(&labels, s.value)));
        }
    }
    firing
}

#[test]
fn each_alert_fires_on_the_real_series_exactly_when_it_should() {
    let Scrape { bad, series } = scrape();
    let bad = bad.as_str();
    for (name, labels, value) in [
        ("fief_tenant_ready", &[("tenant", bad)][..], 0.0),
        ("fief_leader", &[], 1.0),
        ("fief_rollout_halted", &[], 0.0),
        ("fief_tenants_health", &[("state", "stalled")], 0.0),
        ("fief_tenants_prune_held", &[("reason", "mass_prune")], 1.0),
        (
            "fief_tenants_prune_held",
            &[("reason", "apply_failed")],
            0.0,
        ),
    ] {
        assert_eq!(find(series, name, labels).value, value, "{name}{labels:?}");
    }
    let cases = alert_cases(series, bad);
    let rule_file = repo_path(RULE_FILE);
    let alerts = rules(&exported_groups());
    let tests = units::alert_tests(rule_file.to_str().expect("utf-8"), &alerts, &cases);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("alerts.test.yaml");
    std::fs::write(&file, tests.to_string()).expect("write the unit tests");
    promtool(&["test", "rules", file.to_str().expect("utf-8")]);
}

/// The cases the alerts are tested on: the scraped fleet as it is (with the broken tenant
/// `bad`), and healthy fleets with one thing wrong each (or nothing).
fn alert_cases(series: &[Series], bad: &str) -> Vec<Case> {
    let agent = [("namespace", NAMESPACE)];
    let bad_tenant = [("tenant", bad)];
    let mut cases = vec![
        Case {
            name: "the scraped fleet: the broken tenant fails to sync, a prune is held",
            series: fleet(&[]),
            firing: scraped_firing(series),
        },
        Case {
            name: "a healthy fleet but a tenant that failed for ten minutes",
            series: healthy(
                &[("fief_tenant_ready", &bad_tenant, "0x10 1x50".into())],
                None,
            ),
            firing: vec![],
        },
        Case {
            name: "a healthy fleet",
            series: healthy(&[], None),
            firing: vec![],
        },
        Case {
            name: "no replica leads",
            series: healthy(&[("fief_leader", &[], constant(0.0))], None),
            firing: vec![("FiefNoLeader", Firing::new(&agent, 0.0))],
        },
        Case {
            name: "no agent is scraped",
            series: Vec::new(),
            firing: vec![("FiefAgentNotScraped", Firing::new(&agent, 1.0))],
        },
        Case {
            name: "the rollout is halted",
            series: healthy(&[("fief_rollout_halted", &[], constant(1.0))], None),
            firing: vec![("FiefRolloutHalted", Firing::new(&agent, 1.0))],
        },
        Case {
            name: "a prune is held by the mass-prune guard",
            series: healthy(
                &[(
                    "fief_tenants_prune_held",
                    &[("reason", "mass_prune")],
                    constant(1.0),
                )],
                None,
            ),
            firing: vec![(
                "FiefPruneHeld",
                Firing::new(&[("namespace", NAMESPACE), ("reason", "mass_prune")], 1.0),
            )],
        },
        Case {
            name: "two tenants are stalled on health",
            series: healthy(
                &[(
                    "fief_tenants_health",
                    &[("state", "stalled")],
                    constant(2.0),
                )],
                None,
            ),
            firing: vec![("FiefTenantsStalled", Firing::new(&agent, 2.0))],
        },
    ];
    cases.extend(fetch_cases(series));
    cases
}

/// Cases of the git fetch alerts: every fetch fails, some do, none has succeeded.
fn fetch_cases(series: &[Series]) -> Vec<Case> {
    let agent = [("namespace", NAMESPACE)];
    let success = find(series, "fief_git_fetches_total", &[("result", "success")]);
    let failure = success.with(&[("result", "failure")]);
    let stamp = find(series, "fief_git_last_fetch_timestamp_seconds", &[]);
    vec![
        Case {
            name: "every fetch fails",
            series: healthy(&[], Some((failure.clone(), growing(0.0)))),
            firing: vec![("FiefGitFetchFailing", Firing::new(&agent, 0.0))],
        },
        Case {
            name: "some fetches fail, others succeed",
            series: healthy(
                &[(
                    "fief_git_fetches_total",
                    &[("result", "success")],
                    growing(success.value),
                )],
                Some((failure.clone(), growing(0.0))),
            ),
            firing: vec![],
        },
        Case {
            name: "no fetch has succeeded",
            series: healthy(
                &[("fief_git_last_fetch_timestamp_seconds", &[], constant(0.0))],
                None,
            ),
            firing: vec![("FiefRepoNotFetched", Firing::of(stamp, 0.0))],
        },
    ]
}

#[test]
fn every_dashboard_query_is_valid_promql_and_returns_data_on_the_real_series() {
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(repo_path(DASHBOARD)).expect("read"))
            .expect("JSON");
    let queries = dashboard_queries(&dashboard);
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = dir.path().join("dashboard.rules.yaml");
    std::fs::write(&rules, units::query_rules(&queries).to_string()).expect("write");
    let rules = rules.to_str().expect("utf-8");
    promtool(&["check", "rules", rules]);
    let tests = units::query_tests(rules, &queries, &scrape().series);
    let file = dir.path().join("dashboard.test.yaml");
    std::fs::write(&file, tests.to_string()).expect("write the unit tests");
    promtool(&["test", "rules", file.to_str().expect("utf-8")]);
}
