//! `fief diff`: what `apply` would change, per object, and what it would prune.
//!
//! In: [`DiffArgs`]. Out: unified diffs on stdout (updates, creates and every prune apply
//! would do, and the orphaned tenants), notes (client-side fallback for read-only callers,
//! skipped tenants, Secrets not compared without the age key, with `--adopt` the existing
//! objects `apply --adopt` takes with no change) and errors (including applies the API
//! server would refuse) on stderr; exit code 0 no difference, 1 differences, orphans
//! or invalid tenants, 3 cluster failure or a refusal apply would hit.

use std::collections::BTreeMap;
use std::io::Write;

use super::secrets::WithoutKey;
use super::{
    CliError, DiffArgs, EXIT_EXTERNAL, EXIT_INVALID, EXIT_OK, load_and_render_envs, report_errors,
    resources, runtime,
};
use crate::core::compare::{Action, Comparison, ObjectChange, TenantChange};
use crate::core::render::TenantRender;
use crate::kube::diff::{self, ObjectDiff};

/// `fief diff`.
pub fn diff_cmd(args: &DiffArgs) -> Result<u8, CliError> {
    if let Some(from) = &args.from {
        return super::compare::compare_cmd(args, from);
    }
    let (repo, renders) = load_and_render_envs(&args.repo, WithoutKey::Redact, &args.envs)?;
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
                args.adopt,
            )
            .await?,
        )
    })?;
    let (diffs, errors) = (&outcome.diffs, &outcome.errors);
    let comparison = summarise(&renders, diffs);
    let text = super::compare::report(&comparison, args, "cluster -> repo", "cluster → repo")?;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    let mut stderr = std::io::stderr().lock();
    for n in &outcome.notes {
        let _ = writeln!(stderr, "note: {n}");
    }
    if !outcome.adoptable.is_empty() {
        let n = outcome.adoptable.len();
        let _ = writeln!(
            stderr,
            "note: `fief apply --adopt` takes {n} existing object{} with no change:",
            if n == 1 { "" } else { "s" }
        );
        for a in &outcome.adoptable {
            let _ = writeln!(stderr, "  {a}");
        }
    }
    for e in errors {
        let _ = writeln!(stderr, "{} {e}", super::colour::error_prefix());
    }
    // Only a diff of the whole repo can tell a removed tenant file from a tenant left out.
    let orphans: &[(String, usize)] = if args.repo.tenants.is_empty() {
        &outcome.orphans
    } else {
        &[]
    };
    let mut stdout = std::io::stdout().lock();
    for (tenant, objects) in orphans {
        let _ = writeln!(
            stdout,
            "{tenant}: orphaned: tenant file removed from git; apply leaves its {objects} \
             objects running (restore the file with state: purged to delete them)"
        );
    }
    Ok(if !errors.is_empty() {
        EXIT_EXTERNAL
    } else if invalid || !diffs.is_empty() || !orphans.is_empty() {
        EXIT_INVALID
    } else {
        EXIT_OK
    })
}

/// The cluster diff as a [`Comparison`]: per tenant the objects apply would create, update
/// and prune, grouped like a pull-request diff.
fn summarise(renders: &[TenantRender], diffs: &[ObjectDiff]) -> Comparison {
    let mut by_tenant: BTreeMap<&str, Vec<ObjectChange>> = BTreeMap::new();
    for d in diffs {
        let action = match d.action {
            "create" => Action::Added,
            "delete" => Action::Removed,
            _ => Action::Changed,
        };
        by_tenant.entry(&d.tenant).or_default().push(ObjectChange {
            action,
            id: d.id.to_string(),
            diff: d.text.clone(),
        });
    }
    let invalid: Vec<String> = renders
        .iter()
        .filter(|r| !r.is_ok())
        .map(|r| r.tenant.clone())
        .collect();
    let unchanged = renders
        .iter()
        .filter(|r| r.is_ok() && !by_tenant.contains_key(r.tenant.as_str()))
        .count();
    let tenants = by_tenant
        .into_iter()
        .map(|(tenant, objects)| TenantChange {
            tenant: tenant.to_string(),
            objects,
        })
        .collect();
    Comparison::from_changes(tenants, unchanged, invalid)
}
