//! `fief render --values`: each component's values per environment, key by key, with the
//! file and line of the layer that set it (the precedence, shown).
//!
//! In: [`RenderArgs`] (repo, tenants, `--env`, `-o`). Out: per tenant, component and
//! environment, `key: value   file:line` lines (or one JSON array) on stdout; the problems of
//! tenants that cannot be read on stderr, exit 1. Nothing is rendered or decrypted.

use std::io::Write;

use super::secrets::WithoutKey;
use super::{CliError, EXIT_INVALID, EXIT_OK, RenderArgs, RenderFormat, load_repo_with};
use crate::core::render::provenance::{self, ValuesTrace};

/// `fief render --values`.
pub fn values_cmd(args: &RenderArgs) -> Result<u8, CliError> {
    let repo = load_repo_with(&args.repo, WithoutKey::Never)?;
    let tenants: Vec<String> = if args.repo.tenants.is_empty() {
        repo.tenants.keys().cloned().collect()
    } else {
        args.repo.tenants.clone()
    };
    let mut traces: Vec<(String, Vec<ValuesTrace>)> = Vec::new();
    let mut failed = false;
    let mut stderr = std::io::stderr().lock();
    for tenant in &tenants {
        match provenance::trace(&repo, tenant) {
            Ok(mut t) => {
                t.retain(|v| args.envs.is_empty() || args.envs.contains(&v.env));
                traces.push((tenant.clone(), t));
            }
            Err(diagnostics) => {
                failed = true;
                for d in diagnostics {
                    let _ = writeln!(stderr, "{} {d}", super::colour::error_prefix());
                }
            }
        }
    }
    let out = match args.output {
        RenderFormat::Json => json(&traces)?,
        RenderFormat::Yaml => text(&traces),
    };
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    Ok(if failed { EXIT_INVALID } else { EXIT_OK })
}

fn json(traces: &[(String, Vec<ValuesTrace>)]) -> Result<String, CliError> {
    let rows: Vec<serde_json::Value> = traces
        .iter()
        .flat_map(|(tenant, ts)| {
            ts.iter().map(move |t| {
                serde_json::json!({
                    "tenant": tenant,
                    "component": t.component,
                    "env": t.env,
                    "values": t.values,
                })
            })
        })
        .collect();
    serde_json::to_string_pretty(&rows)
        .map(|s| s + "\n")
        .map_err(|e| CliError::Serialize(e.to_string()))
}

fn text(traces: &[(String, Vec<ValuesTrace>)]) -> String {
    let mut out = String::new();
    for (tenant, ts) in traces {
        for t in ts {
            out.push_str(&format!("# {tenant} / {} / {}\n", t.component, t.env));
            let lines: Vec<(String, String)> = t
                .values
                .iter()
                .map(|v| {
                    let value = serde_json::to_string(&v.value).unwrap_or_default();
                    let at = match v.line {
                        Some(line) => format!("{}:{line}", v.file),
                        None => v.file.clone(),
                    };
                    (format!("{}: {value}", v.key), at)
                })
                .collect();
            let width = lines.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
            for (line, at) in lines {
                out.push_str(&format!("{line:<width$}   # {at}\n"));
            }
        }
    }
    out
}
