//! Printing diagnostics: one error repeated in many tenants is printed once.
//!
//! In: every tenant's render. Out: the diagnostics on stderr, grouped by file, line and
//! problem in first-seen order (a problem's tenant name and namespaces masked, so one shared
//! template's error in every tenant and environment is one group): a problem of one tenant
//! prints as `file:line: tenant `t`: …`; the same problem in several tenants (a shared
//! component's template, a broken `values.schema.json`, fief.yaml) prints once with the
//! tenant count and the first few names. `--output json` of `validate` keeps the full
//! per-tenant list.

use std::collections::HashMap;
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

/// One printed error: the first diagnostic, its message with the tenant's own names masked,
/// the tenants that have it, and how many diagnostics it stands for.
struct Group<'a> {
    first: &'a Diagnostic,
    shape: String,
    tenants: Vec<&'a str>,
    count: usize,
}

/// The text [`report_errors`] prints. Diagnostics at the same file and line whose messages
/// differ only by the tenant's name or namespaces (a shared template's error in every tenant
/// and environment) are one group, printed once.
pub fn grouped(renders: &[TenantRender]) -> String {
    let mut groups: Vec<Group<'_>> = Vec::new();
    let mut index: HashMap<(&str, Option<usize>, String), usize> = HashMap::new();
    for r in renders {
        let namespaces: Vec<&str> = r.namespaces.values().map(String::as_str).collect();
        for d in &r.errors {
            let shape = mask(&d.problem.to_string(), &r.tenant, &namespaces);
            let key = (d.file.as_str(), d.line, shape.clone());
            match index.get(&key) {
                Some(&i) => {
                    let g = &mut groups[i];
                    g.count += 1;
                    if let Some(t) = d.tenant.as_deref()
                        && !g.tenants.contains(&t)
                    {
                        g.tenants.push(t);
                    }
                }
                None => {
                    index.insert(key, groups.len());
                    groups.push(Group {
                        first: d,
                        shape,
                        tenants: d.tenant.as_deref().into_iter().collect(),
                        count: 1,
                    });
                }
            }
        }
    }
    let mut out = String::new();
    for Group {
        first: d,
        shape,
        tenants,
        count,
    } in groups
    {
        if count == 1 {
            out.push_str(&format!("{} {d}\n", super::colour::error_prefix()));
            continue;
        }
        if tenants.len() <= 1 {
            out.push_str(&format!(
                "{} {}: tenant `{}`: {shape} ({count} times)\n  hint: {}\n",
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
            "{} {}: {shape}\n  in {all}{} tenants: {names}\n  hint: {}\n",
            super::colour::error_prefix(),
            d.location(),
            tenants.len(),
            d.problem.hint()
        ));
    }
    out
}

/// `message` with each of `namespaces` written `<namespace>` and `tenant` written `<tenant>`,
/// where they stand as whole names (not inside a longer one).
fn mask(message: &str, tenant: &str, namespaces: &[&str]) -> String {
    let mut names: Vec<(&str, &str)> = namespaces.iter().map(|n| (*n, "<namespace>")).collect();
    names.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
    names.push((tenant, "<tenant>"));
    let mut out = message.to_string();
    for (name, placeholder) in names {
        out = replace_whole(&out, name, placeholder);
    }
    out
}

fn replace_whole(text: &str, name: &str, placeholder: &str) -> String {
    if name.is_empty() {
        return text.to_string();
    }
    let part_of_name = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(name) {
        let before = rest[..i].chars().next_back();
        let after = rest[i + name.len()..].chars().next();
        out.push_str(&rest[..i]);
        if before.is_some_and(part_of_name) || after.is_some_and(part_of_name) {
            out.push_str(name);
        } else {
            out.push_str(placeholder);
        }
        rest = &rest[i + name.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::mask;

    #[test]
    fn a_message_is_masked_where_the_tenant_or_a_namespace_stands_as_a_whole_name() {
        let m = "duplicate object ConfigMap/t1-dev/hello of tenant `t1`; not t10 or t1-devx";
        assert_eq!(
            mask(m, "t1", &["t1-dev", "t1-prod"]),
            "duplicate object ConfigMap/<namespace>/hello of tenant `<tenant>`; not t10 or t1-devx"
        );
    }
}
