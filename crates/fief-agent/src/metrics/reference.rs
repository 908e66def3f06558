//! The metrics reference page, built from the agent's registry so it cannot drift from what
//! `/metrics` serves.
//!
//! In: a default [`Metrics`] with each labelled family given one example label set (so its
//! label names show). Out: Markdown — a title, where `/metrics` is served, and a table of
//! every metric with its exposed name (counters with `_total`), type, label names and HELP
//! text. `docs/src/reference/metrics.md` holds the result; a test keeps the two equal.

use fief_kube::counter::RequestStats;

use super::{CategoryLabel, Metrics, NotificationLabel, ResultLabel, StateLabel, TenantLabel};

/// Where the agent serves `/metrics`, for the page's introduction.
const INTRO: &str = "Each agent Pod serves these metrics at `GET /metrics` on the address of \
`fief agent --listen` (default `0.0.0.0:8080`, the container port `http`, which the Pods' \
`prometheus.io/scrape` annotations point at), in the OpenMetrics text format. This page is \
generated from the agent's metrics registry.";

/// The metrics reference page (Markdown).
pub fn reference_markdown() -> String {
    let metrics = Metrics::default();
    let text = metrics.encode(RequestStats::default(), touch_examples);
    let mut out = format!(
        "# Metrics\n\n{INTRO}\n\n| Metric | Type | Labels | Meaning |\n|---|---|---|---|\n"
    );
    for f in families(&text) {
        let name = if f.kind == "counter" {
            format!("{}_total", f.name)
        } else {
            f.name.clone()
        };
        let labels = if f.labels.is_empty() {
            "—".to_string()
        } else {
            let quoted: Vec<String> = f.labels.iter().map(|l| format!("`{l}`")).collect();
            quoted.join(", ")
        };
        out.push_str(&format!(
            "| `{name}` | {} | {labels} | {} |\n",
            f.kind,
            f.help.replace('|', "\\|")
        ));
    }
    out
}

/// Give every labelled family one example label set.
fn touch_examples(m: &Metrics) {
    let result = ResultLabel {
        result: "success".into(),
    };
    let tenant = TenantLabel {
        tenant: "example".into(),
    };
    let state = StateLabel { state: "example" };
    let _ = m.syncs.get_or_create(&result);
    let _ = m.fetches.get_or_create(&result);
    let _ = m.tenant_seconds.get_or_create(&tenant);
    let _ = m.tenant_ready.get_or_create(&tenant);
    let _ = m.tenant_healthy.get_or_create(&tenant);
    let _ = m.failures.get_or_create(&CategoryLabel {
        category: "apply".into(),
    });
    let _ = m.tenants_health.get_or_create(&state);
    let _ = m.rollout_tenants.get_or_create(&state);
    let _ = m.notifications.get_or_create(&NotificationLabel {
        provider: "webhook".into(),
        result: "sent",
    });
}

/// One metric family of an exposition.
#[derive(Debug, Default)]
struct Family {
    name: String,
    kind: String,
    help: String,
    /// Label names of its samples, in order of appearance (`le` of histogram buckets left
    /// out).
    labels: Vec<String>,
    /// Whether any sample was seen.
    sampled: bool,
}

/// The families of an OpenMetrics text exposition, in order.
fn families(text: &str) -> Vec<Family> {
    let mut out: Vec<Family> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            out.push(Family {
                name: name.to_string(),
                help: help.to_string(),
                ..Family::default()
            });
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let (Some(f), Some((_, kind))) = (out.last_mut(), rest.split_once(' ')) {
                f.kind = kind.to_string();
            }
        } else if !line.starts_with('#')
            && let Some(f) = out.last_mut()
        {
            f.sampled = true;
            let labels = line
                .split_once('{')
                .and_then(|(_, r)| r.rsplit_once('}'))
                .map_or("", |(l, _)| l);
            for name in label_names(labels) {
                if name != "le" && !f.labels.contains(&name) {
                    f.labels.push(name);
                }
            }
        }
    }
    out
}

/// The names of a label set written `a="x",b="y\"z"`.
fn label_names(mut rest: &str) -> Vec<String> {
    let mut names = Vec::new();
    while let Some((name, after)) = rest.split_once("=\"") {
        names.push(name.trim_start_matches(',').to_string());
        let mut escaped = false;
        let end = after.char_indices().find(|(_, c)| {
            let quote = *c == '"' && !escaped;
            escaped = *c == '\\' && !escaped;
            quote
        });
        let Some((i, _)) = end else {
            break;
        };
        rest = &after[i + 1..];
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page, relative to this crate.
    const PAGE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/src/reference/metrics.md"
    );

    #[test]
    fn the_metrics_reference_page_is_the_one_the_registry_gives() {
        let want = reference_markdown();
        if std::env::var("FIEF_BLESS").as_deref() == Ok("1") {
            std::fs::write(PAGE, &want).expect("write the metrics reference");
            return;
        }
        let have = std::fs::read_to_string(PAGE).unwrap_or_default();
        let first = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| have.lines().count().min(want.lines().count()));
        assert!(
            have == want,
            "docs/src/reference/metrics.md is not what the agent's metrics registry gives \
             (first at line {}): run `FIEF_BLESS=1 cargo test -p fief-agent metrics_reference` \
             to rewrite it",
            first + 1
        );
    }

    #[test]
    fn every_family_shows_a_sample_so_its_labels_are_listed() {
        let metrics = Metrics::default();
        let text = metrics.encode(RequestStats::default(), touch_examples);
        let families = families(&text);
        assert!(families.len() > 20, "{text}");
        for f in &families {
            assert!(f.sampled, "{} has no example label set: {text}", f.name);
            assert!(!f.kind.is_empty() && !f.help.is_empty(), "{f:?}");
        }
        let syncs = families.iter().find(|f| f.name == "fief_tenant_syncs");
        assert_eq!(syncs.map(|f| f.labels.clone()), Some(vec!["result".into()]));
        let page = reference_markdown();
        assert!(page.contains("| `fief_tenant_syncs_total` | counter | `result` |"));
        assert!(
            page.contains("| `fief_tenant_reconcile_duration_seconds` | histogram | `tenant` |")
        );
        assert!(page.contains("| `fief_rollout_wave` | gauge | — |"));
    }

    #[test]
    fn label_names_are_read_past_quoted_values() {
        assert_eq!(
            label_names(r#"a="x,b=\"q\"",c="",le="0.5""#),
            vec!["a", "c", "le"]
        );
        assert!(label_names("").is_empty());
    }
}
