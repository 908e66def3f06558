//! Printing diagnostics: one error repeated in many tenants is printed once.
//!
//! In: every tenant's render. Out: the diagnostics on stderr, folded by file, line and
//! message shape in first-seen order (see [`crate::core::diagnostic::fold`]: the places where
//! a tenant's name or namespaces stand may differ, and the printed message lists the values
//! that differ there): a problem of one tenant prints as `file:line: tenant `t`: …`, with a
//! count when it folds several; the same problem in several tenants (a shared component's
//! template, a broken `values.schema.json`, fief.yaml) prints once with the tenant count and
//! the first few names. `--output json` of `validate` keeps the full per-tenant list.

use std::io::Write;

use crate::core::diagnostic::fold::{Fold, Folder};
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

/// The text [`report_errors`] prints: each fold of the renders' diagnostics once.
pub fn grouped(renders: &[TenantRender]) -> String {
    let mut folder = Folder::default();
    for r in renders {
        let namespaces: Vec<&str> = r.namespaces.values().map(String::as_str).collect();
        folder.add(&r.tenant, &namespaces, &r.errors);
    }
    let mut out = String::new();
    for Fold {
        first: d,
        message,
        tenants,
        count,
    } in folder.finish()
    {
        if count == 1 {
            out.push_str(&format!("{} {d}\n", super::colour::error_prefix()));
            continue;
        }
        if tenants.len() <= 1 {
            out.push_str(&format!(
                "{} {}: tenant `{}`: {message} ({count} times)\n  hint: {}\n",
                super::colour::error_prefix(),
                d.location(),
                tenants.first().copied().unwrap_or_default(),
                d.problem.hint()
            ));
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
            "{} {}: {message}\n  in {all}{} tenants: {names}\n  hint: {}\n",
            super::colour::error_prefix(),
            d.location(),
            tenants.len(),
            d.problem.hint()
        ));
    }
    out
}
