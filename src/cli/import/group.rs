//! Releases into a fleet: which tenant and environment each release is for (from its
//! namespace), which releases share a component (the same chart or kustomization), the
//! component's name, chart version and settings.
//!
//! In: [`Release`]s. Out: a [`Fleet`] (components with their releases placed) and findings;
//! the values layers are split by `layers`. Pure.

use std::collections::{BTreeMap, BTreeSet};

use super::model::{Finding, Image, Origin, Release, SecretRef, Source};

/// Environment names recognised at the end of a namespace (`acme-prod`).
const ENVIRONMENTS: [&str; 16] = [
    "dev",
    "develop",
    "development",
    "test",
    "testing",
    "qa",
    "uat",
    "int",
    "stage",
    "staging",
    "preprod",
    "prod",
    "production",
    "sandbox",
    "demo",
    "preview",
];

/// Namespaces that hold the platform, not a customer.
const PLATFORM: [&str; 5] = ["default", "flux-system", "argocd", "argo-cd", "fief-system"];

/// One release placed: for which tenant and environment.
#[derive(Debug, Clone)]
pub struct Placed {
    /// The tenant.
    pub tenant: String,
    /// The environment.
    pub env: String,
    /// The release.
    pub release: Release,
}

/// A component and the releases that run it.
#[derive(Debug, Clone)]
pub struct Component {
    /// Its name (a DNS-1123 label, unique).
    pub name: String,
    /// The chart or kustomization.
    pub source: Source,
    /// The chart version, when from a repository.
    pub version: Option<String>,
    /// The releases, one per tenant environment.
    pub releases: Vec<Placed>,
}

impl Component {
    /// Whether every release skips the chart's CRDs.
    pub fn skip_crds(&self) -> bool {
        self.releases.iter().all(|p| p.release.skip_crds)
    }

    /// The image overrides of every release, by image name (each field named once any
    /// release sets it).
    pub fn images(&self) -> Vec<Image> {
        let mut by_name: BTreeMap<String, Image> = BTreeMap::new();
        for image in self.releases.iter().flat_map(|p| &p.release.images) {
            let slot = by_name.entry(image.name.clone()).or_insert_with(|| Image {
                name: image.name.clone(),
                ..Image::default()
            });
            slot.new_name = slot.new_name.take().or(image.new_name.clone());
            slot.new_tag = slot.new_tag.take().or(image.new_tag.clone());
            slot.digest = slot.digest.take().or(image.digest.clone());
        }
        by_name.into_values().collect()
    }

    /// The names (replicas, variables) every release's `pick` gives, once each, sorted.
    pub fn names(&self, pick: impl Fn(&Release) -> &Vec<String>) -> Vec<String> {
        let set: BTreeSet<&String> = self
            .releases
            .iter()
            .flat_map(|p| pick(&p.release))
            .collect();
        set.into_iter().cloned().collect()
    }

    /// Every secret reference of its releases, with the release's tenant.
    pub fn secrets(&self) -> Vec<(&str, &SecretRef)> {
        self.releases
            .iter()
            .flat_map(|p| p.release.secrets.iter().map(|s| (p.tenant.as_str(), s)))
            .collect()
    }

    /// The kustomization's folder inside the component (kustomize).
    pub fn kustomize_path(&self) -> Option<&str> {
        self.releases
            .first()
            .and_then(|p| p.release.kustomize_path.as_deref())
    }

    /// Where each release was declared.
    pub fn origins(&self) -> Vec<&Origin> {
        self.releases.iter().map(|p| &p.release.origin).collect()
    }
}

/// The imported fleet before its values are layered.
#[derive(Debug, Default)]
pub struct Fleet {
    /// The components, by name.
    pub components: Vec<Component>,
}

