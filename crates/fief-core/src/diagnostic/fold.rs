//! Folding: one problem repeated across environments and tenants, told once, with what differs.
//!
//! In: each tenant's diagnostics, with the tenant's name and namespaces. Out: [`Fold`]s in
//! first-seen order. Diagnostics at the same file and line whose messages differ only where
//! the tenant's name or one of its namespaces stands (a shared template's error in every
//! tenant and environment, a reserved namespace in each environment of one tenant) are one
//! fold. Its message keeps what differs: each place that holds different values lists them
//! (`namespace `kube-system, kube-public, kube-node-lease` is reserved`), a few and a count
//! when there are many; a place that holds the same value everywhere shows that value. Only
//! a tenant name that differs stays `<tenant>`: the fold's tenant list names them. Pure.

use std::collections::HashMap;

use super::Diagnostic;

/// How many differing values a folded message lists before `and N more`.
pub const VALUES_SHOWN: usize = 5;

/// What a place in a message stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Slot {
    /// The tenant's name.
    Tenant,
    /// One of the tenant's namespaces.
    Namespace,
}

impl Slot {
    fn placeholder(self) -> &'static str {
        match self {
            Slot::Tenant => "<tenant>",
            Slot::Namespace => "<namespace>",
        }
    }
}

/// A piece of a message: text every diagnostic of a fold shares, or a place that may differ.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Part {
    Text(String),
    Slot(Slot),
}

/// One folded problem: the diagnostics it stands for share file, line and message shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fold<'a> {
    /// The first diagnostic folded in (its location and hint are the fold's).
    pub first: &'a Diagnostic,
    /// The message, with the values that differ listed where they differ.
    pub message: String,
    /// The tenants that have the problem, in first-seen order.
    pub tenants: Vec<&'a str>,
    /// How many diagnostics the fold stands for.
    pub count: usize,
}

/// A fold being built: the shape of its message and the values seen at each place.
struct Open<'a> {
    first: &'a Diagnostic,
    parts: Vec<Part>,
    /// For each slot of `parts` in order, its distinct values in first-seen order.
    values: Vec<Vec<String>>,
    tenants: Vec<&'a str>,
    count: usize,
}

/// Folds diagnostics as they are added, tenant by tenant.
#[derive(Default)]
pub struct Folder<'a> {
    open: Vec<Open<'a>>,
    index: HashMap<(&'a str, Option<usize>, Vec<Part>), usize>,
}

impl<'a> Folder<'a> {
    /// Add the diagnostics of tenant `tenant`, whose namespaces are `namespaces`.
    pub fn add(&mut self, tenant: &str, namespaces: &[&str], diagnostics: &'a [Diagnostic]) {
        for d in diagnostics {
            let (parts, values) = split(&d.problem.to_string(), tenant, namespaces);
            let key = (d.file.as_str(), d.line, parts);
            let i = match self.index.get(&key) {
                Some(&i) => i,
                None => {
                    let i = self.open.len();
                    self.open.push(Open {
                        first: d,
                        parts: key.2.clone(),
                        values: vec![Vec::new(); values.len()],
                        tenants: Vec::new(),
                        count: 0,
                    });
                    self.index.insert(key, i);
                    i
                }
            };
            let fold = &mut self.open[i];
            fold.count += 1;
            if let Some(t) = d.tenant.as_deref()
                && !fold.tenants.contains(&t)
            {
                fold.tenants.push(t);
            }
            for (seen, value) in fold.values.iter_mut().zip(values) {
                if !seen.contains(&value) {
                    seen.push(value);
                }
            }
        }
    }

    /// The folds, in the order their first diagnostic was added.
    pub fn finish(self) -> Vec<Fold<'a>> {
        self.open
            .into_iter()
            .map(|o| Fold {
                first: o.first,
                message: message(&o.parts, &o.values),
                tenants: o.tenants,
                count: o.count,
            })
            .collect()
    }
}

/// Whether `c` can be part of a name (so a match next to it is inside a longer name).
fn part_of_name(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'
}

/// `message` cut into shared text and the places where `tenant` or one of `namespaces` stands
/// as a whole name (not inside a longer one), with the value found at each place. The
/// longest name wins where names overlap; a namespace wins over a tenant of the same name.
fn split(message: &str, tenant: &str, namespaces: &[&str]) -> (Vec<Part>, Vec<String>) {
    let mut names: Vec<(&str, Slot)> = namespaces.iter().map(|n| (*n, Slot::Namespace)).collect();
    names.push((tenant, Slot::Tenant));
    names.retain(|(n, _)| !n.is_empty());
    // Stable sort: among names of one length, namespaces stay before the tenant.
    names.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
    let mut parts = Vec::new();
    let mut values = Vec::new();
    let mut text = String::new();
    let mut rest = message;
    let mut before: Option<char> = None;
    while let Some(c) = rest.chars().next() {
        let found = (!before.is_some_and(part_of_name))
            .then(|| {
                names.iter().find(|(n, _)| {
                    rest.starts_with(n) && !rest[n.len()..].starts_with(part_of_name)
                })
            })
            .flatten();
        if let Some((name, slot)) = found {
            if !text.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut text)));
            }
            parts.push(Part::Slot(*slot));
            values.push(name.to_string());
            before = name.chars().next_back();
            rest = &rest[name.len()..];
        } else {
            text.push(c);
            before = Some(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    (parts, values)
}

/// The message of a fold: each slot shows its one value, or lists the values that differ.
fn message(parts: &[Part], values: &[Vec<String>]) -> String {
    let mut out = String::new();
    let mut slot = 0;
    for (i, part) in parts.iter().enumerate() {
        let kind = match part {
            Part::Text(t) => {
                out.push_str(t);
                continue;
            }
            Part::Slot(kind) => *kind,
        };
        let seen = values.get(slot).map(Vec::as_slice).unwrap_or_default();
        slot += 1;
        match seen {
            [one] => out.push_str(one),
            _ if kind == Slot::Tenant => out.push_str(kind.placeholder()),
            _ => {
                let list = listed(seen);
                let before = i.checked_sub(1).and_then(|j| parts.get(j));
                if delimited(before, parts.get(i + 1)) {
                    out.push_str(&list);
                } else {
                    out.push_str(&format!("{{{list}}}"));
                }
            }
        }
    }
    out
}

/// `a, b, c` (the first [`VALUES_SHOWN`], then `and N more`).
fn listed(values: &[String]) -> String {
    let mut list = values
        .iter()
        .take(VALUES_SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if values.len() > VALUES_SHOWN {
        list.push_str(&format!(" and {} more", values.len() - VALUES_SHOWN));
    }
    list
}

/// Whether a slot between `before` and `after` stands alone (quoted, or between spaces), so
/// a list there reads as one; otherwise (`ConfigMap/<namespace>/web`) the list is braced.
fn delimited(before: Option<&Part>, after: Option<&Part>) -> bool {
    let alone = |c: Option<char>| c.is_none_or(|c| c.is_whitespace() || "`'\"(),;:".contains(c));
    let edge = |part: Option<&Part>, last: bool| match part {
        None => true,
        Some(Part::Text(t)) if last => alone(t.chars().next_back()),
        Some(Part::Text(t)) => alone(t.chars().next()),
        Some(Part::Slot(_)) => false,
    };
    edge(before, true) && edge(after, false)
}

#[cfg(test)]
#[path = "fold_tests.rs"]
mod tests;
