//! `fief bump`: set a component's version (`--version`) or pinned git ref (`--ref`) in chosen
//! tenant files, GitOps style — a one-line change per tenant, comments and formatting kept.
//!
//! In: a tenant file's text, a component name and a version or ref. Out: the new text, or why
//! it cannot be edited safely. Every edit is checked by parsing the file before and after: the
//! only difference allowed is that component's version (or ref), so a file the line editor
//! does not understand is refused, never corrupted. Pure.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::model::Tenant;
use crate::objects::sha256_hex;
use crate::yaml;

/// Why a tenant file was not edited.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BumpError {
    /// The tenant does not enable the component.
    #[error("does not use component `{component}`")]
    NotUsed {
        /// The component.
        component: String,
    },
    /// The file could not be parsed (before or after the edit).
    #[error("cannot parse: {detail}")]
    Parse {
        /// What the parser said.
        detail: String,
    },
    /// The component entry is written in a form the line editor does not change safely.
    #[error(
        "the `{component}` entry is written in a form fief bump does not edit ({detail}); edit it by hand"
    )]
    Unsupported {
        /// The component.
        component: String,
        /// What was found.
        detail: String,
    },
}

fn parse(text: &str) -> Result<Tenant, BumpError> {
    match yaml::parse_single::<Tenant>(text) {
        Ok(Some(t)) => Ok(t),
        Ok(None) => Err(BumpError::Parse {
            detail: "the file is empty".to_string(),
        }),
        Err(e) => Err(BumpError::Parse { detail: e.message }),
    }
}

/// The version `component` has in this tenant file, if it names one.
pub fn current_version(tenant: &Tenant, component: &str) -> Option<Option<String>> {
    tenant
        .spec
        .components
        .iter()
        .find(|c| c.name == component)
        .map(|c| c.version.clone())
}

/// A YAML scalar for a version: quoted when YAML would read it as anything but a string.
fn scalar(version: &str) -> String {
    let plain = !version.is_empty()
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+'))
        && version.chars().any(|c| c.is_ascii_alphabetic())
        && !matches!(
            version.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n" | "null" | "nan" | "inf"
        )
        && !version.starts_with(['-', '.', '+']);
    // 1.4.2 is read as a string too (two dots), but 1.5 or 16 would be numbers: quote those.
    let dotted = version.matches('.').count() >= 2
        && version.chars().all(|c| c.is_ascii_digit() || c == '.');
    if plain || dotted {
        version.to_string()
    } else {
        format!("\"{}\"", version.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The value part of `key: value  # comment` with the comment split off.
fn split_comment(rest: &str) -> (&str, &str) {
    match rest.find(" #") {
        Some(i) => {
            let start = rest[..i].trim_end().len();
            (&rest[..start], &rest[start..])
        }
        None => (rest, ""),
    }
}

/// Which field of a component entry `fief bump` sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `version:`.
    Version,
    /// `ref:` (the git ref the component is pinned to).
    Ref,
}

impl Field {
    /// The YAML key.
    pub fn key(self) -> &'static str {
        match self {
            Field::Version => "version",
            Field::Ref => "ref",
        }
    }

    fn get(self, c: &crate::model::ComponentRef) -> Option<String> {
        match self {
            Field::Version => c.version.clone(),
            Field::Ref => c.git_ref.clone(),
        }
    }

    fn set(self, c: &mut crate::model::ComponentRef, value: &str) {
        match self {
            Field::Version => c.version = Some(value.to_string()),
            Field::Ref => c.git_ref = Some(value.to_string()),
        }
    }
}

/// Set `component`'s version in a tenant file's text. Returns `Ok(None)` when it already has
/// that version.
pub fn set_version(
    text: &str,
    component: &str,
    version: &str,
) -> Result<Option<String>, BumpError> {
    set_field(text, component, Field::Version, version)
}

/// Set `component`'s pinned git ref (`ref:`) in a tenant file's text, adding it when the entry
/// has none. Returns `Ok(None)` when it already has that ref.
pub fn set_ref(text: &str, component: &str, git_ref: &str) -> Result<Option<String>, BumpError> {
    set_field(text, component, Field::Ref, git_ref)
}

/// Set one field of `component`'s entry in a tenant file's text.
pub fn set_field(
    text: &str,
    component: &str,
    field: Field,
    version: &str,
) -> Result<Option<String>, BumpError> {
    let before = parse(text)?;
    let Some(old) = before
        .spec
        .components
        .iter()
        .find(|c| c.name == component)
        .map(|c| field.get(c))
    else {
        return Err(BumpError::NotUsed {
            component: component.to_string(),
        });
    };
    if old.as_deref() == Some(version) {
        return Ok(None);
    }
    let key = field.key();
    let unsupported = |detail: &str| BumpError::Unsupported {
        component: component.to_string(),
        detail: detail.to_string(),
    };
    let new_text = edit_entry(text, component, key, &scalar(version)).map_err(unsupported)?;
    // The safety net: the edit changed that version and nothing else.
    let after = parse(&new_text)?;
    let mut expected = before.clone();
    for c in &mut expected.spec.components {
        if c.name == component {
            field.set(Arc::make_mut(c), version);
        }
    }
    if after != expected {
        return Err(unsupported(&format!(
            "the edited file would differ in more than the {key}"
        )));
    }
    Ok(Some(new_text))
}

/// `text` with `key: value` set in the list item that names `component`: `- name: c`
/// (block) or `- {name: c, ...}` (flow); or why that item cannot be edited.
fn edit_entry(text: &str, component: &str, key: &str, value: &str) -> Result<String, &'static str> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let names = |s: &str| s.trim().trim_matches(['"', '\'']).eq(component);
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let Some(item) = t.strip_prefix("- ") else {
            continue;
        };
        let item = item.trim_start();
        if let Some(flow) = item.strip_prefix('{') {
            if let Some(edited) = edit_flow_item(line, item, flow, key, value, &names)? {
                out[i] = edited;
                return Ok(out.concat());
            }
            continue;
        }
        let Some(name) = item.strip_prefix("name:") else {
            continue;
        };
        if !names(split_comment(name).0) {
            continue;
        }
        // Block item: its keys sit at the column after `- `.
        let key_col = indent(line) + 2;
        let key_colon = format!("{key}:");
        match block_key_line(&lines[i + 1..], key_col, &key_colon).map(|k| k + i + 1) {
            Some(k) => {
                let rest = &lines[k].trim_start()[key_colon.len()..];
                let (_, comment) = split_comment(rest.trim_end_matches('\n'));
                out[k] = format!("{}{key}: {value}{comment}\n", " ".repeat(key_col));
            }
            None => out.insert(i + 1, format!("{}{key}: {value}\n", " ".repeat(key_col))),
        }
        return Ok(out.concat());
    }
    Err("no `- name:` list item found for it")
}

