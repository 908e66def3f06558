//! `fief diff REPO --from REF [--to REF]`: what a pull request changes, with no cluster.
//!
//! In: the repo's checkout and two revisions (the new one defaults to the files in REPO).
//! Out: a summary (tenants changed; per tenant objects added, changed, removed), then the
//! unified diffs with identical changes across tenants shown once; as text, JSON or Markdown.
//! Exit code 0 when nothing differs, 1 when something does (or a tenant is invalid at the new
//! revision), 2 for a folder that is not a git checkout or an unknown revision.

use std::fmt::Write as _;
use std::io::Write;

use super::secrets::WithoutKey;
use super::{
    CliError, DiffArgs, DiffFormat, EXIT_INVALID, EXIT_OK, load_and_render_envs, report_errors,
};
use crate::core::compare::{Action, Comparison, Group, compare};
use crate::core::pipeline;
use crate::core::render::TenantRender;
use crate::kube::diff::colourise;
use crate::source::git::snapshot_at;

/// Tenants named per group in text and Markdown before "and N more".
const NAMED: usize = 10;

/// `fief diff --from`.
pub fn compare_cmd(args: &DiffArgs, from: &str) -> Result<u8, CliError> {
    // The old revision may lack the environment (a new one): it renders what it has of it.
    let base = render_at(args, from, false)?;
    let new = match &args.to {
        Some(to) => render_at(args, to, true)?,
        None => load_and_render_envs(&args.repo, WithoutKey::Redact, &args.envs)?.1,
    };
    let invalid = report_errors(&new);
    let comparison = compare(&base, &new);
    let to = args.to.as_deref().unwrap_or("the working tree");
    let text = report(
        &comparison,
        args,
        &format!("{from} -> {to}"),
        &format!("`{from}` → `{to}`"),
    )?;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(if invalid || comparison.differs() {
        EXIT_INVALID
    } else {
        EXIT_OK
    })
}

/// The report in the format asked for; `label` names the two sides (`md_label` in Markdown).
pub(super) fn report(
    comparison: &Comparison,
    args: &DiffArgs,
    label: &str,
    md_label: &str,
) -> Result<String, CliError> {
    Ok(match args.output {
        DiffFormat::Json => {
            let mut t = serde_json::to_string_pretty(comparison)
                .map_err(|e| CliError::Serialize(e.to_string()))?;
            t.push('\n');
            t
        }
        DiffFormat::Markdown => markdown(comparison, md_label),
        // Like `kubectl diff`, no difference prints nothing (the exit code says it).
        DiffFormat::Text if !comparison.differs() => String::new(),
        DiffFormat::Text => plain(comparison, label, super::colour::stdout()),
    })
}

/// Render the repo as it is at `rev` (only the tenants and environments asked for, if any;
/// with `check_envs`, an environment no tenant has at `rev` is a usage error).
fn render_at(args: &DiffArgs, rev: &str, check_envs: bool) -> Result<Vec<TenantRender>, CliError> {
    let (snapshot, _commit) = snapshot_at(&args.repo.repo, rev)?;
    let mut repo = crate::source::checkout::load_snapshot(&args.repo.repo, snapshot);
    super::secrets::unlock(&mut repo, &args.repo, WithoutKey::Redact)?;
    let only: Vec<String> = args
        .repo
        .tenants
        .iter()
        .filter(|t| repo.tenants.contains_key(*t))
        .cloned()
        .collect();
    if !args.repo.tenants.is_empty() && only.is_empty() {
        return Ok(Vec::new());
    }
    let scope = if check_envs {
        super::env_scope(&repo, &only, &args.envs)?
    } else {
        crate::core::scope::EnvScope::of(&args.envs)
    };
    Ok(pipeline::render_all_in(&repo, &only, &scope))
}

fn counts(c: &Comparison) -> (usize, usize, usize) {
    let n = |a| c.tenants.iter().map(|t| t.count(a)).sum::<usize>();
    (n(Action::Added), n(Action::Changed), n(Action::Removed))
}

fn names(tenants: &[String]) -> String {
    let mut s = tenants
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if tenants.len() > NAMED {
        let _ = write!(s, " and {} more", tenants.len() - NAMED);
    }
    s
}

fn group_title(g: &Group) -> String {
    if g.tenants.len() == 1 {
        format!("tenant {}", g.tenants[0])
    } else {
        format!(
            "same change in {} tenants: {}",
            g.tenants.len(),
            names(&g.tenants)
        )
    }
}