/// Which tenant and environment `namespace` is: `acme-prod` is `acme` in `prod`; a namespace
/// without an environment suffix is the tenant, in `prod`.
pub fn split_namespace(namespace: &str) -> (String, String, bool) {
    if let Some((tenant, env)) = namespace.rsplit_once('-')
        && ENVIRONMENTS.contains(&env)
        && !tenant.is_empty()
    {
        return (tenant.to_string(), env.to_string(), true);
    }
    (namespace.to_string(), "prod".to_string(), false)
}

/// The environment a file's path names, for objects whose namespace names none: the last
/// folder or file name that is an environment name (`clusters/production/apps.yaml`,
/// `staging.yaml`), as a Flux repo keeps one folder per cluster or stage.
pub fn env_of_file(file: &str) -> Option<String> {
    file.split(['/', '\\'])
        .map(|seg| seg.rsplit_once('.').map_or(seg, |(stem, _)| stem))
        .rfind(|seg| ENVIRONMENTS.contains(seg))
        .map(str::to_string)
}

/// A DNS-1123 label made of `text` (lower case, other characters as `-`, at most 63).
pub fn dns_label(text: &str) -> String {
    let mut out: String = text
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    out.truncate(63);
    out.trim_matches('-').to_string()
}

/// Place every release and group them into components.
pub fn fleet(
    releases: Vec<Release>,
    envs: &BTreeMap<String, String>,
    findings: &mut Vec<Finding>,
) -> Fleet {
    let mut groups: Vec<(String, Vec<Placed>)> = Vec::new();
    let mut renamed: BTreeSet<String> = BTreeSet::new();
    for release in releases {
        let env = envs.get(&release.origin.file).cloned();
        let Some(placed) = place(release, env, findings, &mut renamed) else {
            continue;
        };
        let key = placed.release.source.key();
        let slot = groups.iter_mut().find(|(k, members)| {
            *k == key
                && !members
                    .iter()
                    .any(|m| m.tenant == placed.tenant && m.env == placed.env)
        });
        match slot {
            Some((_, members)) => members.push(placed),
            None => groups.push((key, vec![placed])),
        }
    }
    let mut names: BTreeSet<String> = BTreeSet::new();
    let mut components: Vec<Component> = groups
        .into_iter()
        .map(|(_, releases)| component(releases, &mut names, findings))
        .collect();
    components.sort_by(|a, b| a.name.cmp(&b.name));
    Fleet { components }
}

/// The tenant and environment of a release (the environment from `file_env`, the one its
/// file's path names, when its namespace names none); `None` (with a finding) for a
/// platform namespace.
fn place(
    release: Release,
    file_env: Option<String>,
    findings: &mut Vec<Finding>,
    renamed: &mut BTreeSet<String>,
) -> Option<Placed> {
    let ns = release.namespace.as_str();
    if PLATFORM.contains(&ns) || ns.starts_with("kube-") {
        findings.push(Finding {
            at: release.origin.clone(),
            field: String::new(),
            message: format!(
                "deploys into `{ns}`, a platform namespace, not a customer's: not imported; install it with the cluster (fief's baseline or your platform tooling)"
            ),
        });
        return None;
    }
    let (ns_tenant, ns_env, split) = split_namespace(ns);
    let env = match file_env {
        Some(env) if !split => env,
        _ => ns_env,
    };
    let tenant = dns_label(release.tenant.as_deref().unwrap_or(&ns_tenant));
    let new_ns = format!("{tenant}-{env}");
    if new_ns != ns && renamed.insert(format!("{ns} {new_ns}")) {
        findings.push(Finding {
            at: release.origin.clone(),
            field: String::new(),
            message: format!(
                "namespace `{ns}` becomes `{new_ns}`: tenant `{tenant}`, environment `{env}` (fief.yaml namespacePattern `{{tenant}}-{{env}}`); its objects move there"
            ),
        });
    }
    Some(Placed {
        tenant,
        env,
        release,
    })
}