/// A flow list item (`- {name: c, version: 1}`, `flow` after its `{`) with `key: value` set,
/// when it names the component (`names`); `None` when it names another.
fn edit_flow_item(
    line: &str,
    item: &str,
    flow: &str,
    key: &str,
    value: &str,
    names: &dyn Fn(&str) -> bool,
) -> Result<Option<String>, &'static str> {
    let body = flow.trim_end().trim_end_matches('}');
    let fields: Vec<&str> = body.split(',').collect();
    if !fields
        .iter()
        .any(|f| f.trim().strip_prefix("name:").is_some_and(names))
    {
        return Ok(None);
    }
    if item.contains('#') || !flow.trim_end().ends_with('}') || body.contains(['{', '[']) {
        return Err("a flow mapping with nested values or a comment");
    }
    let key_colon = format!("{key}:");
    let mut new_fields: Vec<String> = fields.iter().map(|f| f.trim().to_string()).collect();
    match new_fields.iter_mut().find(|f| f.starts_with(&key_colon)) {
        Some(f) => *f = format!("{key}: {value}"),
        None => new_fields.push(format!("{key}: {value}")),
    }
    let t = line.trim_start();
    let lead = &line[..line.len() - t.len()];
    Ok(Some(format!("{lead}- {{{}}}\n", new_fields.join(", "))))
}

/// Among the lines after a block list item (`rest`), the index of its `key:` line (at
/// `key_col`); the item ends at the first line indented less.
fn block_key_line(rest: &[&str], key_col: usize, key_colon: &str) -> Option<usize> {
    let mut found = None;
    for (j, l) in rest.iter().enumerate() {
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        if indent(l) < key_col {
            break;
        }
        if indent(l) == key_col && l.trim_start().starts_with(key_colon) {
            found = Some(j);
        }
    }
    found
}

