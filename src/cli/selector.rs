//! `-l/--selector`: choose tenants by the labels of their tenant files, as kubectl chooses
//! objects (`tier=free`, `tier!=free`, `region`, `!beta`, comma-separated, all must hold).
//!
//! In: the selector text and the repo's tenant files. Out: the matching tenant names, which
//! the command then treats like as many `--tenant` flags (so a selection never prunes or
//! reports as orphaned a tenant it did not select).

use std::collections::BTreeMap;

use super::{CliError, RepoArgs};
use crate::core::model::Repo;

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    Absent(String),
}

impl Requirement {
    fn holds(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::Absent(k) => !labels.contains_key(k),
        }
    }
}

fn parse(text: &str) -> Result<Vec<Requirement>, CliError> {
    let bad = |part: &str| {
        CliError::Usage(format!(
            "-l `{text}`: `{part}` is not a label requirement; write key=value, key!=value, \
             key or !key, comma-separated"
        ))
    };
    let valid = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
    };
    text.split(',')
        .map(str::trim)
        .map(|part| {
            let req = if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotEquals(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                Requirement::Equals(k.trim().into(), v.trim().into())
            } else if let Some(k) = part.strip_prefix('!') {
                Requirement::Absent(k.trim().into())
            } else {
                Requirement::Exists(part.into())
            };
            let (Requirement::Equals(k, _)
            | Requirement::NotEquals(k, _)
            | Requirement::Exists(k)
            | Requirement::Absent(k)) = &req;
            if valid(k) { Ok(req) } else { Err(bad(part)) }
        })
        .collect()
}

/// The names of the tenants whose files parse and whose labels meet `selector`.
pub fn select(repo: &Repo, selector: &str) -> Result<Vec<String>, CliError> {
    let reqs = parse(selector)?;
    Ok(repo
        .tenants
        .iter()
        .filter_map(|(name, t)| t.as_ref().ok().map(|t| (name, t)))
        .filter(|(_, t)| reqs.iter().all(|r| r.holds(&t.metadata.labels)))
        .map(|(name, _)| name.clone())
        .collect())
}

/// With `-l`, narrows `args.tenants` to the tenants the selector matches (within the
/// `--tenant` names when both are given); no match is a usage error.
pub fn apply_selector(args: &mut RepoArgs) -> Result<(), CliError> {
    let Some(selector) = args.selector.clone() else {
        return Ok(());
    };
    args.tenants = select_in(&args.repo, &selector, &args.tenants)?;
    Ok(())
}

/// The tenants of the repo in `dir` whose labels meet `selector`, within `within` when it
/// names any; no match is a usage error.
pub fn select_in(
    dir: &std::path::Path,
    selector: &str,
    within: &[String],
) -> Result<Vec<String>, CliError> {
    // Each tenant file is read and dropped in turn: a large fleet is never held whole.
    let reqs = parse(selector)?;
    let listed = crate::source::fs::read_dir_indexed(dir)?;
    let indexed = crate::core::model::Indexed::load(
        listed.snapshot,
        listed.tenant_files,
        std::sync::Arc::new(listed.reader),
    );
    let chosen: Vec<String> = indexed
        .names()
        .filter(|name| within.is_empty() || within.iter().any(|w| w == name))
        .filter(|name| match indexed.tenant(name) {
            Some(Ok(t)) => reqs.iter().all(|r| r.holds(&t.metadata.labels)),
            _ => false,
        })
        .map(str::to_string)
        .collect();
    if chosen.is_empty() {
        return Err(CliError::Usage(format!(
            "no tenant in {} matches -l `{selector}`",
            dir.display()
        )));
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_requirement_of_a_selector_must_hold() {
        let reqs = parse("tier=free, region, !beta, plan!=gold").expect("parses");
        let holds = |l: &BTreeMap<String, String>| reqs.iter().all(|r| r.holds(l));
        assert!(holds(&labels(&[("tier", "free"), ("region", "eu")])));
        assert!(!holds(&labels(&[("tier", "paid"), ("region", "eu")])));
        assert!(!holds(&labels(&[("tier", "free")])));
        assert!(!holds(&labels(&[
            ("tier", "free"),
            ("region", "eu"),
            ("beta", "")
        ])));
        assert!(!holds(&labels(&[
            ("tier", "free"),
            ("region", "eu"),
            ("plan", "gold")
        ])));
    }

    #[test]
    fn a_requirement_that_is_not_a_label_is_a_usage_error() {
        assert!(parse("tier=free,,").is_err());
        assert!(parse("ti er=free").is_err());
    }
}
