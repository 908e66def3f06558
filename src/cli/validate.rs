//! `fief validate`: render and check every tenant; a summary per tenant.
//!
//! In: [`ValidateArgs`] (with `--env`, only those environments are rendered and checked).
//! Out: a summary (text or JSON) on stdout; diagnostics on stderr; exit code 0 or 1.

use std::io::Write;
use std::path::Path;

use super::secrets::WithoutKey;
use super::{
    CliError, EXIT_INVALID, EXIT_OK, Format, ValidateArgs, render_streamed, report_errors,
    write_err,
};

/// `fief validate`.
pub fn validate_cmd(args: &ValidateArgs) -> Result<u8, CliError> {
    // Rendered a batch at a time; only each tenant's object count is kept of its objects.
    let mut objects: Vec<usize> = Vec::new();
    let renders = render_streamed(&args.repo, WithoutKey::Redact, &args.envs, |batch| {
        objects.extend(batch.iter().map(|r| r.objects.len()));
        Ok(())
    })?;
    let failed = report_errors(&renders);
    let mut out = String::new();
    match args.output {
        Format::Json => {
            let summary: Vec<_> = renders
                .iter()
                .zip(&objects)
                .map(|(r, objects)| {
                    serde_json::json!({
                        "tenant": r.tenant,
                        "ok": r.is_ok(),
                        "state": r.state,
                        "namespaces": namespaces(r),
                        "objects": objects,
                        "errors": r.errors.iter().map(|d| serde_json::json!({
                            "file": d.file, "line": d.line, "message": d.problem.to_string(),
                            "hint": d.problem.hint(),
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect();
            out.push_str(&serde_json::to_string_pretty(&summary).unwrap_or_default());
            out.push('\n');
        }
        Format::Text => {
            for (r, objects) in renders.iter().zip(&objects) {
                if r.is_ok() {
                    out.push_str(&format!(
                        "{}: ok ({} namespaces, {} objects)\n",
                        r.tenant,
                        namespaces(r).len(),
                        objects
                    ));
                } else {
                    out.push_str(&format!(
                        "{}: INVALID ({} errors)\n",
                        r.tenant,
                        r.errors.len()
                    ));
                }
            }
            let bad = renders.iter().filter(|r| !r.is_ok()).count();
            out.push_str(&format!(
                "{}, {} valid, {} invalid\n",
                super::words::count(renders.len(), "tenant"),
                renders.len() - bad,
                bad
            ));
        }
    }
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(write_err(Path::new("<stdout>")))?;
    Ok(if failed { EXIT_INVALID } else { EXIT_OK })
}

/// The tenant's namespaces of the environments validated (`--env`).
fn namespaces(r: &crate::core::render::TenantRender) -> Vec<&String> {
    r.namespaces
        .iter()
        .filter(|(env, _)| r.scope.includes(env))
        .map(|(_, ns)| ns)
        .collect()
}
