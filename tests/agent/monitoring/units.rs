//! promtool rule unit tests built from a real scrape: each case is the scraped series (their
//! real names and label sets, plus the target labels Prometheus adds), some of them set to
//! another value over time, and says exactly which alerts fire — every other alert is expected
//! not to. The dashboard's queries become alerts that fire when a query returns data.
//!
//! In: the series, the rules (for their annotations), the cases. Out: promtool's unit-test
//! files (JSON, which promtool reads as YAML).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::kit::Series;

/// Samples per series: an hour at one a minute.
const STEPS: usize = 60;
/// When the alerts are looked at: past every rule's `for`.
pub const EVAL: &str = "45m";

/// The value text of a series held at `value` for the hour.
pub fn constant(value: f64) -> String {
    format!("{}+0x{STEPS}", number(value))
}

/// A counter that grows by one a minute from `start`.
pub fn growing(start: f64) -> String {
    format!("{}+1x{STEPS}", number(start))
}

/// A number as Prometheus' templates print `$value` (no `.0` on whole numbers).
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// An alert expected to fire: its labels (the rule's `severity` is added) and the value its
/// annotations print.
pub struct Firing {
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

impl Firing {
    pub fn new(labels: &[(&str, &str)], value: f64) -> Firing {
        Firing {
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value,
        }
    }

    /// The labels of `series` (its name left out, as an alert leaves it out).
    pub fn of(series: &Series, value: f64) -> Firing {
        Firing {
            labels: series.labels.clone(),
            value,
        }
    }
}

/// One scenario: its series with their value texts, and the alerts expected to fire.
pub struct Case {
    pub name: &'static str,
    pub series: Vec<(Series, String)>,
    pub firing: Vec<(&'static str, Firing)>,
}

/// `text` with Prometheus' template references replaced as it renders them for an alert.
fn render(text: &str, labels: &BTreeMap<String, String>, value: f64) -> String {
    let mut out = text.replace("{{ $value }}", &number(value));
    for (k, v) in labels {
        out = out.replace(&format!("{{{{ $labels.{k} }}}}"), v);
    }
    out
}

/// What promtool expects of one alert: its labels with the rule's, its annotations rendered.
fn expected(rule: &Value, firing: &Firing) -> Value {
    let mut labels = firing.labels.clone();
    for (k, v) in rule["labels"].as_object().into_iter().flatten() {
        labels.insert(k.clone(), v.as_str().unwrap_or_default().to_string());
    }
    let annotations: BTreeMap<String, String> = rule["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let text = v.as_str().unwrap_or_default();
            (k.clone(), render(text, &labels, firing.value))
        })
        .collect();
    json!({"exp_labels": labels, "exp_annotations": annotations})
}

/// The unit-test file: every case checks every alert of `rules` at [`EVAL`].
pub fn alert_tests(rule_file: &str, rules: &[Value], cases: &[Case]) -> Value {
    let tests: Vec<Value> = cases
        .iter()
        .map(|case| {
            let checks: Vec<Value> = rules
                .iter()
                .map(|rule| {
                    let name = rule["alert"].as_str().unwrap_or_default();
                    let alerts: Vec<Value> = case
                        .firing
                        .iter()
                        .filter(|(alert, _)| *alert == name)
                        .map(|(_, firing)| expected(rule, firing))
                        .collect();
                    json!({"eval_time": EVAL, "alertname": name, "exp_alerts": alerts})
                })
                .collect();
            json!({
                "name": case.name,
                "interval": "1m",
                "input_series": input(&case.series),
                "alert_rule_test": checks,
            })
        })
        .collect();
    json!({"rule_files": [rule_file], "evaluation_interval": "1m", "tests": tests})
}

fn input(series: &[(Series, String)]) -> Vec<Value> {
    series
        .iter()
        .map(|(s, values)| json!({"series": s.selector(), "values": values}))
        .collect()
}

/// The alert name a dashboard query is checked under.
fn query_alert(i: usize) -> String {
    format!("FiefDashboardQuery{i}")
}

/// A rule file with one alert per query, firing whenever the query returns any sample.
pub fn query_rules(queries: &[(String, String)]) -> Value {
    let rules: Vec<Value> = queries
        .iter()
        .enumerate()
        .map(|(i, (title, expr))| {
            json!({
                "alert": query_alert(i),
                "expr": format!("count({expr}) >= 0"),
                "annotations": {"panel": title},
            })
        })
        .collect();
    json!({"groups": [{"name": "fief-dashboard", "rules": rules}]})
}

/// The unit test: on `series`, every query's alert fires (the query returns data).
pub fn query_tests(rule_file: &str, queries: &[(String, String)], series: &[Series]) -> Value {
    let checks: Vec<Value> = queries
        .iter()
        .enumerate()
        .map(|(i, (title, _))| {
            json!({
                "eval_time": EVAL,
                "alertname": query_alert(i),
                "exp_alerts": [{"exp_labels": {}, "exp_annotations": {"panel": title}}],
            })
        })
        .collect();
    let series: Vec<(Series, String)> = series
        .iter()
        .map(|s| (s.clone(), constant(s.value)))
        .collect();
    json!({
        "rule_files": [rule_file],
        "evaluation_interval": "1m",
        "tests": [{
            "name": "every dashboard query returns data on the scraped series",
            "interval": "1m",
            "input_series": input(&series),
            "alert_rule_test": checks,
        }],
    })
}