/// A component of `releases` (same source, one per tenant environment): its name and version.
fn component(
    releases: Vec<Placed>,
    names: &mut BTreeSet<String>,
    findings: &mut Vec<Finding>,
) -> Component {
    let source = releases[0].release.source.clone();
    let first = &releases[0].release.name;
    let agreed = releases.iter().all(|p| p.release.name == *first);
    let base = match &source {
        Source::Chart { name, .. } if !agreed => name.clone(),
        _ => first.clone(),
    };
    let base = match dns_label(&base) {
        b if b.is_empty() => "app".to_string(),
        b => b,
    };
    let mut name = base.clone();
    if names.contains(&name)
        && let Source::Kustomize { path, .. } = &source
    {
        // Another overlay of the same kustomization: named after the overlay.
        let overlay = path.rsplit('/').next().unwrap_or("");
        name = dns_label(&format!("{base}-{overlay}"));
    }
    let mut n = 2;
    while names.contains(&name) {
        name = format!("{base}-{n}");
        n += 1;
    }
    names.insert(name.clone());
    let version = match &source {
        Source::Chart { .. } => Some(chart_version(&name, &releases, findings)),
        _ => None,
    };
    if !matches!(source, Source::Kustomize { .. }) {
        for p in releases.iter().filter(|p| p.release.name != name) {
            findings.push(Finding {
                at: p.release.origin.clone(),
                field: "releaseName".to_string(),
                message: format!(
                    "Helm release `{}` is named `{name}` in fief (a chart's release is its component's name): objects named after the release get new names"
                    , p.release.name
                ),
            });
        }
    }
    Component {
        name,
        source,
        version,
        releases,
    }
}

/// The chart version most releases run (the highest of a tie); the others are reported.
fn chart_version(component: &str, releases: &[Placed], findings: &mut Vec<Finding>) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for p in releases {
        if let Source::Chart { version, .. } = &p.release.source {
            *counts.entry(version.as_str()).or_default() += 1;
        }
    }
    let chosen = counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| compare_versions(a.0, b.0)))
        .map_or("", |(v, _)| *v)
        .to_string();
    if !crate::core::model::is_exact_version(&chosen) {
        findings.push(Finding {
            at: releases[0].release.origin.clone(),
            field: "version".to_string(),
            message: format!(
                "chart version `{chosen}` is not one exact version: write the version to run in components/{component}/component.yaml, then run `fief chart update`"
            ),
        });
    }
    for p in releases {
        if let Source::Chart { version, .. } = &p.release.source
            && *version != chosen
        {
            findings.push(Finding {
                at: p.release.origin.clone(),
                field: "version".to_string(),
                message: format!(
                    "runs the chart at {version}; component `{component}` uses {chosen} for every tenant. To keep {version} for tenant `{}`, commit component.yaml at {version}, tag that commit and pin the tenant's component to the tag (`ref:`)",
                    p.tenant
                ),
            });
        }
    }
    chosen
}

/// Compare two versions by their numeric parts.
fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |v: &str| -> Vec<u64> {
        v.trim_start_matches('v')
            .split(['.', '-', '+'])
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    parts(a).cmp(&parts(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_ending_in_an_environment_is_that_tenants_environment() {
        assert_eq!(
            split_namespace("acme-prod"),
            ("acme".into(), "prod".into(), true)
        );
        assert_eq!(
            split_namespace("big-co-staging"),
            ("big-co".into(), "staging".into(), true)
        );
        assert_eq!(
            split_namespace("acme"),
            ("acme".into(), "prod".into(), false)
        );
    }

    #[test]
    fn a_files_folder_or_name_gives_the_environment_of_namespaces_without_one() {
        assert_eq!(
            env_of_file("clusters/production/apps.yaml"),
            Some("production".into())
        );
        assert_eq!(env_of_file("out/staging.yaml"), Some("staging".into()));
        assert_eq!(env_of_file("fleet/apps.yaml"), None);
    }
}