/// The first `percent` % (rounded up) of `tenants`, in a stable order that does not depend on
/// the tenants' names' alphabet: raising the percentage only adds tenants.
pub fn percent_of(tenants: &[String], component: &str, percent: u8) -> Vec<String> {
    let mut keyed: BTreeMap<String, &String> = tenants
        .iter()
        .map(|t| (sha256_hex(format!("{component}/{t}").as_bytes()), t))
        .collect();
    let n = (tenants.len() * usize::from(percent.min(100))).div_ceil(100);
    let mut chosen: Vec<String> = std::mem::take(&mut keyed)
        .into_values()
        .take(n)
        .cloned()
        .collect();
    chosen.sort();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACME: &str = "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: acme\nspec:\n  # the platform team's favourite tenant\n  components:\n    - name: postgres\n      version: \"16.4\"   # pinned by DBA\n      values: {storage: 20Gi}\n    - name: web\n      values: {replicas: 3}\n    - {name: worker, version: 1.4.2}\n";

    fn changed_lines(a: &str, b: &str) -> usize {
        let a: Vec<&str> = a.lines().collect();
        let b: Vec<&str> = b.lines().collect();
        if a.len() == b.len() {
            a.iter().zip(&b).filter(|(x, y)| x != y).count()
        } else {
            b.len().abs_diff(a.len())
        }
    }

    #[test]
    fn an_existing_version_changes_on_its_line_and_keeps_the_comment() {
        let new = set_version(ACME, "postgres", "16.5").unwrap().unwrap();
        assert!(
            new.contains("      version: \"16.5\"   # pinned by DBA\n"),
            "{new}"
        );
        assert_eq!(changed_lines(ACME, &new), 1);
        assert!(new.contains("# the platform team's favourite tenant"));
    }

    #[test]
    fn a_missing_version_is_one_inserted_line() {
        let new = set_version(ACME, "web", "1.5.0").unwrap().unwrap();
        assert!(
            new.contains("    - name: web\n      version: 1.5.0\n"),
            "{new}"
        );
        assert_eq!(changed_lines(ACME, &new), 1);
    }

    #[test]
    fn a_flow_entry_is_rewritten_on_its_line() {
        let new = set_version(ACME, "worker", "2.0.0").unwrap().unwrap();
        assert!(
            new.contains("    - {name: worker, version: 2.0.0}\n"),
            "{new}"
        );
        assert_eq!(changed_lines(ACME, &new), 1);
    }

    #[test]
    fn the_same_version_is_no_change_and_an_unused_component_is_refused() {
        assert_eq!(set_version(ACME, "worker", "1.4.2").unwrap(), None);
        assert!(matches!(
            set_version(ACME, "redis", "7"),
            Err(BumpError::NotUsed { .. })
        ));
    }

    #[test]
    fn versions_yaml_would_read_as_numbers_are_quoted() {
        assert_eq!(scalar("1.5"), "\"1.5\"");
        assert_eq!(scalar("16"), "\"16\"");
        assert_eq!(scalar("1.4.2"), "1.4.2");
        assert_eq!(scalar("v1.5"), "v1.5");
        assert_eq!(scalar("yes"), "\"yes\"");
        let new = set_version(ACME, "web", "2").unwrap().unwrap();
        assert!(new.contains("version: \"2\""), "{new}");
    }

    #[test]
    fn percent_grows_monotonically() {
        let all: Vec<String> = (0..50).map(|i| format!("t{i}")).collect();
        let ten = percent_of(&all, "web", 10);
        let fifty = percent_of(&all, "web", 50);
        assert_eq!(ten.len(), 5);
        assert_eq!(fifty.len(), 25);
        assert!(ten.iter().all(|t| fifty.contains(t)));
        assert_eq!(percent_of(&all, "web", 100).len(), 50);
    }

    #[test]
    fn bump_ref_sets_or_adds_the_ref_on_the_entry_line_and_keeps_comments() {
        let new = set_ref(ACME, "postgres", "postgres-16.5").unwrap().unwrap();
        // One line added after the entry's name; everything else as it was.
        assert_eq!(
            new,
            ACME.replacen(
                "    - name: postgres\n",
                "    - name: postgres\n      ref: postgres-16.5\n",
                1
            )
        );
        assert!(new.contains("      version: \"16.4\"   # pinned by DBA\n"));
        let flow = set_ref(ACME, "worker", "release/1.5").unwrap().unwrap();
        assert!(
            flow.contains("    - {name: worker, version: 1.4.2, ref: \"release/1.5\"}\n"),
            "{flow}"
        );
        let moved = set_ref(&flow, "worker", "v2").unwrap().unwrap();
        assert!(
            moved.contains("    - {name: worker, version: 1.4.2, ref: v2}\n"),
            "{moved}"
        );
        assert_eq!(set_ref(&moved, "worker", "v2").unwrap(), None);
    }
}
