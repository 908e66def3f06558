//! `fief validate`: render and check every tenant; a summary per tenant.
//!
//! In: [`ValidateArgs`] (with `--env`, only those environments are rendered and checked).
//! Out: a summary (text or JSON) on stdout; diagnostics on stderr; exit code 0 or 1.

use std::io::Write;
use std::path::Path;

use super::repo::Streamed;
use super::secrets::WithoutKey;
use super::{
    CliError, EXIT_INVALID, EXIT_OK, Format, ValidateArgs, render_streamed, report_errors,
    write_err,
};
use crate::core::render::TenantRender;

/// What the summary reads of one tenant's render, kept once its objects are dropped: its
/// object count and how many namespaces of the environments validated it has (a few bytes
/// a tenant, for fleets of any size), and those namespaces for `-o json`.
#[derive(Default)]
struct Seen {
    counts: Vec<(u32, u32)>,
    namespaces: Vec<Vec<String>>,
}

/// `fief validate`.
pub fn validate_cmd(args: &ValidateArgs) -> Result<u8, CliError> {
    // Rendered a batch at a time; of each tenant only what the summary prints is kept.
    let json = args.output == Format::Json;
    let mut seen = Seen::default();
    let renders = render_streamed(&args.repo, WithoutKey::Redact, &args.envs, |batch| {
        for r in batch {
            let ns = namespaces(r);
            let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
            seen.counts.push((count(r.objects.len()), count(ns.len())));
            if json {
                seen.namespaces.push(ns.into_iter().cloned().collect());
            }
        }
        Ok(())
    })?;
    let failed = report_errors(&renders.failed);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match args.output {
        Format::Json => write_json(&mut out, &renders, &seen),
        Format::Text => write_text(&mut out, &renders, &seen),
    }
    .and_then(|()| out.flush())
    .map_err(write_err(Path::new("<stdout>")))?;
    Ok(if failed { EXIT_INVALID } else { EXIT_OK })
}

/// The summary as one JSON array, pretty-printed, an item at a time.
fn write_json(out: &mut impl Write, renders: &Streamed, seen: &Seen) -> std::io::Result<()> {
    if renders.tenants.is_empty() {
        return out.write_all(b"[]\n");
    }
    out.write_all(b"[\n")?;
    let all = renders
        .tenants
        .iter()
        .zip(&seen.counts)
        .zip(&seen.namespaces);
    for (i, ((t, (objects, _)), namespaces)) in all.enumerate() {
        let errors = t
            .failed
            .map_or(&[][..], |at| &renders.failed[at as usize].errors);
        let item = serde_json::json!({
            "tenant": t.tenant,
            "ok": t.failed.is_none(),
            "state": t.state,
            "namespaces": namespaces,
            "objects": objects,
            "errors": errors.iter().map(|d| serde_json::json!({
                "file": d.file, "line": d.line, "message": d.problem.to_string(),
                "hint": d.problem.hint(),
            })).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&item).unwrap_or_default();
        if i > 0 {
            out.write_all(b",\n")?;
        }
        for (n, line) in text.lines().enumerate() {
            if n > 0 {
                out.write_all(b"\n")?;
            }
            write!(out, "  {line}")?;
        }
    }
    out.write_all(b"\n]\n")
}

/// The summary as text: a line per tenant, then the counts.
fn write_text(out: &mut impl Write, renders: &Streamed, seen: &Seen) -> std::io::Result<()> {
    for (t, (objects, namespaces)) in renders.tenants.iter().zip(&seen.counts) {
        match t.failed {
            None => writeln!(
                out,
                "{}: ok ({namespaces} namespaces, {objects} objects)",
                t.tenant
            )?,
            Some(at) => writeln!(
                out,
                "{}: INVALID ({} errors)",
                t.tenant,
                renders.failed[at as usize].errors.len()
            )?,
        }
    }
    let (all, bad) = (renders.tenants.len(), renders.failed.len());
    writeln!(
        out,
        "{}, {} valid, {} invalid",
        super::words::count(all, "tenant"),
        all - bad,
        bad
    )
}

/// The tenant's namespaces of the environments validated (`--env`).
fn namespaces(r: &TenantRender) -> Vec<&String> {
    r.namespaces
        .iter()
        .filter(|(env, _)| r.scope.includes(env))
        .map(|(_, ns)| ns)
        .collect()
}