fn plain(c: &Comparison, label: &str, colour: bool) -> String {
    let (added, changed, removed) = counts(c);
    let mut out = format!(
        "{} changed, {} unchanged ({label}): {} added, {changed} changed, {removed} removed\n",
        super::words::count(c.tenants.len(), "tenant"),
        c.unchanged,
        super::words::count(added, "object"),
    );
    for t in &c.tenants {
        let _ = writeln!(
            out,
            "  {}: {} added, {} changed, {} removed",
            t.tenant,
            t.count(Action::Added),
            t.count(Action::Changed),
            t.count(Action::Removed)
        );
    }
    if !c.invalid.is_empty() {
        let _ = writeln!(out, "  invalid (not compared): {}", names(&c.invalid));
    }
    if !c.orphaned.is_empty() {
        let _ = writeln!(
            out,
            "  tenant file removed (orphaned: objects left running): {}",
            names(&c.orphaned)
        );
    }
    for g in &c.groups {
        // One tenant: `# tenant t: update <id>` per object; several: a title, then `# update <id>`.
        let single = match g.tenants.as_slice() {
            [t] => Some(t),
            _ => None,
        };
        out.push('\n');
        if single.is_none() {
            let _ = writeln!(out, "# {}", group_title(g));
        }
        for o in &g.objects {
            let verb = match o.action {
                Action::Added => "create",
                Action::Changed => "update",
                Action::Removed => "delete",
            };
            match single {
                Some(t) => {
                    let _ = writeln!(out, "# tenant {t}: {verb} {}", o.id);
                }
                None => {
                    let _ = writeln!(out, "# {verb} {}", o.id);
                }
            }
            out.push_str(&if colour {
                colourise(&o.diff)
            } else {
                o.diff.clone()
            });
        }
    }
    out
}

fn markdown(c: &Comparison, label: &str) -> String {
    let (added, changed, removed) = counts(c);
    let mut out = format!(
        "### fief diff {label}\n\n**{} changed**, {} unchanged: {} added, {changed} changed, {removed} removed.\n\n",
        super::words::count(c.tenants.len(), "tenant"),
        c.unchanged,
        super::words::count(added, "object"),
    );
    if !c.tenants.is_empty() {
        out.push_str("| tenant | added | changed | removed |\n|---|---:|---:|---:|\n");
        for t in &c.tenants {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                t.tenant,
                t.count(Action::Added),
                t.count(Action::Changed),
                t.count(Action::Removed)
            );
        }
        out.push('\n');
    }
    if !c.invalid.is_empty() {
        let _ = writeln!(
            out,
            "**Invalid at the new revision (not compared):** {}\n",
            names(&c.invalid)
        );
    }
    if !c.orphaned.is_empty() {
        let _ = writeln!(
            out,
            "**Tenant file removed (orphaned, objects left running):** {}\n",
            names(&c.orphaned)
        );
    }
    for g in &c.groups {
        let _ = writeln!(
            out,
            "<details><summary>{}</summary>\n\n```diff",
            group_title(g)
        );
        for o in &g.objects {
            out.push_str(&o.diff.replace("```", "` ` `"));
        }
        out.push_str("```\n\n</details>\n\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::compare::{ObjectChange, TenantChange};

    fn comparison() -> Comparison {
        let o = ObjectChange {
            action: Action::Changed,
            id: "v1/ConfigMap a-prod/app".to_string(),
            diff: "--- a\n+++ b\n@@ -1 +1 @@\n-x: 1\n+x: 2\n".to_string(),
        };
        let t = |n: &str| TenantChange {
            tenant: n.to_string(),
            objects: vec![o.clone()],
        };
        Comparison {
            tenants: vec![t("a"), t("b")],
            unchanged: 3,
            invalid: vec![],
            orphaned: vec![],
            groups: vec![Group {
                tenants: vec!["a".to_string(), "b".to_string()],
                objects: vec![o.clone()],
            }],
        }
    }

    #[test]
    fn text_starts_with_the_summary_and_shows_a_shared_change_once() {
        let t = plain(&comparison(), "main -> HEAD", false);
        assert!(t.starts_with("2 tenants changed, 3 unchanged"), "{t}");
        assert!(t.contains("same change in 2 tenants: a, b"), "{t}");
        assert_eq!(t.matches("+x: 2").count(), 1, "{t}");
    }

    #[test]
    fn markdown_has_a_table_and_a_diff_block_per_group() {
        let m = markdown(&comparison(), "`main` → `HEAD`");
        assert!(m.contains("| `a` | 0 | 1 | 0 |"), "{m}");
        assert!(m.contains("```diff"), "{m}");
    }
}
