//! Printing diagnostics: one error repeated in many tenants is printed once.
//!
//! In: every tenant's render. Out: the diagnostics on stderr, grouped by file, line and
//! problem in first-seen order: a problem of one tenant prints as `file:line: tenant `t`:
//! …`; the same problem in several tenants (a shared component's template, a broken
//! `values.schema.json`, fief.yaml) prints once with the tenant count and the first few
//! names. `--output json` of `validate` keeps the full per-tenant list.

use std::io::Write;

use crate::core::diagnostic::Diagnostic;
use crate::core::render::TenantRender;

/// How many tenant names a grouped error shows before `and N more`.
const NAMES_SHOWN: usize = 5;

/// Print every tenant's diagnostics on stderr, each distinct one once; whether there were any.
pub fn report_errors(renders: &[TenantRender]) -> bool {
    let text = grouped(renders);
    if !text.is_empty() {
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
    renders.iter().any(|r| !r.errors.is_empty())
}

/// The text [`report_errors`] prints.
pub fn grouped(renders: &[TenantRender]) -> String {
    let mut groups: Vec<(&Diagnostic, Vec<&str>)> = Vec::new();
    for r in renders {
        for d in &r.errors {
            let same = groups
                .iter_mut()
                .find(|(g, _)| g.file == d.file && g.line == d.line && g.problem == d.problem);
            match same {
                Some((_, tenants)) => {
                    if let Some(t) = d.tenant.as_deref()
                        && !tenants.contains(&t)
                    {
                        tenants.push(t);
                    }
                }
                None => groups.push((d, d.tenant.as_deref().into_iter().collect())),
            }
        }
    }
    let mut out = String::new();
    for (d, tenants) in groups {
        if tenants.len() <= 1 {
            out.push_str(&format!("{} {d}\n", super::colour::error_prefix()));
            continue;
        }
        let mut names = tenants
            .iter()
            .take(NAMES_SHOWN)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if tenants.len() > NAMES_SHOWN {
            names.push_str(&format!(
                " and {} more (`validate --output json` lists them all)",
                tenants.len() - NAMES_SHOWN
            ));
        }
        let all = if tenants.len() == renders.len() {
            "all "
        } else {
            ""
        };
        out.push_str(&format!(
            "{} {}: {}\n  in {all}{} tenants: {names}\n  hint: {}\n",
            super::colour::error_prefix(),
            d.location(),
            d.problem,
            tenants.len(),
            d.problem.hint()
        ));
    }
    out
}
