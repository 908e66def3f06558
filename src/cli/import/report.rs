//! The import report: one line per thing not mapped (file:line, object, field, what to do),
//! the steps left to the user (copying charts and kustomizations kept in git, locking charts,
//! validating), as text, as JSON and as IMPORT-REPORT.md.
//!
//! In: the findings and the [`Repo`] written. Out: text. Pure.

use serde_json::json;

use super::layers::Repo;
use super::model::{Finding, Source};

/// One line of the report.
pub fn line(f: &Finding) -> String {
    let field = if f.field.is_empty() {
        String::new()
    } else {
        format!("{}: ", f.field)
    };
    format!(
        "{}:{}: {}: {field}{}",
        f.at.file, f.at.line, f.at.object, f.message
    )
}

/// A finding per component whose chart or kustomization is in git: what to copy where.
pub fn copy_findings(repo: &Repo) -> Vec<Finding> {
    repo.components
        .iter()
        .filter_map(|c| {
            let comp = &c.component;
            let at = comp.releases.first()?.release.origin.clone();
            let message = match &comp.source {
                Source::Chart { .. } => return None,
                Source::GitChart { url, path } => format!(
                    "the chart is the folder `{path}` of {url}: copy it to components/{}/chart/ (with its charts/ subcharts, `helm dependency build` first)",
                    comp.name
                ),
                Source::Kustomize { url, path } => format!(
                    "the kustomization is the folder `{path}` of {url}: copy `{}` into components/{}/ so that `{}` is components/{}/{}; bases it reads from outside that folder must be copied in too (fief reads nothing outside a component)",
                    super::kustomize::split_path(path).0,
                    comp.name,
                    path,
                    comp.name,
                    comp.kustomize_path().unwrap_or(".")
                ),
            };
            Some(Finding { at, field: String::new(), message })
        })
        .collect()
}

/// What the user does next, in order.
pub fn next_steps(repo: &Repo, out: &str) -> Vec<String> {
    let mut steps = Vec::new();
    if repo
        .components
        .iter()
        .any(|c| !matches!(c.component.source, Source::Chart { .. }))
    {
        steps.push("copy the charts and kustomizations kept in git into their components (the report names each)".to_string());
    }
    if repo.components.iter().any(|c| !c.secret_values.is_empty()) {
        steps.push("put the secret values into secrets/tenants/<tenant>.sops.yaml and encrypt them (see .sops.yaml)".to_string());
    }
    if repo
        .components
        .iter()
        .any(|c| matches!(c.component.source, Source::Chart { .. }))
    {
        steps.push(format!(
            "fief chart update {out}        # lock the charts from repositories in fief.lock"
        ));
    }
    steps.push(format!("fief validate {out}"));
    steps.push(format!(
        "fief diff {out}                # against the cluster: what fief would change"
    ));
    steps
}

/// The report as text: the findings, then the summary and next steps.
pub fn text(findings: &[Finding], repo: &Repo, out: &str) -> String {
    let mut s = String::new();
    for f in findings {
        s.push_str(&line(f));
        s.push('\n');
    }
    s.push_str(&format!(
        "\nWrote {out}: {} component{}, {} tenant{}, {} environment{}; {} line{} in {out}/IMPORT-REPORT.md.\nNext:\n",
        repo.components.len(),
        plural(repo.components.len()),
        repo.tenants.len(),
        plural(repo.tenants.len()),
        repo.environments.len(),
        plural(repo.environments.len()),
        findings.len(),
        plural(findings.len()),
    ));
    for step in next_steps(repo, out) {
        s.push_str(&format!("  {step}\n"));
    }
    s
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The report as JSON.
pub fn json(findings: &[Finding], repo: &Repo, out: &str) -> String {
    let lines: Vec<_> = findings
        .iter()
        .map(|f| json!({"file": f.at.file, "line": f.at.line, "object": f.at.object, "field": f.field, "message": f.message}))
        .collect();
    let components: Vec<_> = repo
        .components
        .iter()
        .map(|c| c.component.name.clone())
        .collect();
    let value = json!({
        "out": out,
        "components": components,
        "tenants": repo.tenants.keys().collect::<Vec<_>>(),
        "environments": repo.environments.keys().collect::<Vec<_>>(),
        "findings": lines,
        "next": next_steps(repo, out),
    });
    serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
}

/// IMPORT-REPORT.md.
pub fn markdown(findings: &[Finding], repo: &Repo) -> String {
    let mut s = String::from(
        "# Import report\n\nWritten by `fief import`. Each line names the file and line of the Flux or Argo CD object, \
         what was not mapped, and what to do about it.\n\n## What was written\n\n",
    );
    for c in &repo.components {
        let comp = &c.component;
        let tenants: std::collections::BTreeSet<&str> =
            comp.releases.iter().map(|p| p.tenant.as_str()).collect();
        s.push_str(&format!(
            "- component `{}` ({}), run by {}\n",
            comp.name,
            source_text(&comp.source, comp.version.as_deref()),
            tenants
                .into_iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    s.push_str("\n## Not mapped, and what to do\n\n");
    if findings.is_empty() {
        s.push_str("Nothing: every field was mapped.\n");
    }
    for f in findings {
        s.push_str(&format!("- {}\n", line(f).replace('\n', " ")));
    }
    s.push_str("\n## Next\n\n");
    for (i, step) in next_steps(repo, ".").iter().enumerate() {
        let step = match step.strip_prefix("fief ") {
            Some(_) => format!("`{}`", step.split("  ").next().unwrap_or(step).trim()),
            None => step.clone(),
        };
        s.push_str(&format!("{}. {step}\n", i + 1));
    }
    s
}

fn source_text(source: &Source, version: Option<&str>) -> String {
    match source {
        Source::Chart {
            repository, name, ..
        } => format!("chart {name} {} from {repository}", version.unwrap_or("")),
        Source::GitChart { url, path } => format!("chart `{path}` of {url}"),
        Source::Kustomize { url, path } => format!("kustomization `{path}` of {url}"),
    }
}
