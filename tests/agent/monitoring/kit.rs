//! The monitoring tests' kit: run promtool, read an OpenMetrics scrape into series, take the
//! alert groups out of `fief install --export`, write them as a Prometheus rule file, and read
//! the dashboard's queries.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The namespace the plain rule file selects (the default install's).
pub const NAMESPACE: &str = "fief-system";
/// The plain rule file, generated from `fief install --export --prometheus-rule`.
pub const RULE_FILE: &str = "deploy/monitoring/prometheus-rules.yaml";
/// The plain dashboard, and the chart's copy of it.
pub const DASHBOARD: &str = "deploy/monitoring/grafana-dashboard.json";
pub const CHART_DASHBOARD: &str = "deploy/chart/fief/dashboards/fief-agent.json";

pub fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The pinned promtool (`FIEF_PROMTOOL_BIN`, set by tools/test.sh); a test that needs it
/// fails without it, saying how to get it.
pub fn promtool_bin() -> PathBuf {
    match std::env::var_os("FIEF_PROMTOOL_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "FIEF_PROMTOOL_BIN is not set: this test needs the pinned promtool. Run tools/test.sh, \
             or export FIEF_PROMTOOL_BIN=\"$(tools/build-promtool.sh)\" first"
        ),
    }
}

/// `promtool ARGS`, which must succeed; its stdout.
pub fn promtool(args: &[&str]) -> String {
    let out = Command::new(promtool_bin())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", promtool_bin().display()));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "promtool {args:?} failed:\n{stdout}{stderr}"
    );
    stdout.into_owned()
}

/// `fief install --export` of the default install with `extra` options: its objects.
pub fn export(extra: &[&str]) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_fief"))
        .args(["install", "--export", "--image", "example.test/fief:1"])
        .args(["--repo", "https://git.example.test/t.git"])
        .args(extra)
        .output()
        .expect("run fief");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = String::from_utf8_lossy(&out.stdout);
    fief::core::yaml::split_documents(&yaml)
        .iter()
        .filter_map(|d| fief::core::yaml::parse_value(d).expect("export is YAML"))
        .collect()
}

/// The object of `kind` among `objects`.
pub fn of_kind<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} exported"))
}

/// The alert groups `fief install --export --prometheus-rule` makes.
pub fn exported_groups() -> Value {
    of_kind(&export(&["--prometheus-rule"]), "PrometheusRule")["spec"]["groups"].clone()
}

/// Every rule of `groups`.
pub fn rules(groups: &Value) -> Vec<Value> {
    groups
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// A YAML scalar: plain when it reads back as the same string, else single-quoted.
fn scalar(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && text.parse::<f64>().is_err()
        && !["true", "false", "null", "yes", "no", "on", "off", "y", "n"]
            .contains(&text.to_ascii_lowercase().as_str());
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "''"))
    }
}

const HEADER: &str = "\
# The fief agent's alerts as a Prometheus rule file, for a Prometheus without the
# prometheus-operator: list it under `rule_files:` in prometheus.yml. The expressions select
# the agent's series by the target label namespace=\"fief-system\"; for another namespace take
# the groups of `fief install --export --prometheus-rule --namespace NS`.
# Generated from `fief install --export --prometheus-rule` by
# `FIEF_BLESS=1 cargo test --test agent monitoring::`; do not edit.
";

/// `groups` as a rule file: the header, then each rule's fields in the order people read them.
pub fn rule_file(groups: &Value) -> String {
    let mut out = format!("{HEADER}groups:\n");
    let text = |v: &Value| scalar(v.as_str().unwrap_or_default());
    for group in groups.as_array().into_iter().flatten() {
        out.push_str(&format!("  - name: {}\n    rules:\n", text(&group["name"])));
        for rule in group["rules"].as_array().into_iter().flatten() {
            out.push_str(&format!("      - alert: {}\n", text(&rule["alert"])));
            for key in ["expr", "for"] {
                out.push_str(&format!("        {key}: {}\n", text(&rule[key])));
            }
            for map in ["labels", "annotations"] {
                out.push_str(&format!("        {map}:\n"));
                let mut entries: Vec<(&String, &Value)> =
                    rule[map].as_object().into_iter().flatten().collect();
                // The summary before the description it sums up.
                entries.sort_by_key(|(k, _)| (k.as_str() != "summary", k.as_str()));
                for (k, v) in entries {
                    out.push_str(&format!("          {k}: {}\n", text(v)));
                }
            }
        }
    }
    out
}

/// One sample of a scrape: its name, labels and value.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

impl Series {
    /// `name{k="v",...}` with `extra` labels added.
    pub fn selector(&self) -> String {
        let labels: Vec<String> = self
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={}", serde_json::to_string(v).unwrap_or_default()))
            .collect();
        format!("{}{{{}}}", self.name, labels.join(","))
    }

    /// A copy with these labels set.
    pub fn with(&self, labels: &[(&str, &str)]) -> Series {
        let mut s = self.clone();
        for (k, v) in labels {
            s.labels.insert(k.to_string(), v.to_string());
        }
        s
    }
}

/// The samples of an OpenMetrics text, each with the `target` labels added (what Prometheus
/// adds when it scrapes).
pub fn parse_scrape(text: &str, target: &[(&str, &str)]) -> Vec<Series> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let (head, value) = line.rsplit_once(' ').expect("a sample has a value");
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("value of {line}"));
            let (name, labels) = match head.split_once('{') {
                Some((name, rest)) => (name, parse_labels(rest.trim_end_matches('}'))),
                None => (head, BTreeMap::new()),
            };
            let series = Series {
                name: name.to_string(),
                labels,
                value,
            };
            series.with(target)
        })
        .collect()
}

/// `k="v",k2="v2"` (values as the exposition escapes them).
fn parse_labels(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = text;
    while let Some((key, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => value.push(chars.next().map_or('\\', |(_, c)| c)),
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        out.insert(key.trim_start_matches(',').to_string(), value);
        rest = &after[end..];
    }
    out
}

/// Every query of the dashboard: (panel title, expression) with Grafana's variables replaced
/// by what they stand for (`$namespace`: the agent's; `$__rate_interval`: 5m).
pub fn dashboard_queries(dashboard: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().into_iter().flatten() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or_default();
            let expr = expr
                .replace("$namespace", NAMESPACE)
                .replace("$__rate_interval", "5m");
            let title = panel["title"].as_str().unwrap_or_default();
            out.push((format!("{title} {}", target["refId"]), expr));
        }
    }
    out
}
