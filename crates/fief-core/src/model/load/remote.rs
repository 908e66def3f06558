//! Loading a chart a component takes from a repository (`chart: {repository, name,
//! version}`): its entry in `fief.lock`, its archive as the source layer put it in the
//! snapshot, unpacked into the files an in-repo chart gives.
//!
//! In: the snapshot (with `fief.lock` and the archives under
//! [`crate::snapshot::CHART_ARCHIVES`]), the component's folder and its chart reference. Out:
//! the component's [`Package`], or diagnostics at component.yaml's `chart` lines (or
//! `fief.lock`'s) saying what to run. The core fetches nothing: an archive the source layer
//! did not put in the snapshot is an error. Pure.

use std::sync::Arc;

use serde_json::Value;

use super::archive::{digest_of, key_of, unpack_chart};
use super::{line_of_key, parse_file, read};
use crate::diagnostic::{Diagnostic, Problem};
use crate::model::{
    ChartLock, ChartRef, ComponentMeta, LOCK_COMMAND, LOCK_FILE, Locked, RenderKind,
};
use crate::render::package::Package;
use crate::snapshot::{Snapshot, chart_archive_path};

/// The package of a chart from a repository; problems go to `errors`, at the component.yaml
/// line of the field at fault (or fief.lock's, when it does not parse).
pub(super) fn load_remote(
    snapshot: &Snapshot,
    dir: &str,
    meta: &ComponentMeta,
    chart: &ChartRef,
    errors: &mut Vec<Diagnostic>,
) -> Option<Package> {
    let file = format!("{dir}/component.yaml");
    let text = read(snapshot, &file).ok().flatten().cloned();
    let mut problems = Vec::new();
    let mut refuse = |field: &str, problem: Problem| {
        let line = text.as_deref().and_then(|t| line_of_key(t, field));
        problems.push(Diagnostic::new(file.clone(), line, problem));
    };
    let package = locked_package(snapshot, dir, meta, chart, &mut refuse, errors);
    errors.extend(problems);
    package
}

/// [`load_remote`]'s work, with `refuse` reporting at a component.yaml field.
fn locked_package(
    snapshot: &Snapshot,
    dir: &str,
    meta: &ComponentMeta,
    chart: &ChartRef,
    refuse: &mut impl FnMut(&str, Problem),
    errors: &mut Vec<Diagnostic>,
) -> Option<Package> {
    if meta.path.is_some() {
        refuse(
            "path",
            invalid(
                "path",
                "`path` is for `kind: kustomize`; a chart is named by `chart`",
            ),
        );
    }
    if let Err((field, detail)) = chart.check() {
        refuse(field, invalid(field, &detail));
        return None;
    }
    if snapshot.has_dir(&format!("{dir}/templates")) {
        let detail = format!(
            "`{dir}/templates/` is rendered only for `kind: templates`; a helm component renders its chart's templates"
        );
        refuse("kind", invalid("kind", &detail));
    }
    let digest = locked_digest(snapshot, chart, refuse, errors)?;
    let bytes = match archive_of(snapshot, &digest) {
        Ok(bytes) => bytes,
        Err(detail) => {
            refuse("chart", chart_problem(chart, detail));
            return None;
        }
    };
    let files = match unpack_chart(&bytes) {
        Ok(files) => files,
        Err(detail) => {
            refuse("chart", chart_problem(chart, format!("{digest}: {detail}")));
            return None;
        }
    };
    let defaults = match chart_defaults(&files) {
        Ok(v) => v,
        Err(detail) => {
            refuse(
                "chart",
                chart_problem(chart, format!("values.yaml: {detail}")),
            );
            return None;
        }
    };
    Some(Package {
        kind: RenderKind::Helm,
        key: key_of(RenderKind::Helm, "", &files),
        dir: chart.display(),
        root: String::new(),
        files: Arc::new(files.text),
        binary: Arc::new(files.binary),
        defaults,
    })
}

/// A component.yaml field with a value that cannot work.
fn invalid(field: &str, detail: &str) -> Problem {
    Problem::InvalidField {
        field: field.to_string(),
        detail: detail.to_string(),
    }
}

/// A chart the lock does not pin, or whose archive could not be had.
fn chart_problem(chart: &ChartRef, detail: String) -> Problem {
    Problem::Chart {
        chart: chart.display(),
        detail,
    }
}

/// The digest `fief.lock` records for `chart`; problems go to `refuse` (at a component.yaml
/// field, saying what to run) or `errors` (a lock that does not parse).
fn locked_digest(
    snapshot: &Snapshot,
    chart: &ChartRef,
    refuse: &mut impl FnMut(&str, Problem),
    errors: &mut Vec<Diagnostic>,
) -> Option<String> {
    let lock = match parse_file::<ChartLock>(snapshot, LOCK_FILE) {
        Ok(lock) => lock.unwrap_or_default(),
        Err(d) => {
            errors.push(d);
            return None;
        }
    };
    match lock.find(chart) {
        Locked::At(entry) => Some(entry.digest.clone()),
        Locked::Missing => {
            let detail = format!(
                "no entry in {LOCK_FILE}: run `{LOCK_COMMAND}` to fetch it and record its digest, then commit {LOCK_FILE}"
            );
            refuse("chart", chart_problem(chart, detail));
            None
        }
        Locked::OtherVersions(versions) => {
            let detail = format!(
                "{LOCK_FILE} locks this chart at {}, not {}: run `{LOCK_COMMAND}` to fetch {} and record its digest, then commit {LOCK_FILE}",
                versions.join(", "),
                chart.version,
                chart.version
            );
            refuse("version", chart_problem(chart, detail));
            None
        }
    }
}

/// The archive with `digest` from the snapshot, its digest checked again; or why it is not
/// there (the source layer's reason, or that no source fetched it).
fn archive_of(snapshot: &Snapshot, digest: &str) -> Result<Arc<[u8]>, String> {
    match snapshot.get(&chart_archive_path(digest)) {
        Some(Err(Problem::Binary { bytes })) if digest_of(bytes) == digest => Ok(bytes.clone()),
        Some(Err(Problem::Binary { bytes })) => Err(format!(
            "the cached archive has digest {}, not {digest} as {LOCK_FILE} says: remove it from fief's chart cache",
            digest_of(bytes)
        )),
        Some(Err(Problem::Unreadable { reason })) => Err(reason.clone()),
        Some(_) => Err("the archive is not a chart archive".to_string()),
        None => Err(format!(
            "its archive ({digest}) was not fetched: fief reads the chart from its chart cache, which this load did not fill"
        )),
    }
}

/// The chart's `values.yaml` (an empty map when absent), which must be a mapping.
fn chart_defaults(files: &super::archive::ChartFiles) -> Result<Value, String> {
    let Some(text) = files.text.get("values.yaml") else {
        return Ok(Value::Object(Default::default()));
    };
    match crate::yaml::parse_single_typed::<Value>(text) {
        Ok(None) | Ok(Some(Value::Null)) => Ok(Value::Object(Default::default())),
        Ok(Some(v @ Value::Object(_))) => Ok(v),
        Ok(Some(_)) => Err("a chart's values.yaml must be a mapping".to_string()),
        Err(e) => Err(format!("line {}: {}", e.line.unwrap_or(0), e.message)),
    }
}
