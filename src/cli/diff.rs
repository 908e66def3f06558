//! `fief diff`: what `apply` would change, per object, and what it would prune.
//!
//! In: [`DiffArgs`]. Out: unified diffs on stdout (updates, creates and every prune apply
//! would do), notes (client-side fallback for read-only callers, skipped tenants) and errors
//! (including applies the API server would refuse) on stderr; exit code 0 no difference, 1
//! differences or invalid tenants, 3 cluster failure or a refusal apply would hit.

use std::io::{IsTerminal, Write};

use super::{
    CliError, Colour, DiffArgs, EXIT_EXTERNAL, EXIT_INVALID, EXIT_OK, load_and_render,
    report_errors, resources, runtime,
};
use crate::kube::diff;

/// `fief diff`.
pub fn diff_cmd(args: &DiffArgs) -> Result<u8, CliError> {
    if let Some(from) = &args.from {
        return super::compare::compare_cmd(args, from);
    }
    if args.output != super::DiffFormat::Text {
        return Err(CliError::Usage(
            "--output json|markdown needs --from (a diff against the cluster prints text)"
                .to_string(),
        ));
    }
    let (repo, renders) = load_and_render(&args.repo)?;
    let invalid = report_errors(&renders);
    let config = repo.config.as_ref().map_err(|_| CliError::Config)?;
    let outcome = runtime()?.block_on(async {
        let (resources, _) = resources(&args.cluster).await?;
        Ok::<_, CliError>(
            diff::diff(
                &resources,
                &renders,
                &config.agent_namespace,
                &args.cluster_name,
                &config.prune_guard,
            )
            .await?,
        )
    })?;
    let (diffs, errors) = (&outcome.diffs, &outcome.errors);
    let colour = match args.color {
        Colour::Always => true,
        Colour::Never => false,
        Colour::Auto => std::io::stdout().is_terminal(),
    };
    let mut out = String::new();
    for d in diffs {
        out.push_str(&format!("# tenant {}: {} {}\n", d.tenant, d.action, d.id));
        out.push_str(&if colour {
            diff::colourise(&d.text)
        } else {
            d.text.clone()
        });
    }
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    let mut stderr = std::io::stderr().lock();
    for n in &outcome.notes {
        let _ = writeln!(stderr, "note: {n}");
    }
    for e in errors {
        let _ = writeln!(stderr, "error: {e}");
    }
    Ok(if !errors.is_empty() {
        EXIT_EXTERNAL
    } else if invalid || !diffs.is_empty() {
        EXIT_INVALID
    } else {
        EXIT_OK
    })
}
